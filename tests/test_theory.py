"""Leviathan et al.'s speedup model: known values, monotonicity and the inverse."""

from __future__ import annotations

import pytest

from specdec_lib.analysis.theory import (
    acceptance_from_rate,
    best_k,
    expected_speedup,
    expected_tokens,
)
from specdec_lib.errors import SpecdecError

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
        ks = [best_k(a, c) for c in costs]
        assert ks == sorted(ks, reverse=True), (a, ks)


def test_best_k_extremes_and_optimality():
    assert best_k(0.9, 0.0) == 16  # free drafts and high acceptance: draft as far as allowed
    assert best_k(0.9, 0.0, k_max=5) == 5
    assert best_k(0.0, 0.1) == 1  # nothing is accepted: the smallest K
    assert best_k(1.0, 0.0) == 16
    for a in (0.3, 0.6, 0.8):
        for c in (0.05, 0.2):
            k = best_k(a, c)
            assert all(expected_speedup(a, k, c) >= expected_speedup(a, j, c) for j in range(1, 17))


def test_best_k_grows_with_acceptance():
    for c in (0.02, 0.1, 0.3):
        ks = [best_k(a, c) for a in A_GRID]
        assert ks == sorted(ks), (c, ks)


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
    from specdec_lib.analysis.theory import a_from_rate, rate_from_a

    for a in (0.0, 0.3, 0.7, 0.95):
        assert rate_from_a(a, k) == pytest.approx((expected_tokens(a, k) - 1) / k)
        assert a_from_rate(rate_from_a(a, k), k) == pytest.approx(a, abs=1e-9)
    assert rate_from_a(1.0, k) == 1.0
    with pytest.raises(SpecdecError):
        a_from_rate(1.5, k)
