"""How every figure looks: one theme, matplotlib Figures without pyplot state (so a notebook's
backend and open figures never matter), one declared colour per draft (`color_of`), at most two
panels side by side, figures no wider than a phone can show with readable text (`MAX_WIDTH`,
`MIN_FONT_PT`), one legend under the panels instead of over the data or beside them, integer
ticks on integer axes, log axes labelled with the values that were run (10, 20, 50, not 2x10^1).
Every PNG it writes records its smallest text size in pixels (`FONT_PX_KEY`), so a browser test
can tell how large that text is where the page shows the image.
Knows nothing about results.
"""

from __future__ import annotations

import io
import math
import textwrap
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

DPI = 110
THEME = {"style": "whitegrid", "context": "notebook", "palette": "colorblind", "font_scale": 1.15}
# A figure is drawn at most MAX_WIDTH inches wide (594 px at DPI) with no text under MIN_FONT_PT:
# the book's column is 660 px at a 1280 px window (shown at natural size: 11 pt is 17 px) and
# 327 px on a 390 px phone (scaled by 0.55: 11 pt is 9 px). Measured in Chromium by
# tests/test_browser.py, which checks the rendered sizes against FONT_PX_KEY.
MAX_WIDTH = 5.4
MIN_FONT_PT = 11.0
FONT_PX_KEY = "specdec-min-font-px"  # PNG text chunk: the smallest text's height in image pixels

# One colour per draft, arm and reference, the same in every figure. Drafts of one family share
# a hue (the early exits are greens, the quantised drafts blues); red is the earlier study's.
DRAFT_COLORS: dict[str, str] = {
    "baseline": "#3b3b3b",
    "quant8": "#0173b2",
    "quant4g32": "#56b4e9",
    "int8w": "#023858",
    "noise200": "#cc78bc",
    "distilled": "#de8f05",
    "exit9": "#006d2c",
    "exit12": "#31a354",
    "exit15": "#8fd18f",
    "self": "#7851a9",
    "bigram": "#a0522d",
    "ngram": "#b8a000",
    "nocache": "#8c8c8c",
    "cached": "#2c7fb8",
    "mixed_target": "#01665e",
    "mixed_draft": "#c51b7d",
    "hf": "#e6a15c",
    "target_vs_text": "#000000",
    "earlier": "#d62728",
}
# names that no entry declares (a K sweep's k4, a new arm) still keep one colour everywhere:
# picked from these by a hash of the name, never by the order a figure draws them in
EXTRA_COLORS = ("#17becf", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#7f7f7f", "#1f3b73",
                "#6b8e23", "#b03060", "#4682b4")  # fmt: skip
# the parts of the time split: not drafts, so none of the drafts' colours
PART_COLORS = {"prefill": "#c7c7c7", "draft": "#f4a582", "verify": "#6f6f9f", "other": "#e8e0b0"}
ROLE_PREFIXES = ("bigram (", "transformer (", "ngram (")


def draft_name(label: str) -> str:
    """The draft or arm a label names: 'transformer (self)' -> 'self', 'quant8 (n = 12)' ->
    'quant8', 'ngram, cache off' -> 'ngram', 'hf-greedy' -> 'hf'."""
    s = str(label).strip()
    for prefix in ROLE_PREFIXES:
        if s.startswith(prefix) and ")" in s:
            return s[len(prefix) : s.index(")")]
    head = s.split(" ", 1)[0].rstrip(",:")
    return "hf" if head.startswith("hf-") else head


def color_of(name: str) -> str:
    """The declared colour of a draft or arm (or of what a label names, `draft_name`); a name
    without an entry gets a fixed colour from its hash."""
    key = draft_name(name)
    if key in DRAFT_COLORS:
        return DRAFT_COLORS[key]
    return EXTRA_COLORS[zlib.crc32(key.encode()) % len(EXTRA_COLORS)]


def new_figure(ncols: int = 1, width: float = MAX_WIDTH, height: float = 3.8) -> tuple[Any, Any]:
    """(Figure, list of ncols Axes), at most two side by side: a third panel and more go on
    rows below, the last of an odd number spanning the row. `height` is one row's; the width is
    capped at MAX_WIDTH. Laid out so that titles and the legend under the panels fit."""
    import seaborn as sns
    from matplotlib.figure import Figure

    sns.set_theme(**THEME)
    cols = min(max(ncols, 1), 2)
    rows = math.ceil(max(ncols, 1) / cols)
    fig = Figure(figsize=(min(width, MAX_WIDTH), height * rows), dpi=DPI, layout="constrained")
    if ncols <= 2:
        return fig, list(fig.subplots(1, cols, squeeze=False)[0])
    # one subfigure per row, so that one row's long tick labels never narrow another's panels
    axes = []
    for i, sub in enumerate(fig.subfigures(rows, 1)):
        axes += list(sub.subplots(1, min(2, ncols - 2 * i), squeeze=False)[0])
    return fig, axes


def fit_text(fig: Any) -> None:
    """Before a figure is written: no text under MIN_FONT_PT, and titles and axis labels
    wrapped to their axes' width (a long title otherwise widens the whole image)."""
    from matplotlib.text import Text

    for t in fig.findobj(Text):
        if t.get_fontsize() < MIN_FONT_PT:
            t.set_fontsize(MIN_FONT_PT)
    fig_w = fig.get_figwidth()
    for ax in fig.axes:
        inches = max(ax.get_position().width * fig_w, 1.0)
        for t in (ax.title, ax._left_title, ax._right_title, ax.xaxis.label):
            _wrap(t, inches)
    if fig._suptitle is not None:
        _wrap(fig._suptitle, fig_w)


def _wrap(t: Any, inches: float) -> None:
    text = t.get_text()
    if not text:
        return
    chars = max(int(inches * 72 / (0.55 * t.get_fontsize())), 12)
    lines = [textwrap.fill(part, chars) for part in text.split("\n")]
    t.set_text("\n".join(lines))


def min_font_px(fig: Any, dpi: float = DPI) -> float:
    """The smallest visible text's size in image pixels at `dpi`."""
    from matplotlib.text import Text

    sizes = [t.get_fontsize() for t in fig.findobj(Text) if t.get_visible() and t.get_text()]
    return min(sizes, default=MIN_FONT_PT) * dpi / 72


def png_bytes(fig: Any, dpi: int = DPI) -> bytes:
    """The figure as PNG (text fitted, nothing clipped), its smallest text size recorded."""
    fit_text(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight",
                metadata={FONT_PX_KEY: f"{min_font_px(fig, dpi):.2f}"})  # fmt: skip
    return buf.getvalue()


def save(fig: Any, path: Path) -> None:
    """Write a figure as PNG, nothing clipped (titles, the legend)."""
    if fig is not None:
        Path(path).write_bytes(png_bytes(fig))


def show(fig: Any, dpi: int = DPI) -> Any:
    """A Figure as an IPython PNG image (independent of the kernel's matplotlib backend), or
    None, which a notebook cell renders as nothing."""
    if fig is None:
        return None
    from IPython.display import Image

    return Image(data=png_bytes(fig, dpi))


def legend_outside(ax: Any, axes: Sequence[Any] = (), **kw: Any) -> None:
    """One legend under all the panels, never over bars or lines (none when nothing is
    labelled), with the entries of `ax`, of `axes` and of any earlier call on the same figure
    (each label once). The figure grows by the legend's height, so the axes keep theirs."""
    fig = ax.get_figure(root=True)
    handles: dict[str, Any] = getattr(fig, "_specdec_handles", {})
    for a in (*axes, ax):
        for h, label in zip(*a.get_legend_handles_labels(), strict=True):
            if not label.startswith("_"):
                handles.setdefault(label, h)
    if not handles:
        return
    fig._specdec_handles = handles
    old = getattr(fig, "_specdec_legend", None)
    if old is not None:
        old.remove()
        fig.set_figheight(fig._specdec_height)
    else:
        fig._specdec_height = fig.get_figheight()
    kw.pop("fontsize", None)  # one size for every legend: the theme's, never under MIN_FONT_PT
    # as many columns as the typical label allows; a longer label wraps within its column
    typical = sorted(len(label) for label in handles)[len(handles) // 2]
    ncols = max(1, min(len(handles), 3, int(fig.get_figwidth() * 72 // (7.6 * typical + 40))))
    chars = max(int((fig.get_figwidth() * 72 / ncols - 40) / 7.6), 16)
    labels = [textwrap.fill(label, chars) for label in handles]
    leg = fig.legend(list(handles.values()), labels, loc="outside lower center",
                     ncols=ncols, frameon=False, **kw)  # fmt: skip
    fig._specdec_legend = leg
    lines = sum(label.count("\n") + 1 for label in labels)
    fig.set_figheight(fig._specdec_height + 0.3 * lines / ncols + 0.5)  # room to measure it in
    fig.draw_without_rendering()
    grow = leg.get_window_extent().height / fig.dpi
    fig.set_figheight(fig._specdec_height + grow)


def integer_axis(axis: Any) -> None:
    """Tick this axis at whole numbers only."""
    from matplotlib.ticker import MaxNLocator

    axis.set_major_locator(MaxNLocator(integer=True))


def log_axis(ax: Any, values: Any, which: str = "x") -> None:
    """A log axis ticked at the values that were run, written plainly; on a narrow panel a
    label that would touch its neighbour is left off (its tick stays)."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    axis = ax.xaxis if which == "x" else ax.yaxis
    (ax.set_xscale if which == "x" else ax.set_yscale)("log")
    ticks = sorted({int(v) for v in values if v is not None and np.isfinite(v) and v > 0})
    if ticks:
        (ax.set_xticks if which == "x" else ax.set_yticks)(ticks)
    shown = set(spaced_ticks(ax, ticks, which))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}" if round(v) in shown else ""))
    axis.set_minor_formatter(NullFormatter())


def spaced_ticks(ax: Any, ticks: Sequence[int], which: str = "x") -> list[int]:
    """The ticks whose labels fit side by side on this axis (first and last kept first)."""
    if len(ticks) < 3 or which != "x":  # stacked labels on a y axis never touch sideways
        return list(ticks)
    inches = ax.get_position().width * ax.get_figure(root=True).get_figwidth()
    span = math.log(ticks[-1] / ticks[0])
    char = 0.6 * 12.65 / 72  # a tick label's character width (the theme's size), inches

    def fits(a: int, b: int) -> bool:
        need = char * (len(str(a)) + len(str(b))) / 2 + 0.1
        return math.log(b / a) / span * inches >= need

    kept = [ticks[0]]
    for t in ticks[1:-1]:
        if fits(kept[-1], t) and fits(t, ticks[-1]):
            kept.append(t)
    return [*kept, ticks[-1]]


def plain_log_axis(axis: Any) -> None:
    """A log axis (of measured values) with plain numbers instead of 2x10^1."""
    from matplotlib.ticker import LogFormatter

    axis.set_major_formatter(LogFormatter(labelOnlyBase=False, minor_thresholds=(2, 0.5)))
    axis.set_minor_formatter(LogFormatter(labelOnlyBase=False, minor_thresholds=(2, 0.5)))


def errorbars(ax, x, v, lo, hi, label, marker="o", ls="-", color=None):
    """Points joined by a line, with asymmetric error bars from [lo, hi] (missing: none)."""
    v, lo, hi = (np.asarray(a, dtype=float) for a in (v, lo, hi))
    yerr = np.vstack([np.clip(v - lo, 0, None), np.clip(hi - v, 0, None)])
    yerr = np.where(np.isfinite(yerr), yerr, 0.0)
    return ax.errorbar(x, v, yerr=yerr, marker=marker, ls=ls, capsize=3, label=label, color=color)


def interval(d: dict[str, Any] | None, key: str = "value") -> tuple[float, float, float]:
    """(value, lower error, upper error) of a {value|median, ci_low, ci_high} dict."""
    if not d:
        return np.nan, 0.0, 0.0
    v = d.get(key, d.get("median"))
    v = np.nan if v is None else float(v)
    lo = v if d.get("ci_low") is None else float(d["ci_low"])
    hi = v if d.get("ci_high") is None else float(d["ci_high"])
    return v, max(v - lo, 0.0), max(hi - v, 0.0)


def column(rows: Any, key: str) -> np.ndarray:
    """One key of a table (list of dicts) as floats, None -> NaN."""
    return np.array([np.nan if r.get(key) is None else r[key] for r in rows], dtype=float)


def records(rows: Any) -> list[dict[str, Any]]:
    """Rows as a list of dicts, whether a DataFrame or already a list."""
    return rows.to_dict("records") if hasattr(rows, "to_dict") else list(rows)
