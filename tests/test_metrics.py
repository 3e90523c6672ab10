"""Statistics over prompts: bootstrap CIs, paired speedups, divergence and repetition."""

from __future__ import annotations

import math

import numpy as np
import pytest

from specdec_lib.metrics import (
    bootstrap_ci,
    first_divergence,
    paired_speedup,
    repeated_ngram_share,
)


def test_bootstrap_ci_contains_the_statistic():
    rng = np.random.default_rng(0)
    for stat in (np.median, np.mean):
        for n in (5, 30, 200):
            x = rng.lognormal(size=n)
            value, lo, hi = bootstrap_ci(x, stat=stat)
            assert value == pytest.approx(float(stat(x)))
            assert lo <= value <= hi


def test_bootstrap_ci_narrows_with_more_data():
    rng = np.random.default_rng(1)
    widths = []
    for n in (20, 80, 320):
        x = rng.normal(size=n)
        _, lo, hi = bootstrap_ci(x, stat=np.mean)
        widths.append(hi - lo)
        # a 95% interval for a mean is about 2 * 1.96 standard errors wide
        assert hi - lo == pytest.approx(2 * 1.96 * x.std() / n**0.5, rel=0.25)
    assert widths[0] > widths[1] > widths[2]


def test_bootstrap_ci_is_seeded_and_wider_at_higher_level():
    x = np.random.default_rng(2).normal(size=50)
    assert bootstrap_ci(x, seed=3) == bootstrap_ci(x, seed=3)
    _, lo90, hi90 = bootstrap_ci(x, level=0.90)
    _, lo99, hi99 = bootstrap_ci(x, level=0.99)
    assert lo99 <= lo90 and hi90 <= hi99


def test_bootstrap_ci_ignores_non_finite_values_and_handles_empty_input():
    assert bootstrap_ci([1.0, float("nan"), 3.0, float("inf")], stat=np.mean)[0] == 2.0
    assert all(math.isnan(v) for v in bootstrap_ci([]))
    assert all(math.isnan(v) for v in bootstrap_ci([float("nan")]))
    assert bootstrap_ci([4.0, 4.0, 4.0]) == (4.0, 4.0, 4.0)


def test_paired_speedup_is_the_ratio_of_total_times():
    baseline = [1.0, 10.0, 4.0]
    method = [0.5, 8.0, 1.0]
    value, lo, hi = paired_speedup(baseline, method)
    assert value == pytest.approx(15.0 / 9.5)
    # not the mean of per-prompt ratios (2.0, 1.25, 4.0)
    assert value != pytest.approx(np.mean([2.0, 1.25, 4.0]))
    assert lo <= value <= hi


def test_paired_speedup_ci_is_tight_for_a_constant_ratio():
    baseline = np.random.default_rng(4).uniform(1, 5, size=40)
    value, lo, hi = paired_speedup(baseline, baseline / 2)
    assert value == pytest.approx(2.0) and lo == pytest.approx(2.0) and hi == pytest.approx(2.0)


@pytest.mark.parametrize(("b", "m"), [([1.0, 2.0], [1.0]), ([], [])])
def test_paired_speedup_needs_equal_nonempty_pairs(b, m):
    with pytest.raises(ValueError):
        paired_speedup(b, m)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ([1, 2, 3], [1, 2, 3], None),
        ([1, 2, 3], [1, 9, 3], 1),
        ([1, 2, 3], [0, 2, 3], 0),
        ([1, 2, 3], [1, 2], 2),
        ([1, 2], [1, 2, 3, 4], 2),
        ([], [5], 0),
        ([], [], None),
    ],
)
def test_first_divergence(a, b, expected):
    assert first_divergence(a, b) == expected


def test_repeated_ngram_share_is_zero_without_repetition():
    assert repeated_ngram_share(list(range(20)), n=2) == 0.0
    assert repeated_ngram_share([5, 6, 7], n=2, context=[1, 2, 3]) == 0.0


def test_repeated_ngram_share_is_one_for_a_loop_seen_in_the_context():
    assert repeated_ngram_share([1, 2, 3, 1, 2, 3], n=3, context=[1, 2, 3, 1, 2, 3]) == 1.0
    assert repeated_ngram_share([4] * 10, n=2, context=[4, 4]) == 1.0


def test_repeated_ngram_share_counts_generated_ngrams_exactly():
    # 1 2 3 1 2 3 1 2 3: trigrams 123 231 312 are new, the next four repeat them
    assert repeated_ngram_share([1, 2, 3] * 3, n=3) == pytest.approx(4 / 7)
    # n-grams that straddle the context boundary count as generated, and can repeat context
    # full = 1 2 | 1 2 9: generated bigrams (2,1), (1,2), (2,9); only (1,2) was seen before
    assert repeated_ngram_share([1, 2, 9], n=2, context=[1, 2]) == pytest.approx(1 / 3)
    assert repeated_ngram_share([7] * 6, n=4) == pytest.approx(2 / 3)


def test_repeated_ngram_share_of_too_short_output_is_zero():
    assert repeated_ngram_share([1, 2], n=4) == 0.0
    assert repeated_ngram_share([], n=2, context=[1, 2, 3]) == 0.0
