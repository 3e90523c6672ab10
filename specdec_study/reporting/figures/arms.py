"""Figures of arms at one setting, from plain data (summary dicts and per-prompt rows): tokens per
second, speedups, per-position acceptance, accepted lengths, the time split, measured against
predicted speedup over K, sampling, peers, divergence margins and a training curve. Each returns a
matplotlib Figure, or None when the data has nothing to draw; the study saves them into result
directories, the book shows them. Knows nothing about files or profiles.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from specdec_study.reporting.figures.style import (
    PART_COLORS,
    color_of,
    column,
    errorbars,
    integer_axis,
    interval,
    legend_outside,
    new_figure,
    records,
)
from specdec_study.results.declare import BASELINE

MIN_WIDTH = 5.0  # inches: room for a title and a legend beside few bars


def tokens_per_s(rows: Any) -> Any:
    """Histogram of the per-prompt tokens per second, with the median."""
    import seaborn as sns

    tps = [float(r["tokens_per_s"]) for r in records(rows)]
    fig, (ax,) = new_figure(1, 5.2, 3.5)
    sns.histplot(tps, ax=ax, bins=min(20, max(len(tps), 2)), color=color_of(BASELINE))
    med = float(np.median(tps)) if tps else np.nan
    ax.axvline(med, color="k", ls="--", label=f"median {med:.1f}")
    ax.set(xlabel="tokens / s per prompt (autoregressive, KV cache)", ylabel="prompts")
    integer_axis(ax.yaxis)
    legend_outside(ax)
    return fig


def speedup_bars(arms: dict[str, Any]) -> Any:
    """The paired speedup of every drafting arm, with its 95% interval."""
    names = [m for m in arms if m != BASELINE]
    if not names:
        return None
    fig, (ax,) = new_figure(1, max(MIN_WIDTH, 1.6 + 1.4 * len(names)), 3.5)
    vals = [interval(arms[m].get("speedup")) for m in names]
    ax.bar(
        names,
        [v[0] for v in vals],
        yerr=np.array([[v[1] for v in vals], [v[2] for v in vals]]),
        capsize=5,
        color=[color_of(m) for m in names],
    )
    ax.axhline(1.0, color="k", lw=1)
    ax.set(ylabel="speedup vs paired baseline", title="speedup (95% CI)")
    return fig


def position_acceptance(arms: dict[str, Any]) -> Any:
    """P(draft position i accepted | 1..i-1 accepted) per arm; dotted: the i.i.d. fit a."""
    drafted = {m: s for m, s in arms.items() if s.get("position_acceptance")}
    if not drafted:
        return None
    fig, (ax,) = new_figure(1, 5.2, 3.6)
    for m, s in drafted.items():
        pa = [np.nan if y is None else 100 * y for y in s["position_acceptance"]]
        ax.plot(range(1, len(pa) + 1), pa, marker="o", label=m, color=color_of(m))
        iid = s.get("per_token_acceptance_iid")
        if iid is not None and np.isfinite(iid):
            ax.axhline(100 * iid, ls=":", lw=1, color=color_of(m))
    ax.set(
        xlabel="draft position i",
        ylabel="P(accept i | 1..i-1) (%)",
        ylim=(0, 102),
        title="per-position acceptance",
    )
    integer_axis(ax.xaxis)
    legend_outside(ax)
    return fig


def accepted_histogram(arms: dict[str, Any]) -> Any:
    """Share of verifications that accepted 0..K drafted tokens, bars side by side per arm."""
    drafted = [(m, s) for m, s in arms.items() if s.get("accepted_histogram")]
    if not drafted:
        return None
    fig, (ax,) = new_figure(1, 5.2, 3.5)
    width = 0.8 / len(drafted)
    for j, (m, s) in enumerate(drafted):
        h = np.asarray(s["accepted_histogram"], dtype=float)
        x = np.arange(h.size) + (j - (len(drafted) - 1) / 2) * width
        ax.bar(x, h / max(h.sum(), 1), width=width, label=m, color=color_of(m))
    ax.set(xlabel="drafted tokens accepted per verification", ylabel="share of verifications")
    integer_axis(ax.xaxis)
    legend_outside(ax)
    return fig


def time_split(rows: Any) -> Any:
    """Seconds in prefill, drafting, verification and the rest per arm, summed over prompts."""
    rs = records(rows)
    methods = list(dict.fromkeys(r["method"] for r in rs))
    if not methods:
        return None
    parts: dict[str, list[float]] = {"prefill": [], "draft": [], "verify": [], "other": []}
    for m in methods:
        mine = [r for r in rs if r["method"] == m]
        sums = {k: float(sum(r[f"{k}_s"] for r in mine)) for k in ("wall", "prefill", "draft")}
        sums["verify"] = float(sum(r["verify_s"] for r in mine))
        for key in ("prefill", "draft", "verify"):
            parts[key].append(sums[key])
        parts["other"].append(
            max(sums["wall"] - sums["prefill"] - sums["draft"] - sums["verify"], 0)
        )
    fig, (ax,) = new_figure(1, 5.2, 0.55 * len(methods) + 1.6)
    left = np.zeros(len(methods))
    for key, vals in parts.items():
        ax.barh(methods, vals, left=left, label=key, color=PART_COLORS[key])
        left += np.array(vals)
    ax.invert_yaxis()  # first arm on top
    ax.set(xlabel="seconds, summed over prompts", title="where the time goes")
    legend_outside(ax)
    return fig


PREDICTIONS = (
    ("predicted_speedup_leviathan", "Leviathan (per-K a, c)", "s--"),
    ("predicted_speedup_calibrated", "calibrated (measured verify cost)", "d:"),
    ("predicted_speedup_pooled", "Leviathan (pooled a, c)", "^-."),
)


def measured_vs_predicted(summary: dict[str, Any]) -> Any:
    """A K sweep's measured speedup per K (95% CI) beside the predictions; adaptive K as a line."""
    t = sorted(
        (r for r in summary.get("table") or [] if r.get("method") != "adaptive"),
        key=lambda r: r["k"],
    )
    if not t:
        return None
    ks = [int(r["k"]) for r in t]
    fig, (ax,) = new_figure(1, 5.2, 3.9)
    v, lo, hi = (column(t, key) for key in ("speedup", "speedup_ci_low", "speedup_ci_high"))
    errorbars(ax, ks, v, lo, hi, "measured (95% CI)")
    for key, label, style in PREDICTIONS:
        if any(r.get(key) is not None for r in t):
            ax.plot(ks, column(t, key), style, label=label)
    ad = summary.get("adaptive") or {}
    if (ad.get("speedup") or {}).get("value") is not None:
        k_max = ad.get("k_max")
        ax.axhline(ad["speedup"]["value"], color="tab:purple", lw=1, ls="-.",
                   label=f"adaptive K (max {k_max})")  # fmt: skip
    ax.axhline(1.0, color="grey", lw=1)
    ax.set_xticks(ks)
    ax.set(xlabel="draft length K", ylabel="speedup", title="measured vs predicted speedup")
    legend_outside(ax)
    return fig


def _bars_by_temperature(ax, rows: list[dict[str, Any]], methods: list[str], key: str) -> None:
    width = 0.8 / max(len(methods), 1)
    for j, m in enumerate(methods):
        rs = [r for r in rows if r["method"] == m]
        v, lo, hi = (column(rs, k) for k in (key, f"{key}_ci_low", f"{key}_ci_high"))
        x = np.arange(len(rs)) + j * width
        err = [np.nan_to_num(v - lo), np.nan_to_num(hi - v)]
        ax.bar(x, v, width=width, yerr=err, capsize=4, label=m, color=color_of(m))


def sampling_speedup(summary: dict[str, Any]) -> Any:
    """Speedup (left) and acceptance (right) of speculative sampling per temperature."""
    rows = [r for r in summary.get("table") or [] if r["method"] != BASELINE]
    if not rows:
        return None
    methods = list(dict.fromkeys(r["method"] for r in rows))
    temps = summary["temperatures"]
    width = 0.8 / len(methods)
    fig, axes = new_figure(2, height=3.8)
    for ax, key, label in zip(axes, ("speedup", "acceptance_rate"), ("speedup", "acceptance rate"),
                              strict=True):  # fmt: skip
        _bars_by_temperature(ax, rows, methods, key)
        ax.set_xticks(np.arange(len(temps)) + width * (len(methods) - 1) / 2)
        ax.set_xticklabels([f"T={t}" for t in temps])
        ax.set_ylabel(label)
    axes[0].axhline(1.0, color="k", lw=1)
    axes[1].set_ylim(0, 1.05)
    legend_outside(axes[1])
    return fig


def distribution_check(summary: dict[str, Any]) -> Any:
    """First-token TVD per temperature and sampler with chi-square p above each bar, and the
    smallest TVD the check detects (80% power) as a line."""
    checks = summary.get("distribution_check") or {}
    temps = list(checks)
    if not temps:
        return None
    methods = [m for m in checks[temps[0]] if isinstance(checks[temps[0]][m], dict)]
    w = 0.8 / max(len(methods), 1)
    fig, (ax,) = new_figure(1, 5.2, 3.8)
    for j, m in enumerate(methods):
        bars = ax.bar(np.arange(len(temps)) + w * j, [checks[t][m]["tvd"] or 0.0 for t in temps],
                      width=w, label=m, color=color_of(m))  # fmt: skip
        for b, t in zip(bars, temps, strict=True):
            p = checks[t][m]["p_value"]
            ax.annotate("p=n/a" if p is None else f"p={p:.2f}", (b.get_x() + w / 2, b.get_height()),
                        ha="center", va="bottom", fontsize="small")  # fmt: skip
    for i, t in enumerate(temps):
        dt = [checks[t][m].get("detectable_tvd") for m in methods]
        dt = [d for d in dt if d is not None]
        if dt:
            ax.hlines(max(dt), i - w / 2, i + w * (len(methods) - 0.5), colors="k", lw=1,
                      label="detectable TVD (80% power)" if i == 0 else None)  # fmt: skip
    ax.set_xticks(np.arange(len(temps)) + w * (len(methods) - 1) / 2)
    ax.set_xticklabels([f"T={t}" for t in temps])
    ax.set(ylabel="TVD, empirical vs exact", title="first sampled token vs target")
    ax.set_ylim(0, max([b.get_height() for b in ax.patches] + [0.01]) * 1.3)
    legend_outside(ax)
    return fig


def peers(summary: dict[str, Any]) -> Any:
    """Tokens per second of our decoders and Hugging Face generate, with the share of outputs
    identical to greedy written inside each bar's foot."""
    t = summary.get("table") or []
    if not t:
        return None
    fig, (ax,) = new_figure(1, max(MIN_WIDTH, 1.5 + 1.1 * len(t)), 4.2)
    v, lo, hi = (column(t, k) for k in ("tokens_per_s", "tokens_per_s_ci_low",
                                         "tokens_per_s_ci_high"))  # fmt: skip
    ours = [r["implementation"] == "ours" for r in t]
    bars = ax.bar([r["method"] for r in t], v, yerr=[v - lo, hi - v], capsize=4,
                  color=[color_of(r["method"]) for r in t])  # fmt: skip
    for bar, mine in zip(bars, ours, strict=True):
        if not mine:
            bar.set_hatch("//")
    for i, r in enumerate(t):  # inside the bar's foot, where no whisker or neighbour reaches
        ax.annotate(f"{r['identical_to_baseline']:.0%}", (i, 0), xytext=(0, 4),
                    textcoords="offset points", ha="center", va="bottom", rotation=90,
                    color="white", fontsize="small")  # fmt: skip
    ax.set(ylabel="tokens / s (median, 95% CI)", title="ours (plain) vs HF generate (hatched)")
    ax.tick_params(axis="x", labelrotation=30)
    for label in ax.get_xticklabels():
        label.set_horizontalalignment("right")
    return fig


def divergence_margins(margins: dict[str, Sequence[float]]) -> Any:
    """The target's top-1 minus top-2 logit where outputs first differ, per dtype."""
    if not any(margins.values()):
        return None
    fig, (ax,) = new_figure(1, 5.2, 3.4)
    for dt, vals in margins.items():
        if vals:
            ax.hist(vals, bins=20, alpha=0.6, label=f"{dt} ({len(vals)} divergences)")
    ax.set(xlabel="top-1 minus top-2 logit at the first difference", ylabel="prompts",
           title="margins where outputs differ")  # fmt: skip
    integer_axis(ax.yaxis)
    legend_outside(ax)
    return fig


def _curve(rec: dict[str, Any]) -> tuple[list[float], dict[str, list[float]]]:
    """(steps, {series: values}) from a training record: a `curve` list of per-step dicts, or
    parallel lists under `steps` and any other numeric list."""
    curve = rec.get("curve") or rec.get("history") or rec.get("log")
    if isinstance(curve, list) and curve and isinstance(curve[0], dict):
        keys = list(dict.fromkeys(k for c in curve for k in c))
        xk = next((k for k in ("step", "steps", "iteration", "epoch") if k in keys), None)
        x = [c.get(xk) for c in curve] if xk else list(range(len(curve)))
        series = {k: [c.get(k) for c in curve] for k in keys if k != xk}
        numeric = {k: v for k, v in series.items() if all(isinstance(y, int | float) for y in v)}
        return x, numeric
    steps = rec.get("steps") if isinstance(rec.get("steps"), list) else None
    series = {
        k: v
        for k, v in rec.items()
        if isinstance(v, list) and v and all(isinstance(y, int | float) for y in v) and k != "steps"
    }
    n = max((len(v) for v in series.values()), default=0)
    return (steps or list(range(n))), series


TRAINING_AGREEMENT = "training agreement:\nargmax match on the training batch,\nkept ids only"
EVALUATION_AGREEMENT = (
    "evaluation agreement (another quantity):\nteacher-forced, held-out documents,\nfull vocabulary"
)


def training_curve(
    name: str, rec: dict[str, Any], evaluation: Sequence[float] | None = None
) -> Any:
    """A distilled draft's training curve from its stored training record: the loss on its own
    axis, the agreement on another. The training agreement (argmax match over the loss's kept
    ids, on the batch before each step) is not the evaluation's teacher-forced agreement (full
    vocabulary, held-out documents); `evaluation` (that agreement at each context, 0..1) is drawn
    beside it as a band, labelled as the other quantity."""
    x, series = _curve(rec)
    if not series:
        return None
    agreement = {k: v for k, v in series.items() if "agree" in k}
    rest = {k: v for k, v in series.items() if k not in agreement}
    fig, axes = new_figure(2 if agreement and rest else 1, height=3.6)
    if rest:
        for k, v in rest.items():
            axes[0].plot(x[: len(v)], v, label=k, color=color_of(name) if k == "loss" else None)
        axes[0].set(xlabel="training step", ylabel="loss" if list(rest) == ["loss"] else "value",
                    title=f"{name}: training loss")  # fmt: skip

    if agreement:
        ax = axes[-1]
        for k, v in agreement.items():
            label = TRAINING_AGREEMENT if k == "agreement" else k
            ax.plot(x[: len(v)], [100 * y for y in v], label=label, color=color_of(name))
        ev = [float(e) for e in (evaluation or []) if np.isfinite(e)]
        if ev:
            ax.axhspan(100 * min(ev), 100 * max(ev), color=color_of(name), alpha=0.2,
                       label=EVALUATION_AGREEMENT + ",\nrange over contexts")  # fmt: skip
        ax.set(xlabel="training step", ylabel="agreement (%)", ylim=(0, 100),
               title=f"{name}: agreement")  # fmt: skip
    legend_outside(axes[-1], axes=axes[:-1])
    return fig
