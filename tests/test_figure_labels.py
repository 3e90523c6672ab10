"""The book's figures say what they show (issue 22's list), drawn from the committed embedded
results: the earlier study's acceptance from 0, H1's time per token with intervals, H2's
legend in words, no empty cache-off acceptance plot, the training curve's loss and agreement on
their own axes with the training agreement told apart from the evaluation's."""

from __future__ import annotations

from pathlib import Path

import pytest
from matplotlib.container import ErrorbarContainer

from specdec_lib import report as R
from specdec_lib.reporting.figures import context_length
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
    t = context_length.ms_per_token(rows)
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
    assert (
        context_length.acceptance_vs_context(embedded.get("context_sweep_nocache").summary) is None
    )
    files = [f.file for f in catalog.experiment("context_sweep_nocache").figures]
    assert "acceptance_vs_context.png" not in files
    assert context_length.acceptance_vs_context(embedded.get("context_sweep").summary) is not None


def test_training_curve_puts_loss_and_agreement_on_separate_labelled_axes(embedded):
    fig = R.fig_training_curve(embedded)
    assert [ax.get_ylabel() for ax in fig.axes] == ["loss", "agreement (%)"]
    labels = " ".join(_legend_texts(fig))
    assert "training agreement" in labels and "evaluation agreement (another quantity)" in labels


def test_h3_text_view_plots_the_tested_change_on_its_own_axis(embedded):
    """Fig. 5 of issue 22: a change of a few points was invisible on the 0-90 levels' axis; a
    last panel plots each draft's change with its interval on an axis scaled to the changes,
    beside zero and the change in agreement the published acceptance fall implies."""
    fig = R.fig_agreement_vs_context(embedded)
    change = fig.axes[-1]
    assert "change" in change.get_xlabel() and "points" in change.get_xlabel()
    heads = embedded.get("agreement").summary["headline"]
    tested = [d for d, h in heads.items() if (h.get("change_test") or {}).get("agreement")]
    assert len(change.get_yticklabels()) == len(tested) and len(tested) >= 2
    lo, hi = change.get_xlim()
    assert hi - lo < 40  # points: an axis sized to the changes, not to the levels
    labels = [t.get_text() for t in change.get_legend().get_texts()]
    assert any("published" in t for t in labels) and "no change" in labels


def test_h4_confound_shows_the_same_prompts_interval_as_a_bar_not_a_band(embedded):
    """Fig. 8 of issue 22: the same prompts' interval, shaded across the histogram, covered
    almost the whole axis; it is now a bar above the histogram beside the random splits' middle
    95%, so the two widths can be compared."""
    ax = R.fig_prompt_confound(embedded).axes[1]
    bars = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    assert len(bars) == 2
    spans = [p for p in ax.patches if p.get_width() > 0.5 * (ax.get_xlim()[1] - ax.get_xlim()[0])]
    assert spans == []  # no shaded band as wide as most of the axis
    labels = _legend_texts(ax.figure)
    assert any(t.startswith("same prompts, 95% CI (n = ") for t in labels)
