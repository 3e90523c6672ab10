"""The verdict rules: every rule reaches every outcome on synthetic intervals, the outcomes never
overlap, and missing numbers are inconclusive, never supported."""

from __future__ import annotations

import math

import numpy as np
import pytest

from specdec_study.analysis import rules
from specdec_study.analysis.rules import (
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
    "H3 per draft": (  # tokens per call, context 100 / 10; material fall below 0.95
        rules.h3_draft_rule,
        {
            SUPPORTED: iv(0.80, 0.93),  # the published 0.87 inside it
            NOT_SUPPORTED: iv(0.96, 1.04),
            INCONCLUSIVE: iv(0.90, 0.99),
        },
    ),
}


@pytest.mark.parametrize("key", sorted(CASES))
def test_each_rule_reaches_every_outcome(key):
    rule, cases = CASES[key]
    for want, interval in cases.items():
        assert rule(interval) == want, (key, interval)


ON, OFF = rules.CACHE_ON, rules.CACHE_OFF


def test_h2_names_the_regime_where_one_divisor_is_material():
    """Every outcome of H2: supported naming each regime whose baseline growth lies above 1.10
    (off only, on only, both), not supported when both lie below, inconclusive when none is
    above and one contains it, and not supported whatever the growth when one divisor does
    not reproduce the published rows. Planted bugs: reading one regime only; 'supported' when
    a regime is merely inconclusive."""
    up_, flat, edge = iv(2.03, 2.16), iv(1.05, 1.09), iv(1.05, 1.2)
    cases = {
        (True, up_, flat): (SUPPORTED, (OFF,)),
        (True, flat, up_): (SUPPORTED, (ON,)),
        (True, up_, up_): (SUPPORTED, (ON, OFF)),
        (True, flat, flat): (NOT_SUPPORTED, ()),
        (True, flat, edge): (INCONCLUSIVE, ()),
        (True, edge, edge): (INCONCLUSIVE, ()),
        (False, up_, up_): (NOT_SUPPORTED, ()),
    }
    for (one_divisor, off, on), (label, named) in cases.items():
        out = h2_rule(one_divisor, {ON: on, OFF: off})
        assert (out.label, set(out.named)) == (label, set(named)), (off, on)
    assert h2_rule(True, {ON: flat}).label == NOT_SUPPORTED  # no uncached sweep: on decides
    assert h2_rule(True, {ON: up_}).named == (ON,)
    assert h2_rule(True, {}).label == INCONCLUSIVE  # no regime measured
    assert h2_rule(True, {ON: Quantity(math.nan, math.nan, math.nan)}).label == INCONCLUSIVE


def test_h3_decides_over_the_ladder_and_names_the_drafts_that_fall():
    """Supported names each draft whose ratio lies below 0.95; not supported only when every
    draft holds; one undecided draft without a fall is inconclusive; no draft is not tested.
    Planted bugs: deciding on the first draft only; 'not supported' when most drafts hold."""
    falls, holds, edge = iv(0.79, 0.92), iv(0.99, 1.03), iv(0.92, 1.04)
    out = h3_rule({"quant8": holds, "noise200": falls, "quant4g32": edge})
    assert (out.label, out.named, out.holds, out.undecided) == (
        SUPPORTED,
        ("noise200",),
        ("quant8",),
        ("quant4g32",),
    )
    assert h3_rule({"a": holds, "b": holds}).label == NOT_SUPPORTED
    assert h3_rule({"a": holds, "b": edge}).label == INCONCLUSIVE
    assert h3_rule({"a": edge}).label == INCONCLUSIVE
    assert h3_rule({}).label == rules.NOT_TESTED
    assert h3_rule({"a": falls, "b": falls}).named == ("a", "b")


def test_h4_compares_the_random_split_tail_with_the_published_fall():
    """Published fall 0.1485: the tail of random splits at or beyond it is supported, below half
    of it (0.07425) not supported, between inconclusive; missing numbers or a published rise
    are inconclusive. Boundaries: exactly the published fall is supported, exactly half of it
    is inconclusive. Planted bugs: a strict >= turned >, the half turned into the whole."""
    pub = 0.1485
    assert h4_rule(0.20, pub) == SUPPORTED
    assert h4_rule(pub, pub) == SUPPORTED
    assert h4_rule(0.023, pub) == NOT_SUPPORTED
    assert h4_rule(0.10, pub) == INCONCLUSIVE
    assert h4_rule(0.5 * pub, pub) == INCONCLUSIVE
    assert h4_rule(math.nextafter(0.5 * pub, 0.0), pub) == NOT_SUPPORTED
    assert h4_rule(math.nextafter(pub, 0.0), pub) == INCONCLUSIVE
    assert h4_rule(math.nan, pub) == INCONCLUSIVE
    assert h4_rule(0.02, math.nan) == INCONCLUSIVE
    assert h4_rule(0.02, 0.0) == INCONCLUSIVE
    assert h4_rule(-0.5, -0.1) == INCONCLUSIVE
    assert h4_rule(math.inf, pub) == INCONCLUSIVE


def test_every_revised_rule_says_when_why_and_that_numbers_existed():
    """Each revision names a rule that exists, a date and a reason; the third round's three
    revisions were made after the embedded numbers existed and say so."""
    assert {r.rule for r in rules.REVISIONS} == {"H2", "H3", "H4"}
    for r in rules.REVISIONS:
        assert r.rule in rules.RULES and r.date == "2026-12-06" and r.after_numbers
        assert len(r.reason) > 40
    assert rules.revisions("H1") == ()
    assert [r.rule for r in rules.revisions("H3")] == ["H3"]


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
        for rule in (h1_rule, rules.h3_draft_rule):
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
    assert f"{rules.H2_BASELINE_GROWTH:.2f}" in rules.RULES["H2"]
    assert f"{rules.MATERIAL_RATIO:.2f}" in rules.RULES["H3"]
    assert f"{rules.H4_FAR_BELOW:.1f}" in rules.RULES["H4"]


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
