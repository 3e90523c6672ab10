"""The book's figures say what they show (issue 22's list), drawn from the committed embedded
results: the earlier study's acceptance from 0, H1's time per token with intervals, H2's
legend in words, no empty cache-off acceptance plot, the training curve's loss and agreement on
their own axes with the training agreement told apart from the evaluation's. And every figure,
the book's and the result directories' (issue 37): each draft in its one declared colour, at most
two panels side by side, text large enough where the book shows it, n from the data."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from matplotlib.colors import to_hex
from matplotlib.container import BarContainer, ErrorbarContainer
from PIL import Image

from specdec_study import pages as R
from specdec_study.reporting.figures import context_length, style
from specdec_study.results import catalog

ROOT = Path(__file__).resolve().parents[1]
# the book's content column in Chromium (tests/test_browser.py measures and checks the same):
# 660 CSS px at a 1280 px window, 327 px at a 390 px phone; the smallest text must render at
# READABLE_PX or more there (12 px is 9 pt)
COLUMNS = {1280: (660, 12.0), 390: (327, 9.0)}


@pytest.fixture(scope="module")
def embedded():
    return R.load_results("embedded", ROOT / "results")


def every_figure(embedded) -> dict[str, object]:
    """Name -> Figure: the book's fig_* and each experiment's declared figures, from the
    committed embedded results."""
    figs = {"fig_earlier_study": R.fig_earlier_study()}
    for name in [n for n in dir(R) if n.startswith("fig_") and n != "fig_earlier_study"]:
        figs[name] = getattr(R, name)(embedded)
    for _, decl in catalog.declared().values():
        res = embedded.get(decl.name)
        if res is None:
            continue
        for f in decl.figures:
            figs[f"{decl.name}/{f.file}"] = f.draw(res.summary, res.rows)
    return {k: v for k, v in figs.items() if v is not None}


@pytest.fixture(scope="module")
def figures(embedded):
    return every_figure(embedded)


def _handle_color(h) -> str | None:
    if isinstance(h, ErrorbarContainer):
        h = h.lines[0]
    elif isinstance(h, BarContainer):
        h = h.patches[0]
    for get in ("get_color", "get_facecolor"):
        if hasattr(h, get):
            c = getattr(h, get)()
            return to_hex(c[0] if hasattr(c, "ndim") and c.ndim == 2 else c)
    return None


def drawn_colors(fig) -> list[tuple[str, str]]:
    """(label, colour) of every legend entry and of every bar named by its tick label."""
    out = []
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend()] + list(fig.legends)
    for leg in legends:
        for h, t in zip(leg.legend_handles, leg.get_texts(), strict=True):
            if (c := _handle_color(h)) is not None:
                out.append((t.get_text().replace("\n", " "), c))
    for ax in fig.axes:
        bars = [c for c in ax.containers if isinstance(c, BarContainer)]
        ticks = [t.get_text() for t in ax.get_xticklabels()]
        if len(bars) == 1 and len(bars[0].patches) == len(ticks):
            out += [(t, to_hex(p.get_facecolor())) for t, p in zip(ticks, bars[0].patches,
                                                                   strict=True)]  # fmt: skip
    return out


def test_every_figure_draws_each_draft_in_its_one_declared_colour(figures):
    seen: dict[str, set[str]] = {}
    where: dict[str, set[str]] = {}
    for name, fig in figures.items():
        for label, color in drawn_colors(fig):
            draft = style.draft_name(label)
            if draft in style.DRAFT_COLORS:
                seen.setdefault(draft, set()).add(color)
                where.setdefault(draft, set()).add(name)
    wrong = {d: c for d, c in seen.items() if c != {style.color_of(d)}}
    assert not wrong, wrong
    # not vacuous: the drafts of the study, each found in several figures
    for draft in ("quant8", "self", "bigram", "baseline", "distilled", "exit9", "earlier"):
        assert draft in seen, draft
    assert len(where["quant8"]) >= 4 and len(where["self"]) >= 4, where


def test_declared_colours_are_one_per_draft():
    colors = list(style.DRAFT_COLORS.values())
    assert len(set(colors)) == len(colors)
    for name in ("quant8", "quant4g32", "noise200", "distilled", "exit9", "exit12", "exit15",
                 "self", "bigram", "ngram", "int8w", "baseline", "nocache", "mixed_target",
                 "mixed_draft", "cached", "earlier"):  # fmt: skip
        assert name in style.DRAFT_COLORS, name
    assert style.color_of("transformer (self) (n = 6)") == style.DRAFT_COLORS["self"]
    assert style.color_of("k4") == style.color_of("k4") not in style.DRAFT_COLORS.values()


def _png(fig) -> Image.Image:
    return Image.open(io.BytesIO(style.png_bytes(fig)))


def test_every_figure_keeps_its_text_readable_where_the_book_shows_it(figures):
    """At most two panels side by side; the smallest text, recorded in the PNG, renders at 12 px
    (9 pt) or more in the 1280 px page's column and at 9 px or more on a phone."""
    problems = []
    for name, fig in figures.items():
        im = _png(fig)
        font_px = float(im.info[style.FONT_PX_KEY])
        for window, (column, readable) in COLUMNS.items():
            shown = font_px * min(1.0, column / im.width)
            if shown < readable:
                problems.append(f"{name}: {shown:.1f} px text at {window} ({im.size})")
        lefts = {round(ax.get_position().x0, 2) for ax in fig.axes if ax.get_visible()}
        rows: dict[float, int] = {}
        for ax in fig.axes:
            y = round(ax.get_position().y0, 1)
            rows[y] = rows.get(y, 0) + 1
        if max(rows.values()) > 2:
            problems.append(f"{name}: {max(rows.values())} panels side by side ({lefts})")
    assert not problems, "\n".join(problems)


def test_a_figure_says_the_n_its_data_has(embedded):
    """The teacher-forced agreement averages the table's n documents; the replay and the
    ladder the continuation's."""
    summary = embedded.get("agreement").summary
    n_rows = {int(t["n"]) for t in summary["table"]}
    assert len(n_rows) == 1
    fig = R.fig_agreement_vs_context(embedded)
    assert f"n = {n_rows.pop()} documents" in fig.axes[0].get_title().replace("\n", " ")
    n_cont = summary["continuation"]["n_documents"]
    assert f"n = {n_cont} documents" in R.fig_ladder(embedded).axes[0].get_title()
    replay = R.fig_replay(embedded).axes[0].get_title().replace("\n", " ")
    assert f"n = {n_cont} documents" in replay


def _legend_texts(fig) -> list[str]:
    """Every legend entry of the figure, a label wrapped over lines read as one line."""
    out = []
    for ax in fig.axes:
        if ax.get_legend() is not None:
            out += [t.get_text() for t in ax.get_legend().get_texts()]
    out += [t.get_text() for leg in fig.legends for t in leg.get_texts()]
    return [" ".join(t.split()) for t in out]


def test_the_earlier_studys_acceptance_axis_starts_at_zero():
    acceptance = R.fig_earlier_study().axes[0]
    assert acceptance.get_ylabel() == "acceptance (%)"
    assert acceptance.get_ylim()[0] == 0


def test_h1_time_per_token_has_intervals_and_n(embedded):
    fig = R.fig_baseline_growth(embedded)
    ax = fig.axes[0]
    bars = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    assert len(bars) == len(_legend_texts(fig))
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
    labels = _legend_texts(change.get_figure(root=True))
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


def test_redraw_replaces_a_stored_figure_and_the_executed_notebooks_copy_of_it(tmp_path):
    """`declared.redraw` draws a result's figures again from its stored files and swaps the new
    PNG in wherever the profile's executed notebook showed the old one, so the notebook still
    shows every stored figure byte for byte (runner.keep) and nothing else changes."""
    import base64
    import shutil

    import nbformat

    from specdec_study.reporting.figures import declared
    from specdec_study.runner.keep import shown_images

    src = ROOT / "results" / "embedded"
    prof = tmp_path / "embedded"
    shutil.copytree(src / "baseline", prof / "baseline")
    (prof / "notebooks").mkdir()
    shutil.copy(src / "notebooks" / "01_baseline.ipynb", prof / "notebooks")
    png = prof / "baseline" / "figures" / "tokens_per_s.png"
    png.write_bytes(style.png_bytes(R.fig_earlier_study()))  # a stand-in "old" figure
    old = base64.b64encode(png.read_bytes()).decode()
    nb_path = prof / "notebooks" / "01_baseline.ipynb"
    nb = nbformat.read(nb_path, as_version=4)
    cell = nbformat.v4.new_code_cell("show()")
    cell.outputs = [nbformat.v4.new_output("display_data", data={"image/png": old})]
    nb.cells.append(cell)
    nbformat.write(nb, nb_path)
    before = [c.source for c in nb.cells]

    changed = declared.redraw(prof)

    assert png in changed and nb_path in changed
    new = base64.b64encode(png.read_bytes()).decode()
    assert new != old and Image.open(png).info[style.FONT_PX_KEY]
    after = nbformat.read(nb_path, as_version=4)
    assert new in shown_images(after) and old not in shown_images(after)
    assert [c.source for c in after.cells] == before
    assert declared.redraw(prof) == []  # drawn from the same files: the same bytes again
