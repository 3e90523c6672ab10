"""A causal LM with its own KV cache: extend by some tokens, roll back to a prefix.

`CachedLM` keeps the ids whose keys and values are cached (`tokens`), so rollback is bookkeeping
plus `DynamicCache.crop(-n)`. The cache is a `DynamicCache()` built without the model's config:
every layer is then a full `DynamicLayer` that keeps all tokens, so rollback stays exact after a
sliding-window layer (Gemma 3: 512 tokens) would have dropped old keys; the model still applies
its sliding-window mask from positions. With `use_cache=False` every call recomputes the whole
sequence, which is how the "no KV cache" experiments are run.

Knows nothing about sampling, drafters or the verifier.
"""

from __future__ import annotations

import torch
from transformers import DynamicCache

from specdec_lib.errors import SpecdecError


class CachedLM:
    """One sequence (batch 1) through `model`, whose forward accepts `input_ids`, `cache`,
    `use_cache` and `logits_to_keep` and returns `.logits` [1, seq, V]."""

    def __init__(
        self, model: torch.nn.Module, *, use_cache: bool = True, vocab_size: int | None = None
    ):
        self.model = model
        self.use_cache = use_cache
        self.vocab_size = (
            vocab_size  # slice logits to this width (a draft sharing the target's ids)
        )
        self.device = next(model.parameters()).device
        self.dtype = next(model.parameters()).dtype
        self.tokens: list[int] = []
        self.cache: DynamicCache | None = None
        self.calls = 0

    def reset(self) -> None:
        self.tokens = []
        self.cache = DynamicCache() if self.use_cache else None

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
        out = self.model(
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
    """Stop on NaN/inf logits instead of emitting garbage tokens."""
    if bool(torch.isfinite(logits).all()):
        return
    name = str(dtype).removeprefix("torch.")
    if dtype in (torch.float16, torch.bfloat16):
        fix = "reduced precision can overflow (Gemma does in float16): rerun with --dtype float32"
        if dtype == torch.float16:
            fix += " or bfloat16"
    else:
        fix = "the weights or inputs are broken: check the checkpoint"
    raise SpecdecError(f"the model produced NaN or infinite logits in {name}; {fix}")
