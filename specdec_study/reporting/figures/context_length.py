"""Figures against context length, from plain data (a sweep's or the agreement's summary table,
per-prompt rows, the earlier study's recomputed table): paired and one-baseline speedups,
measured acceptance, time, teacher-forced agreement with the acceptance it implies, time per
token with the cache on and off, the prompt confound, and the earlier study as reported. Each
returns a matplotlib Figure, or None when there is nothing to draw. Knows nothing about files or
profiles.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from specdec_study.analysis import stats
from specdec_study.reporting.figures.style import (
    MAX_WIDTH,
    color_of,
    errorbars,
    legend_outside,
    log_axis,
    new_figure,
    plain_log_axis,
)
from specdec_study.results.declare import BASELINE


def _by_method(table: Sequence[dict[str, Any]]) -> dict[str, pd.DataFrame]:
    df = pd.DataFrame(list(table))
    return {m: g.sort_values("context") for m, g in df.groupby("method", sort=False)}


def _tag(summary: dict[str, Any]) -> str:
    return "KV cache on" if summary.get("use_cache", True) else "KV cache off"


def _contexts(summary: dict[str, Any]) -> list[int]:
    return sorted({int(t["context"]) for t in summary.get("table") or []})


def _ci(g: pd.DataFrame, key: str, scale: float = 1.0) -> tuple[Any, Any, Any]:
    lo = g.get(f"{key}_ci_low", g[key])
    hi = g.get(f"{key}_ci_high", g[key])
    return scale * g[key], scale * lo, scale * hi


def speedup_panel(ax, summary: dict[str, Any], names: dict[str, str], earlier: bool) -> None:
    """Paired speedup per arm (solid, 95% CI); with earlier, also the earlier study's way: the
    reference context's baseline time / the row's time (dashed, the baseline's own included)."""
    ref = (summary.get("earlier_style") or {}).get("reference_context", 20)
    for arm, g in _by_method(summary["table"]).items():
        color = color_of(arm)
        name = names.get(arm, arm)
        if arm != BASELINE:
            errorbars(ax, g["context"], *_ci(g, "speedup"),
                      f"{name} vs the baseline at the same context", color=color)  # fmt: skip
        if earlier and "earlier_style_speedup" in g:
            errorbars(ax, g["context"], *_ci(g, "earlier_style_speedup"),
                      f"{name} vs the baseline at context {ref} (earlier study's way)",
                      marker="x", ls="--", color=color)  # fmt: skip
    ax.axhline(1.0, color="grey", lw=1)
    log_axis(ax, _contexts(summary))
    ax.set(xlabel="context (tokens)", ylabel="speedup", title=_tag(summary))


def speedup_vs_context(summary: dict[str, Any], names: dict[str, str] | None = None) -> Any:
    """Paired speedup at each context, each against the baseline at the same context."""
    if not summary.get("table"):
        return None
    fig, (ax,) = new_figure(1, 5.2, 3.9)
    speedup_panel(ax, summary, names or {}, earlier=False)
    ax.set_title(f"paired speedup ({_tag(summary)}, 95% CI)")
    legend_outside(ax)
    return fig


def earlier_style_vs_paired(
    summaries: Sequence[dict[str, Any]], names: dict[str, str] | None = None
) -> Any:
    """One panel per sweep (cache on, off): paired speedups beside the earlier study's way."""
    summaries = [s for s in summaries if s and s.get("table")]
    if not summaries:
        return None
    fig, axes = new_figure(len(summaries), MAX_WIDTH, 3.6)
    for ax, summary in zip(axes, summaries, strict=True):
        speedup_panel(ax, summary, names or {}, earlier=True)
    legend_outside(axes[-1], axes=axes[:-1])
    return fig


def acceptance_vs_context(summary: dict[str, Any], names: dict[str, str] | None = None) -> Any:
    """Measured acceptance (accepted / proposed) per drafting arm and context, 95% CI and n;
    None when no arm drafts (the cache-off sweep runs the baseline only: an empty plot)."""
    drafting = {
        arm: g
        for arm, g in _by_method(summary.get("table") or []).items()
        if arm != BASELINE and "acceptance_rate" in g and g["acceptance_rate"].notna().any()
    }
    if not drafting:
        return None
    fig, (ax,) = new_figure(1, 5.2, 3.8)
    for arm, g in drafting.items():
        n = int(g["n_prompts"].min()) if "n_prompts" in g else None
        label = (names or {}).get(arm, arm) + (f" (n = {n})" if n else "")
        errorbars(ax, g["context"], *_ci(g, "acceptance_rate", 100.0), label, color=color_of(arm))
    log_axis(ax, _contexts(summary))
    ax.set(xlabel="context (tokens)", ylabel="acceptance rate (%)", ylim=(0, 102),
           title=f"measured acceptance ({_tag(summary)}, 95% CI)")  # fmt: skip
    legend_outside(ax)
    return fig


def time_vs_context(summary: dict[str, Any], names: dict[str, str] | None = None) -> Any:
    """Total seconds per arm at each context (the baseline's own growth included)."""
    if not summary.get("table"):
        return None
    fig, (ax,) = new_figure(1, 5.2, 3.9)
    for arm, g in _by_method(summary["table"]).items():
        ax.plot(g["context"], g["total_wall_s"], marker="o", label=(names or {}).get(arm, arm),
                color=color_of(arm))  # fmt: skip
    log_axis(ax, _contexts(summary))
    ax.set(xlabel="context (tokens)", ylabel="total seconds (all prompts)",
           title=f"time vs context ({_tag(summary)})")  # fmt: skip
    legend_outside(ax)
    return fig


def ms_per_token(rows: pd.DataFrame) -> pd.DataFrame:
    """Per (method, context): total milliseconds over total new tokens of the prompts, with a
    bootstrap 95% interval over prompts (stats.pooled_ratio) and its n."""
    col = "context" if "context" in rows.columns else "context_tokens"
    out = []
    for (method, context), g in rows.groupby(["method", col]):
        iv = stats.pooled_ratio(g["wall_s"].to_numpy(float), g["new_tokens"].to_numpy(float))
        out.append({"method": method, "context": int(context), "ms_per_token": 1000 * iv.value,
                    "ci_low": 1000 * iv.low, "ci_high": 1000 * iv.high, "n": iv.n})  # fmt: skip
    return pd.DataFrame(out)


def time_per_token(sweeps: dict[str, pd.DataFrame], names: dict[str, str] | None = None) -> Any:
    """Milliseconds per generated token vs context per arm, with 95% intervals over prompts, for
    each sweep's per-prompt rows ({"cache on": rows, "cache off": rows}; dashed: cache off).
    Log-log axes."""
    if not sweeps:
        return None
    fig, (ax,) = new_figure(1, 5.2, 3.9)
    contexts: set[int] = set()
    n_prompts: set[int] = set()
    for tag, rows in sweeps.items():
        g = ms_per_token(rows)
        contexts |= set(g["context"])
        n_prompts |= set(g["n"])
        for arm, h in g.groupby("method"):
            h = h.sort_values("context")
            ls = "--" if tag == "cache off" else "-"
            errorbars(ax, h["context"], h["ms_per_token"], h["ci_low"], h["ci_high"],
                      f"{(names or {}).get(arm, arm)}, {tag}", ls=ls,
                      color=color_of(arm))  # one colour per arm, cache on and off alike # fmt: skip
    log_axis(ax, contexts)
    ax.set_yscale("log")
    plain_log_axis(ax.yaxis)
    n = f"n = {min(n_prompts)} prompts, " if n_prompts else ""
    ax.set(xlabel="context (tokens)", ylabel="ms per generated token",
           title=f"time per token vs context ({n}95% CI)")  # fmt: skip
    legend_outside(ax)
    return fig


def _published_acceptance(ax, published: pd.DataFrame | None) -> None:
    if published is None:
        return
    t = published[published["strategy"] == "transformer draft"].sort_values("context")
    ax.plot(t["context"], t["acceptance_pct"], "s:", color=color_of("earlier"),
            label="earlier study, as reported")  # fmt: skip


def agreement_changes(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Draft -> the headline's agreement change over the test range (value, ci_low, ci_high, n,
    contexts), for the drafts whose summary states one."""
    out = {}
    for d, h in (summary.get("headline") or {}).items():
        test = (h.get("change_test") or {}) if isinstance(h, dict) else {}
        ch = test.get("agreement")
        if isinstance(ch, dict) and ch.get("value") is not None:
            out[d] = {**ch, "contexts": test.get("contexts")}
    return out


def change_panel(
    ax: Any, changes: dict[str, dict[str, Any]], names: dict[str, str], reference: float | None
) -> None:
    """Each draft's change (points) with its 95% CI on its own row, on an axis scaled to the
    changes, beside zero and the change the published acceptance implies (`reference`)."""
    rows = list(changes.items())
    for i, (d, ch) in enumerate(rows):
        v, lo, hi = (100 * float(ch[k]) for k in ("value", "ci_low", "ci_high"))
        ax.errorbar([v], [i], xerr=[[v - lo], [hi - v]], fmt="o", color=color_of(d), capsize=3)
    ns = {ch.get("n") for _, ch in rows}
    each = len(ns) > 1  # one n for all: said once, in the title
    ticks = [names.get(d, d) + (f" (n = {ch.get('n')})" if each else "") for d, ch in rows]
    ax.set_yticks(range(len(rows)), ticks)
    ax.axvline(0.0, color="grey", lw=1, label="no change")
    if reference is not None:
        ax.axvline(100 * reference, color=color_of("earlier"), ls="--",
                   label="the fall the published acceptance implies")  # fmt: skip
    c = next((ch.get("contexts") for _, ch in rows if ch.get("contexts")), None)
    span = f" {c[0]} -> {c[1]}" if c else ""
    n = "" if each or not ns else f", n = {next(iter(ns))}"
    ax.set(xlabel=f"agreement change{span} (points)", title=f"the tested change (95% CI{n})")
    ax.invert_yaxis()


def agreement_vs_context(
    summary: dict[str, Any],
    names: dict[str, str] | None = None,
    published: pd.DataFrame | None = None,
    reference: float | None = None,
) -> Any:
    """Left: teacher-forced per-position agreement of every draft vs context. Right (when the
    summary has it): the acceptance at K = 4 that agreement implies (book/math.md), beside the
    earlier study's reported acceptance. Two panels because they are different quantities.
    Last (when the summary states them): each draft's agreement change over the test range with
    its interval, on its own axis, since a change of a few points is invisible on the levels'
    axis, beside the change in agreement the published acceptance fall implies (`reference`)."""
    tab = pd.DataFrame(summary.get("table") or [])
    if not len(tab):
        return None
    implied = "implied_acceptance" in tab
    changes = agreement_changes(summary)
    n_panels = 1 + implied + bool(changes)
    fig, axes = new_figure(n_panels, MAX_WIDTH, 3.4)
    axes = list(axes)
    names = {"target_vs_text": "target vs the real next token", **(names or {})}
    for d, g in tab.groupby("draft", sort=False):
        g = g.sort_values("context")
        ls = "--" if d == "target_vs_text" else "-"
        lo, hi = 100 * g["ci_low"], 100 * g["ci_high"]
        errorbars(axes[0], g["context"], 100 * g["agreement"], lo, hi, names.get(d, d), ls=ls,
                  color=color_of(d))  # fmt: skip
        if implied and d != "target_vs_text":
            errorbars(axes[1], g["context"], *_ci(g, "implied_acceptance", 100.0), names.get(d, d),
                      color=color_of(d))  # fmt: skip
    n = documents(tab, summary.get("n_documents"))
    axes[0].set(ylabel="agreement (%)",
                title=f"agreement (n = {n} documents)" if n else "agreement (95% CI)")  # fmt: skip
    if implied:
        _published_acceptance(axes[1], published)
        axes[1].set(ylabel="acceptance at K = 4 (%)", title="implied acceptance")
    contexts = tab["context"].astype(int).tolist()
    if changes:
        change_panel(axes[-1], changes, names, reference)
    for ax in axes[: 1 + implied]:
        log_axis(ax, contexts)
        ax.set_xlabel("context (tokens)")
        ax.axvspan(10, 100, color="grey", alpha=0.08)
    legend_outside(axes[-1], axes=axes[:-1])
    return fig


def documents(tab: pd.DataFrame, stated: Any = None) -> str | None:
    """The documents each point of an agreement table averages, from its rows' own n (a range
    where they differ), else the summary's stated count."""
    if "n" in tab and tab["n"].notna().any():
        ns = sorted({int(v) for v in tab["n"].dropna()})
        return str(ns[0]) if len(ns) == 1 else f"{ns[0]}-{ns[-1]}"
    return None if stated is None else str(stated)


def prompt_confound(
    pp: pd.DataFrame, same: dict, swap: dict, drop: float, arm: str, c0: int, c1: int
) -> Any:
    """Left: per-prompt acceptance of `arm` at every context (the same prompts), with the mean.
    Right: the acceptance change c0 -> c1 when each context gets its own random half of the
    prompts (swap draws), against the same prompts' change and the published fall."""
    fig, (a1, a2) = new_figure(2, MAX_WIDTH, 3.6)
    for _, g in pp.groupby("prompt"):
        g = g.sort_values("context")
        a1.plot(g["context"], 100 * g["acceptance"], color=color_of(arm), alpha=0.3, lw=1)
    mean = pp.groupby("context")["acceptance"].mean()
    a1.plot(mean.index, 100 * mean.values, "o-", color="black", label="mean over prompts")
    log_axis(a1, mean.index)
    a1.set(xlabel="context (tokens)", ylabel="acceptance rate (%)",
           title=f"{arm}: each prompt")  # fmt: skip
    if "draws" in swap:
        a2.hist(100 * swap["draws"], bins=40, color="#8c8c8c", alpha=0.7,
                label="own half of prompts per context")  # fmt: skip
    # the same prompts' change as a point with its interval above the histogram: a shaded band
    # as wide as the interval hid the histogram it is compared with
    top = a2.get_ylim()[1] if "draws" in swap else 1.0
    v, lo, hi = (100 * float(same[k]) for k in ("value", "ci_low", "ci_high"))
    a2.errorbar([v], [1.08 * top], xerr=[[v - lo], [hi - v]], fmt="o", color="black",
                capsize=3, label=f"same prompts, 95% CI (n = {same.get('n')})")  # fmt: skip
    if "draws" in swap:
        q_lo, q_hi = (100 * float(x) for x in np.percentile(swap["draws"], [2.5, 97.5]))
        a2.errorbar([100 * float(np.mean(swap["draws"]))], [1.16 * top],
                    xerr=[[100 * float(np.mean(swap["draws"])) - q_lo],
                          [q_hi - 100 * float(np.mean(swap["draws"]))]],
                    fmt="s", color="#5a5a5a", capsize=3,
                    label="random splits, middle 95%")  # fmt: skip
    a2.set_ylim(0, 1.25 * top)
    a2.axvline(-100 * drop, color=color_of("earlier"), ls="--", label="published fall 10 -> 100")
    a2.set(xlabel=f"change {c0} -> {c1} (points)", ylabel="random splits",
           title="the confound, simulated")  # fmt: skip
    legend_outside(a2, axes=[a1])
    return fig


def earlier_study(published: pd.DataFrame) -> Any:
    """The published transformer-draft rows: acceptance and speedup vs context, with the speedup
    recomputed as the one baseline's time / the row's time."""
    t = published[published["strategy"] == "transformer draft"].sort_values("context")
    base = float(
        published.loc[published["strategy"] == "baseline autoregressive", "time_s"].iloc[0]
    )
    fig, (a1, a2) = new_figure(2, MAX_WIDTH, 3.4)
    red = color_of("earlier")
    a1.plot(t["context"], t["acceptance_pct"], "o-", color=red)
    # from 0: an axis cut at the lowest value makes a few points' fall look like a collapse
    a1.set(ylabel="acceptance (%)", title="acceptance", ylim=(0, 100))
    a2.plot(t["context"], t["speedup"], "o-", label="speedup as reported", color=red)
    a2.plot(t["context"], t["one_baseline_speedup"], "x--", color="#5a5a5a",
            label=f"the baseline's {base:.2f} s / the row's time")  # fmt: skip
    a2.axhline(1.0, color="grey", lw=1)
    a2.set(ylabel="speedup", title="speedup")
    for ax in (a1, a2):
        log_axis(ax, t["context"])
        ax.set_xlabel("context (tokens)")
    legend_outside(a2)
    fig.suptitle("The earlier study (T4, gemma-3-4b-pt with gemma-3-1b-pt), as reported")
    return fig


def ladder_dose_response(
    cont: dict[str, Any],
    own: set[str],
    published: tuple[float, float],
    threshold: float,
    decisive: str | None = None,
) -> Any:
    """The ladder as a dose-response: each draft's agreement at the range's first context on the
    target's own continuation (x) against its tokens-per-call ratio over the range (y, 95%
    whiskers), the threshold as a line, the earlier study's pair as a star (its level implied by
    its acceptance); the draft that decides H3 ringed."""
    changes = cont.get("changes") or {}
    levels = cont.get("levels") or {}
    pts = [(d, levels.get(d), ch["tokens_per_call"]) for d, ch in changes.items()]
    pts = [(d, x, q) for d, x, q in pts if x is not None and q.get("value") is not None]
    if not pts:
        return None
    fig, axes = new_figure(1, MAX_WIDTH, 4.4)
    ax = axes[0]
    for d, x, q in pts:
        shared = d not in own
        marker = "x" if shared else "o"
        errorbars(ax, [100 * x], [q["value"]], [q.get("ci_low")], [q.get("ci_high")], None,
                  marker=marker, ls="none", color=color_of(d))  # fmt: skip
        ax.annotate(d, (100 * x, q["value"]), textcoords="offset points", xytext=(4, 4),
                    color=color_of(d))  # fmt: skip
        if d == decisive:
            ax.plot([100 * x], [q["value"]], "o", ms=16, mfc="none", mec="black",
                    label=f"decides H3: {d}")  # fmt: skip
    ax.plot([], [], "o", color="#5a5a5a", label="o: own weights and cache")
    ax.plot([], [], "x", color="#5a5a5a", label="x: reads the target's states, or no context")
    ax.plot([100 * published[0]], [published[1]], "*", ms=14, color=color_of("earlier"),
            label="earlier study (level implied by its acceptance)")  # fmt: skip
    ax.axhline(threshold, color="black", ls=":", lw=1, label=f"threshold {threshold:.2f}")
    ax.axhline(1.0, color="black", lw=0.5)
    c0, c1 = cont.get("test_range") or (10, 100)
    ax.set(
        xlabel=f"agreement at context {c0} on the target's own continuation (%)",
        ylabel=f"tokens per call, context {c1} / {c0}",
        title=f"the ladder (n = {cont.get('n_documents')} documents)",
    )
    ax.set_xlim(0, 100)
    legend_outside(ax)
    return fig


def replay_vs_context(cont: dict[str, Any]) -> Any:
    """Replayed tokens per call (left) and acceptance (right) of every draft against context,
    with 95% whiskers over documents: what a greedy run with K would see on the target's own
    continuation."""
    by = cont.get("by_draft") or {}
    if not by:
        return None
    fig, axes = new_figure(2, MAX_WIDTH, 3.6)
    contexts: list[int] = []
    for d, cells in by.items():
        cs = sorted(int(c) for c in cells)
        contexts += cs
        for ax, key, scale in ((axes[0], "tokens_per_call", 1.0), (axes[1], "acceptance", 100.0)):
            v = [scale * cells[str(c)][key] for c in cs]
            lo = [scale * cells[str(c)][f"{key}_ci_low"] for c in cs]
            hi = [scale * cells[str(c)][f"{key}_ci_high"] for c in cs]
            errorbars(ax, cs, v, lo, hi, d, color=color_of(d))
    k = cont.get("k")
    n = cont.get("n_documents")
    axes[0].set(ylabel=f"tokens per call (K = {k})", ylim=(0, None),
                title=f"tokens per call (n = {n} documents)")  # fmt: skip
    axes[1].set(ylabel="acceptance (%)", ylim=(0, 100), title="accepted / proposed")
    for ax in axes:
        log_axis(ax, sorted(set(contexts)))
        ax.set_xlabel("context (tokens)")
        ax.axvspan(10, 100, color="grey", alpha=0.08)
    legend_outside(axes[1], axes=axes[:1])
    return fig
