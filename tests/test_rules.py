"""The verdict rules: every rule reaches every outcome on synthetic intervals, the outcomes never
overlap, and missing numbers are inconclusive, never supported."""

from __future__ import annotations

import math

import numpy as np
import pytest

from specdec_lib.analysis import rules
from specdec_lib.analysis.rules import (
    INCONCLUSIVE,
    NOT_SUPPORTED,
    SUPPORTED,
    Interval,
    classify,
    h1_rule,
    h2_rule,
    h3_rule,
    h4_rule,
)


def iv(lo: float, hi: float) -> Interval:
    return Interval((lo + hi) / 2, lo, hi, 40)


CASES = {
    "H1": (
        h1_rule,
        {
            SUPPORTED: iv(1.5, 2.8),
            NOT_SUPPORTED: iv(0.9, 1.05),
            INCONCLUSIVE: iv(1.0, 1.4),
        },
    ),
    "H3": (
        h3_rule,
        {
            SUPPORTED: iv(-0.20, -0.08),
            NOT_SUPPORTED: iv(-0.04, 0.02),
            INCONCLUSIVE: iv(-0.088, -0.008),  # the old H3 interval: a fall, but not surely 5 pts
        },
    ),
    "H4": (
        h4_rule,
        {
            SUPPORTED: iv(-0.03, 0.01),
            NOT_SUPPORTED: iv(-0.15, -0.06),
            INCONCLUSIVE: iv(-0.09, 0.0),
        },
    ),
}


@pytest.mark.parametrize("key", sorted(CASES))
def test_each_rule_reaches_every_outcome(key):
    rule, cases = CASES[key]
    for want, interval in cases.items():
        assert rule(interval) == want, (key, interval)


def test_h2_reaches_every_outcome_and_needs_the_published_arithmetic():
    assert h2_rule(True, iv(1.3, 1.6)) == SUPPORTED
    assert h2_rule(True, iv(0.95, 1.05)) == NOT_SUPPORTED
    assert h2_rule(True, iv(1.0, 1.2)) == INCONCLUSIVE
    assert h2_rule(False, iv(1.3, 1.6)) == NOT_SUPPORTED


def test_the_old_h3_overlap_cannot_happen():
    """[-8.8, -0.8] lies below zero AND above the published -14.85: the old code called it
    supported because it checked that first. Now exactly one label applies, by construction."""
    old = iv(-0.088, -0.008)
    assert h3_rule(old) == INCONCLUSIVE


@pytest.mark.parametrize("side", ["above", "below"])
def test_outcomes_partition_random_intervals(side):
    rng = np.random.default_rng(0)
    t = 0.3
    for _ in range(5000):
        a, b = np.sort(rng.normal(t, 0.5, 2))
        q = iv(float(a), float(b))
        label = classify(q, t, side)
        preds = {
            SUPPORTED: (q.lo > t) if side == "above" else (q.hi < t),
            NOT_SUPPORTED: (q.hi < t) if side == "above" else (q.lo > t),
            INCONCLUSIVE: q.lo <= t <= q.hi,
        }
        assert sum(preds.values()) == 1  # the three conditions are disjoint and exhaustive
        assert preds[label]


def test_missing_or_malformed_numbers_are_inconclusive():
    for q in (
        Interval(math.nan, math.nan, math.nan),
        Interval(-0.2, math.nan, -0.1),
        Interval(0.0, 0.5, 0.1),  # lo > hi
        Interval.of(None),
        Interval.of({"value": 2.0}),
    ):
        for rule in (h1_rule, h3_rule, h4_rule):
            assert rule(q) == INCONCLUSIVE


def test_interval_of_reads_result_dicts():
    q = Interval.of({"value": 1.5, "ci_low": 1.2, "ci_high": 1.9, "n_prompts": 20})
    assert (q.value, q.lo, q.hi, q.n) == (1.5, 1.2, 1.9, 20)
    assert Interval.of({"mean": 0.4, "ci_low": 0.3, "ci_high": 0.5}, n=40).n == 40


def test_implied_acceptance_is_the_books_formula():
    assert rules.implied_acceptance(1.0) == 1.0
    assert rules.implied_acceptance(0.0) == 0.0
    a, k = 0.8, 4
    tau = (1 - a ** (k + 1)) / (1 - a)
    assert rules.implied_acceptance(a, k) == pytest.approx((tau - 1) / k)
    assert math.isnan(rules.implied_acceptance(math.nan))


def test_every_rule_has_its_text_with_its_threshold():
    assert set(rules.RULES) == {"H1", "H2", "H3", "H4"}
    assert f"{rules.H1_EXTRA_GROWTH:.2f}" in rules.RULES["H1"]
    assert f"{100 * rules.MATERIAL_FALL:.0f} points" in rules.RULES["H3"]
