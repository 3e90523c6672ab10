"""A causal LM with its own KV cache: extend by some tokens, roll back to a prefix.

`CachedLM` keeps the ids whose keys and values are cached (`tokens`), so rollback is bookkeeping
plus a crop of the cache. The cache keeps all tokens in every layer (no sliding-window layer), so
rollback stays exact after a sliding-window layer (Gemma 3: 512 tokens) would have dropped old
keys; the model still applies its sliding-window mask from positions. With `use_cache=False`
every call recomputes the whole sequence, which is how the "no KV cache" experiments are run.

The cache (`GrowingCache`) writes keys and values into preallocated, zeroed buffers that double
when full, instead of concatenating the whole cache at every call; a crop only moves the length.
On the CPU the model runs through `fastpath.fast_view`: linear layers on a 2-D input; in float32
only the LM head (its multi-row products as `W @ x^T`), the other layers as they are; in
bfloat16/float16, where oneDNN can pack them, packed linear layers. Where packed (or with
`invariant=True`, $SPECDEC_INVARIANT, in float32 too) every product runs at a fixed shape with each
position in a slot of its own, so a position's logits do not depend on the other positions of the
call, and greedy speculation reproduces greedy decoding bit for bit. Every call runs inside
`fastpath.positions_end`, which tells the view the positions of the rows it multiplies. `fast=False`
runs the model as it is. `hidden` and `head` run the body and the LM head apart, for a drafter that
drafts with the target's own body (`drafters.shared`).

Knows nothing about sampling, drafters or the verifier.
"""

from __future__ import annotations

import torch
from transformers import DynamicCache
from transformers.cache_utils import Cache, DynamicLayer

from specdec_lib.core.fastpath import (
    BUCKET,
    BUFFER_ATTR,
    fast_view,
    positions_end,
    wants_fast_view,
    wants_invariant,
    wants_packing,
)
from specdec_lib.errors import SpecdecError

_MIN_CAPACITY = 256  # tokens preallocated per layer at first use; doubles when full


class GrowingLayer(DynamicLayer):
    """A full-attention cache layer in a preallocated buffer: `update` writes in place, `crop`
    moves the length. Keys and values it returns are prefix views of the buffer; their values
    and shapes are exactly those `DynamicLayer` would return. The views carry the buffer (as
    `BUFFER_ATTR`) for `fastpath.invariant_attention`, which reads zero or stale, always finite,
    entries past the length and masks them; buffers are zeroed and sized in multiples of
    `BUCKET`."""

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        """An empty layer on the first update's device (`_grow` allocates the buffer)."""
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
        cap = -(-cap // BUCKET) * BUCKET
        k = key_states.new_zeros((*key_states.shape[:-2], cap, key_states.shape[-1]))
        v = value_states.new_zeros((*value_states.shape[:-2], cap, value_states.shape[-1]))
        if self._len:
            k[..., : self._len, :].copy_(self._kbuf[..., : self._len, :])
            v[..., : self._len, :].copy_(self._vbuf[..., : self._len, :])
        self._kbuf, self._vbuf = k, v

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Append the new keys and values in place; return the whole keys and values so far."""
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
        setattr(self.keys, BUFFER_ATTR, self._kbuf)
        setattr(self.values, BUFFER_ATTR, self._vbuf)
        return self.keys, self.values

    def get_seq_length(self) -> int:
        """Tokens held (0 before the first update)."""
        return self._len if self.is_initialized else 0

    def crop(self, tokens_to_remove: int) -> None:
        """Drop the last -tokens_to_remove tokens by moving the length; the buffer stays."""
        if tokens_to_remove > 0:
            raise ValueError("crop takes a negative count of tokens to remove")
        if tokens_to_remove == 0 or not self.is_initialized:
            return
        self._len = max(self._len + tokens_to_remove, 0)
        self.keys = self._kbuf[..., : self._len, :]
        self.values = self._vbuf[..., : self._len, :]

    def reset(self) -> None:
        """Back to uninitialized: the buffers are released."""
        self.keys = self.values = None
        self._kbuf = self._vbuf = None
        self._len = 0
        self.is_initialized = False

    def buffers(self) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """The key and value buffers as allocated (their capacity, not the length in use)."""
        return getattr(self, "_kbuf", None), getattr(self, "_vbuf", None)


class GrowingCache(DynamicCache):
    """A `DynamicCache` of `GrowingLayer`s (one per decoder layer, created lazily)."""

    def __init__(self) -> None:
        Cache.__init__(self, layer_class_to_replicate=GrowingLayer)


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
        invariant: bool | None = None,
    ):
        """fast: run through the fast view (None: on the CPU); packing follows the dtype;
        invariant: batch-invariant products (None: where packed, or with $SPECDEC_INVARIANT)."""
        self.model = model
        self.use_cache = use_cache
        self.vocab_size = (
            vocab_size  # slice logits to this width (a draft sharing the target's ids)
        )
        self.device = next(model.parameters()).device
        self.dtype = next(model.parameters()).dtype
        self.fast = wants_fast_view(model) if fast is None else bool(fast)
        self.packed = self.fast and wants_packing(model)
        self.invariant = self.fast and (wants_invariant(model) if invariant is None else invariant)
        self._runner: torch.nn.Module | None = None  # the fast view, built at first call
        self.tokens: list[int] = []
        self.cache: DynamicCache | None = None
        self.calls = 0

    @property
    def runner(self) -> torch.nn.Module:
        """The module actually called: the model, or its packed fast view."""
        if self._runner is None:
            self._runner = (
                fast_view(self.model, self.packed, self.invariant) if self.fast else self.model
            )
        return self._runner

    def reset(self) -> None:
        """Forget the sequence: no tokens, a fresh empty cache (None without one)."""
        self.tokens = []
        self.cache = GrowingCache() if self.use_cache else None

    def __len__(self) -> int:
        return len(self.tokens)

    def cache_tensors(self) -> list[torch.Tensor]:
        """The tensors that hold the KV cache now: each growing layer's buffers as allocated,
        a stock layer's keys and values; none before the first call or without a cache."""
        out: list[torch.Tensor] = []
        for layer in getattr(self.cache, "layers", []) if self.cache is not None else []:
            kv = layer.buffers() if isinstance(layer, GrowingLayer) else (None, None)
            if kv[0] is None:
                kv = (getattr(layer, "keys", None), getattr(layer, "values", None))
            out += [t for t in kv if t is not None]
        return out

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
        with positions_end(len(self.tokens)):
            out = self.runner(
                input_ids=input_ids,
                cache=self.cache,
                use_cache=self.use_cache,
                logits_to_keep=logits_to_keep,
            )
        return self.call_logits(out, logits_to_keep)

    def call_logits(self, out, n: int) -> torch.Tensor:
        """Count a call of the runner and return the logits of its last n rows: [n, V], cut to
        `vocab_size` and checked finite."""
        return self.counted(out.logits[0, -n:])

    def counted(self, logits: torch.Tensor) -> torch.Tensor:
        """Count a call whose logits [n, V] are these and return them cut to `vocab_size` and
        checked finite."""
        self.calls += 1
        if self.vocab_size is not None:
            logits = logits[:, : self.vocab_size]
        check_finite(logits, self.dtype)
        return logits

    def _split(self) -> tuple[torch.nn.Module, torch.nn.Module]:
        """(body, head) of the runner: a decoder laid out as `.model` and `.lm_head`."""
        body, head = getattr(self.runner, "model", None), getattr(self.runner, "lm_head", None)
        if body is None or head is None:
            raise SpecdecError(
                f"{type(self.model).__name__} has no .model/.lm_head split: "
                "its body and head cannot run apart"
            )
        return body, head

    @torch.inference_mode()
    def hidden(self, ids: list[int]) -> torch.Tensor:
        """Append ids through the body only; return their last hidden states: [n, H].

        `head(hidden(ids))` is what `extend(ids, len(ids))` returns, computed in two calls (the
        same body call; without `invariant`, the head's product may round differently for
        another row count)."""
        if not ids:
            raise ValueError("hidden needs at least one token")
        if not self.use_cache:
            raise SpecdecError("running the body alone needs the KV cache (use_cache=True)")
        if self.cache is None:
            self.reset()
        body, _ = self._split()
        self.tokens.extend(ids)
        input_ids = torch.tensor([ids], dtype=torch.long, device=self.device)  # [1, n]
        with positions_end(len(self.tokens)):
            out = body(input_ids=input_ids, cache=self.cache, use_cache=True)
        self.calls += 1
        return out.last_hidden_state[0]  # [n, H]

    @torch.inference_mode()
    def head(self, hidden: torch.Tensor, head: torch.nn.Module | None = None) -> torch.Tensor:
        """[n, H] hidden states -> [n, V] logits through the LM head (or another `head` over the
        same hidden size, e.g. a pruned one), with the model's final soft-capping. The rows are
        taken as the last n cached positions (as `hidden` returns them)."""
        full = self._split()[1]
        head = head if head is not None else full
        with positions_end(len(self.tokens)):
            logits = head(hidden)
        cfg = self.model.config
        cfg = cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg
        cap = getattr(cfg, "final_logit_softcapping", None)
        if cap is not None:
            logits = torch.tanh(logits / cap) * cap
        if self.vocab_size is not None and head is full:
            logits = logits[:, : self.vocab_size]
        check_finite(logits, self.dtype)
        return logits

    def rollback(self, n_keep: int) -> None:
        """Keep only the first n_keep tokens."""
        if n_keep > len(self.tokens):
            raise ValueError(f"cannot roll back to {n_keep} tokens: only {len(self.tokens)} cached")
        self.keep(n_keep, [])

    def keep(self, start: int, rows: list[int]) -> None:
        """Keep the first `start` cached tokens followed by the given later rows (offsets from
        start, in order: a tree call's accepted path), moved next to them; drop the rest.
        `rollback(n)` is keep(n, []): a crop."""
        same = 0  # rows already in place: [0, 1, ..] move nowhere
        while same < len(rows) and rows[same] == same:
            same += 1
        n_keep, moved = start + same, [start + r for r in rows[same:]]
        drop = len(self.tokens) - n_keep - len(moved)
        if drop == 0:
            return
        if self.cache is not None and moved:
            idx = torch.tensor(moved, dtype=torch.long, device=self.device)  # [m]
            with torch.inference_mode():
                for layer in self.cache.layers:
                    for kv in (layer.keys, layer.values):  # [1, heads, cached, D]: a buffer view
                        if kv is not None:
                            kv[..., n_keep : n_keep + len(moved), :] = kv.index_select(-2, idx)
        self.tokens[n_keep:] = [self.tokens[i] for i in moved]
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
    how = " (--dtype, or the notebooks' dtype parameter)"
    if dtype == torch.float16:
        fix = "float16 overflows in some models (Gemma 3 does): use bfloat16 or float32" + how
    elif dtype == torch.bfloat16:
        fix = "reduced precision can overflow: use float32 where it fits" + how
    else:
        fix = "the weights or inputs are broken: check the checkpoint"
    raise SpecdecError(f"the model produced NaN or infinite logits in {name}; {fix}")
