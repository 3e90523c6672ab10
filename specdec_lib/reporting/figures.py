"""The book's figures (matplotlib Figures, no pyplot state; None when the data is missing)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from specdec_lib.analysis.changes import (
    acceptance_change,
    context_column,
    per_prompt_acceptance,
    prompt_swap_change,
    range_for_test,
)
from specdec_lib.analysis.verdicts import sweep_primary
from specdec_lib.reporting.earlier import earlier_baseline_time, earlier_drop, earlier_recomputed
from specdec_lib.reporting.format import as_float, central, finite
from specdec_lib.reporting.tables import identity_margins
from specdec_lib.results.catalog import BASELINE
from specdec_lib.results.read import (
    Profile,
    role_arm,
    sweep_contexts,
    sweep_table,
)
from specdec_lib.results.store import ExperimentResult


def show(fig: Any, dpi: int = 110) -> Any:
    """A Figure as an IPython PNG image (independent of the kernel's matplotlib backend), or
    None, which a notebook cell renders as nothing."""
    if fig is None:
        return None
    import io

    from IPython.display import Image

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    return Image(data=buf.getvalue())


def new_figure(ncols: int = 1, width: float = 6.4, height: float = 3.8):
    import seaborn as sns
    from matplotlib.figure import Figure

    sns.set_theme(style="whitegrid", context="notebook", palette="colorblind")
    fig = Figure(figsize=(width, height), dpi=110, layout="constrained")
    axes = fig.subplots(1, ncols, squeeze=False)[0]
    return fig, axes


def _err(ax, x, v, lo, hi, label, marker="o", ls="-", color=None):
    v, lo, hi = (np.asarray(a, dtype=float) for a in (v, lo, hi))
    yerr = np.vstack([np.clip(v - lo, 0, None), np.clip(hi - v, 0, None)])
    yerr = np.where(np.isfinite(yerr), yerr, 0.0)
    return ax.errorbar(x, v, yerr=yerr, marker=marker, ls=ls, capsize=3, label=label, color=color)


def _labels(p: Profile, res: ExperimentResult | None) -> dict[str, str]:
    names = {}
    if res is not None:
        for role in ("bigram", "transformer", "ngram"):
            a = role_arm(res, role)
            if a:
                names[a] = f"{role} ({a})" if a != role else role
    return names


def fig_earlier_study() -> Any:
    """The published table: acceptance and speedup vs context (transformer draft)."""
    er = earlier_recomputed()
    t = er[er["strategy"] == "transformer draft"].sort_values("context")
    fig, (a1, a2) = new_figure(2, 9.0, 3.4)
    a1.plot(t["context"], t["acceptance_pct"], "o-")
    a1.set(
        xlabel="context (tokens)",
        ylabel="acceptance (%)",
        xscale="log",
        title="acceptance, as reported",
    )
    a2.plot(t["context"], t["speedup"], "o-", label="speedup as reported")
    base = earlier_baseline_time(er)
    a2.plot(t["context"], t["one_baseline_speedup"], "x--", label=f"{base:.2f} s / time")
    a2.axhline(1.0, color="grey", lw=1)
    a2.set(xlabel="context (tokens)", ylabel="speedup", xscale="log", title="speedup")
    a2.legend()
    fig.suptitle("The earlier study (T4, gemma-3-4b-pt with gemma-3-1b-pt), as reported")
    return fig


def fig_acceptance_vs_context(p: Profile) -> Any:
    """Measured acceptance (accepted / proposed) vs context in the timed sweep, with CIs."""
    sweep = p.get("context_sweep")
    t = sweep_table(sweep)
    if t is None:
        return None
    fig, axes = new_figure(1, 6.4, 3.8)
    ax = axes[0]
    names = _labels(p, sweep)
    for arm, g in t[t["method"] != BASELINE].groupby("method"):
        g = g.sort_values("context")
        n = int(g["n_prompts"].min()) if "n_prompts" in g else None
        _err(
            ax,
            g["context"],
            100 * g["acceptance_rate"],
            100 * g["acceptance_rate_ci_low"],
            100 * g["acceptance_rate_ci_high"],
            f"{names.get(arm, arm)} (n = {n})" if n else names.get(arm, arm),
        )
    ax.set(
        xscale="log",
        xlabel="context (tokens)",
        ylabel="acceptance rate (%)",
        title="measured acceptance in the timed sweep (95% CI)",
    )
    ax.legend(fontsize="small")
    return fig


def fig_agreement_vs_context(p: Profile) -> Any:
    """Left: teacher-forced per-position agreement of every draft vs context. Right: the
    acceptance at K = 4 that agreement implies (book/math.md), beside the earlier study's
    reported acceptance. Two panels because they are different quantities."""
    agr = p.get("agreement")
    tab = pd.DataFrame((agr.summary.get("table") if agr is not None else None) or [])
    if agr is None or not len(tab) or "implied_acceptance" not in tab:
        return None
    fig, (a1, a2) = new_figure(2, 11.0, 4.0)
    names = _labels(p, agr)
    names.setdefault("target_vs_text", "target vs the real next token")
    n = agr.summary.get("n_documents")
    for d, g in tab.groupby("draft", sort=False):
        g = g.sort_values("context")
        ls = "--" if d == "target_vs_text" else "-"
        _err(
            a1,
            g["context"],
            100 * g["agreement"],
            100 * g["ci_low"],
            100 * g["ci_high"],
            names.get(d, d),
            ls=ls,
        )
        if d != "target_vs_text":
            _err(
                a2,
                g["context"],
                100 * g["implied_acceptance"],
                100 * g["implied_acceptance_ci_low"],
                100 * g["implied_acceptance_ci_high"],
                names.get(d, d),
            )
    e = earlier_recomputed()
    t = e[e["strategy"] == "transformer draft"].sort_values("context")
    a2.plot(
        t["context"], t["acceptance_pct"], "s:", color="tab:red", label="earlier study, as reported"
    )
    a1.set(
        xscale="log",
        xlabel="context (tokens)",
        ylabel="per-position agreement (%)",
        title=f"teacher-forced agreement (n = {n} documents)",
    )
    a2.set(
        xscale="log",
        xlabel="context (tokens)",
        ylabel="acceptance at K = 4 (%)",
        title="acceptance implied by agreement",
    )
    for ax in (a1, a2):
        ax.axvspan(10, 100, color="grey", alpha=0.08)
    a1.legend(fontsize="x-small")
    a2.legend(fontsize="x-small")
    return fig


def training_record(p: Profile) -> tuple[str, dict[str, Any]] | None:
    """(draft, record) of the first draft whose training record the agreement stored."""
    agr = p.get("agreement")
    recs = (agr.summary.get("draft_records") if agr is not None else None) or {}
    for name, rec in recs.items():
        if isinstance(rec, dict):
            return name, rec
    return None


def _curve(rec: dict[str, Any]) -> tuple[list[float], dict[str, list[float]]]:
    """(steps, {series: values}) from a training record: a `curve` list of per-step dicts, or
    parallel lists under `steps` and any other numeric list."""
    curve = rec.get("curve") or rec.get("history") or rec.get("log")
    if isinstance(curve, list) and curve and isinstance(curve[0], dict):
        df = pd.DataFrame(curve)
        xk = next((k for k in ("step", "steps", "iteration", "epoch") if k in df), None)
        x = df[xk].tolist() if xk else list(range(len(df)))
        return x, {c: df[c].tolist() for c in df.columns if c != xk and df[c].dtype.kind in "fi"}
    steps = rec.get("steps") if isinstance(rec.get("steps"), list) else None
    series = {
        k: v
        for k, v in rec.items()
        if isinstance(v, list)
        and v
        and all(isinstance(x, (int, float)) for x in v)
        and k != "steps"
    }
    n = max((len(v) for v in series.values()), default=0)
    return (steps or list(range(n))), series


def fig_training_curve(p: Profile) -> Any:
    """The distilled draft's training curve, from the record the agreement stored."""
    found = training_record(p)
    if found is None:
        return None
    name, rec = found
    x, series = _curve(rec)
    if not series:
        return None
    fig, axes = new_figure(1, 6.4, 3.6)
    ax = axes[0]
    for k, v in series.items():
        ax.plot(x[: len(v)], v, label=k)
    ax.set(xlabel="training step", ylabel="value", title=f"{name}: training curve")
    ax.legend(fontsize="small")
    return fig


def fig_speedup_vs_context(p: Profile) -> Any:
    """Paired speedup (each context's own baseline) and the one-baseline speedup, cache on/off."""
    sweeps = [(n, p.get(n)) for n in ("context_sweep", "context_sweep_nocache")]
    sweeps = [(n, r) for n, r in sweeps if r is not None and sweep_table(r) is not None]
    if not sweeps:
        return None
    fig, axes = new_figure(len(sweeps), 5.2 * len(sweeps), 3.9)
    for ax, (name, res) in zip(axes, sweeps, strict=True):
        t = sweep_table(res)
        names = _labels(p, res)
        ref = (res.summary.get("earlier_style") or {}).get("reference_context", 20)
        for arm, g in t[t["method"] != BASELINE].groupby("method"):
            g = g.sort_values("context")
            line = _err(
                ax,
                g["context"],
                g["speedup"],
                g["speedup_ci_low"],
                g["speedup_ci_high"],
                f"{names.get(arm, arm)}: paired",
            )
            col = line[0].get_color()
            if "earlier_style_speedup" in g:
                lo = g.get("earlier_style_speedup_ci_low", g["earlier_style_speedup"])
                hi = g.get("earlier_style_speedup_ci_high", g["earlier_style_speedup"])
                _err(
                    ax,
                    g["context"],
                    g["earlier_style_speedup"],
                    lo,
                    hi,
                    f"{names.get(arm, arm)}: / baseline at {ref}",
                    marker="x",
                    ls="--",
                    color=col,
                )
        ax.axhline(1.0, color="grey", lw=1)
        ax.set(
            xscale="log",
            xlabel="context (tokens)",
            ylabel="speedup",
            title="KV cache " + ("off" if name.endswith("nocache") else "on"),
        )
        ax.legend(fontsize="small")
    return fig


def fig_baseline_growth(p: Profile) -> Any:
    """Seconds per generated token of the baseline (and drafts) vs context, cache on and off."""
    found = [(n, p.get(n)) for n in ("context_sweep", "context_sweep_nocache")]
    found = [(n, r) for n, r in found if r is not None]
    if not found:
        return None
    fig, axes = new_figure(1, 6.4, 3.9)
    ax = axes[0]
    for name, res in found:
        rows = res.rows
        col = context_column(rows)
        g = rows.groupby(["method", col])[["wall_s", "new_tokens"]].sum().reset_index()
        g["ms_per_token"] = 1000 * g["wall_s"] / g["new_tokens"]
        names = _labels(p, res)
        tag = "cache off" if name.endswith("nocache") else "cache on"
        for arm, h in g.groupby("method"):
            h = h.sort_values(col)
            ax.plot(
                h[col],
                h["ms_per_token"],
                "o" + ("--" if tag == "cache off" else "-"),
                label=f"{names.get(arm, arm)}, {tag}",
            )
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="context (tokens)",
        ylabel="ms per generated token",
        title="time per token vs context",
    )
    ax.legend(fontsize="x-small", ncol=2)
    return fig


def fig_prompt_confound(p: Profile) -> Any:
    """Per-prompt acceptance across contexts (same prompts) and the simulated confound."""
    sweep = p.get("context_sweep")
    arm = sweep_primary(sweep) or role_arm(sweep, "transformer")
    if sweep is None or arm is None or len(sweep_contexts(sweep)) < 2:
        return None
    pp = per_prompt_acceptance(sweep.rows, arm)
    c0, c1 = range_for_test(sweep_contexts(sweep))
    same = acceptance_change(sweep.rows, arm, c0, c1)
    swap = prompt_swap_change(sweep.rows, arm, c0, c1)
    drop = earlier_drop()["drop"]
    fig, (a1, a2) = new_figure(2, 10.0, 3.8)
    for _, g in pp.groupby("prompt"):
        g = g.sort_values("context")
        a1.plot(g["context"], 100 * g["acceptance"], color="tab:blue", alpha=0.25, lw=1)
    mean = pp.groupby("context")["acceptance"].mean()
    a1.plot(mean.index, 100 * mean.values, "o-", color="black", label="mean over prompts")
    a1.set(
        xscale="log",
        xlabel="context (tokens)",
        ylabel="acceptance rate (%)",
        title=f"{arm}: every prompt at every context",
    )
    a1.legend()
    if "draws" in swap:
        a2.hist(
            100 * swap["draws"],
            bins=40,
            color="tab:orange",
            alpha=0.7,
            label="own half of prompts per context",
        )
    a2.axvline(100 * central(same), color="black", label="same prompts")
    a2.axvspan(
        100 * as_float(same["ci_low"]), 100 * as_float(same["ci_high"]), color="black", alpha=0.15
    )
    a2.axvline(-100 * drop, color="tab:red", ls="--", label="published fall 10 -> 100")
    a2.set(
        xlabel=f"acceptance change {c0} -> {c1} (points)",
        ylabel="random splits",
        title="the prompt confound, simulated",
    )
    a2.legend(fontsize="small")
    return fig


def fig_measured_vs_predicted(p: Profile) -> Any:
    res = p.get("k_sweep")
    if res is None or not res.summary.get("table"):
        return None
    t = pd.DataFrame(res.summary["table"]).sort_values("k")
    fixed = t[t["method"] != "adaptive"]
    fig, axes = new_figure(1, 6.4, 3.9)
    ax = axes[0]
    _err(
        ax,
        fixed["k"],
        fixed["speedup"],
        fixed["speedup_ci_low"],
        fixed["speedup_ci_high"],
        "measured (95% CI)",
    )
    ax.plot(
        fixed["k"],
        fixed["predicted_speedup_leviathan"],
        "s--",
        label="predicted: Leviathan, (1-a^(K+1))/((1-a)(Kc+1))",
    )
    ax.plot(
        fixed["k"],
        fixed["predicted_speedup_calibrated"],
        "d:",
        label="predicted: measured verify cost",
    )
    ad = res.summary.get("adaptive") or {}
    if ad.get("speedup") is not None:
        ax.axhline(
            central(ad["speedup"]),
            color="tab:purple",
            lw=1,
            ls="-.",
            label=f"adaptive K (max {ad.get('k_max')})",
        )
    ax.axhline(1.0, color="grey", lw=1)
    ax.set(xlabel="draft length K", ylabel="speedup", title="measured vs predicted speedup")
    ax.legend(fontsize="small")
    return fig


def _draft_arms(p: Profile) -> list[tuple[str, str, dict]]:
    """(experiment, arm, ArmSummary) for the draft arms of the bigram / transformer runs."""
    out = []
    for exp in ("bigram", "transformer_draft"):
        res = p.get(exp)
        if res is None:
            continue
        for arm, s in res.arms.items():
            if arm != BASELINE and s.get("k"):
                out.append((exp, arm, s))
    return out


def fig_position_acceptance(p: Profile) -> Any:
    arms = [(e, a, s) for e, a, s in _draft_arms(p) if s.get("position_acceptance")]
    if not arms:
        return None
    fig, axes = new_figure(1, 6.4, 3.6)
    ax = axes[0]
    for _, arm, s in arms:
        pa = [math.nan if x is None else 100 * x for x in s["position_acceptance"]]
        ax.plot(range(1, len(pa) + 1), pa, "o-", label=arm)
        iid = s.get("per_token_acceptance_iid")
        if finite(iid):
            ax.axhline(100 * iid, ls=":", lw=1, color=ax.lines[-1].get_color())
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set(
        xlabel="draft position i",
        ylabel="P(accept i | 1..i-1 accepted) (%)",
        ylim=(0, 100),
        title="per-position conditional acceptance (dotted: i.i.d. fit a)",
    )
    ax.legend()
    return fig


def fig_accepted_histogram(p: Profile) -> Any:
    arms = [(e, a, s) for e, a, s in _draft_arms(p) if s.get("accepted_histogram")]
    if not arms:
        return None
    fig, axes = new_figure(len(arms), 4.2 * len(arms), 3.4)
    for ax, (_, arm, s) in zip(axes, arms, strict=True):
        h = np.asarray(s["accepted_histogram"], dtype=float)
        ax.bar(range(len(h)), h / h.sum() if h.sum() else h)
        ax.set(
            xlabel="drafts accepted per verification",
            ylabel="share of verifications",
            title=arm,
            xticks=range(len(h)),
        )
    return fig


def fig_time_split(p: Profile) -> Any:
    """Total seconds in prefill, drafting and verification per arm (bigram / transformer runs)."""
    parts = []
    for exp in ("bigram", "transformer_draft"):
        res = p.get(exp)
        if res is None:
            continue
        g = res.rows.groupby("method")[["prefill_s", "draft_s", "verify_s", "wall_s"]].sum()
        for arm, r in g.iterrows():
            if (
                exp == "transformer_draft"
                and arm == BASELINE
                and any(x[0] == BASELINE for x in parts)
            ):
                continue
            other = max(r["wall_s"] - r["prefill_s"] - r["draft_s"] - r["verify_s"], 0.0)
            parts.append((arm, r["prefill_s"], r["draft_s"], r["verify_s"], other))
    if not parts:
        return None
    fig, axes = new_figure(1, 6.4, 0.6 * len(parts) + 1.6)
    ax = axes[0]
    labels = [x[0] for x in parts]
    left = np.zeros(len(parts))
    for j, name in enumerate(["prefill", "draft", "verify", "other"]):
        vals = np.array([x[j + 1] for x in parts])
        ax.barh(labels, vals, left=left, label=name)
        left += vals
    ax.set(xlabel="seconds, summed over prompts", title="where the time goes")
    ax.legend(ncol=4, fontsize="small", loc="lower right")
    return fig


def fig_divergence_margins(p: Profile) -> Any:
    m = identity_margins(p)
    if not any(m.values()):
        return None
    fig, axes = new_figure(1, 6.4, 3.4)
    ax = axes[0]
    for dt, vals in m.items():
        if vals:
            ax.hist(vals, bins=20, alpha=0.6, label=f"{dt} ({len(vals)} divergences)")
    ax.set(
        xlabel="target's top-1 minus top-2 logit at the first differing token",
        ylabel="prompts",
        title="margins where outputs differ",
    )
    ax.legend()
    return fig
