"""The book's tables, from a profile's results: ours in the earlier study's format, headline,
K sweep, sampling, peers, identity, environment and config. Returns DataFrames of formatted
strings (or None when the profile lacks the experiment). Knows nothing about decoding."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from specdec_lib.analysis.sampling import family_size, sequence_family
from specdec_lib.reporting.earlier import earlier_table
from specdec_lib.reporting.format import as_float, central, ci, ci_pct, finite, num, pct
from specdec_lib.results.catalog import BASELINE, EXPERIMENTS
from specdec_lib.results.read import Profile, role_arm, stored_sweep_table
from specdec_lib.results.store import ExperimentResult

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
        bigram, trans = role_arm(sweep, "bigram"), role_arm(sweep, "transformer")
        out = []
        base_at = t[t["method"] == BASELINE].set_index("context")
        if ref in base_at.index:
            b = base_at.loc[ref]
            out.append(_study_row("baseline autoregressive", ref, b, ref_wall, True))
        for arm, label, contexts in (
            (bigram, "bigram", [ref]),
            (trans, f"transformer draft ({trans})", sorted(t["context"].unique())),
        ):
            if arm is None:
                continue
            rows = t[t["method"] == arm].set_index("context")
            for c in contexts:
                if c in rows.index:
                    out.append(_study_row(label, c, rows.loc[c], ref_wall, False))
        return pd.DataFrame(out) if out else None
    return _study_table_single(p)


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
    text = f"Our transformer draft is `{spec}` (see the glossary's drafter spec)"
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


def sampling_table(p: Profile) -> pd.DataFrame | None:
    """Per temperature and arm: the paired speedup, the acceptance rate, and the first-token
    distribution check (TVD, chi-square p, samples, and the smallest TVD the check detects)."""
    res = p.get("sampling")
    if res is None or not res.summary.get("table"):
        return None
    t = pd.DataFrame(res.summary["table"])
    dist = res.summary.get("distribution_check") or {}
    checked = role_arm(res, "transformer")  # results written before every arm was checked
    out = []
    for r in t.itertuples():
        d = by_float_key(dist, r.temperature) or {}
        is_spec = r.method != BASELINE
        chk = d.get(r.method) or (d.get("speculative") if r.method == checked else None) or {}
        n_samples = chk.get(
            "n_samples", as_float(d.get("n_samples_per_prompt")) * as_float(d.get("n_prompts"))
        )
        out.append(
            {
                "temperature": num(r.temperature, 1),
                "arm": r.method,
                "speedup (95% CI)": "-"
                if not is_spec
                else ci(
                    {
                        "value": r.speedup,
                        "ci_low": getattr(r, "speedup_ci_low", None),
                        "ci_high": getattr(r, "speedup_ci_high", None),
                    },
                    2,
                    suffix="x",
                    n=getattr(r, "n_prompts", res.config.get("n_prompts")),
                ),
                "acceptance rate": "-" if not is_spec else pct(r.acceptance_rate, 1),
                "first-token samples": num(n_samples, 0) if chk else "-",
                "first-token TVD": num(chk.get("tvd"), 3) if chk else "-",
                "chi-square p": num(chk.get("p_value"), 3) if chk else "-",
                "detectable TVD (80% power)": num(chk.get("detectable_tvd"), 3) if chk else "-",
                "TVD if unverified": num(chk.get("tvd_unverified"), 3) if chk and is_spec else "-",
            }
        )
    return pd.DataFrame(out)


PATH_LABELS = {
    "accept": "accepted drafts",
    "residual_first": "residual (first draft rejected)",
    "residual_later": "residual (after an accepted prefix)",
    "bonus": "bonus",
    "target": "target's own draw",
}


def sequence_table(p: Profile) -> pd.DataFrame | None:
    """Per temperature and method, the check of positions 1..m (`summary["sequence_check"]`):
    its verdict, the combined test, what it detects and the tested tokens of each path; None for
    a result written before the check existed."""
    res = p.get("sampling")
    checks = sequence_family((res.summary.get("sequence_check") or {}) if res is not None else {})
    if not checks:
        return None
    seq = res.config.get("sequence") or {}
    out = []
    for t, chk in checks.items():
        for m, c in chk.items():
            paths = c.get("paths_tested") or {}
            out.append(
                {
                    "temperature": num(as_float(t), 1),
                    "sampler": m,
                    "verdict": c.get("verdict"),
                    "runs x positions": f"{seq.get('n_samples')} x {seq.get('positions')}",
                    "tokens tested": num(c.get("n_tested"), 0),
                    "chi-square p": num(c.get("p_value"), 3),
                    "dof": num(c.get("dof"), 0),
                    "detectable TVD (80% power)": num(c.get("detectable_tvd"), 3),
                    **{lab: num(paths.get(k, 0), 0) for k, lab in PATH_LABELS.items()},
                }
            )
    return pd.DataFrame(out)


def sequence_sentence(p: Profile) -> str:
    """What the sampling experiment's result says the empirical check covered, in one paragraph
    read from the result file (the book states no verdict of its own)."""
    res = p.get("sampling")
    if res is None:
        return "The sampling experiment has no result in this profile."
    stored = res.summary.get("sequence_check") or {}
    checks = sequence_family(stored)
    if not checks:
        return (
            "This profile's sampling result predates the check of positions 1..m: it tested the "
            "first sampled token only, so the verifier's accept path, its bonus token and the "
            "residual after an accepted prefix were hardly exercised."
        )
    seq = res.config.get("sequence") or {}
    parts = []
    for t, chk in checks.items():
        said = []
        for m, c in chk.items():
            paths = c.get("paths_tested") or {}
            said.append(
                f"{m}: {c.get('verdict')} (p = {num(c.get('p_value'), 3)}, "
                f"{num(c.get('n_tested'), 0)} tokens tested, "
                f"detectable TVD {num(c.get('detectable_tvd'), 3)}; "
                + ", ".join(f"{PATH_LABELS[k]} {num(paths.get(k, 0), 0)}" for k in PATH_LABELS)
                + ")"
            )
        parts.append(f"at T = {num(as_float(t), 1)}, " + "; ".join(said))
    return (
        f"The experiment `06_sampling` checks it empirically: {seq.get('n_samples')} decode runs "
        f"of {seq.get('positions')} tokens per method (K = {seq.get('k')}) on a looping prompt, "
        "every token tested against the target's exact conditional given the tokens before it; "
        f"verdicts by {family_history(stored)}, all temperatures and methods as one family "
        f"(Bonferroni: deviates if p < 0.05 / {family_size(checks)}; consistent if not, with a "
        f"detectable TVD at that level of at most {seq.get('tvd_target')} and at least "
        f"{seq.get('min_path')} tested tokens on every path; inconclusive otherwise). "
        + "; ".join(parts).capitalize()[:1]
        + "; ".join(parts)[1:]
        + "."
        + revised_verdicts(stored, checks)
    )


def family_history(stored: dict[str, Any]) -> str:
    """When the family rule was fixed, from the stored checks: a run decided as a family
    stores each check's `family_size`; an earlier run decided each check alone."""
    alone = [c for chk in stored.values() for c in chk.values() if isinstance(c, dict)]
    if alone and all("family_size" in c for c in alone):
        return "the rule fixed before the run"
    return (
        "a rule adopted after this run (the run itself decided each check alone at its own "
        "alpha, the rule fixed before it), applied when the stored result is read"
    )


def revised_verdicts(stored: dict[str, Any], checks: dict[str, Any]) -> str:
    """One sentence naming each stored verdict that the family rule changed, or nothing."""
    changed = [
        f"{m} at T = {num(as_float(t), 1)} (p = {num(c.get('p_value'), 3)}): "
        f"'{c.get('verdict')}' alone, '{checks[t][m].get('verdict')}' in the family"
        for t, chk in stored.items()
        for m, c in chk.items()
        if isinstance(c, dict) and c.get("verdict") != checks[t][m].get("verdict")
    ]
    if not changed:
        return ""
    alphas = [c["alpha"] for chk in stored.values() for c in chk.values() if isinstance(c, dict)]
    n = family_size(checks)
    false_alarm = 1 - (1 - max(alphas)) ** n
    return (
        f" The rule was revised after the run because {n} checks, each alone at alpha "
        f"{num(max(alphas), 2)}, call a false deviation somewhere among them with probability "
        f"{pct(false_alarm, 0)}; the verdicts it changed: " + "; ".join(changed) + "."
    )


def by_float_key(d: dict[str, Any], x: Any) -> Any:
    """d["0.7"] for x = 0.7 whatever the key's spelling ("0.7", "0.70")."""
    for k, v in d.items():
        if finite(k) and math.isclose(as_float(k), as_float(x)):
            return v
    return None


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


def identity_table(p: Profile) -> pd.DataFrame | None:
    """Per dtype: how many outputs match greedy decoding; where and by what margin they differ."""
    res = p.get("transformer_draft")
    ident = (res.summary.get("identity_by_dtype") or {}) if res else {}
    if not ident:
        return None
    out = []
    for dt, d in ident.items():
        margins = [m for m in (d.get("divergence_margins") or []) if finite(m)]
        pos = [x for x in (d.get("divergence_positions") or []) if finite(x)]
        out.append(
            {
                "dtype": d.get("dtype", dt),
                "prompts": str(d.get("n_prompts")),
                "new tokens": str(d.get("max_new_tokens")),
                "identical to greedy baseline": pct(d.get("identical_fraction"), 0),
                "divergences": str(len(pos)),
                "median position of first difference": num(np.median(pos), 0) if pos else "-",
                "median top-2 margin there": num(np.median(margins), 3) if margins else "-",
                "largest margin there": num(max(margins), 3) if margins else "-",
            }
        )
    return pd.DataFrame(out)


def identity_sentence(p: Profile) -> str:
    """One sentence per dtype: how many outputs matched greedy decoding, and the margins (or
    that there are none to show)."""
    ident = _identity(p)
    parts = []
    for dt, d in ident.items():
        margins = [float(m) for m in (d.get("divergence_margins") or []) if finite(m)]
        s = (
            f"In `{d.get('dtype', dt)}`, {pct(d.get('identical_fraction'), 0)} of "
            f"{d.get('n_prompts')} outputs are token-identical to greedy decoding"
        )
        if margins:
            s += (
                f"; where they differ, the target's top-2 margin at the first differing token "
                f"has median {num(np.median(margins), 3)} (largest {num(max(margins), 3)})"
            )
        parts.append(s + ".")
    if ident and not any(_differing(d) for d in ident.values()):
        parts.append(
            "No output differed from greedy decoding in any dtype, so there is no margin to "
            "plot: the rounding argument above says where a difference could come from, not "
            "that one was seen."
        )
    return " ".join(parts)


def _identity(p: Profile) -> dict[str, dict[str, Any]]:
    res = p.get("transformer_draft")
    return (res.summary.get("identity_by_dtype") or {}) if res else {}


def _differing(d: dict[str, Any]) -> int:
    """How many of a dtype's outputs differ from greedy decoding."""
    n = int(d.get("n_prompts") or 0)
    return n - round(float(d.get("identical_fraction") or 0.0) * n)


def identity_clause(p: Profile) -> str:
    """The introduction's promise about token identity, as the result files bear it out: why
    outputs differ where some did, that none did where none did (then no margin is plotted)."""
    ident = _identity(p)
    if not ident:
        return "and whether bf16 and fp32 outputs are token-identical to greedy decoding"
    counts = ", ".join(
        f"{_differing(d)} of {d.get('n_prompts')} in {d.get('dtype', dt)}"
        for dt, d in ident.items()
    )
    if any(_differing(d) for d in ident.values()):
        return f"and why bf16 outputs are not always token-identical ({counts} differed)"
    return (
        "and whether bf16 and fp32 outputs are token-identical to greedy decoding (here every "
        f"output was: {counts} differed, so there is no divergence to explain)"
    )


def identity_margins(p: Profile) -> dict[str, list[float]]:
    """Per dtype: the target's top-2 margins at each first difference from greedy."""
    ident = _identity(p)
    return {
        d.get("dtype", k): [float(m) for m in (d.get("divergence_margins") or []) if finite(m)]
        for k, d in ident.items()
    }


def env_table(p: Profile) -> pd.DataFrame | None:
    """One row per experiment: where and with what it ran."""
    if p.empty:
        return None
    keys = [
        "device",
        "dtype",
        "gpu",
        "cpu_model",
        "bf16_native",
        "cpu_count",
        "torch_threads",
        "python",
        "torch",
        "transformers",
        "git_commit",
        "wall_s_experiment",
    ]
    out = []
    for e in EXPERIMENTS:
        r = p.get(e)
        if r is None:
            continue
        row = {"experiment": e}
        for k in keys:
            v = r.env.get(k)
            if k == "git_commit" and isinstance(v, str):
                v = v[:12]
            if k == "wall_s_experiment":
                v = num(v, 0, " s")
            row[k] = "-" if v is None else str(v)
        out.append(row)
    return pd.DataFrame(out)


def config_table(p: Profile) -> pd.DataFrame | None:
    """One row per stored experiment: its main config values and its sweep."""
    if p.empty:
        return None
    keys = [
        "target",
        "dtype",
        "device",
        "data_source",
        "seed",
        "k",
        "max_new_tokens",
        "n_prompts",
        "config_hash",
    ]
    out = []
    for e in EXPERIMENTS:
        r = p.get(e)
        if r is None:
            continue
        row = {"experiment": e}
        for k in keys:
            v = r.config.get(k)
            row[k] = "-" if v is None else str(v)
        extra = {k: r.config[k] for k in ("contexts", "ks", "temperatures") if k in r.config}
        row["sweep"] = "; ".join(f"{k}={v}" for k, v in extra.items()) or "-"
        out.append(row)
    return pd.DataFrame(out)


def machine_kinds(p: Profile) -> dict[tuple[str, ...], list[str]]:
    """The experiments of a profile grouped by the kind of machine that computed them (device,
    GPU or CPU model, native bfloat16, dtype, as each env.json records them)."""
    kinds: dict[tuple[str, ...], list[str]] = {}
    for e in EXPERIMENTS:
        if (r := p.get(e)) is not None:
            key = tuple(str(r.env.get(k)) for k in ("device", "gpu", "cpu_model", "bf16_native"))
            kinds.setdefault(key + (str(r.env.get("dtype")),), []).append(e)
    return kinds


def batch_time_sentence(p: Profile) -> str:
    """The profile's summed experiment time, and whether it stands for one machine's batch."""
    head = (
        f"The experiments of this profile took {num(total_batch_seconds(p) / 60, 1)} minutes in "
        "all (the sum of `wall_s_experiment`, warm-ups included; reused results count as when "
        "they were computed)"
    )
    kinds = machine_kinds(p)
    if len(kinds) <= 1:
        return (
            head
            + ": about what `make evaluate FORCE=1` takes to re-measure them on the machine above."
        )
    parts = []
    for key, names in kinds.items():
        minutes = sum(as_float(p.get(e).env.get("wall_s_experiment") or 0) for e in names) / 60
        native = {"True": "yes", "False": "no"}.get(key[3], "not recorded")
        listed = ", ".join(f"`{e}`" for e in names)
        parts.append(f"{listed} in {key[-1]} (native bfloat16: {native}; {num(minutes, 1)} min)")
    return (
        head
        + f". They were computed on {len(kinds)} kinds of machine ("
        + "; ".join(parts)
        + "), so the sum is no one machine's batch time: `make evaluate FORCE=1` re-measures "
        "them all on the machine it runs on, at that machine's speed."
    )


def total_batch_seconds(p: Profile) -> float:
    """The summed wall time in seconds of every stored experiment."""
    return float(
        sum(
            as_float(r.env.get("wall_s_experiment"))
            for r in p.results.values()
            if finite(r.env.get("wall_s_experiment"))
        )
    )
