"""The published table's own arithmetic behind H1 and H2 (`analysis.verdicts`), on a hand-made
published table: the growth of a transformer-draft call's cost and the one-divisor speedups."""

from __future__ import annotations

import pandas as pd
import pytest

from specdec_study.analysis.verdicts import published_arithmetic, published_call_cost

PUBLISHED = pd.DataFrame(
    [
        # strategy, context, time_s, acceptance_pct, one_baseline_speedup, matches_printed
        ("baseline autoregressive", 10, 20.0, None, 1.0, True),
        ("transformer draft", 10, 10.0, 50.0, 2.0, True),
        ("transformer draft", 100, 30.0, 25.0, 0.5, False),
    ],
    columns=["strategy", "context", "time_s", "acceptance_pct", "one_baseline_speedup",
             "matches_printed"],
)  # fmt: skip


def test_published_call_cost_by_hand():
    """Time 10 s -> 30 s (ratio 3); tokens per call at K = 4: 1 + 4 x 0.5 = 3 and 1 + 4 x 0.25
    = 2, so calls grow 3 / 2 = 1.5 and each call's cost 3 / 1.5 = 2. Planted bugs it catches
    (each seen failing): the acceptance read as a fraction (no / 100), the calls' ratio
    inverted (100 over 10)."""
    got = published_call_cost(PUBLISHED)
    assert got["time_ratio"] == pytest.approx(3.0)
    assert got["tokens_per_call_10"] == pytest.approx(3.0)
    assert got["tokens_per_call_100"] == pytest.approx(2.0)
    assert got["calls_ratio"] == pytest.approx(1.5)
    assert got["call_cost_growth"] == pytest.approx(2.0)
    assert published_call_cost(PUBLISHED[PUBLISHED["context"] == 10]) == {}


def test_published_arithmetic_by_hand():
    """Two of three rows match their printed speedup; the one divisor is the baseline's 20 s;
    a paired speedup of 2.0 at context 10 needs a context-100 baseline of 2 x 30 = 60 s. Planted
    bug it catches (seen failing): the needed baseline as time / speedup (15 s)."""
    got = published_arithmetic(PUBLISHED)
    assert (got["matching"], got["rows"], got["all_match"]) == (2, 3, False)
    assert got["baseline_s"] == 20.0
    assert got["paired_speedup_10"] == 2.0 and got["baseline_100_needed_s"] == pytest.approx(60.0)
