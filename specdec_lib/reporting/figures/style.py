"""How every figure looks: one theme, matplotlib Figures without pyplot state (so a notebook's
backend and open figures never matter), legends beside the axes instead of over the data, integer
ticks on integer axes, log axes labelled with the values that were run (10, 20, 50, not 2x10^1).
Knows nothing about results.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

DPI = 110
# large type on small canvases: a figure shown 360 px wide on a phone keeps 8-px text or more
THEME = {"style": "whitegrid", "context": "notebook", "palette": "colorblind", "font_scale": 1.15}


def new_figure(ncols: int = 1, width: float = 6.4, height: float = 3.8) -> tuple[Any, Any]:
    """(Figure, row of ncols Axes), laid out so that titles and outside legends fit."""
    import seaborn as sns
    from matplotlib.figure import Figure

    sns.set_theme(**THEME)
    fig = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    return fig, fig.subplots(1, ncols, squeeze=False)[0]


def save(fig: Any, path: Path) -> None:
    """Write a figure as PNG, nothing clipped (titles, outside legends)."""
    if fig is not None:
        fig.savefig(path, dpi=DPI, bbox_inches="tight")


def show(fig: Any, dpi: int = DPI) -> Any:
    """A Figure as an IPython PNG image (independent of the kernel's matplotlib backend), or
    None, which a notebook cell renders as nothing."""
    if fig is None:
        return None
    from IPython.display import Image

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    return Image(data=buf.getvalue())


def legend_outside(ax: Any, axes: Sequence[Any] = (), **kw: Any) -> None:
    """A legend beside the axes, never over bars or lines (none when nothing is labelled), with
    the entries of `axes` too (one legend for several panels, each label once). The figure grows
    by the legend's width, so the axes keep theirs."""
    handles: dict[str, Any] = {}
    for a in (*axes, ax):
        for h, label in zip(*a.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, h)
    if not handles:
        return
    leg = ax.legend(list(handles.values()), list(handles), loc="upper left",
                    bbox_to_anchor=(1.01, 1.0), frameon=False, **kw)  # fmt: skip
    points = leg.get_texts()[0].get_fontsize()
    longest = max(len(label) for label in handles)
    fig = ax.figure
    fig.set_figwidth(fig.get_figwidth() + (0.55 * longest + 3.5) * points / 72)


def integer_axis(axis: Any) -> None:
    """Tick this axis at whole numbers only."""
    from matplotlib.ticker import MaxNLocator

    axis.set_major_locator(MaxNLocator(integer=True))


def log_axis(ax: Any, values: Any, which: str = "x") -> None:
    """A log axis ticked at the values that were run, written plainly."""
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    axis = ax.xaxis if which == "x" else ax.yaxis
    (ax.set_xscale if which == "x" else ax.set_yscale)("log")
    ticks = sorted({int(v) for v in values if v is not None and np.isfinite(v)})
    if ticks:
        (ax.set_xticks if which == "x" else ax.set_yticks)(ticks)
    axis.set_major_formatter(ScalarFormatter())
    axis.set_minor_formatter(NullFormatter())


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
