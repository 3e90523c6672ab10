"""The book's result tables, from a profile's results: ours in the earlier study's format,
headline, K sweep and peers (sampling: `sampling_tables`; token identity: `identity`; where and
with what the runs ran: `runs`). Returns DataFrames of formatted strings (or None when the
profile lacks the experiment). Knows nothing about decoding."""

from __future__ import annotations

import pandas as pd

from specdec_study.reporting.earlier import earlier_table
from specdec_study.reporting.format import as_float, central, ci, ci_pct, finite, num, pct
from specdec_study.results.declare import BASELINE
from specdec_study.results.read import Profile, experiment_arms, role_arm, stored_sweep_table
from specdec_study.results.store import ExperimentResult

EARLIER_WAY = "speedup (earlier study's way)"


def study_table(p: Profile) -> pd.DataFrame | None:
    """Our rows in the earlier study's format (strategy, K, context, acceptance, time, speedup as
    that study computed it), plus the paired speedup against the same context's own baseline.
    From the cached context sweep when present, else from the bigram / transformer experiments."""
    sweep = p.get("context_sweep")
    t = stored_sweep_table(sweep)
    if t is not None:
        ref = int((sweep.summary.get("earlier_style") or {}).get("reference_context", 20))
        ref_wall = as_float(
            (sweep.summary.get("earlier_style") or {}).get("reference_total_wall_s")
        )
        bigram = role_arm(sweep, "bigram")
        drafts = [a for a in sweep_draft_arms(sweep) if a != bigram]
        out = []
        base_at = t[t["method"] == BASELINE].set_index("context")
        if ref in base_at.index:
            b = base_at.loc[ref]
            out.append(_study_row("baseline autoregressive", ref, b, ref_wall, True))
        plan = [(bigram, "bigram", [ref])] if bigram else []
        plan += [(a, f"transformer draft ({a})", sorted(t["context"].unique())) for a in drafts]
        for arm, label, contexts in plan:
            rows = t[t["method"] == arm].set_index("context")
            for c in contexts:
                if c in rows.index:
                    out.append(_study_row(label, c, rows.loc[c], ref_wall, False))
        return pd.DataFrame(out) if out else None
    return _study_table_single(p)


def sweep_draft_arms(res: ExperimentResult) -> list[str]:
    """A sweep's drafting arms as it ran them (results.read.experiment_arms)."""
    return [a for a in experiment_arms(res) if a != BASELINE]


COST_EXPERIMENTS = ("transformer_draft", "k_sweep", "peers")  # where a draft's c is measured


def transformer_note(p: Profile) -> str | None:
    """What our "transformer draft" is beside the earlier study's 1B one: its drafter spec and
    its measured cost ratio c (draft time per token / target time per token) over every arm
    that ran that spec, read from the result files. None without a transformer draft."""
    res = p.get("transformer_draft")
    arm = role_arm(res, "transformer")
    if arm is None:
        return None
    spec = res.arms[arm].get("draft") or (res.config.get("arms") or {}).get(arm)
    cs = [
        as_float(a.get("cost_ratio"))
        for e in COST_EXPERIMENTS
        if p.get(e) is not None
        for name, a in p.get(e).arms.items()
        if (p.get(e).config.get("arms") or {}).get(name, a.get("draft")) == spec
        and finite(a.get("cost_ratio"))
    ]
    text = f"Our transformer draft is `{spec}` (see the glossary)"
    if cs:
        text += (
            f"; its measured cost ratio c is {num(min(cs), 2)}-{num(max(cs), 2)} over the "
            f"{len(cs)} arms that ran it, so a call costs "
            + ("about what the target's does" if min(cs) >= 0.5 else "a fraction of the target's")
        )
    return text + (
        ". It is set beside the earlier study's rows for the method, not as a like-for-like "
        "draft: the earlier study's draft was a separate 1B model beside a 4B target."
    )


def beside_published(p: Profile) -> pd.DataFrame | None:
    """study_table beside the published rows: each cell 'ours / reported' for the same strategy
    and context (reported '-' where the earlier study has no such row)."""
    ours = study_table(p)
    if ours is None:
        return None
    pub = earlier_table()
    pub_key = {(r["strategy"], r["context"]): r for r in pub.to_dict("records")}
    out = []
    for r in ours.to_dict("records"):
        kind = r["strategy"].split(" (")[0]
        q = pub_key.get((kind, r["context"]), {})
        out.append(
            {
                "strategy": r["strategy"],
                "K": r["K"],
                "context": r["context"],
                "acceptance: ours / reported": f"{r['acceptance']} / {q.get('acceptance', '-')}",
                "time: ours / reported": f"{r['time']} / {q.get('time', '-')}",
                "speedup, earlier way: ours / reported": (
                    f"{r[EARLIER_WAY]} / {q.get('speedup (as reported)', '-')}"
                ),
                "speedup, paired (ours, 95% CI)": r["speedup, paired (95% CI)"],
            }
        )
    return pd.DataFrame(out)


def _study_row(label: str, context: int, r: pd.Series, ref_wall: float, is_base: bool) -> dict:
    """One row of study_table from a row of the sweep's flat table."""
    k = None if is_base else r.get("k")
    es = as_float(r.get("earlier_style_speedup"))
    if not finite(es) and finite(ref_wall):
        es = ref_wall / as_float(r.get("total_wall_s"))
    paired = {
        "value": r.get("speedup"),
        "ci_low": r.get("speedup_ci_low"),
        "ci_high": r.get("speedup_ci_high"),
        "n": r.get("n_prompts"),
    }
    return {
        "strategy": label,
        "K": "-" if not k else str(int(k)),
        "context": str(int(context)),
        "acceptance": "-" if is_base else pct(r.get("acceptance_rate")),
        "time": num(r.get("total_wall_s"), 2, " s"),
        EARLIER_WAY: num(es, 2, "x"),
        "speedup, paired (95% CI)": "1.00x (reference)" if is_base else ci(paired, 2, suffix="x"),
        "baseline at this context": num(
            r.get("baseline_total_wall_s", r.get("total_wall_s")), 2, " s"
        ),
    }


def _study_table_single(p: Profile) -> pd.DataFrame | None:
    out = []
    for exp, role, label in (
        ("bigram", "bigram", "bigram"),
        ("transformer_draft", "transformer", "transformer draft"),
    ):
        res = p.get(exp)
        if res is None:
            continue
        arm = role_arm(res, role) or next((a for a in res.arms if a != BASELINE), None)
        if arm is None:
            continue
        s, b = res.arms[arm], res.arms.get(BASELINE, {})
        ctx = _median_context(res)
        if not out and b:
            out.append(
                {
                    "strategy": "baseline autoregressive",
                    "K": "-",
                    "context": ctx,
                    "acceptance": "-",
                    "time": num(b.get("total_wall_s"), 2, " s"),
                    EARLIER_WAY: "1.00x",
                    "speedup, paired (95% CI)": "1.00x (reference)",
                    "baseline at this context": num(b.get("total_wall_s"), 2, " s"),
                }
            )
        out.append(
            {
                "strategy": label if role == "bigram" else f"{label} ({arm})",
                "K": str(s.get("k", "-")),
                "context": ctx,
                "acceptance": pct(central(s.get("acceptance_rate"))),
                "time": num(s.get("total_wall_s"), 2, " s"),
                EARLIER_WAY: num(central(s.get("speedup")), 2, "x"),
                "speedup, paired (95% CI)": ci(
                    s.get("speedup"), 2, suffix="x", n=s.get("n_prompts")
                ),
                "baseline at this context": num(b.get("total_wall_s"), 2, " s"),
            }
        )
    return pd.DataFrame(out) if out else None


def _median_context(res: ExperimentResult) -> str:
    for c in ("context", "context_tokens"):
        if c in res.rows.columns:
            v = pd.to_numeric(res.rows[c], errors="coerce").dropna()
            if len(v):
                return str(int(v.median()))
    return "n/a"


def headline_table(p: Profile) -> pd.DataFrame | None:
    """Speedup, acceptance rate, mean accepted length and identity per draft arm of the bigram and
    transformer-draft experiments."""
    out = []
    for exp in ("bigram", "transformer_draft"):
        res = p.get(exp)
        if res is None:
            continue
        for arm, s in res.arms.items():
            if arm == BASELINE:
                continue
            out.append(
                {
                    "arm (experiment)": f"{arm} ({exp})",
                    "K": str(s.get("k")),
                    "prompts": str(s.get("n_prompts")),
                    "speedup": ci(s.get("speedup"), 2, suffix="x", n=s.get("n_prompts")),
                    "acceptance rate": ci_pct(s.get("acceptance_rate"), n=s.get("n_prompts")),
                    "mean accepted length": ci(
                        s.get("mean_accepted_length"), 2, n=s.get("n_prompts")
                    ),
                    "c": num(s.get("cost_ratio"), 3),
                    "identical": pct(s.get("identical_fraction"), 0),
                }
            )
    return pd.DataFrame(out) if out else None


def k_sweep_table(p: Profile) -> pd.DataFrame | None:
    """The K sweep per K and arm: measured and predicted speedups, acceptance, a, c."""
    res = p.get("k_sweep")
    if res is None or not res.summary.get("table"):
        return None
    t = pd.DataFrame(res.summary["table"]).sort_values("k")
    return pd.DataFrame(
        {
            "K": t["k"].astype(int).astype(str),
            "arm": t["method"],
            "measured speedup (95% CI)": [
                ci(
                    {"value": r.speedup, "ci_low": r.speedup_ci_low, "ci_high": r.speedup_ci_high},
                    2,
                    suffix="x",
                    n=getattr(r, "n_prompts", res.config.get("n_prompts")),
                )
                for r in t.itertuples()
            ],
            "predicted (Leviathan)": [num(x, 2, "x") for x in t["predicted_speedup_leviathan"]],
            "predicted (calibrated)": [num(x, 2, "x") for x in t["predicted_speedup_calibrated"]],
            "acceptance rate": [pct(x, 1) for x in t["acceptance_rate"]],
            "a (i.i.d. fit)": [num(x, 3) for x in t["per_token_acceptance_iid"]],
            "c": [num(x, 3) for x in t["cost_ratio"]],
            "mean accepted length": [num(x, 2) for x in t["mean_accepted_length"]],
        }
    )


def peers_table(p: Profile) -> pd.DataFrame | None:
    """The Hugging Face peers: tokens/s, speedups and identity to both greedy baselines."""
    res = p.get("peers")
    if res is None or not res.summary.get("table"):
        return None
    t = pd.DataFrame(res.summary["table"])
    out = []
    for r in t.to_dict("records"):
        out.append(
            {
                "method": r.get("method"),
                "implementation": r.get("implementation"),
                "tokens/s (median, 95% CI)": ci(
                    {
                        "value": r.get("tokens_per_s"),
                        "ci_low": r.get("tokens_per_s_ci_low"),
                        "ci_high": r.get("tokens_per_s_ci_high"),
                    },
                    1,
                    n=r.get("n_prompts", res.config.get("n_prompts")),
                ),
                "speedup vs our baseline": ci(
                    {
                        "value": r.get("speedup"),
                        "ci_low": r.get("speedup_ci_low"),
                        "ci_high": r.get("speedup_ci_high"),
                    },
                    2,
                    suffix="x",
                    n=r.get("n_prompts", res.config.get("n_prompts")),
                ),
                "speedup vs HF greedy": num(r.get("speedup_vs_hf_greedy"), 2, "x"),
                "identical to our greedy": pct(r.get("identical_to_baseline"), 0),
                "identical to HF greedy": pct(r.get("identical_to_hf_greedy"), 0),
            }
        )
    return pd.DataFrame(out)
