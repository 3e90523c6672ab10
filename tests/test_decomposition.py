"""The decomposition of a one-divisor speedup's change into tokens per call, the cost of a call
and the divisor: the published numbers the paradox issue derived by hand, the identity that the
three terms sum to the log change, and a measured sweep worked by hand."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from specdec_study.analysis import decomposition as D
from specdec_study.reporting.earlier import earlier_study


@pytest.fixture(scope="module")
def published():
    return earlier_study()


def test_published_draft_cost_rises_under_both_readings(published):
    """c against the one context-20 divisor, context 10 -> 100: 0.30 -> 0.50 reading acceptance
    as a per-token rate, 0.38 -> 0.73 reading it as accepted / proposed (by hand: a = 0.8944
    gives tau = 4.050, r = tau x 149.76 / 273.80 = 2.215, c = 0.304)."""
    pt = D.published(published, D.PER_TOKEN, 10, 100)
    ap = D.published(published, D.ACCEPTED_PROPOSED, 10, 100)
    assert [round(c, 2) for c in pt.draft_cost] == [0.30, 0.50]
    assert [round(c, 2) for c in ap.draft_cost] == [0.38, 0.73]
    assert pt.tokens_per_call[0] == pytest.approx(4.050, abs=1e-3)
    assert ap.tokens_per_call == pytest.approx((1 + 4 * 0.8944, 1 + 4 * 0.7459))


def test_acceptance_alone_predicts_139_to_157_at_context_100(published):
    """Holding the cost of a call at its context-20 value, the acceptance fall alone predicts
    1.39x (per-token) to 1.57x (accepted / proposed) at context 100, not the printed 1.01x."""
    got = [D.acceptance_only_speedup(D.published(published, r, 20, 100)) for r in D.READINGS]
    assert [round(x, 2) for x in got] == [1.39, 1.57]
    assert D.published(published, D.PER_TOKEN, 20, 100).speedup[1] == pytest.approx(1.0133, 1e-3)


def test_acceptance_explains_a_quarter_to_a_half_of_the_published_fall(published):
    shares = [D.published(published, r, 10, 100).shares()["tokens per call"] for r in D.READINGS]
    assert shares[0] == pytest.approx(0.49, abs=0.01)
    assert shares[1] == pytest.approx(0.24, abs=0.01)
    assert math.isnan(D.published(published, D.PER_TOKEN).shares()["divisor"])


def test_implied_divisor_growth_is_the_call_cost_ratio(published):
    """With r constant, the paired baseline must have grown by (rD)100 / (rD)10: 2.987 / 2.215
    = 1.349 per-token, 3.932 / 2.504 = 1.570 accepted / proposed."""
    pt = D.published(published, D.PER_TOKEN, 10, 100)
    assert D.implied_divisor_growth(pt) == pytest.approx(1.349, abs=2e-3)
    ap = D.published(published, D.ACCEPTED_PROPOSED, 10, 100)
    assert D.implied_divisor_growth(ap) == pytest.approx(1.570, abs=2e-3)


def rows_by_hand() -> pd.DataFrame:
    """Two prompts, contexts 10, 20, 100; baseline 0.1 s/token at 10 and 20, 0.2 at 100; the
    draft arm emits 40 tokens in 11 calls (10 after the prefill, tau = 4) at 10 and in 21 calls
    (tau = 2) at 100, taking 1.0 s and 3.0 s."""
    out = []
    for p in (0, 1):
        for c, step in ((10, 0.1), (20, 0.1), (100, 0.2)):
            out.append(dict(prompt=p, context=c, method="baseline", wall_s=40 * step,
                            new_tokens=40, target_calls=41))  # fmt: skip
        out.append(dict(prompt=p, context=10, method="d", wall_s=1.0, new_tokens=40,
                        target_calls=11))  # fmt: skip
        out.append(dict(prompt=p, context=100, method="d", wall_s=3.0, new_tokens=40,
                        target_calls=21))  # fmt: skip
    return pd.DataFrame(out)


def test_measured_factors_by_hand():
    """tau 4 -> 2; call 0.1 s / 0.1 s step = r 1 -> 0.15 s / 0.2 s = 0.75; divisor 1 -> 2;
    speedup 0.1 / 0.025 = 4 -> 0.1 / 0.075 = 1.333; terms ln 0.5, -ln 0.75, -ln 2 sum to ln
    (1/3). The baseline itself: tau = r = 1, only the divisor moves."""
    d = D.measured(rows_by_hand(), "d", 10, 100, 20, "by hand")
    assert d.tokens_per_call == pytest.approx((4.0, 2.0))
    assert d.call_cost == pytest.approx((1.0, 0.75))
    assert d.divisor == pytest.approx((1.0, 2.0))
    assert d.speedup == pytest.approx((4.0, 4 / 3))
    terms = d.contributions()
    assert terms["tokens per call"] == pytest.approx(math.log(0.5))
    assert terms["cost of a call"] == pytest.approx(-math.log(0.75))
    assert terms["divisor"] == pytest.approx(-math.log(2))
    assert sum(terms.values()) == pytest.approx(d.total()) == pytest.approx(math.log(1 / 3))
    b = D.measured(rows_by_hand(), "baseline", 10, 100, 20, "baseline")
    assert b.tokens_per_call == (1.0, 1.0) and b.speedup == pytest.approx((1.0, 0.5))
    assert D.measured(rows_by_hand(), "d", 10, 50, 20, "x") is None  # no context 50


def test_the_table_has_one_row_per_decomposition_with_shares_summing_to_one(published):
    ds = [D.published(published, r) for r in D.READINGS]
    ds.append(D.measured(rows_by_hand(), "d", 10, 100, 20, "by hand"))
    t = D.table(ds)
    assert list(t["source"]) == [d.source for d in ds]
    last = t.iloc[-1]
    assert last[[f"share_{f}" for f in D.FACTORS]].sum() == pytest.approx(1.0)


def test_an_unknown_reading_is_refused():
    with pytest.raises(ValueError, match="unknown reading"):
        D.tokens_per_call(0.9, "per call")


def test_the_chapter_s_decomposition_reads_the_committed_sweeps():
    """Published (both readings) then ours: each cached arm and the uncached baseline; the
    uncached baseline's divisor 100 / 20 is the H2 growth the issue quotes (about 2.10), the
    cached one about 1.07; the figure has two panels, one bar per decomposition."""
    from specdec_study import pages as R

    p = R.load_results("embedded")
    t = R.decomposition_table(p)
    assert list(t["rows"][:2]) == [f"published ({r})" for r in D.READINGS]
    assert {"quant8, cache on", "distilled, cache on", "baseline, cache off"} <= set(t["rows"])
    nums = R.decomposition_numbers(p)
    assert nums["baseline_off_div"] == pytest.approx(2.10, abs=0.01)
    assert nums["baseline_on_div"] == pytest.approx(1.07, abs=0.01)
    assert nums["quant8_on_c10"] > nums["quant8_on_breakeven"]  # no speedup: c past break-even
    fig = R.fig_decomposition(p)
    top, bottom = fig.axes[:2]
    assert len(top.get_yticklabels()) == 2 and len(bottom.get_yticklabels()) == len(t) - 2
