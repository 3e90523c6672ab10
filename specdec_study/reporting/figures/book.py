"""The book's figures: each `fig_*` picks what one chapter shows from a profile's results and draws
it with the same function the study used for the result directory's PNG (figures.arms,
figures.context_length). Returns None when the profile lacks the experiment, so a chapter degrades
to nothing instead of raising.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from specdec_study.analysis.changes import (
    acceptance_change,
    per_prompt_acceptance,
    prompt_swap_change,
    range_for_test,
)
from specdec_study.analysis.rules import PUBLISHED_K
from specdec_study.analysis.theory import a_from_rate
from specdec_study.analysis.verdicts import sweep_primary
from specdec_study.experiments import agreement
from specdec_study.reporting.earlier import earlier_drop, earlier_recomputed
from specdec_study.reporting.figures import arms, context_length
from specdec_study.reporting.identity import identity_margins
from specdec_study.results.declare import BASELINE
from specdec_study.results.read import Profile, role_arm, stored_sweep_table, sweep_contexts
from specdec_study.results.store import ExperimentResult

SWEEPS = (("context_sweep", "cache on"), ("context_sweep_nocache", "cache off"))


def arm_names(res: ExperimentResult | None) -> dict[str, str]:
    """Arm -> 'role (arm)' for the arms that play a role (bigram, transformer, ngram)."""
    names = {}
    for role in ("bigram", "transformer", "ngram"):
        a = role_arm(res, role)
        if a:
            names[a] = f"{role} ({a})" if a != role else role
    return names


def fig_earlier_study() -> Any:
    """The earlier study's published transformer-draft rows, acceptance and speedup vs context."""
    return context_length.earlier_study(earlier_recomputed())


def fig_acceptance_vs_context(p: Profile) -> Any:
    """The context sweep's acceptance per drafting arm and context (None: no sweep stored)."""
    sweep = p.get("context_sweep")
    if stored_sweep_table(sweep) is None:
        return None
    return context_length.acceptance_vs_context(sweep.summary, arm_names(sweep))


def fig_agreement_vs_context(p: Profile) -> Any:
    """Agreement vs context beside the fall that the earlier study's acceptance implies."""
    agr = p.get("agreement")
    if agr is None or not any("implied_acceptance" in t for t in agr.summary.get("table") or []):
        return None
    e = earlier_drop()
    implied_fall = a_from_rate(e["acc_hi"], PUBLISHED_K) - a_from_rate(e["acc_lo"], PUBLISHED_K)
    return context_length.agreement_vs_context(
        agr.summary, arm_names(agr), earlier_recomputed(), reference=implied_fall
    )


def fig_ladder(p: Profile) -> Any:
    """The ladder's dose-response (agreement at context 10 against the 10 -> 100 change)."""
    agr = p.get("agreement")
    if agr is None or not (agr.summary.get("continuation") or {}).get("changes"):
        return None
    return agreement.ladder_dose_response(agr.summary, agr.rows)


def fig_replay(p: Profile) -> Any:
    """Replayed tokens per call and acceptance of every draft against context."""
    agr = p.get("agreement")
    if agr is None or not agr.summary.get("continuation"):
        return None
    return agreement.replay_vs_context(agr.summary, agr.rows)


def training_record(p: Profile) -> tuple[str, dict[str, Any]] | None:
    """(draft, record) of the first draft whose training record the agreement stored."""
    agr = p.get("agreement")
    recs = (agr.summary.get("draft_records") if agr is not None else None) or {}
    return next(((n, r) for n, r in recs.items() if isinstance(r, dict)), None)


def fig_training_curve(p: Profile) -> Any:
    """The training curve, with the draft's evaluation agreement (each context's) beside it."""
    found = training_record(p)
    if not found:
        return None
    draft, rec = found
    table = p.get("agreement").summary.get("table") or []
    evaluation = [float(t["agreement"]) for t in table if t.get("draft") == draft]
    return arms.training_curve(draft, rec, evaluation)


def fig_speedup_vs_context(p: Profile) -> Any:
    """Paired and one-baseline speedups, one panel per sweep (cache on, off)."""
    found = [p.get(n) for n, _ in SWEEPS]
    found = [r for r in found if r is not None and stored_sweep_table(r) is not None]
    if not found:
        return None
    return context_length.earlier_style_vs_paired([r.summary for r in found], arm_names(found[0]))


def fig_baseline_growth(p: Profile) -> Any:
    """Milliseconds per generated token vs context, cache on and off, every arm."""
    sweeps = {tag: p.get(n) for n, tag in SWEEPS if p.get(n) is not None}
    if not sweeps:
        return None
    names = arm_names(next(iter(sweeps.values())))
    return context_length.time_per_token({tag: r.rows for tag, r in sweeps.items()}, names)


def fig_prompt_confound(p: Profile) -> Any:
    """Per-prompt acceptance across contexts (same prompts) and the simulated confound."""
    sweep = p.get("context_sweep")
    arm = sweep_primary(sweep) or role_arm(sweep, "transformer")
    if sweep is None or arm is None or len(sweep_contexts(sweep)) < 2:
        return None
    c0, c1 = range_for_test(sweep_contexts(sweep))
    return context_length.prompt_confound(
        per_prompt_acceptance(sweep.rows, arm),
        acceptance_change(sweep.rows, arm, c0, c1),
        prompt_swap_change(sweep.rows, arm, c0, c1),
        earlier_drop()["drop"],
        arm,
        c0,
        c1,
    )


def fig_measured_vs_predicted(p: Profile) -> Any:
    """The K sweep's measured speedup per K beside the predictions (None: no K sweep)."""
    res = p.get("k_sweep")
    return arms.measured_vs_predicted(res.summary) if res is not None else None


def _draft_arms(p: Profile) -> dict[str, dict[str, Any]]:
    """Arm -> summary for the draft arms of the bigram and transformer-draft runs."""
    out: dict[str, dict[str, Any]] = {}
    for exp in ("bigram", "transformer_draft"):
        res = p.get(exp)
        for arm, s in (res.arms if res is not None else {}).items():
            if arm != BASELINE and s.get("k"):
                out[arm if arm not in out else f"{arm} ({exp})"] = s
    return out


def fig_position_acceptance(p: Profile) -> Any:
    """Acceptance by draft position for the bigram and transformer-draft arms."""
    return arms.position_acceptance(_draft_arms(p))


def fig_accepted_histogram(p: Profile) -> Any:
    """Drafted tokens accepted per verification, for the bigram and transformer-draft arms."""
    return arms.accepted_histogram(_draft_arms(p))


def fig_time_split(p: Profile) -> Any:
    """The time split of the bigram and transformer-draft runs (one baseline, their arms)."""
    frames = [p.get(e).rows for e in ("bigram", "transformer_draft") if p.get(e) is not None]
    if not frames:
        return None
    first, *rest = frames
    rows = pd.concat([first, *(f[f["method"] != BASELINE] for f in rest)], ignore_index=True)
    return arms.time_split(rows)


def fig_divergence_margins(p: Profile) -> Any:
    """The target's top-1 minus top-2 logit where the dtypes' outputs first differ."""
    return arms.divergence_margins(identity_margins(p))
