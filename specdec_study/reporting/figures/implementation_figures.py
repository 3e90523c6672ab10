"""The positive control's figure (04, `implementations`): left, each variant's speedup the earlier
study's way (its own baseline at the reference context over each row) against context, with 95%
interval whiskers and n, and the published transformer draft's speedups in red; right, tokens per
target call per variant. From plain data: the summary's `table` and the earlier study's
recomputed table. Knows nothing about files or profiles (`fig_implementations` reads a Profile
through `results.read` only).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from specdec_study.reporting.earlier import earlier_recomputed
from specdec_study.reporting.figures.style import (
    DRAFT_COLORS,
    color_of,
    errorbars,
    legend_outside,
    log_axis,
    new_figure,
)

# how each variant reads in a legend and a table (the config's names are the columns' values)
VARIANT_NAMES = {
    "nocache": "(a) no KV cache anywhere",
    "mixed_target": "(b) cached baseline, loop's target recomputes",
    "mixed_draft": "(b') cached baseline, draft re-prefilled",
    "cached": "(c) both cached (ours)",
}
PUBLISHED_COLOR = DRAFT_COLORS["earlier"]
DODGE = 1.04  # the factor between neighbouring variants' x positions (log axis)


def variant_name(variant: str) -> str:
    """A variant's legend name (its own name when unknown)."""
    return VARIANT_NAMES.get(variant, variant)


def table_frame(summary: dict[str, Any]) -> pd.DataFrame | None:
    """The summary's (variant, context) rows flattened: value, low, high per interval; None when
    it has none."""
    table = summary.get("table") or []
    if not table:
        return None
    out = []
    for t in table:
        row = {k: t[k] for k in ("variant", "context", "n_prompts", "identical_fraction")}
        for key in ("single_divisor_speedup", "paired_speedup", "tokens_per_call"):
            iv = t.get(key) or {}
            row[key] = iv.get("value")
            row[f"{key}_ci_low"] = iv.get("ci_low")
            row[f"{key}_ci_high"] = iv.get("ci_high")
        out.append(row)
    return pd.DataFrame(out).astype({"context": int})


def _ci(g: pd.DataFrame, key: str) -> tuple[Any, Any, Any]:
    return g[key], g[f"{key}_ci_low"].fillna(g[key]), g[f"{key}_ci_high"].fillna(g[key])


def draw_implementations(summary: dict[str, Any], published: pd.DataFrame | None) -> Any:
    """Two panels side by side (single-divisor speedup; tokens per target call) against context,
    one line per variant with 95% whiskers and its n in the legend; the published transformer
    draft's one-baseline speedups (`earlier_recomputed`) in red on the left. None without rows."""
    df = table_frame(summary)
    if df is None:
        return None
    ref = summary.get("reference_context", 20)
    fig, (left, right) = new_figure(2)
    groups = list(df.groupby("variant", sort=False))
    for i, (variant, g) in enumerate(groups):
        g = g.sort_values("context")
        # dodged a little along the log axis, so equal values keep their whiskers apart
        x = g["context"] * DODGE ** (i - (len(groups) - 1) / 2)
        label = f"{variant_name(str(variant))} (n = {int(g['n_prompts'].min())})"
        color = color_of(str(variant))
        errorbars(left, x, *_ci(g, "single_divisor_speedup"), label, color=color)
        errorbars(right, x, *_ci(g, "tokens_per_call"), label, color=color)
    contexts = sorted(df["context"].unique())
    if published is not None:
        t = published[published["strategy"] == "transformer draft"].sort_values("context")
        if len(t):
            left.plot(t["context"], t["one_baseline_speedup"], "x--", color=PUBLISHED_COLOR,
                      ms=9, lw=2, label="earlier study, published 1B draft (T4)")  # fmt: skip
            contexts = sorted({*contexts, *(int(c) for c in t["context"])})
    left.axhline(1.0, color="grey", lw=1)
    left.set(xlabel="context (tokens)", ylabel=f"baseline at {ref} / row",
             title="one-divisor speedup")  # fmt: skip
    right.set(xlabel="context (tokens)", ylabel="tokens per call", title="tokens per target call")
    right.set_ylim(bottom=0)
    for ax in (left, right):
        log_axis(ax, contexts)
    legend_outside(left)
    return fig


def fig_implementations(p: Any) -> Any:
    """The book's figure from a profile's results (a `results.read.Profile`); None when the
    profile has no `implementations` result."""
    res = p.get("implementations")
    if res is None:
        return None
    return draw_implementations(res.summary, earlier_recomputed())
