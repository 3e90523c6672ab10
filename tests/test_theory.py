"""Leviathan et al.'s speedup model: known values, monotonicity and the inverse."""

from __future__ import annotations

import pytest

from specdec_lib.errors import SpecdecError
from specdec_study.analysis.theory import (
    acceptance_from_rate,
    best_k,
    expected_speedup,
    expected_tokens,
    fitted_acceptance,
)

A_GRID = [i / 20 for i in range(21)]


@pytest.mark.parametrize("k", [0, 1, 4, 8, 64])
def test_expected_tokens_at_the_extremes(k):
    assert expected_tokens(0.0, k) == 1.0  # every draft rejected: only the target's token
    assert expected_tokens(1.0, k) == k + 1  # every draft accepted, plus the bonus


def test_expected_tokens_known_values():
    assert expected_tokens(0.5, 4) == pytest.approx(1.9375)  # 1 + 1/2 + 1/4 + 1/8 + 1/16
    assert expected_tokens(0.8, 1) == pytest.approx(1.8)
    assert expected_tokens(0.9, 3) == pytest.approx(1 + 0.9 + 0.81 + 0.729)


def test_expected_tokens_is_the_geometric_sum():
    for a in A_GRID:
        for k in range(0, 9):
            assert expected_tokens(a, k) == pytest.approx(sum(a**i for i in range(k + 1)))


def test_expected_tokens_grows_with_a_and_k():
    for k in range(1, 9):
        values = [expected_tokens(a, k) for a in A_GRID]
        assert values == sorted(values)
    for a in A_GRID[1:]:
        values = [expected_tokens(a, k) for k in range(9)]
        assert all(x < y for x, y in zip(values, values[1:], strict=False))


def test_expected_speedup_known_values():
    assert expected_speedup(0.5, 4, 0.0) == pytest.approx(1.9375)  # free drafts
    assert expected_speedup(0.5, 4, 0.25) == pytest.approx(1.9375 / 2)
    assert expected_speedup(0.0, 3, 0.1) == pytest.approx(1 / 1.3)  # only overhead
    assert expected_speedup(1.0, 7, 0.0) == 8.0


def test_speedup_exceeds_one_iff_a_exceeds_c_at_k1():
    for a in A_GRID:
        for c in [i / 20 + 0.025 for i in range(20)]:  # never equal to a grid a
            assert (expected_speedup(a, 1, c) > 1) == (a > c), (a, c)


def test_best_k_decreases_or_stays_as_drafting_gets_dearer():
    costs = [0.0, 0.01, 0.05, 0.1, 0.2, 0.4, 0.8, 1.5]
    for a in A_GRID:
        ks = [best_k(a, c, k_max=16) for c in costs]
        assert ks == sorted(ks, reverse=True), (a, ks)


def test_best_k_extremes_and_optimality():
    assert best_k(0.9, 0.0, k_max=16) == 16  # free drafts: draft as far as allowed
    assert best_k(0.9, 0.0, k_max=5) == 5
    assert best_k(0.0, 0.1) == 1  # nothing is accepted: the smallest K
    assert best_k(1.0, 0.0, k_max=16) == 16
    for a in (0.3, 0.6, 0.8, 0.9, 0.97):
        for c in (0.01, 0.02, 0.05, 0.2):
            k = best_k(a, c)
            s = expected_speedup(a, k, c)
            assert all(s >= expected_speedup(a, j, c) for j in range(1, 400))


def test_the_unbounded_search_finds_an_optimum_beyond_sixteen():
    """c = 0.02, a = 0.9: S peaks at K = 19 (6.37x), past the old search's stop at 16 (the
    planted bug: a search that stops at 16 returns 16)."""
    assert best_k(0.9, 0.02) == 19
    assert expected_speedup(0.9, 19, 0.02) == pytest.approx(6.3654, abs=1e-4)
    assert expected_speedup(0.9, 19, 0.02) > expected_speedup(0.9, 16, 0.02)
    assert best_k(0.9, 0.02, k_max=16) == 16  # a bound, when given, is the caller's


@pytest.mark.parametrize(("a", "c"), [(0.5, 0.0), (1.0, 0.5), (1.0, 0.0)])
def test_best_k_without_a_peak_is_refused(a, c):
    with pytest.raises(SpecdecError, match="without bound"):
        best_k(a, c)


def test_best_k_grows_with_acceptance():
    for c in (0.02, 0.1, 0.3):
        ks = [best_k(a, c, k_max=64) for a in A_GRID]
        assert ks == sorted(ks), (c, ks)


def test_the_fit_counts_a_cut_short_last_call_as_what_it_drafted():
    """Three full calls of K = 4 all accepted, then a last call cut short by the token cap that
    proposed 2 and accepted both: no draft was ever rejected, so a = 1. The planted bug (the
    mean accepted length inverted at K = 4, as if every call drafted 4) gives a < 1 although
    every draft was accepted."""
    assert fitted_acceptance([4, 4, 4, 2], [4, 4, 4, 2]) == 1.0
    assert fitted_acceptance([4, 4, 4, 0], [4, 4, 4, 0]) == 1.0  # a call that drafted nothing
    # a rejection at the first position of each of two calls, 2 + 3 accepted elsewhere:
    # reached = 3 (2 accepted + rejection) + 1 + 1 + 3 (all of a 3-draft call) = 8
    assert fitted_acceptance([2, 0, 0, 3], [4, 4, 4, 3]) == pytest.approx(5 / 8)
    assert fitted_acceptance([], []) is None
    with pytest.raises(SpecdecError):
        fitted_acceptance([3], [2])


@pytest.mark.parametrize("k", [1, 2, 4, 8])
def test_acceptance_from_rate_inverts_expected_tokens(k):
    for a in A_GRID[:-1]:
        assert acceptance_from_rate(expected_tokens(a, k), k) == pytest.approx(a, abs=1e-12)
    assert acceptance_from_rate(1.0, k) == pytest.approx(0.0, abs=1e-12)
    # (1 - a^(K+1)) / (1 - a) loses precision as a -> 1, so the top end is only good to ~1e-9
    assert acceptance_from_rate(k + 1.0, k) == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize("mean", [0.99, 5.01])
def test_acceptance_from_rate_rejects_impossible_means(mean):
    with pytest.raises(SpecdecError):
        acceptance_from_rate(mean, 4)


@pytest.mark.parametrize(
    "call",
    [
        lambda: expected_tokens(-0.1, 2),
        lambda: expected_tokens(1.1, 2),
        lambda: expected_tokens(0.5, -1),
        lambda: expected_speedup(0.5, 2, -0.1),
        lambda: best_k(0.5, -1.0),
    ],
)
def test_theory_rejects_out_of_range_inputs(call):
    with pytest.raises(SpecdecError):
        call()


@pytest.mark.parametrize("k", [1, 4, 8])
def test_a_from_rate_inverts_the_pooled_acceptance_rate(k):
    """The book's a from a pooled accepted/proposed rate is the same bisection as
    acceptance_from_rate: rate = (expected_tokens(a, K) - 1) / K."""
    from specdec_study.analysis.theory import a_from_rate, rate_from_a

    for a in (0.0, 0.3, 0.7, 0.95):
        assert rate_from_a(a, k) == pytest.approx((expected_tokens(a, k) - 1) / k)
        assert a_from_rate(rate_from_a(a, k), k) == pytest.approx(a, abs=1e-9)
    assert rate_from_a(1.0, k) == 1.0
    with pytest.raises(SpecdecError):
        a_from_rate(1.5, k)


# ------------------------------------------------------------------ against independent numbers
# The tests above check the formulas partly against their own expressions. Here the numbers come
# from elsewhere: the distribution of one call written out by hand, closed-form inverses, and a
# seeded Monte Carlo of the chain itself (draft K, accept each with probability a until the first
# rejection, then the target adds one token).


def test_one_call_at_k2_a_half_by_hand():
    """K = 2, a = 1/2, one call: accepted n = 0 with P 1/2 (first draft rejected), n = 1 with
    P 1/2 x 1/2 = 1/4, n = 2 with P 1/2 x 1/2 = 1/4. E[n] = 0 x 1/2 + 1 x 1/4 + 2 x 1/4 = 3/4;
    tokens per call E[n + 1] = 7/4; pooled rate E[n] / K = 3/8; with drafts at c = 1/4 of a
    target call, a call costs 2 x 1/4 + 1 = 3/2, so the speedup is (7/4) / (3/2) = 7/6.
    Catches: a^K for a^(K+1) (gives 3/2 tokens), the bonus token dropped or counted in the rate
    (rate E[n + 1] / K = 7/8), K + 1 for K in the rate's denominator (1/4), the draft cost
    per call for per token (7/4 / 5/4)."""
    from specdec_study.analysis.theory import a_from_rate, rate_from_a

    assert expected_tokens(0.5, 2) == pytest.approx(7 / 4)
    assert rate_from_a(0.5, 2) == pytest.approx(3 / 8)
    assert expected_speedup(0.5, 2, 0.25) == pytest.approx(7 / 6)
    assert a_from_rate(3 / 8, 2) == pytest.approx(0.5, abs=1e-9)


@pytest.mark.parametrize("rate", [0.0, 0.1, 0.375, 0.6, 0.9])
def test_a_from_rate_matches_the_closed_form_at_k2(rate):
    """At K = 2 the pooled rate is r = (a + a^2) / 2, so a = (sqrt(1 + 8 r) - 1) / 2 (the root
    in [0, 1]); at K = 1 it is r = a. Catches: a bisection that stops early or inverts the wrong
    function (tokens per call instead of the pooled rate)."""
    from specdec_study.analysis.theory import a_from_rate

    assert a_from_rate(rate, 2) == pytest.approx(((1 + 8 * rate) ** 0.5 - 1) / 2, abs=1e-9)
    assert a_from_rate(rate, 1) == pytest.approx(rate, abs=1e-9)


def test_best_k_by_hand_at_a_half_and_c_a_tenth():
    """a = 1/2, c = 1/10: speedup(K) = (2 - 2^-K) / (1 + K / 10):
    K = 1: 1.5 / 1.1 = 1.364; K = 2: 1.75 / 1.2 = 1.458; K = 3: 1.875 / 1.3 = 1.442;
    K = 4: 1.9375 / 1.4 = 1.384, falling after. Best K = 2.
    Catches: argmax over the wrong range (0-based), ties or order reversed (the largest K)."""
    assert best_k(0.5, 0.1) == 2


def simulate_calls(a: float, k: int, calls: int, seed: int) -> list[int]:
    """Accepted drafts per call of the i.i.d. chain: each of K drafts accepted with probability
    a, stopping at the first rejection (a stdlib PRNG: nothing shared with the code under test)."""
    import random

    rng = random.Random(seed)
    out = []
    for _ in range(calls):
        n = 0
        while n < k and rng.random() < a:
            n += 1
        out.append(n)
    return out


@pytest.mark.parametrize(("a", "k"), [(0.3, 1), (0.5, 2), (0.7, 4), (0.9, 8)])
def test_formulas_match_a_seeded_simulation_of_the_chain(a, k):
    """Tokens per call, the pooled rate, the implied rate of analysis.rules (an independent
    implementation of the same quantity) and the speedup at c = 0.2 (simulated as tokens over
    cost, a call costing K c + 1) against 40 000 simulated calls. The tolerances are 5 standard
    errors or more (the per-call count is bounded by K). Catches: an off-by-one power or
    denominator, the bonus token misplaced, a cost model per token instead of per call."""
    from specdec_study.analysis.rules import implied_acceptance
    from specdec_study.analysis.theory import rate_from_a

    calls = 40_000
    accepted = simulate_calls(a, k, calls, seed=1000 + k)
    tokens = sum(n + 1 for n in accepted) / calls
    rate = sum(accepted) / (calls * k)
    se_tokens = k / 2 / calls**0.5  # the count lies in [0, K]: its sd is at most K / 2
    assert expected_tokens(a, k) == pytest.approx(tokens, abs=5 * se_tokens)
    assert rate_from_a(a, k) == pytest.approx(rate, abs=5 * se_tokens / k)
    assert implied_acceptance(a, k) == pytest.approx(rate, abs=5 * se_tokens / k)
    c = 0.2
    assert expected_speedup(a, k, c) == pytest.approx(tokens / (k * c + 1), abs=5 * se_tokens)
