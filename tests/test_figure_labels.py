"""The book's figures say what they show (issue 22's list), drawn from the committed embedded
results: the earlier study's acceptance from 0, H1's time per token with intervals, H2's
legend in words, no empty cache-off acceptance plot, the training curve's loss and agreement on
their own axes with the training agreement told apart from the evaluation's."""

from __future__ import annotations

from pathlib import Path

import pytest
from matplotlib.container import ErrorbarContainer

from specdec_lib import report as R
from specdec_lib.reporting.figures import context
from specdec_lib.results import catalog

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def embedded():
    return R.load_results("embedded", ROOT / "results")


def _legend_texts(fig) -> list[str]:
    out = []
    for ax in fig.axes:
        if ax.get_legend() is not None:
            out += [t.get_text() for t in ax.get_legend().get_texts()]
    out += [t.get_text() for leg in fig.legends for t in leg.get_texts()]
    return out


def test_the_earlier_studys_acceptance_axis_starts_at_zero():
    acceptance = R.fig_earlier_study().axes[0]
    assert acceptance.get_ylabel() == "acceptance (%)"
    assert acceptance.get_ylim()[0] == 0


def test_h1_time_per_token_has_intervals_and_n(embedded):
    fig = R.fig_baseline_growth(embedded)
    ax = fig.axes[0]
    bars = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    assert len(bars) == len(ax.get_legend().get_texts())
    widths = [seg[1][1] - seg[0][1] for c in bars for seg in c.lines[2][0].get_segments()]
    assert any(w > 0 for w in widths)
    assert "n = 6 prompts" in ax.get_title() and "95% CI" in ax.get_title()


def test_ms_per_token_is_the_pooled_ratio_with_its_interval(embedded):
    rows = embedded.get("context_sweep").rows
    t = context.ms_per_token(rows)
    one = t[(t["method"] == "baseline") & (t["context"] == 100)].iloc[0]
    g = rows[(rows["method"] == "baseline") & (rows["context"] == 100)]
    assert one["ms_per_token"] == pytest.approx(1000 * g["wall_s"].sum() / g["new_tokens"].sum())
    assert one["ci_low"] < one["ms_per_token"] < one["ci_high"] and one["n"] == len(g)


def test_h2_legend_says_what_each_speedup_is_divided_by(embedded):
    labels = _legend_texts(R.fig_speedup_vs_context(embedded))
    assert labels and not any(": /" in t or t.endswith(": paired") for t in labels)
    assert any("vs the baseline at the same context" in t for t in labels)
    assert any("vs the baseline at context 20 (earlier study's way)" in t for t in labels)


def test_no_acceptance_plot_for_the_cache_off_sweep_which_runs_the_baseline_alone(embedded):
    assert context.acceptance_vs_context(embedded.get("context_sweep_nocache").summary) is None
    files = [f.file for f in catalog.experiment("context_sweep_nocache").figures]
    assert "acceptance_vs_context.png" not in files
    assert context.acceptance_vs_context(embedded.get("context_sweep").summary) is not None


def test_training_curve_puts_loss_and_agreement_on_separate_labelled_axes(embedded):
    fig = R.fig_training_curve(embedded)
    assert [ax.get_ylabel() for ax in fig.axes] == ["loss", "agreement (%)"]
    labels = " ".join(_legend_texts(fig))
    assert "training agreement" in labels and "evaluation agreement (another quantity)" in labels
