"""The "fast view" of a causal LM that `CachedLM` runs on the CPU: the same model, cheaper and,
when invariant, batch-invariant by construction: a position's logits are the same bits whether
the call scores it alone or among other positions, so greedy speculative decoding reproduces
greedy decoding bit for bit.

`fast_view(model, pack, invariant)` is a shallow copy sharing every parameter and module except:
- every `nn.Linear` (without `pack` or `invariant`: every wide one, an LM head) becomes a
  `PackedLinear`, which sees a 2-D input. A 3-D input with unusual strides (the last position of a
  prefill, `logits_to_keep=1`) sends `F.linear` down a batched-matmul path that first copies the
  whole weight (Hugging Face `generate` pays it at every prefill). With `pack` (bfloat16/float16)
  the product runs through oneDNN from a weight reordered once into its blocked layout,
  bit-identical to `F.linear`, where the plain path re-reads and repacks the weight at every call;
  the packed copies cost the weights' size once. Without `pack`, a float32 weight of at least `WIDE`
  output rows (an LM head) takes several rows (a verification) through oneDNN from a copy packed
  at the first such call (where oneDNN multiplies float32, else as `W @ x^T`, which streams the
  weight once where `F.linear` repacks it); one row (a decode step) stays on `F.linear`. oneDNN's
  packed float32 kernels take several rows for much less than `W @ x^T` (which is no cheaper per
  row than one row at a time); the packed copy costs the head's size once.
- with `invariant`, every product runs at one shape, whatever the number of positions:
  * a linear layer multiplies chunks of exactly `ROWS` rows (a one-row decode step is padded
    with zero rows too), and the row of position p always sits in slot p mod ROWS of its chunk
    (a call's consecutive positions take distinct slots, so up to ROWS positions are one
    product). A kernel's choice of algorithm depends on the shape, and the arithmetic of one
    output row on that row, its slot and the weight only, never on the other rows' values: so
    position p's bits depend on its own input alone. No probe, no assumption about which
    shapes a kernel treats alike (oneDNN changes kernel with the row count: one row and
    several rows of the same LM head round differently on some CPUs).
  * attention runs `invariant_attention`: each query row attends over a key window padded to a
    multiple of `BUCKET` positions (masked beyond its own position), in float32, in a matmul of
    exactly `ROWS` rows per key head, again in slot p mod ROWS. It needs the `GrowingCache`
    buffers (zero-initialised, sized in multiples of `BUCKET`) and falls back to SDPA without
    them.
  A row's position comes from the caller: `CachedLM` wraps every call in `positions_end(n)`
  (n = cached positions after the call; the rows a linear sees are the last ones). Without it
  the rows are taken as positions 0..M-1: still fixed shapes, but slots follow the call.
Without `pack` and `invariant` (float32 by default) only the wide layers become `PackedLinear`;
the others stay the model's own modules, which run the same kernel without the wrapper's cost.
The model itself is untouched: Hugging Face `generate` on the same model runs the stock path.

Which dtype runs what: bfloat16/float16 with oneDNN packing are invariant by default (packing
and attention make the step cheaper there, and oneDNN's packed bf16 kernels take a few rows for
little more than one, so the padding costs little). float32 keeps the stock kernels and SDPA by
default, because padding a decode step costs more there: the LM head's one-row product is a
memory-bound matrix-vector kernel, and `ROWS` rows make it a matrix product. `invariant=True`
(or $SPECDEC_INVARIANT=1) makes float32 invariant too; the tests run it on every CPU. `ROWS = 8`
is the trade-off: a K <= 7 verification is one product, a decode step pays for 8 rows, a
K = 8..15 verification pays two products. `python -m specdec_study.bench.fastpath_cost` times
both paths per dtype (one JSON line).

Knows nothing about caches' bookkeeping, sampling or drafters.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import functools
import os
import weakref
from collections.abc import Callable, Iterator

import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward

PACKED_DTYPES = (torch.bfloat16, torch.float16)
ROWS = 8  # fixed row count of every product on the invariant path
BUCKET = 64  # key windows are padded to a multiple of this many positions
ATTENTION = "specdec_invariant"
BUFFER_ATTR = "_specdec_buffer"  # set by GrowingLayer on the key/value views it returns
# float32 weights with at least this many output rows (an LM head) multiply a multi-row input
# as W @ x^T: F.linear's x @ W^T path repacks the whole weight at every call.
WIDE = 16384

# nn.Linear -> (weight key, packed weight); weak, so a dropped model frees its packed copies
_PACKED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# cached positions once the current call is done (its rows are the last ones); None: unknown
_END: contextvars.ContextVar[int | None] = contextvars.ContextVar("specdec_end", default=None)


@functools.cache
def packing_available(dtype: torch.dtype = torch.bfloat16) -> bool:
    """Whether oneDNN can pack and multiply `dtype` weights on this CPU. Probed once per dtype
    on a tiny product: oneDNN's bfloat16 kernels need AVX512 (BW, VL, DQ) or AVX-NE-CONVERT, so
    an AVX2-only CPU refuses them with a RuntimeError."""
    mkldnn = getattr(torch.ops, "mkldnn", None)
    if not (
        torch.backends.mkldnn.is_available()
        and hasattr(mkldnn, "_reorder_linear_weight")
        and hasattr(mkldnn, "_linear_pointwise")
    ):
        return False
    try:
        w = torch.ones(8, 16, dtype=dtype)
        y = _packed_linear(
            torch.ones(2, 16, dtype=dtype), mkldnn._reorder_linear_weight(w, 1), None
        )
    except RuntimeError:
        return False
    return bool(torch.equal(y, torch.full((2, 8), 16.0, dtype=dtype)))


def _on(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes"}


def wants_fast_view(model: torch.nn.Module) -> bool:
    """Whether this model runs through the fast view: on the CPU, unless $SPECDEC_NO_FAST."""
    try:
        p = next(model.parameters())
    except StopIteration:
        return False
    return p.device.type == "cpu" and not _on("SPECDEC_NO_FAST")


def wants_packing(model: torch.nn.Module) -> bool:
    """Whether the fast view packs (CPU, bfloat16/float16, oneDNN able), unless
    $SPECDEC_NO_PACK."""
    if not wants_fast_view(model) or _on("SPECDEC_NO_PACK"):
        return False
    dtype = next(model.parameters()).dtype
    return dtype in PACKED_DTYPES and packing_available(dtype)


def wants_invariant(model: torch.nn.Module) -> bool:
    """Whether the fast view is batch-invariant: where it packs, or everywhere on the CPU with
    $SPECDEC_INVARIANT set."""
    return wants_fast_view(model) and (wants_packing(model) or _on("SPECDEC_INVARIANT"))


@contextlib.contextmanager
def positions_end(n: int) -> Iterator[None]:
    """Calls inside score positions ending at n - 1: the M rows a layer sees are n - M..n - 1."""
    token = _END.set(n)
    try:
        yield
    finally:
        _END.reset(token)


def _slots(first: int, n: int, device: torch.device) -> torch.Tensor:
    """[n] slots of positions first..first+n-1 (n <= ROWS) in a ROWS-row chunk: p mod ROWS."""
    return torch.remainder(torch.arange(first, first + n, device=device), ROWS)


# ----------------------------------------------------------------------------- linear layers


def _packed_linear(x2: torch.Tensor, packed: torch.Tensor, bias) -> torch.Tensor:
    return torch.ops.mkldnn._linear_pointwise(x2, packed, bias, "none", [], "")


def in_fixed_rows(
    x2: torch.Tensor,  # [M, in]: the rows of positions first..first+M-1
    fn: Callable[[torch.Tensor], torch.Tensor],  # [ROWS, in] -> [ROWS, out]
    first: int = 0,
) -> torch.Tensor:
    """fn over x2 in products of exactly ROWS rows, position p's row in slot p mod ROWS of a
    fresh zero-padded chunk (fresh: same alignment every call). Returns [M, out]."""
    m = x2.shape[0]
    parts = []
    for start in range(0, m, ROWS):
        n = min(ROWS, m - start)
        s0 = (first + start) % ROWS
        head = min(n, ROWS - s0)  # rows in slots s0.., the rest wraps round to slot 0
        chunk = x2.new_zeros(ROWS, x2.shape[1])
        chunk[s0 : s0 + head] = x2[start : start + head]
        chunk[: n - head] = x2[start + head : start + n]
        y = fn(chunk)  # [ROWS, out]
        parts += [y[s0 : s0 + head], y[: n - head]] if n > head else [y[s0 : s0 + n]]
    return parts[0] if len(parts) == 1 else torch.cat(parts)


class PackedLinear(torch.nn.Module):
    """`linear` on a 2-D view of the input: with `pack`, by oneDNN from a weight reordered once
    (bit-identical to F.linear), else by F.linear (W @ x^T for a wide float32 weight); with
    `invariant` (default: `pack`), in products of exactly ROWS rows (`in_fixed_rows`).

    The packed weight is kept per source `nn.Linear` (in `_PACKED`), so views of the same model
    (the target and its early-exit self-draft) share it; it is rebuilt if the weight changes."""

    def __init__(self, source: torch.nn.Linear, pack: bool = True, invariant: bool | None = None):
        super().__init__()
        self.source = source
        self.pack = pack
        self.invariant = pack if invariant is None else invariant

    def packed(self) -> torch.Tensor:
        """The source weight reordered for oneDNN, cached per source until the weight changes."""
        w = self.source.weight
        key = (w.data_ptr(), w._version, tuple(w.shape), w.dtype)
        cached = _PACKED.get(self.source)
        if cached is None or cached[0] != key:
            packed = torch.ops.mkldnn._reorder_linear_weight(w.detach(), 1)
            _PACKED[self.source] = (key, packed)
            return packed
        return cached[1]

    def product(self, x2: torch.Tensor) -> torch.Tensor:
        """[M, in] -> [M, out], one kernel call for the M rows as given."""
        w, bias = self.source.weight, self.source.bias
        if self.pack and w.dtype in PACKED_DTYPES:
            return _packed_linear(x2, self.packed(), bias)
        if x2.shape[0] > 1 and w.shape[0] >= WIDE and w.dtype == torch.float32:
            if packing_available(torch.float32):  # oneDNN from the weight packed once
                return _packed_linear(x2, self.packed(), bias)
            y = torch.mm(w, x2.t()).t()  # [out, in] @ [in, M]: streams the weight once
            return y + bias if bias is not None else y
        return torch.nn.functional.linear(x2, w, bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The source layer's output; off the CPU or in another dtype, by the source itself."""
        w = self.source.weight
        if x.device.type != "cpu" or x.dtype != w.dtype:
            return self.source(x)
        shape = x.shape
        x2 = x.reshape(-1, shape[-1])  # [M, in]
        if self.invariant:
            end = _END.get()
            first = end - x2.shape[0] if end is not None else 0
            y = in_fixed_rows(x2, self.product, first)
        else:
            y = self.product(x2)
        return y.reshape(*shape[:-1], y.shape[-1])


def packed_bytes(module: torch.nn.Module) -> int:
    """Bytes of the packed weights held for the linear layers in `module` (itself included):
    the copies `PackedLinear` keeps beside the weights, 0 where nothing is packed."""
    return sum(
        v[1].element_size() * v[1].numel()
        for m in module.modules()
        if isinstance(m, torch.nn.Linear) and (v := _PACKED.get(m)) is not None
    )


# ----------------------------------------------------------------------------- attention


def invariant_attention(
    module: torch.nn.Module,
    query: torch.Tensor,  # [1, H, M, D]: the last M positions of the keys
    key: torch.Tensor,  # [1, Hkv, L, D], a prefix view of a GrowingLayer buffer
    value: torch.Tensor,  # [1, Hkv, L, Dv]
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    sliding_window: int | None = None,
    **kwargs,
) -> tuple[torch.Tensor, None]:
    """Causal (and sliding-window) attention whose rows do not depend on each other's count.

    Query row i sits at position p = L - M + i and attends to keys j <= p (and p - j < window).
    It is computed over the first B = min(ceil((p + 1) / BUCKET) * BUCKET, capacity) buffered
    keys, masked beyond p, in float32, in slot p mod ROWS of a matmul of exactly ROWS rows per
    key head: the same arithmetic whether the row is scored alone or among K + 1 rows."""
    kbuf = getattr(key, BUFFER_ATTR, None)
    vbuf = getattr(value, BUFFER_ATTR, None)
    softcap = kwargs.get("softcap", getattr(module, "attn_logit_softcapping", None))
    if kbuf is None or vbuf is None or query.shape[0] != 1 or softcap is not None or dropout:
        return sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs
        )
    _, heads, m, d = query.shape
    kv_heads, length = key.shape[1], key.shape[2]
    rep = heads // kv_heads
    capacity = kbuf.shape[-2]
    scale = scaling if scaling is not None else d**-0.5
    first = length - m  # position of query row 0
    buckets = [min(-(-(first + i + 1) // BUCKET) * BUCKET, capacity) for i in range(m)]
    out = query.new_empty(1, m, heads, vbuf.shape[-1])
    kpos_all = torch.arange(capacity, device=query.device)
    i = 0
    while i < m:
        b = buckets[i]
        j = i
        while j < m and buckets[j] == b and j - i < ROWS:
            j += 1
        rows = j - i
        slots = _slots(first + i, rows, query.device)  # [rows]
        # the position each slot holds: real rows, and row i's position in the padding slots
        qpos = torch.full((ROWS,), first + i, device=query.device)
        qpos[slots] = torch.arange(first + i, first + j, device=query.device)
        kf = kbuf[0, :, :b].float()  # [Hkv, B, D]
        vf = vbuf[0, :, :b].float()  # [Hkv, B, Dv]
        q = query.new_zeros(kv_heads, rep, ROWS, d, dtype=torch.float32)
        q[:, :, slots] = query[0, :, i:j].float().view(kv_heads, rep, rows, d)
        s = torch.matmul(q.view(kv_heads, rep * ROWS, d), kf.transpose(-1, -2))  # [Hkv, R, B]
        s = s.mul_(scale).view(kv_heads, rep, ROWS, b)
        kpos = kpos_all[None, :b]
        visible = kpos <= qpos[:, None]  # [ROWS, B]
        if sliding_window is not None:
            visible &= (qpos[:, None] - kpos) < sliding_window
        p = torch.softmax(s.masked_fill_(~visible, float("-inf")), dim=-1)
        o = torch.matmul(p.view(kv_heads, rep * ROWS, b), vf)  # [Hkv, rep * ROWS, Dv]
        o = o.view(heads, ROWS, -1)[:, slots].transpose(0, 1)  # [rows, H, Dv]
        out[0, i:j] = o.to(query.dtype)
        i = j
    return out, None


AttentionInterface.register(ATTENTION, invariant_attention)


def _with_invariant_attention(module: torch.nn.Module) -> None:
    """Point the attention modules of a fast view at `invariant_attention` (own config copy)."""
    for sub in module.modules():
        cfg = getattr(sub, "config", None)
        if (
            type(sub).__name__.endswith("Attention")
            and hasattr(sub, "layer_idx")
            and getattr(cfg, "_attn_implementation", None) == "sdpa"
            and not getattr(cfg, "use_bidirectional_attention", False)
        ):
            own = copy.copy(cfg)
            own._attn_implementation_internal = ATTENTION
            sub.config = own


# ----------------------------------------------------------------------------- the view


def _wrapped(module: torch.nn.Module, pack: bool, invariant: bool) -> bool:
    """Whether the view runs this module as a PackedLinear: every nn.Linear when packing or
    invariant; otherwise (float32 by default) only a wide one (an LM head), the one layer whose
    products the view changes (a strided prefill row, W @ x^T over several rows). A narrower
    layer would run the same `mm` as the stock module (its input is contiguous), with the
    wrapper's per-call cost on top: a few percent of a float32 decode step."""
    if not isinstance(module, torch.nn.Linear):
        return False
    return pack or invariant or module.out_features >= WIDE


def _linears_view(module: torch.nn.Module, pack: bool, invariant: bool) -> torch.nn.Module:
    """A shallow copy of module whose nn.Linear descendants run as PackedLinear where `_wrapped`
    says so (modules with no such descendant are shared as they are)."""
    if _wrapped(module, pack, invariant):
        return PackedLinear(module, pack, invariant)
    if not any(_wrapped(m, pack, invariant) for m in module.modules()):
        return module
    new = copy.copy(module)
    new._modules = {
        name: (_linears_view(child, pack, invariant) if child is not None else None)
        for name, child in module._modules.items()
    }
    return new


def fast_view(
    model: torch.nn.Module,
    pack: bool,
    invariant: bool | None = None,
    *,
    attention: bool | None = None,
) -> torch.nn.Module:
    """The model with PackedLinear layers; with `invariant` (default: `pack`), fixed-row
    products and batch-invariant attention (`attention` overrides the latter, for comparisons:
    the view before invariance by construction packed with invariant attention)."""
    invariant = pack if invariant is None else invariant
    view = _linears_view(model, pack, invariant)
    if invariant if attention is None else attention:
        _with_invariant_attention(view)
    return view
