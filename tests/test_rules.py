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
    Quantity,
    classify,
    h1_rule,
    h2_rule,
    h3_rule,
    h4_rule,
)


def iv(lo: float, hi: float) -> Quantity:
    return Quantity((lo + hi) / 2, lo, hi, 40)


CASES = {
    "H1": (
        h1_rule,
        {
            SUPPORTED: iv(1.5, 2.8),
            NOT_SUPPORTED: iv(0.9, 1.05),
            INCONCLUSIVE: iv(1.0, 1.4),
        },
    ),
    "H3": (  # tokens per call, context 100 / 10; material fall below 0.95
        h3_rule,
        {
            SUPPORTED: iv(0.80, 0.93),  # the published 0.87 inside it
            NOT_SUPPORTED: iv(0.96, 1.04),
            INCONCLUSIVE: iv(0.90, 0.99),
        },
    ),
    "H4": (
        h4_rule,
        {
            SUPPORTED: iv(0.97, 1.02),
            NOT_SUPPORTED: iv(0.80, 0.92),
            INCONCLUSIVE: iv(0.91, 1.0),
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


def test_h3_and_h4_take_opposite_sides_of_one_threshold():
    """One same-prompt ratio cannot make both 'a material fall' (H3 supported) and 'no material
    fall' (H4 supported): planted bug, H4 reading the threshold's other side."""
    for q in (iv(0.80, 0.93), iv(0.96, 1.04), iv(0.90, 0.99)):
        h3, h4 = h3_rule(q), h4_rule(q)
        assert (h3 == SUPPORTED) == (h4 == NOT_SUPPORTED)
        assert (h3 == INCONCLUSIVE) == (h4 == INCONCLUSIVE)


def test_published_level_and_ratio_by_hand():
    """The earlier study's K = 4 acceptance 89.44% -> 74.59% is tokens per call 1 + 4 x 0.8944
    = 4.5776 -> 1 + 4 x 0.7459 = 3.9836, a ratio of 0.87024; and 89.44% is the implied acceptance
    of per-token agreement a = 0.95585 (checked by evaluating (a - a^5) / (4 (1 - a)) at a)."""
    assert rules.published_ratio() == pytest.approx(3.9836 / 4.5776, abs=1e-6)
    a = rules.published_level()
    assert (a - a**5) / (4 * (1 - a)) == pytest.approx(0.8944, abs=1e-9)
    assert a == pytest.approx(0.95585, abs=1e-4)


def test_decisive_draft_is_the_nearest_within_the_band_chosen_by_level_only():
    """Planted bugs: choosing the farthest, or ignoring the band."""
    a = rules.published_level()
    assert rules.decisive_draft({"q2": 0.40, "q4": a - 0.03, "int8": a + 0.01}) == "int8"
    assert rules.decisive_draft({"q2": 0.40, "q4": a - rules.LEVEL_BAND - 0.001}) is None
    assert rules.decisive_draft({"x": None, "y": math.nan}) is None
    assert rules.decisive_draft({"inside": a + rules.LEVEL_BAND - 1e-9}) == "inside"


def test_power_by_hand():
    """Q = 0.93 [0.90, 0.96], n = 40, threshold 0.95: se = 0.06 / (2 x 1.95996) = 0.015307;
    detectable = (1.95996 + 0.84162) x se = 0.042884; inconclusive, |Q - t| = 0.02, so
    n x (0.042884 / 0.02)^2 = 183.9 -> 184 documents would decide it. A decided verdict needs
    none. Planted bugs: se from the half-width without z, n scaling linearly."""
    p = rules.power(Quantity(0.93, 0.90, 0.96, 40), 0.95)
    assert p.detectable == pytest.approx(0.042884, abs=1e-5)
    assert p.units_to_decide == 184
    assert rules.power(Quantity(0.85, 0.80, 0.90, 40), 0.95).units_to_decide is None
    assert rules.power(Quantity(0.95, 0.90, 1.00, 40), 0.95).units_to_decide is None  # on t
    assert math.isnan(rules.power(Quantity(math.nan, 0.9, 1.0, 40), 0.95).detectable)


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
        Quantity(math.nan, math.nan, math.nan),
        Quantity(-0.2, math.nan, -0.1),
        Quantity(0.0, 0.5, 0.1),  # lo > hi
        Quantity.of(None),
        Quantity.of({"value": 2.0}),
    ):
        for rule in (h1_rule, h3_rule, h4_rule):
            assert rule(q) == INCONCLUSIVE


def test_interval_of_reads_result_dicts():
    q = Quantity.of({"value": 1.5, "ci_low": 1.2, "ci_high": 1.9, "n_prompts": 20})
    assert (q.value, q.lo, q.hi, q.n) == (1.5, 1.2, 1.9, 20)
    assert Quantity.of({"mean": 0.4, "ci_low": 0.3, "ci_high": 0.5}, n=40).n == 40


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
    for key in ("H3", "H4"):
        assert f"{rules.MATERIAL_RATIO:.2f}" in rules.RULES[key]
    assert f"{rules.LEVEL_BAND:.2f}" in rules.RULES["H3"]


def test_power_is_defined_from_two_units():
    """The same interval as `test_power_by_hand` over n = 2 has the same detectable difference
    (0.042884); over n = 1 it has none. Planted bugs (mutation survivors): `q.n < 2` turned into
    `q.n <= 2` or `q.n < 3`, which refuse the power of a two-unit interval."""
    assert rules.power(Quantity(0.93, 0.90, 0.96, 2), 0.95).detectable == pytest.approx(
        0.042884, abs=1e-5
    )
    assert rules.power(Quantity(0.93, 0.90, 0.96, 2), 0.95).units_to_decide == 10  # 9.19 -> 10
    assert math.isnan(rules.power(Quantity(0.93, 0.90, 0.96, 1), 0.95).detectable)


def test_a_draft_exactly_one_band_from_the_published_level_is_decisive(monkeypatch):
    """The band is inclusive ("within"): a level exactly LEVEL_BAND from the published level is
    chosen. No float lies exactly one band from today's published level, so the level is set to
    0.1, where 0.1 - 0.05 is exact. Planted bug (a mutation survivor): `<= LEVEL_BAND` turned
    into `< LEVEL_BAND`."""
    monkeypatch.setattr(rules, "published_level", lambda: 0.1)
    assert abs(0.05 - 0.1) == rules.LEVEL_BAND
    assert rules.decisive_draft({"far": 0.5, "edge": 0.05}) == "edge"


def test_implied_acceptance_defaults_to_k_4():
    """By hand at a = 0.5, K = 4: (0.5 - 0.5^5) / (4 x 0.5) = 0.46875 / 2 = 0.234375. Planted bug
    (a mutation survivor): the default K changed to 5 (which gives 0.19375)."""
    assert rules.implied_acceptance(0.5) == 0.234375


# `make mutation` on rules.py leaves three mutants alive, each equivalent:
# tests/mutation_survivors.md says why (the H1 text's rounded margin, the bisection's step count
# and its tie).
