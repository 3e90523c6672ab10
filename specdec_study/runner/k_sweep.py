"""05: the transformer draft at each K of the profile beside Leviathan et al.'s predicted speedup,
and an adaptive-K schedule, paired with the baseline on the same prompts.

Builds the config, arms and rows; the summary is `analysis.k_sweep`'s.
"""

from __future__ import annotations

from typing import Any

from specdec_study.analysis.k_sweep import k_sweep_summary
from specdec_study.analysis.summary import summarize
from specdec_study.results.catalog import BASELINE
from specdec_study.results.store import ExperimentResult
from specdec_study.runner.execute import Progress, Run, execute, paired_by_config
from specdec_study.runner.prompts import prompts_for
from specdec_study.runner.session import Session, base_config, load_target, make_arm


def k_sweep_config(study: Session) -> dict[str, Any]:
    """05's config: the transformer draft at each K and the adaptive schedule's bounds."""
    e = study.exp("k_sweep")
    spec = study.profile["drafts"]["transformer"]
    ks = [int(k) for k in e["ks"]]
    ad = e.get("adaptive", {}) or {}
    arms_cfg = {f"k{k}": spec for k in ks}
    arms_cfg["adaptive"] = f"adaptive:{spec}"
    return {
        **base_config(study, "k_sweep"),
        "n_prompts": int(e["n_prompts"]),
        "context_tokens": int(e["context_tokens"]),
        "max_new_tokens": int(e["max_new_tokens"]),
        "ks": ks,
        "adaptive": {
            "k_start": int(ad.get("k_start", 4)),
            "k_min": int(ad.get("k_min", 1)),
            "k_max": int(ad.get("k_max", max(ks))),
        },
        "arms": {BASELINE: "none", **arms_cfg},
    }


def run_k_sweep(study: Session) -> ExperimentResult:
    """05: the transformer draft at K = 1..8 beside Leviathan's predicted speedup, and an
    adaptive-K schedule."""
    cfg = k_sweep_config(study)
    return execute(study, "k_sweep", cfg, lambda on_row: _k_sweep(study, cfg, on_row))


def _k_sweep(study: Session, cfg: dict[str, Any], on_row: Progress) -> Run:
    loaded = load_target(study)
    spec = study.profile["drafts"]["transformer"]
    arms = [make_arm(study, loaded, BASELINE, "none", 1)]
    arms += [make_arm(study, loaded, f"k{k}", spec, k) for k in cfg["ks"]]
    arms.append(make_arm(study, loaded, "adaptive", f"adaptive:{spec}", cfg["adaptive"]["k_max"]))
    prompts = prompts_for(study, loaded, cfg["n_prompts"], cfg["context_tokens"])
    rows = paired_by_config(arms, prompts, cfg, progress="k sweep", on_row=on_row)
    summary = k_sweep_summary(rows, summarize(rows), cfg)
    return Run(rows, summary)
