"""`rules.classify` at its boundaries, with the expected label written out for each case (not
its inequalities restated): an interval touching the threshold contains it, so it is
inconclusive; one just past it (the next float) is decided; a point interval is decided unless it
sits on the threshold; NaN anywhere and a reversed interval are inconclusive. Both sides, at a
positive and a negative threshold. Uses `classify` directly: no rule's threshold is pinned here.
Also `Quantity.of`'s count and H1's printed rule text (mutants tests/mutation.py found alive).
"""

from __future__ import annotations

import math
import re

import pytest

from specdec_study.analysis import rules
from specdec_study.analysis.rules import INCONCLUSIVE, NOT_SUPPORTED, SUPPORTED, Quantity, classify

NAN, INF = math.nan, math.inf


def up(x: float) -> float:
    """The next float above x."""
    return math.nextafter(x, INF)


def down(x: float) -> float:
    """The next float below x."""
    return math.nextafter(x, -INF)


def table(t: float) -> list[tuple[str, float, float, float, str, str]]:
    """(case, value, lo, hi, label when supported above t, label when supported below t)."""
    w = 1.0  # a width well clear of t
    return [
        ("lo == t", t + w / 2, t, t + w, INCONCLUSIVE, INCONCLUSIVE),
        ("hi == t", t - w / 2, t - w, t, INCONCLUSIVE, INCONCLUSIVE),
        ("lo == hi == t", t, t, t, INCONCLUSIVE, INCONCLUSIVE),
        ("lo one float above t", t + w / 2, up(t), t + w, SUPPORTED, NOT_SUPPORTED),
        ("hi one float below t", t - w / 2, t - w, down(t), NOT_SUPPORTED, SUPPORTED),
        ("point above t", t + w, t + w, t + w, SUPPORTED, NOT_SUPPORTED),
        ("point below t", t - w, t - w, t - w, NOT_SUPPORTED, SUPPORTED),
        ("contains t", t, t - w, t + w, INCONCLUSIVE, INCONCLUSIVE),
        ("value NaN", NAN, t + w, t + 2 * w, INCONCLUSIVE, INCONCLUSIVE),
        ("lo NaN", t + w, NAN, t + 2 * w, INCONCLUSIVE, INCONCLUSIVE),
        ("hi NaN", t - w, t - 2 * w, NAN, INCONCLUSIVE, INCONCLUSIVE),
        ("hi infinite", t + w, t + w, INF, INCONCLUSIVE, INCONCLUSIVE),
        ("lo > hi, both above t", t + w, t + 2 * w, t + w, INCONCLUSIVE, INCONCLUSIVE),
        ("lo > hi, both below t", t - w, t - w, t - 2 * w, INCONCLUSIVE, INCONCLUSIVE),
        ("lo > hi around t", t, t + w, t - w, INCONCLUSIVE, INCONCLUSIVE),
    ]


CASES = [
    pytest.param(t, value, lo, hi, side, label, id=f"t={t} {case} supported-{side}")
    for t in (1.0, -0.05)
    for case, value, lo, hi, above, below in table(t)
    for side, label in (("above", above), ("below", below))
]


@pytest.mark.parametrize(("t", "value", "lo", "hi", "side", "label"), CASES)
def test_classify_boundaries(t, value, lo, hi, side, label):
    """Catches: `>` for `>=` at either end (lo == t or hi == t decided instead of inconclusive),
    the sides swapped, NaN or infinity compared instead of refused, a reversed interval decided
    (`lo > hi` relaxed to `lo >= hi` makes a point interval inconclusive)."""
    assert classify(Quantity(value, lo, hi, 10), t, side) == label


def test_the_table_reaches_every_label_on_both_sides():
    """Guards the table itself: each side meets all three labels at each threshold."""
    for t in (1.0, -0.05):
        rows = table(t)
        assert (
            {r[4] for r in rows}
            == {r[5] for r in rows}
            == {
                SUPPORTED,
                NOT_SUPPORTED,
                INCONCLUSIVE,
            }
        )


@pytest.mark.parametrize(
    ("d", "n"),
    [
        ({"value": 1.0, "ci_low": 0.5, "ci_high": 2.0}, 0),  # no count: 0, not 1
        ({"value": 1.0, "ci_low": 0.5, "ci_high": 2.0, "n": None}, 0),
        ({"value": 1.0, "ci_low": 0.5, "ci_high": 2.0, "n_prompts": 7}, 7),
        ({"median": 1.0, "ci_low": 0.5, "ci_high": 2.0, "n_documents": 3}, 3),
    ],
)
def test_interval_of_reads_its_count_or_zero(d, n):
    """Catches: a missing or None count read as 1 (an interval claiming a unit it lacks), the
    n_prompts / n_documents keys ignored."""
    assert Quantity.of(d).n == n
    assert Quantity(1.0, 0.5, 2.0).n == 0


def test_the_h1_rule_text_prints_its_threshold_and_margin():
    """The text the book prints before the numbers states H1's threshold and the margin it
    means (threshold 1.10 -> "10%"), both derived here from the constant, not restated.
    Catches: the margin computed as 100 / (t - 1), 100 * (t + 1) ("210%") or 100 * (t - 2)."""
    t = rules.H1_EXTRA_GROWTH
    assert f"{t:.2f}" in rules.RULES["H1"]
    assert re.search(rf"(?<![\d.]){round(100 * (t - 1))}%", rules.RULES["H1"])  # not "210%"
