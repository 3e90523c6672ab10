"""The decomposition figure: each factor's term of the log change of a one-divisor speedup from
context 10 to 100, as stacked horizontal bars, the published rows (both readings of acceptance)
above ours (cache on and off). Two panels stacked, sharing the axis, so a phone shows both.
Knows the decompositions it is given, nothing about files.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from specdec_study.analysis import decomposition as D
from specdec_study.reporting.decomposition_tables import (
    measured_decompositions,
    published_decompositions,
)
from specdec_study.results.read import Profile

COLORS = {"tokens per call": "#0173b2", "cost of a call": "#de8f05", "divisor": "#029e73"}
TICKS = (0.25, 0.33, 0.4, 0.5, 0.67, 0.8, 1.0, 1.25, 1.5)


def draw(panels: list[tuple[str, list[D.Decomposition]]]) -> Any:
    """One panel per (title, decompositions): a bar per decomposition, its factors' log terms
    stacked from 0 (falls to the left, rises to the right), the total as a black diamond."""
    import seaborn as sns
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    from specdec_study.reporting.figures.style import DPI, THEME

    sns.set_theme(**THEME)
    heights = [max(1, len(ds)) + 1.2 for _, ds in panels]
    fig = Figure(figsize=(5.0, 0.42 * sum(heights) + 1.6), dpi=DPI, layout="constrained")
    axes = fig.subplots(len(panels), 1, sharex=True, gridspec_kw={"height_ratios": heights})
    axes = np.atleast_1d(axes)
    lo = min([-0.1] + [min(0.0, d.total(), *_neg(d)) for _, ds in panels for d in ds])
    hi = max([0.1] + [max(0.0, d.total(), *_pos(d)) for _, ds in panels for d in ds])
    for ax, (title, ds) in zip(axes, panels, strict=True):
        for i, d in enumerate(ds):
            left_neg = left_pos = 0.0
            for f, v in d.contributions().items():
                if not math.isfinite(v) or v == 0:
                    continue
                start = left_neg + v if v < 0 else left_pos
                hatch = "//" if f == "cost of a call" and d.divisor is None else None
                ax.barh(i, abs(v), left=start, color=COLORS[f], hatch=hatch, height=0.6,
                        edgecolor="white")  # fmt: skip
                if v < 0:
                    left_neg += v
                else:
                    left_pos += v
            ax.plot([d.total()], [i], marker="D", color="black", ms=6, ls="none")
        ax.set_yticks(range(len(ds)), [short(d.source) for d in ds])
        ax.invert_yaxis()
        ax.axvline(0, color="black", lw=0.8)
        ax.set_title(title, loc="left", fontsize="medium")
    pad = 0.05 * (hi - lo)
    axes[-1].set_xlim(lo - pad, hi + pad)
    ticks = [t for t in TICKS if lo - pad <= math.log(t) <= hi + pad]
    axes[-1].set_xticks([math.log(t) for t in ticks], [f"x{t:g}" for t in ticks])
    axes[-1].set_xlabel("one-divisor speedup, 100 over 10 (log)")
    handles = [Patch(color=c, label=f) for f, c in COLORS.items()]
    handles.append(Patch(facecolor="#de8f05", hatch="//", edgecolor="white",
                         label="call cost with divisor"))  # fmt: skip
    handles.append(axes[0].plot([], [], marker="D", color="black", ls="none", label="total")[0])
    fig.legend(handles=handles, loc="outside lower center", ncols=2, frameon=False,
               fontsize="small")  # fmt: skip
    return fig


def short(source: str) -> str:
    """A bar's label, short enough for a phone: 'published, per token', 'quant8, cache on'."""
    return source.replace("published (per-token rate)", "published, per token").replace(
        "published (accepted / proposed)", "published, acc./prop."
    )


def _neg(d: D.Decomposition) -> list[float]:
    return [sum(v for v in d.contributions().values() if math.isfinite(v) and v < 0)]


def _pos(d: D.Decomposition) -> list[float]:
    return [sum(v for v in d.contributions().values() if math.isfinite(v) and v > 0)]


def fig_decomposition(p: Profile) -> Any:
    """Published (both readings) above ours (the committed sweeps, cache on and off); only the
    published panel when the profile has no sweep with contexts 10, 20 and 100."""
    panels = [("The earlier study's rows", published_decompositions())]
    ours = measured_decompositions(p)
    if ours:
        panels.append((f"Ours ({p.name})", ours))
    return draw(panels)
