"""Statistics over prompts: medians with bootstrap CIs, paired speedups, token identity,
repetition. Knows nothing about models or decoding.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def bootstrap_ci(
    values: Sequence[float], stat=np.median, n_boot: int = 2000, level: float = 0.95, seed: int = 0
) -> tuple[float, float, float]:
    """(statistic, low, high): a percentile bootstrap over the values (prompts)."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return (float("nan"),) * 3
    rng = np.random.default_rng(seed)
    boots = stat(x[rng.integers(0, x.size, size=(n_boot, x.size))], axis=1)
    lo, hi = np.quantile(boots, [(1 - level) / 2, (1 + level) / 2])
    return float(stat(x)), float(lo), float(hi)


def paired_speedup(
    baseline_s: Sequence[float], method_s: Sequence[float], **kw
) -> tuple[float, float, float]:
    """Speedup as the ratio of total times, with a bootstrap CI that resamples prompts in pairs."""
    b = np.asarray(baseline_s, dtype=float)
    m = np.asarray(method_s, dtype=float)
    if b.shape != m.shape or b.size == 0:
        raise ValueError("paired speedup needs equally many baseline and method times")
    rng = np.random.default_rng(kw.get("seed", 0))
    idx = rng.integers(0, b.size, size=(kw.get("n_boot", 2000), b.size))
    boots = b[idx].sum(1) / m[idx].sum(1)
    level = kw.get("level", 0.95)
    lo, hi = np.quantile(boots, [(1 - level) / 2, (1 + level) / 2])
    return float(b.sum() / m.sum()), float(lo), float(hi)


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
