"""The experiments' figures, drawn from rows and summaries (plain data) into PNG files.

Each function takes what `study` computed (the same dicts that go into summary.json) and a path,
draws one figure with matplotlib/seaborn and closes it. Knows nothing about models.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib.ticker import MaxNLocator, NullFormatter, ScalarFormatter  # noqa: E402

from specdec_lib.results.catalog import BASELINE  # noqa: E402

# large type on small canvases: a figure shown 360 px wide on a phone keeps 8-px text or more
sns.set_theme(style="whitegrid", context="notebook", font_scale=1.2)
MIN_WIDTH = 5.0  # inches: room for a title and a legend beside few bars


def _save(fig, path: Path) -> None:
    fig.savefig(path, dpi=110, bbox_inches="tight")  # nothing clipped: titles, outside legends
    plt.close(fig)


def _legend_outside(ax, **kw) -> None:
    """A legend beside the axes, never over bars or lines."""
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, **kw)


def _integer_axis(axis) -> None:
    axis.set_major_locator(MaxNLocator(integer=True))


def _log_context_axis(ax, values) -> None:
    """A log axis labelled with the contexts that were run (10, 20, 50...), not 2x10^1."""
    ax.set_xscale("log")
    ticks = sorted({int(v) for v in values if v is not None})
    ax.set_xticks(ticks)
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_formatter(NullFormatter())


def _err(d: dict[str, Any] | None, key: str = "value") -> tuple[float, float, float]:
    """(value, lower error, upper error) of a {value|median, ci_low, ci_high} dict."""
    if not d:
        return np.nan, 0.0, 0.0
    v = d.get(key, d.get("median"))
    v = np.nan if v is None else v
    lo = d.get("ci_low")
    hi = d.get("ci_high")
    lo = v if lo is None else lo
    hi = v if hi is None else hi
    return v, max(v - lo, 0.0), max(hi - v, 0.0)


def tokens_per_s(rows: Sequence[dict[str, Any]], path: Path) -> None:
    fig, ax = plt.subplots(figsize=(6, 3.5))
    tps = [r["tokens_per_s"] for r in rows]
    sns.histplot(tps, ax=ax, bins=min(20, max(len(tps), 2)))
    med = float(np.median(tps)) if tps else np.nan
    ax.axvline(med, color="k", ls="--", label=f"median {med:.1f}")
    ax.set_xlabel("tokens / s per prompt (autoregressive, KV cache)")
    ax.set_ylabel("prompts")
    _integer_axis(ax.yaxis)
    _legend_outside(ax)
    _save(fig, path)


def speedup_bars(arms: dict[str, Any], path: Path) -> None:
    names = [m for m in arms if m != BASELINE]
    fig, ax = plt.subplots(figsize=(max(MIN_WIDTH, 1.6 + 1.4 * len(names)), 3.5))
    vals = [_err(arms[m].get("speedup")) for m in names]
    ax.bar(
        names,
        [v[0] for v in vals],
        yerr=np.array([[v[1] for v in vals], [v[2] for v in vals]]),
        capsize=5,
        color=sns.color_palette()[: len(names)],
    )
    ax.axhline(1.0, color="k", lw=1)
    ax.set_ylabel("speedup vs paired baseline")
    ax.set_title("speedup, 95% paired-bootstrap CI")
    _save(fig, path)


def position_acceptance(arms: dict[str, Any], path: Path) -> None:
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for m, s in arms.items():
        pa = s.get("position_acceptance")
        if not pa:
            continue
        ys = [np.nan if y is None else y for y in pa]
        ax.plot(range(1, len(ys) + 1), ys, marker="o", label=m)
    ax.set_xlabel("draft position i")
    ax.set_ylabel("P(accept i | 1..i-1 accepted)")
    ax.set_ylim(0, 1.02)
    _integer_axis(ax.xaxis)
    _legend_outside(ax)
    _save(fig, path)


def accepted_histogram(arms: dict[str, Any], path: Path) -> None:
    fig, ax = plt.subplots(figsize=(6, 3.5))
    drafted = [(m, s) for m, s in arms.items() if s.get("accepted_histogram")]
    width = 0.8 / max(len(drafted), 1)
    for j, (m, s) in enumerate(drafted):
        h = np.array(s["accepted_histogram"], dtype=float)
        ax.bar(np.arange(h.size) + j * width, h / max(h.sum(), 1), width=width, label=m)
    ax.set_xlabel("accepted draft tokens per verification")
    ax.set_ylabel("share of verifications")
    _integer_axis(ax.xaxis)
    if drafted:
        _legend_outside(ax)
    _save(fig, path)


def time_split(rows: Sequence[dict[str, Any]], path: Path) -> None:
    methods = list(dict.fromkeys(r["method"] for r in rows))
    parts = {"prefill": [], "draft": [], "verify": [], "other": []}
    for m in methods:
        rs = [r for r in rows if r["method"] == m]
        wall = sum(r["wall_s"] for r in rs)
        pre = sum(r["prefill_s"] for r in rs)
        dr = sum(r["draft_s"] for r in rs)
        ve = sum(r["verify_s"] for r in rs)
        for key, v in (("prefill", pre), ("draft", dr), ("verify", ve)):
            parts[key].append(v)
        parts["other"].append(max(wall - pre - dr - ve, 0.0))
    fig, ax = plt.subplots(figsize=(max(MIN_WIDTH, 1.6 + 1.4 * len(methods)), 3.5))
    bottom = np.zeros(len(methods))
    for key, vals in parts.items():
        ax.bar(methods, vals, bottom=bottom, label=key)
        bottom += np.array(vals)
    ax.set_ylabel("seconds (all prompts)")
    ax.set_title("where the time goes")
    _legend_outside(ax)
    _save(fig, path)


def _by_method(table: Sequence[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for t in table:
        out.setdefault(t["method"], []).append(t)
    return out


def _band(ax, xs, ys, lo, hi, label, **kw):
    ys = np.array([np.nan if y is None else y for y in ys], dtype=float)
    lo = np.array([np.nan if y is None else y for y in lo], dtype=float)
    hi = np.array([np.nan if y is None else y for y in hi], dtype=float)
    line = ax.plot(xs, ys, marker="o", label=label, **kw)[0]
    ax.fill_between(xs, lo, hi, alpha=0.2, color=line.get_color())
    return line


def context_figures(summary: dict[str, Any], d: Path) -> None:
    table = summary["table"]
    byc = _by_method(table)
    tag = "KV cache on" if summary.get("use_cache", True) else "KV cache off"
    ref = summary["earlier_style"]["reference_context"]

    fig, ax = plt.subplots(figsize=(6.5, 4))
    for m, ts in byc.items():
        if m == BASELINE:
            continue
        _band(
            ax,
            [t["context"] for t in ts],
            [t["speedup"] for t in ts],
            [t["speedup_ci_low"] for t in ts],
            [t["speedup_ci_high"] for t in ts],
            m,
        )
    ax.axhline(1.0, color="k", lw=1)
    _log_context_axis(ax, [t["context"] for t in table])
    ax.set_xlabel("context tokens")
    ax.set_ylabel("speedup vs same-context baseline")
    ax.set_title(f"paired speedup ({tag}, 95% CI)")
    _legend_outside(ax)
    _save(fig, d / "speedup_vs_context.png")

    fig, ax = plt.subplots(figsize=(6.5, 4))
    for m, ts in byc.items():
        if m == BASELINE:
            continue
        _band(
            ax,
            [t["context"] for t in ts],
            [t["acceptance_rate"] for t in ts],
            [t["acceptance_rate_ci_low"] for t in ts],
            [t["acceptance_rate_ci_high"] for t in ts],
            m,
        )
    _log_context_axis(ax, [t["context"] for t in table])
    ax.set_ylim(0, 1)
    ax.set_xlabel("context tokens")
    ax.set_ylabel("acceptance (accepted / proposed)")
    ax.set_title(f"acceptance vs context ({tag}, 95% CI)")
    _legend_outside(ax)
    _save(fig, d / "acceptance_vs_context.png")

    fig, ax = plt.subplots(figsize=(6.5, 4))
    for m, ts in byc.items():
        ax.plot([t["context"] for t in ts], [t["total_wall_s"] for t in ts], marker="o", label=m)
    _log_context_axis(ax, [t["context"] for t in table])
    ax.set_xlabel("context tokens")
    ax.set_ylabel("total seconds (all prompts)")
    ax.set_title(f"time vs context ({tag})")
    _legend_outside(ax)
    _save(fig, d / "time_vs_context.png")

    fig, ax = plt.subplots(figsize=(6.5, 4))
    for m, ts in byc.items():
        xs = [t["context"] for t in ts]
        line = _band(
            ax,
            xs,
            [t["earlier_style_speedup"] for t in ts],
            [t["earlier_style_speedup_ci_low"] for t in ts],
            [t["earlier_style_speedup_ci_high"] for t in ts],
            f"{m}: baseline@{ref} / time",
            ls="--",
        )
        if m != BASELINE:
            ax.plot(
                xs,
                [np.nan if t["speedup"] is None else t["speedup"] for t in ts],
                marker="s",
                color=line.get_color(),
                label=f"{m}: paired",
            )
    ax.axhline(1.0, color="k", lw=1)
    _log_context_axis(ax, [t["context"] for t in table])
    ax.set_xlabel("context tokens")
    ax.set_ylabel("speedup")
    ax.set_title(f"earlier-study style vs paired ({tag})")
    _legend_outside(ax)
    _save(fig, d / "earlier_style_vs_paired.png")


def agreement(summary: dict[str, Any], path: Path) -> None:
    fig, ax = plt.subplots(figsize=(6.5, 4))
    by: dict[str, list[dict[str, Any]]] = {}
    for t in summary["table"]:
        by.setdefault(t["draft"], []).append(t)
    for dname, ts in by.items():
        _band(
            ax,
            [t["context"] for t in ts],
            [t["agreement"] for t in ts],
            [t["ci_low"] for t in ts],
            [t["ci_high"] for t in ts],
            dname,
            ls=":" if dname == "target_vs_text" else "-",
        )
    _log_context_axis(ax, [t["context"] for t in summary["table"]])
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("visible context tokens")
    ax.set_ylabel("agreement with the target")
    ax.set_title("teacher-forced agreement (95% CI)")
    _legend_outside(ax)
    _save(fig, path)


def measured_vs_predicted(summary: dict[str, Any], path: Path) -> None:
    t = summary["table"]
    ks = [r["k"] for r in t]
    fig, ax = plt.subplots(figsize=(6.5, 4))
    _band(
        ax,
        ks,
        [r["speedup"] for r in t],
        [r["speedup_ci_low"] for r in t],
        [r["speedup_ci_high"] for r in t],
        "measured (95% CI)",
    )
    for key, label in (
        ("predicted_speedup_leviathan", "Leviathan (per-K a, c)"),
        ("predicted_speedup_calibrated", "calibrated (measured verify cost)"),
        ("predicted_speedup_pooled", "Leviathan (pooled a, c)"),
    ):
        ax.plot(
            ks,
            [np.nan if r.get(key) is None else r[key] for r in t],
            ls="--",
            marker=".",
            label=label,
        )
    ad = summary.get("adaptive", {})
    sp = ad.get("speedup") or {}
    if sp.get("value") is not None:
        ax.axhline(sp["value"], color="purple", ls="-.", label=f"adaptive K (≤{ad.get('k_max')})")
    ax.axhline(1.0, color="k", lw=1)
    ax.set_xticks(ks)
    ax.set_xlabel("draft length K")
    ax.set_ylabel("speedup")
    ax.set_title("measured vs predicted speedup")
    _legend_outside(ax)
    _save(fig, path)


def sampling_speedup(summary: dict[str, Any], path: Path) -> None:
    rows = [r for r in summary["table"] if r["method"] != BASELINE]
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.8))
    methods = list(dict.fromkeys(r["method"] for r in rows))
    temps = summary["temperatures"]
    width = 0.8 / max(len(methods), 1)
    for j, m in enumerate(methods):
        rs = [r for r in rows if r["method"] == m]
        x = np.arange(len(rs)) + j * width
        for ax, key in zip(axes, ("speedup", "acceptance_rate"), strict=True):
            v = np.array([np.nan if r[key] is None else r[key] for r in rs], dtype=float)
            lo = np.array(
                [np.nan if r[f"{key}_ci_low"] is None else r[f"{key}_ci_low"] for r in rs],
                dtype=float,
            )
            hi = np.array(
                [np.nan if r[f"{key}_ci_high"] is None else r[f"{key}_ci_high"] for r in rs],
                dtype=float,
            )
            ax.bar(
                x,
                v,
                width=width,
                yerr=[np.nan_to_num(v - lo), np.nan_to_num(hi - v)],
                capsize=4,
                label=m,
            )
    for ax, lab in zip(axes, ("speedup", "acceptance rate"), strict=True):
        ax.set_xticks(np.arange(len(temps)) + width * (len(methods) - 1) / 2)
        ax.set_xticklabels([f"T={t}" for t in temps])
        ax.set_ylabel(lab)
    axes[1].set_ylim(0, 1.05)
    _legend_outside(axes[1])
    axes[0].axhline(1.0, color="k", lw=1)
    _save(fig, path)


def distribution_check(summary: dict[str, Any], path: Path) -> None:
    checks = summary["distribution_check"]
    temps = list(checks)
    methods = [m for m in checks[temps[0]] if isinstance(checks[temps[0]][m], dict)]
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    x = np.arange(len(temps))
    w = 0.8 / max(len(methods), 1)
    for j, m in enumerate(methods):
        v = [checks[t][m]["tvd"] or 0.0 for t in temps]
        bars = ax.bar(x + w * j, v, width=w, label=m)
        for b, t in zip(bars, temps, strict=True):
            p = checks[t][m]["p_value"]
            ax.annotate(
                "p=n/a" if p is None else f"p={p:.2f}",
                (b.get_x() + w / 2, b.get_height()),
                ha="center",
                va="bottom",
                fontsize=10,
            )
    for t_i, t in enumerate(temps):  # the smallest TVD the check detects (80% power)
        dt = [checks[t][m].get("detectable_tvd") for m in methods]
        dt = [d for d in dt if d is not None]
        if dt:
            ax.hlines(
                max(dt),
                t_i - w / 2,
                t_i + w * (len(methods) - 0.5),
                colors="k",
                lw=1,
                label="detectable TVD (80% power)" if t_i == 0 else None,
            )
    ax.set_xticks(x + w * (len(methods) - 1) / 2)
    ax.set_xticklabels([f"T={t}" for t in temps])
    ax.set_ylabel("TVD, empirical vs exact")
    ax.set_title("first sampled token vs target (chi-square p)")
    ax.set_ylim(0, max([b.get_height() for b in ax.patches] + [0.01]) * 1.25)
    _legend_outside(ax)
    _save(fig, path)


def peers(summary: dict[str, Any], path: Path) -> None:
    t = summary["table"]
    fig, ax = plt.subplots(figsize=(max(MIN_WIDTH, 1.5 + 1.1 * len(t)), 4.2))
    names = [r["method"] for r in t]
    v = np.array([r["tokens_per_s"] for r in t], dtype=float)
    lo = np.array([r["tokens_per_s_ci_low"] for r in t], dtype=float)
    hi = np.array([r["tokens_per_s_ci_high"] for r in t], dtype=float)
    colors = [sns.color_palette()[0 if r["implementation"] == "ours" else 1] for r in t]
    ax.bar(names, v, yerr=[v - lo, hi - v], capsize=4, color=colors)
    for i, r in enumerate(t):  # inside the bar's foot, where no whisker or neighbour reaches
        ax.annotate(
            f"{r['identical_to_baseline']:.0%}",
            (i, 0),
            xytext=(0, 4),
            textcoords="offset points",
            ha="center",
            va="bottom",
            rotation=90,
            color="white",
            fontsize=10,
        )
    ax.set_ylabel("tokens / s (median, 95% CI)")
    ax.set_title("ours (blue) vs HF generate (orange);\nlabel: share identical to greedy")
    plt.setp(ax.get_xticklabels(), rotation=30, ha="right")
    _save(fig, path)
