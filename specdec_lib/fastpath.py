"""The "fast view" of a causal LM that `CachedLM` runs on the CPU: the same model, cheaper and,
in bfloat16/float16, batch-invariant (a position's logits do not depend on how many positions the
call scores, so greedy speculative decoding reproduces greedy decoding bit for bit).

`fast_view(model, pack)` is a shallow copy sharing every parameter and module except:
- every `nn.Linear` becomes a `PackedLinear`, which sees a 2-D input. A 3-D input with unusual
  strides (the last position of a prefill, `logits_to_keep=1`) sends `F.linear` down a
  batched-matmul path that first copies the whole weight: 2.3 s for the 262144 x 640 LM head of
  Gemma 3 270M in bfloat16 on the 2-core CPU (Hugging Face `generate` pays it at every prefill).
  With `pack` (bfloat16/float16) the product runs through oneDNN from a weight reordered once into
  its blocked layout: the plain path re-reads and repacks the weight at every call. Measured here
  (quiet, 2 threads): LM head 23-44 ms -> 12-15 ms a call for 1 to 9 positions, the 18-layer
  body 32 -> 22 ms, bit-identical to `F.linear`. The packed copies cost the weights' size once
  (0.54 GB for the 270M model in bfloat16).
- without `pack` (float32), a float32 weight of at least `WIDE` output rows (the LM head) takes
  its multi-row products as `W @ x^T`, which streams the weight once where F.linear repacks it:
  the verification of K + 1 positions then costs about what one decode step costs.
- batch invariance, with `pack` only: oneDNN's kernel for some shapes changes with the number of
  rows (with one thread, the 640 x 2048 MLP down-projection for 4 rows or more), so row i of a
  K+1-row verification differed from the same position scored alone. A probe finds such shapes
  (per shape, dtype and thread count) and those calls run in chunks of exactly `ROWS` rows,
  zero-padded. Attention runs `invariant_attention`: each query row attends over a key window
  padded to a multiple of `BUCKET` positions (masked beyond its own position), in float32, as a
  fixed `ROWS`-row matmul, so its result depends on its own position only. It needs the
  `GrowingCache` buffers (zero-initialised, sized in multiples of `BUCKET`) and falls back to SDPA
  without them. float32 keeps the stock kernels and SDPA.
The model itself is untouched: Hugging Face `generate` on the same model runs the stock path.

Knows nothing about caches' bookkeeping, sampling or drafters.
"""

from __future__ import annotations

import copy
import functools
import os
import weakref

import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward

PACKED_DTYPES = (torch.bfloat16, torch.float16)
ROWS = 16  # fixed row count of the batch-invariant matmuls
BUCKET = 64  # key windows are padded to a multiple of this many positions
ATTENTION = "specdec_invariant"
BUFFER_ATTR = "_specdec_buffer"  # set by GrowingLayer on the key/value views it returns
# float32 weights with at least this many output rows (an LM head) multiply a 2..M-row input as
# W @ x^T: F.linear's x @ W^T path repacks the whole weight at every call. Measured on the
# 2-core AVX2 CPU (AMD EPYC), 262144 x 640 head, float32: 2 / 5 / 9 rows 135 / 171 / 188 ms ->
# 45 / 61 / 99 ms; one row stays on F.linear's matrix-vector kernel (64 ms).
WIDE = 16384

# nn.Linear -> (weight key, packed weight); weak, so a dropped model frees its packed copies
_PACKED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_INVARIANT: dict[tuple, bool] = {}  # (out, in, dtype, threads) -> rows independent of M


@functools.cache
def packing_available(dtype: torch.dtype = torch.bfloat16) -> bool:
    """Whether oneDNN can pack and multiply `dtype` weights on this CPU. Probed once per dtype
    on a tiny product: oneDNN's bfloat16 kernels need AVX512 (BW, VL, DQ) or AVX-NE-CONVERT, so
    an AVX2-only CPU (an AMD EPYC here, say) refuses them with a RuntimeError."""
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


def _off(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes"}


def wants_fast_view(model: torch.nn.Module) -> bool:
    """Whether this model runs through the fast view: on the CPU, unless $SPECDEC_NO_FAST."""
    try:
        p = next(model.parameters())
    except StopIteration:
        return False
    return p.device.type == "cpu" and not _off("SPECDEC_NO_FAST")


def wants_packing(model: torch.nn.Module) -> bool:
    """Whether the fast view packs and makes batch-invariant (CPU, bfloat16/float16), unless
    $SPECDEC_NO_PACK."""
    if not wants_fast_view(model) or _off("SPECDEC_NO_PACK"):
        return False
    dtype = next(model.parameters()).dtype
    return dtype in PACKED_DTYPES and packing_available(dtype)


# ----------------------------------------------------------------------------- linear layers


def _packed_linear(x2: torch.Tensor, packed: torch.Tensor, bias) -> torch.Tensor:
    return torch.ops.mkldnn._linear_pointwise(x2, packed, bias, "none", [], "")


def _in_fixed_rows(x2: torch.Tensor, fn) -> torch.Tensor:
    """fn over x2 [M, in] in chunks of exactly ROWS rows (the last one zero-padded)."""
    m = x2.shape[0]
    chunks = []
    for start in range(0, m, ROWS):
        part = x2[start : start + ROWS]
        if part.shape[0] < ROWS:
            part = torch.cat([part, part.new_zeros(ROWS - part.shape[0], part.shape[1])])
        chunks.append(fn(part)[: min(ROWS, m - start)])
    return chunks[0] if len(chunks) == 1 else torch.cat(chunks)


def _rows_invariant(packed: torch.Tensor, shape: tuple[int, int], dtype, bias) -> bool:
    """Whether each row of this shape's oneDNN product is the same whatever the row count.

    The probe input is heavy-tailed: with small, similar values every order of summation
    rounds alike and a row-count-dependent kernel would go unnoticed."""
    key = (*shape, dtype, torch.get_num_threads())
    if key not in _INVARIANT:
        g = torch.Generator().manual_seed(0)
        n = (ROWS + 1, shape[1])
        x = (torch.randn(n, generator=g) * torch.exp(1.5 * torch.randn(n, generator=g)) * 20).to(
            dtype
        )
        alone = [_packed_linear(x[i : i + 1], packed, bias) for i in range(ROWS + 1)]
        ok = True
        for m in range(2, ROWS + 2):
            y = _packed_linear(x[:m], packed, bias)
            ok = ok and all(torch.equal(y[i : i + 1], alone[i]) for i in range(m))
        _INVARIANT[key] = ok
    return _INVARIANT[key]


class PackedLinear(torch.nn.Module):
    """`linear` on a 2-D view of the input: with `pack`, by oneDNN from a weight reordered once
    (bit-identical to F.linear) and in fixed-size row chunks where the row count would change
    the kernel; else by F.linear.

    The packed weight is kept per source `nn.Linear` (in `_PACKED`), so views of the same model
    (the target and its early-exit self-draft) share it; it is rebuilt if the weight changes."""

    def __init__(self, source: torch.nn.Linear, pack: bool = True):
        super().__init__()
        self.source = source
        self.pack = pack

    def packed(self) -> torch.Tensor:
        w = self.source.weight
        key = (w.data_ptr(), w._version, tuple(w.shape), w.dtype)
        cached = _PACKED.get(self.source)
        if cached is None or cached[0] != key:
            packed = torch.ops.mkldnn._reorder_linear_weight(w.detach(), 1)
            _PACKED[self.source] = (key, packed)
            return packed
        return cached[1]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.source.weight
        if x.device.type != "cpu" or x.dtype != w.dtype:
            return self.source(x)
        shape = x.shape
        x2 = x.reshape(-1, shape[-1])
        bias = self.source.bias
        if self.pack and w.dtype in PACKED_DTYPES:
            packed = self.packed()
            if _rows_invariant(packed, tuple(w.shape), w.dtype, bias):
                y = _packed_linear(x2, packed, bias)
            else:
                y = _in_fixed_rows(x2, lambda part: _packed_linear(part, packed, bias))
        elif x2.shape[0] > 1 and w.shape[0] >= WIDE and w.dtype == torch.float32:
            y = torch.mm(w, x2.t()).t()  # [out, in] @ [in, M]: streams the weight once
            y = y + bias if bias is not None else y
        else:
            y = torch.nn.functional.linear(x2, w, bias)
        return y.reshape(*shape[:-1], y.shape[-1])


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
    keys, masked beyond p, in float32, inside a matmul of exactly ROWS rows per key head: the
    same arithmetic whether the row is scored alone or in a verification of K + 1 rows."""
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
    i = 0
    while i < m:
        b = buckets[i]
        j = i
        while j < m and buckets[j] == b and j - i < ROWS:
            j += 1
        rows = j - i
        kf = kbuf[0, :, :b].float()  # [Hkv, B, D]
        vf = vbuf[0, :, :b].float()  # [Hkv, B, Dv]
        q = query.new_zeros(kv_heads, rep, ROWS, d, dtype=torch.float32)
        q[:, :, :rows] = query[0, :, i:j].float().view(kv_heads, rep, rows, d)
        s = torch.matmul(q.view(kv_heads, rep * ROWS, d), kf.transpose(-1, -2))  # [Hkv, R, B]
        s = s.mul_(scale).view(kv_heads, rep, ROWS, b)
        qpos = torch.arange(first + i, first + i + ROWS, device=query.device)[:, None]
        kpos = torch.arange(b, device=query.device)[None, :]
        visible = kpos <= qpos
        if sliding_window is not None:
            visible &= (qpos - kpos) < sliding_window
        p = torch.softmax(s.masked_fill_(~visible, float("-inf")), dim=-1)
        o = torch.matmul(p.view(kv_heads, rep * ROWS, b), vf)  # [Hkv, rep * ROWS, Dv]
        o = o.view(heads, ROWS, -1)[:, :rows].transpose(0, 1)  # [rows, H, Dv]
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


def _linears_view(module: torch.nn.Module, pack: bool) -> torch.nn.Module:
    """A shallow copy of module whose nn.Linear descendants run as PackedLinear (modules with
    no linear descendant are shared as they are)."""
    if isinstance(module, torch.nn.Linear):
        return PackedLinear(module, pack)
    if not any(isinstance(m, torch.nn.Linear) for m in module.modules()):
        return module
    new = copy.copy(module)
    new._modules = {
        name: (_linears_view(child, pack) if child is not None else None)
        for name, child in module._modules.items()
    }
    return new


def fast_view(model: torch.nn.Module, pack: bool) -> torch.nn.Module:
    """The model with PackedLinear layers and, with `pack`, batch-invariant attention."""
    view = _linears_view(model, pack)
    if pack:
        _with_invariant_attention(view)
    return view
