"""Leviathan et al.'s speedup model for speculative decoding.

a: per-token acceptance probability (i.i.d. model), K: draft length, c: cost of one draft token
relative to one target call. Knows nothing about models or measurements.
"""

from __future__ import annotations

from specdec_lib.errors import SpecdecError


def _check(a: float, k: int, c: float | None = None) -> None:
    if not 0.0 <= a <= 1.0:
        raise SpecdecError(f"acceptance a must be in [0, 1], got {a}")
    if k < 0:
        raise SpecdecError(f"K must be >= 0, got {k}")
    if c is not None and c < 0:
        raise SpecdecError(f"cost ratio c must be >= 0, got {c}")


def expected_tokens(a: float, k: int) -> float:
    """E[tokens per target call] = (1 - a^(K+1)) / (1 - a); K + 1 at a = 1."""
    _check(a, k)
    if a == 1.0:
        return float(k + 1)
    return (1.0 - a ** (k + 1)) / (1.0 - a)


def expected_speedup(a: float, k: int, c: float) -> float:
    """Walltime improvement (1 - a^(K+1)) / ((1 - a)(K c + 1)) over autoregressive decoding."""
    _check(a, k, c)
    return expected_tokens(a, k) / (k * c + 1.0)


def best_k(a: float, c: float, k_max: int = 16) -> int:
    """The K in 1..k_max with the highest expected speedup (the smallest on ties)."""
    _check(a, 1, c)
    return max(range(1, k_max + 1), key=lambda k: (expected_speedup(a, k, c), -k))


def acceptance_from_rate(mean_tokens_per_call: float, k: int) -> float:
    """Invert expected_tokens: the a whose (1 - a^(K+1)) / (1 - a) equals the measured mean."""
    if not 1.0 <= mean_tokens_per_call <= k + 1:
        raise SpecdecError(
            f"mean tokens per call must be in [1, K + 1], got {mean_tokens_per_call}"
        )
    lo, hi = 0.0, 1.0
    for _ in range(100):
        mid = (lo + hi) / 2
        if expected_tokens(mid, k) < mean_tokens_per_call:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def rate_from_a(a: float, k: int) -> float:
    """The pooled acceptance rate accepted / proposed that i.i.d. per-token acceptance a gives
    when every call drafts K: E[accepted] / K = (expected_tokens(a, K) - 1) / K."""
    if k < 1:
        raise SpecdecError(f"K must be >= 1 for an acceptance rate, got {k}")
    return (expected_tokens(a, k) - 1.0) / k


def a_from_rate(rate: float, k: int) -> float:
    """Invert rate_from_a: the per-token a whose pooled acceptance rate is `rate` (in [0, 1])."""
    if not 0.0 <= rate <= 1.0:
        raise SpecdecError(f"an acceptance rate must be in [0, 1], got {rate}")
    return acceptance_from_rate(min(1.0 + k * rate, k + 1.0), k)
