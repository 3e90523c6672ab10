"""04: the timed context sweep, with and without the KV cache: per context the arms paired with
that context's own baseline, on the same documents and anchors at every context.

Builds the config, arms and rows; the summary is `analysis.sweep`'s.
"""

from __future__ import annotations

from typing import Any

from specdec_lib.analysis.sweep import sweep_summary
from specdec_lib.errors import SpecdecError
from specdec_lib.results.catalog import BASELINE
from specdec_lib.results.store import ExperimentResult
from specdec_lib.runner.context import (
    Study,
    arm_name,
    base_config,
    build_arms,
    get_drafter,
    load_target,
)
from specdec_lib.runner.execute import Progress, Run, execute, paired
from specdec_lib.runner.prompts import prompts_for
from specdec_lib.runner.teacher_forced import draft_kind


def sweep_config(S: Study, experiment: str) -> dict[str, Any]:
    """The timed sweep's config. The cache-off ablation (`context_sweep_nocache`) takes its
    contexts, prompt counts, token counts, anchors and drafts from `context_sweep`, so that it
    runs on exactly the same prompts; only the cache differs. Its own section may list `drafts`,
    a subset of the sweep's draft arms (the baseline always runs), to save time."""
    e = S.exp("context_sweep")
    if experiment != "context_sweep":
        S.exp(experiment)  # the section must exist (a clear error otherwise)
    d = S.profile["drafts"]
    specs = (
        {str(k): str(v) for k, v in e["drafts"].items()}
        if e.get("drafts")
        else {arm_name(d["bigram"]): d["bigram"], arm_name(d["transformer"]): d["transformer"]}
    )
    if experiment == "context_sweep_nocache" and "drafts" in S.exp(experiment):
        keep = [str(m) for m in S.exp(experiment)["drafts"] or []]
        unknown = sorted(set(keep) - set(specs))
        if unknown:
            raise SpecdecError(
                f"context_sweep_nocache: drafts {unknown} are not context_sweep drafts {specs}"
            )
        specs = {m: v for m, v in specs.items() if m in keep}
    contexts = [int(c) for c in e["contexts"]]
    n = int(e["n_prompts"])
    beyond = e.get("n_prompts_beyond_100")
    return {
        **base_config(S, experiment),
        "contexts": contexts,
        "anchor_min": int(e.get("anchor_min") or max(contexts)),
        "n_prompts": n,
        "n_prompts_by_context": {
            str(c): (int(beyond) if beyond and c > 100 else n) for c in contexts
        },
        "max_new_tokens": int(e["max_new_tokens"]),
        "use_cache": experiment != "context_sweep_nocache",
        "reference_context": int(e.get("reference_context", 20)),
        "primary": str(e.get("primary") or next(iter(specs), "")),
        "arms": {BASELINE: "none", **specs},
    }


def run_context_sweep(S: Study, *, use_cache: bool = True) -> ExperimentResult:
    """04: time, speedup and acceptance per context, each context with its own paired baseline,
    on the same documents and anchors (a context with fewer prompts takes the first ones); plus
    the earlier study's speedup (one reference-context baseline over every row)."""
    experiment = "context_sweep" if use_cache else "context_sweep_nocache"
    cfg = sweep_config(S, experiment)
    return execute(S, experiment, cfg, lambda on_row: _sweep(S, cfg, on_row))


def context_sweep_config(S: Study) -> dict[str, Any]:
    """04's timed sweep's config (KV cache on)."""
    return sweep_config(S, "context_sweep")


def context_sweep_nocache_config(S: Study) -> dict[str, Any]:
    """04's cache-off ablation's config."""
    return sweep_config(S, "context_sweep_nocache")


def run_context_sweep_nocache(S: Study) -> ExperimentResult:
    """04: the context sweep with the KV cache off, on the very same prompts."""
    return run_context_sweep(S, use_cache=False)


def _sweep(S: Study, cfg: dict[str, Any], on_row: Progress) -> Run:
    loaded = load_target(S)
    use_cache = cfg["use_cache"]
    specs = {k: v for k, v in cfg["arms"].items() if k != BASELINE}
    arms = build_arms(S, loaded, specs, cfg["k"], use_cache=use_cache)
    rows: list[dict[str, Any]] = []
    for c in cfg["contexts"]:
        n = cfg["n_prompts_by_context"][str(c)]
        prompts = prompts_for(S, loaded, n, c, anchor_min=cfg["anchor_min"])
        rows += paired(
            arms,
            prompts,
            max_new_tokens=cfg["max_new_tokens"],
            warmup=cfg["warmup"] if c == cfg["contexts"][0] else 0,
            progress=f"{cfg['experiment']} context {c}",
            on_row=on_row,
            extra_cols={"context": c},
        )
    summary = sweep_summary(rows, cfg)
    summary["primary"] = cfg["primary"]
    summary["kinds"] = {
        m: draft_kind(get_drafter(S, loaded, s, use_cache=use_cache), loaded.model)
        for m, s in specs.items()
    }
    return Run(rows, summary)
