"""Leviathan et al.'s speedup model for speculative decoding.

a: per-token acceptance probability (i.i.d. model), K: draft length, c: cost of one draft token
relative to one target call. Knows nothing about models or measurements.
"""

from __future__ import annotations

from collections.abc import Sequence

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


def best_k(a: float, c: float, k_max: int | None = None) -> int:
    """The K >= 1 with the highest expected speedup (the smallest on ties), searched up to k_max
    when given, else exactly. S(K + 1) > S(K) exactly when g(K) = a^(K+1) (Kc + 1) - c E(K) > 0
    (E(K) the expected tokens), and g(K + 1) - g(K) = -a^(K+1) (1 - a) ((K + 1) c + 1) < 0 for
    a < 1: S rises to one peak and then falls, so the first K whose successor is no better is
    the best. Where S never stops rising (c = 0 with a > 0, or a = 1 with c < 1) there is no
    best K, and it says so rather than search for ever."""
    _check(a, 1, c)
    if k_max is not None:
        return max(range(1, k_max + 1), key=lambda k: (expected_speedup(a, k, c), -k))
    if (c == 0.0 and a > 0.0) or (a == 1.0 and c < 1.0):
        raise SpecdecError(f"with a = {a} and c = {c} the speedup grows with K without bound")
    k = 1
    while expected_speedup(a, k + 1, c) > expected_speedup(a, k, c):
        k += 1
    return k


def fitted_acceptance(accepted: Sequence[int], proposed: Sequence[int]) -> float | None:
    """The i.i.d. model's per-token acceptance a fitted by maximum likelihood to per-call counts:
    accepted drafts / draft positions reached. A call that proposed d drafts and accepted n < d
    reached n + 1 positions (n acceptances, then the rejection); one that accepted all d reached
    d and saw no rejection, whether d is the full K or a last call cut short by the token cap
    (which must not count as a full draft that failed at d + 1). Calls that proposed nothing
    carry no information. None when no position was reached."""
    if len(accepted) != len(proposed):
        raise SpecdecError(f"{len(accepted)} accepted counts for {len(proposed)} calls")
    if any(not 0 <= n <= d for n, d in zip(accepted, proposed, strict=True)):
        raise SpecdecError("a call cannot accept more drafts than it proposed, or fewer than 0")
    reached = sum(min(d, n + 1) for n, d in zip(accepted, proposed, strict=True))
    return sum(accepted) / reached if reached else None


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
