"""A bigram drafter: the most frequent next token after the last one, chained K times.

Fitted on token ids of the target's tokenizer (the fit split of WikiText-2). An unseen previous
token backs off to the most frequent token overall. Deterministic, so its q is a point mass.
Knows nothing about models or text.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from specdec_lib.core.draft import Draft, Drafter
from specdec_lib.drafters.registry import DraftContext
from specdec_lib.errors import SpecdecError


def top_successors(token_ids: Sequence[int], vocab_size: int, m: int) -> np.ndarray:
    """[V, m] the m most frequent successors of each token in the fit data (ties by lower id),
    -1 where fewer were seen."""
    ids = np.asarray(token_ids, dtype=np.int64)
    if ids.size < 2:
        raise SpecdecError(
            f"a bigram needs at least 2 tokens of fit data, got {ids.size}: check the fit split"
        )
    if ids.min() < 0 or ids.max() >= vocab_size:
        raise SpecdecError(f"fit token ids must lie in [0, {vocab_size}): wrong tokenizer?")
    uniq, counts = np.unique(ids[:-1] * vocab_size + ids[1:], return_counts=True)
    prev, nxt = uniq // vocab_size, uniq % vocab_size
    order = np.lexsort((nxt, -counts, prev))  # by prev, then count desc, then lowest id
    prev, nxt = prev[order], nxt[order]
    first = np.searchsorted(prev, prev, side="left")
    rank = np.arange(prev.size) - first  # rank of each successor within its token
    table = np.full((vocab_size, m), -1, dtype=np.int64)
    keep = rank < m
    table[prev[keep], rank[keep]] = nxt[keep]
    return table


class BigramDrafter(Drafter):
    """Chains the most frequent successor of the last token, as fitted on the fit split."""

    name = "bigram"

    def __init__(self, next_token: np.ndarray, backoff: int):
        self.next_token = next_token  # [V] int64, -1 where the previous token was never seen
        self.backoff = int(backoff)

    @classmethod
    def fit(cls, token_ids: Sequence[int], vocab_size: int) -> BigramDrafter:
        """The successor table of these ids; an unseen token backs off to the most frequent id."""
        table = top_successors(token_ids, vocab_size, 1)[:, 0]  # [V]
        ids = np.asarray(token_ids, dtype=np.int64)
        backoff = int(np.bincount(ids, minlength=vocab_size).argmax())
        return cls(table, backoff)

    def next_of(self, token: int) -> int:
        """The guess after token."""
        t = int(self.next_token[token]) if 0 <= token < self.next_token.size else -1
        return t if t >= 0 else self.backoff

    def propose(self, seq, k, sampling, generator) -> Draft:
        """k tokens, each the table's guess after the one before (from seq's last)."""
        out: list[int] = []
        last = seq[-1]
        for _ in range(k):
            last = self.next_of(last)
            out.append(last)
        return Draft(out)

    def predictor(self):
        """The table's guess after each id."""
        return lambda ids: [self.next_of(t) for t in ids]


def build(args: tuple[()], ctx: DraftContext) -> BigramDrafter:
    """`bigram`: fitted on the fit split."""
    return BigramDrafter.fit(ctx.fit_ids(), ctx.target.vocab_size)
