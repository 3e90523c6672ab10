"""Prompt lookup: find the last n tokens earlier in the sequence and propose what followed.

Tries n = max_ngram down to min_ngram and takes the most recent match. The copy may run into the
tokens it is proposing (an LZ77-style overlapping copy), so a loop of period P yields K tokens even
when P < K. With a fallback drafter (the bigram, say) the draft is topped up to K tokens when no
match gives enough. Deterministic, so its q is a point mass. Knows nothing about models.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from specdec_lib.core.draft import Draft, Drafter
from specdec_lib.drafters.base import Wrapping
from specdec_lib.drafters.registry import DraftContext
from specdec_lib.errors import SpecdecError


def match_starts(seq: np.ndarray, n: int) -> np.ndarray:
    """Starts of every earlier occurrence of seq[-n:], ascending (one may overlap the suffix)."""
    if seq.size <= n:
        return np.empty(0, dtype=np.int64)
    windows = sliding_window_view(seq[:-1], n)  # [len - n, n]; window j is seq[j : j + n]
    return np.flatnonzero((windows == seq[-n:]).all(axis=1))


def find_match(seq: np.ndarray, n: int) -> int:
    """Start of the most recent earlier occurrence of seq[-n:], or -1."""
    hits = match_starts(seq, n)
    return int(hits[-1]) if hits.size else -1


def copy_from(seq: list[int], start: int, k: int) -> list[int]:
    """k tokens copied from seq[start:] (start < len(seq)); a copy that reaches the end runs into
    itself (LZ77-style), so a loop of period P = len(seq) - start yields k tokens even when
    P < k."""
    period = len(seq) - start
    return [seq[start + i % period] for i in range(k)]


class NgramDrafter(Wrapping):
    """Copies what followed the latest earlier occurrence of the longest matching suffix."""

    name = "ngram"

    def __init__(self, max_ngram: int = 3, min_ngram: int = 1, fallback: Drafter | None = None):
        if not 1 <= min_ngram <= max_ngram:
            raise SpecdecError(
                f"n-gram sizes need 1 <= min_ngram <= max_ngram, got {min_ngram}, {max_ngram}"
            )
        self.max_ngram, self.min_ngram, self.fallback = max_ngram, min_ngram, fallback

    def wrapped(self) -> Drafter | None:
        """The fallback drafter (None: none)."""
        return self.fallback

    def lookup(self, seq: list[int], k: int) -> list[int]:
        """Up to k tokens copied after the longest suffix match (empty: none)."""
        arr = np.asarray(seq, dtype=np.int64)
        for n in range(self.max_ngram, self.min_ngram - 1, -1):
            j = find_match(arr, n)
            if j >= 0:  # j + n < len(seq): the match ends before the current suffix does
                return copy_from(seq, j + n, k)
        return []

    def propose(self, seq, k, sampling, generator) -> Draft:
        """The copied tokens, topped up to k by the fallback (which must be deterministic)."""
        tokens = self.lookup(seq, k)
        if self.fallback is not None and len(tokens) < k:
            extra = self.fallback.propose(seq + tokens, k - len(tokens), sampling, generator)
            if extra.q is not None:
                raise SpecdecError(
                    "an n-gram fallback must be deterministic (a point-mass drafter)"
                )
            tokens += extra.tokens
        return Draft(tokens)

    def predictor(self):
        """The first copied token after each prefix (-1: no match); None with a fallback."""
        if self.fallback is not None:
            return None
        return lambda ids: [(self.lookup(ids[: j + 1], 1) or [-1])[0] for j in range(len(ids))]


def build(args: tuple[int, bool], ctx: DraftContext) -> NgramDrafter:
    """`ngram[:MAX[+bigram]]` and `ngram+bigram[:MAX]`: with a bigram fallback if args say so."""
    from specdec_lib.drafters.bigram import BigramDrafter

    max_ngram, with_bigram = args
    fallback = BigramDrafter.fit(ctx.fit_ids(), ctx.target.vocab_size) if with_bigram else None
    return NgramDrafter(max_ngram=max_ngram, fallback=fallback)
