"""A causal LM with its own KV cache: extend by some tokens, roll back to a prefix.

`CachedLM` keeps the ids whose keys and values are cached (`tokens`), so rollback is bookkeeping
plus a crop of the cache. The cache keeps all tokens in every layer (no sliding-window layer), so
rollback stays exact after a sliding-window layer (Gemma 3: 512 tokens) would have dropped old
keys; the model still applies its sliding-window mask from positions. With `use_cache=False`
every call recomputes the whole sequence, which is how the "no KV cache" experiments are run.

Three things make a call cheaper on the CPU without changing a logit (tests check bit-equality):
- the cache (`GrowingCache`) writes keys and values into preallocated buffers that double when
  full, instead of concatenating the whole cache at every call; a crop only moves the length;
- in bfloat16/float16 every `nn.Linear` (the 262144 x 640 LM head of Gemma 3 270M included) runs
  through oneDNN with its weight reordered once ("packed") into oneDNN's blocked layout. Measured
  on the 2-core CPU, quiet: LM head 23-44 ms -> 12-15 ms a call for 1 to 9 positions, the
  18-layer body 32 -> 22 ms; the outputs are bit-identical to `torch.nn.functional.linear`. The
  packed copies cost the size of the weights once (0.54 GB for the 270M model in bfloat16);
- every linear layer sees a 2-D input. A 3-D input with unusual strides (the last position of a
  prefill, `logits_to_keep=1`) sends `F.linear` down a batched-matmul path that first copies the
  whole weight: 2.3 s for the LM head of the 270M model in bfloat16 on this CPU (Hugging Face
  `generate` pays it at every prefill).
float32 keeps the stock kernels (only the 2-D input), whose results do not depend on how many
positions a call scores. The model itself is left untouched: a shallow "fast view" shares every
module except the linear layers, so Hugging Face `generate` on the same model runs the stock path.

Knows nothing about sampling, drafters or the verifier.
"""

from __future__ import annotations

import copy
import os
import weakref

import torch
from transformers import DynamicCache
from transformers.cache_utils import Cache, DynamicLayer

from specdec_lib.errors import SpecdecError

PACKED_DTYPES = (torch.bfloat16, torch.float16)
_MIN_CAPACITY = 256  # tokens preallocated per layer at first use; doubles when full
# nn.Linear -> (weight key, packed weight); weak, so a dropped model frees its packed copies
_PACKED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class GrowingLayer(DynamicLayer):
    """A full-attention cache layer in a preallocated buffer: `update` writes in place, `crop`
    moves the length. Keys and values it returns are prefix views of the buffer; their values
    and shapes are exactly those `DynamicLayer` would return."""

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        self.device = key_states.device
        self._kbuf: torch.Tensor | None = None
        self._vbuf: torch.Tensor | None = None
        self._len = 0
        self.keys = key_states[..., :0, :]
        self.values = value_states[..., :0, :]
        self.is_initialized = True

    def _grow(self, need: int, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        cap = max(_MIN_CAPACITY, need)
        if self._kbuf is not None:
            cap = max(cap, 2 * self._kbuf.shape[-2])
        k = key_states.new_empty((*key_states.shape[:-2], cap, key_states.shape[-1]))
        v = value_states.new_empty((*value_states.shape[:-2], cap, value_states.shape[-1]))
        if self._len:
            k[..., : self._len, :].copy_(self._kbuf[..., : self._len, :])
            v[..., : self._len, :].copy_(self._vbuf[..., : self._len, :])
        self._kbuf, self._vbuf = k, v

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        end = self._len + key_states.shape[-2]
        if self._kbuf is None or end > self._kbuf.shape[-2]:
            self._grow(end, key_states, value_states)
        self._kbuf[..., self._len : end, :].copy_(key_states)
        self._vbuf[..., self._len : end, :].copy_(value_states)
        self._len = end
        self.keys = self._kbuf[..., :end, :]
        self.values = self._vbuf[..., :end, :]
        return self.keys, self.values

    def get_seq_length(self) -> int:
        return self._len if self.is_initialized else 0

    def crop(self, tokens_to_remove: int) -> None:
        if tokens_to_remove > 0:
            raise ValueError("crop takes a negative count of tokens to remove")
        if tokens_to_remove == 0 or not self.is_initialized:
            return
        self._len = max(self._len + tokens_to_remove, 0)
        self.keys = self._kbuf[..., : self._len, :]
        self.values = self._vbuf[..., : self._len, :]

    def reset(self) -> None:
        self.keys = self.values = None
        self._kbuf = self._vbuf = None
        self._len = 0
        self.is_initialized = False


class GrowingCache(DynamicCache):
    """A `DynamicCache` of `GrowingLayer`s (one per decoder layer, created lazily)."""

    def __init__(self) -> None:
        Cache.__init__(self, layer_class_to_replicate=GrowingLayer)


def packing_available() -> bool:
    mkldnn = getattr(torch.ops, "mkldnn", None)
    return (
        torch.backends.mkldnn.is_available()
        and hasattr(mkldnn, "_reorder_linear_weight")
        and hasattr(mkldnn, "_linear_pointwise")
    )


class PackedLinear(torch.nn.Module):
    """`linear` on a 2-D view of the input, computed by oneDNN from a weight reordered once when
    `pack` (bfloat16/float16), else by F.linear; bit-identical to F.linear either way.

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
        if self.pack and w.dtype in PACKED_DTYPES:
            y = torch.ops.mkldnn._linear_pointwise(
                x2, self.packed(), self.source.bias, "none", [], ""
            )
        else:
            y = torch.nn.functional.linear(x2, w, self.source.bias)
        return y.reshape(*shape[:-1], y.shape[-1])


def _fast_view(module: torch.nn.Module, pack: bool) -> torch.nn.Module:
    """A shallow copy of module whose nn.Linear descendants run as PackedLinear."""
    if isinstance(module, torch.nn.Linear):
        return PackedLinear(module, pack)
    if not any(isinstance(m, torch.nn.Linear) for m in module.modules()):
        return module
    new = copy.copy(module)
    new._modules = {
        name: (_fast_view(child, pack) if child is not None else None)
        for name, child in module._modules.items()
    }
    return new


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
    """Whether linear layers of this model get the packed oneDNN path (CPU, bf16/fp16), unless
    $SPECDEC_NO_PACK."""
    if not wants_fast_view(model) or _off("SPECDEC_NO_PACK"):
        return False
    p = next(model.parameters())
    return p.dtype in PACKED_DTYPES and packing_available()


class CachedLM:
    """One sequence (batch 1) through `model`, whose forward accepts `input_ids`, `cache`,
    `use_cache` and `logits_to_keep` and returns `.logits` [1, seq, V]."""

    def __init__(
        self,
        model: torch.nn.Module,
        *,
        use_cache: bool = True,
        vocab_size: int | None = None,
        fast: bool | None = None,
    ):
        """fast: run through the fast view (None: on the CPU); packing follows the dtype."""
        self.model = model
        self.use_cache = use_cache
        self.vocab_size = (
            vocab_size  # slice logits to this width (a draft sharing the target's ids)
        )
        self.device = next(model.parameters()).device
        self.dtype = next(model.parameters()).dtype
        self.fast = wants_fast_view(model) if fast is None else bool(fast)
        self.packed = self.fast and wants_packing(model)
        self._runner: torch.nn.Module | None = None  # the fast view, built at first call
        self.tokens: list[int] = []
        self.cache: DynamicCache | None = None
        self.calls = 0

    @property
    def runner(self) -> torch.nn.Module:
        """The module actually called: the model, or its packed fast view."""
        if self._runner is None:
            self._runner = _fast_view(self.model, self.packed) if self.fast else self.model
        return self._runner

    def reset(self) -> None:
        self.tokens = []
        self.cache = GrowingCache() if self.use_cache else None

    def __len__(self) -> int:
        return len(self.tokens)

    @torch.inference_mode()
    def extend(self, ids: list[int], logits_to_keep: int = 1) -> torch.Tensor:
        """Append ids; return the logits of the last `logits_to_keep` positions: [n, V]."""
        if not ids:
            raise ValueError("extend needs at least one token")
        if self.cache is None and self.use_cache:
            self.reset()
        self.tokens.extend(ids)
        fed = ids if self.use_cache else self.tokens
        input_ids = torch.tensor([fed], dtype=torch.long, device=self.device)  # [1, n]
        out = self.runner(
            input_ids=input_ids,
            cache=self.cache,
            use_cache=self.use_cache,
            logits_to_keep=logits_to_keep,
        )
        self.calls += 1
        logits = out.logits[0, -logits_to_keep:]  # [n, V]
        if self.vocab_size is not None:
            logits = logits[:, : self.vocab_size]
        check_finite(logits, self.dtype)
        return logits

    def rollback(self, n_keep: int) -> None:
        """Keep only the first n_keep tokens."""
        drop = len(self.tokens) - n_keep
        if drop < 0:
            raise ValueError(f"cannot roll back to {n_keep} tokens: only {len(self.tokens)} cached")
        if drop == 0:
            return
        del self.tokens[n_keep:]
        if self.cache is not None:
            self.cache.crop(-drop)

    def sync_to(self, seq: list[int]) -> list[int]:
        """Roll back to the longest cached prefix of seq (leaving at least its last token
        uncached) and return the ids still to feed."""
        n = 0
        limit = min(len(self.tokens), len(seq) - 1)
        while n < limit and self.tokens[n] == seq[n]:
            n += 1
        self.rollback(n)
        return seq[n:]


def check_finite(logits: torch.Tensor, dtype: torch.dtype) -> None:
    """Stop on NaN/inf logits instead of emitting garbage tokens.

    One float32 sum per row is non-finite iff a logit is (or the row overflows float32, which
    finite logits of any real model do not): far cheaper than isfinite over 262144 x n values."""
    acc = torch.float64 if logits.dtype == torch.float64 else torch.float32
    if bool(torch.isfinite(logits.sum(-1, dtype=acc)).all()):
        return
    name = str(dtype).removeprefix("torch.")
    if dtype in (torch.float16, torch.bfloat16):
        fix = "reduced precision can overflow (Gemma does in float16): rerun with --dtype float32"
        if dtype == torch.float16:
            fix += " or bfloat16"
    else:
        fix = "the weights or inputs are broken: check the checkpoint"
    raise SpecdecError(f"the model produced NaN or infinite logits in {name}; {fix}")
