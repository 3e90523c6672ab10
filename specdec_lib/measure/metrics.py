"""Per-prompt measures of generated tokens: token identity, repetition. Knows nothing about models
or decoding; intervals over prompts live in `specdec_study.analysis.stats`.
"""

from __future__ import annotations

from collections.abc import Sequence


def first_divergence(a: Sequence[int], b: Sequence[int]) -> int | None:
    """Index of the first position where two token lists differ (length mismatch counts)."""
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def repeated_ngram_share(tokens: Sequence[int], n: int = 4, context: Sequence[int] = ()) -> float:
    """Share of the generated n-grams that already occurred earlier in context + tokens.

    High values mean the continuation repeats itself, which prompt lookup feeds on.
    """
    full = list(context) + list(tokens)
    start = len(context)
    seen: set[tuple[int, ...]] = set()
    for i in range(0, max(start - n + 1, 0)):
        seen.add(tuple(full[i : i + n]))
    hits = total = 0
    for i in range(max(start - n + 1, 0), len(full) - n + 1):
        gram = tuple(full[i : i + n])
        if i + n > start:  # the n-gram ends inside the generated part
            total += 1
            hits += gram in seen
        seen.add(gram)
    return hits / total if total else 0.0
