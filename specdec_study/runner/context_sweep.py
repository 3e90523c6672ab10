"""04: the timed context sweep, with and without the KV cache: per context the arms paired with
that context's own baseline, on the same documents and anchors at every context.

The contexts are interleaved, not run in blocks: prompt by prompt, each prompt's contexts in a
seeded random order (`context_order`), each (prompt, context) block after its own short warm-up
of every arm on that block's prompt, with the arms paired and rotated as `paired` does. So a
drift in the machine's speed during the run spreads over every context instead of landing on
the contexts run last. Builds the config, arms and rows; the summary is `analysis.sweep`'s.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from tqdm.auto import tqdm

from specdec_lib.errors import SpecdecError
from specdec_lib.measure.paired import WARMUP_TOKENS
from specdec_study.analysis.sweep import sweep_summary
from specdec_study.results.catalog import BASELINE
from specdec_study.results.store import ExperimentResult
from specdec_study.runner.execute import Progress, Run, execute, paired
from specdec_study.runner.prompts import prompts_for
from specdec_study.runner.session import (
    Session,
    arm_name,
    base_config,
    build_arms,
    get_drafter,
    load_target,
)
from specdec_study.runner.teacher_forced import draft_kind


def sweep_config(study: Session, experiment: str) -> dict[str, Any]:
    """The timed sweep's config. The cache-off ablation (`context_sweep_nocache`) takes its
    contexts, prompt counts, token counts, anchors and drafts from `context_sweep`, so that it
    runs on exactly the same prompts; only the cache differs. Its own section may list `drafts`,
    a subset of the sweep's draft arms (the baseline always runs), to save time."""
    e = study.exp("context_sweep")
    if experiment != "context_sweep":
        study.exp(experiment)  # the section must exist (a clear error otherwise)
    d = study.profile["drafts"]
    specs = (
        {str(k): str(v) for k, v in e["drafts"].items()}
        if e.get("drafts")
        else {arm_name(d["bigram"]): d["bigram"], arm_name(d["transformer"]): d["transformer"]}
    )
    if experiment == "context_sweep_nocache" and "drafts" in study.exp(experiment):
        keep = [str(m) for m in study.exp(experiment)["drafts"] or []]
        unknown = sorted(set(keep) - set(specs))
        if unknown:
            raise SpecdecError(
                f"context_sweep_nocache: drafts {unknown} are not context_sweep drafts {specs}"
            )
        specs = {m: v for m, v in specs.items() if m in keep}
    contexts = [int(c) for c in e["contexts"]]
    n = int(e["n_prompts"])
    if experiment == "context_sweep_nocache" and study.exp(experiment).get("n_prompts"):
        # the ablation may run on the first of the sweep's prompts only (the same documents:
        # make_prompts is prefix-stable), to save the cost of recomputing every prefix
        n = min(n, int(study.exp(experiment)["n_prompts"]))
    beyond = e.get("n_prompts_beyond_100")
    # a draft arm may run on the first of the prompts only (`draft_prompts: {arm: n}`), paired with
    # the baseline on those prompts: the budget's cut for an arm that decides no hypothesis
    fewer = {str(m): min(n, int(v)) for m, v in (e.get("draft_prompts") or {}).items()}
    unknown = sorted(set(fewer) - set(e.get("drafts") or specs))
    if unknown:
        raise SpecdecError(f"{experiment}: draft_prompts names {unknown}, not sweep drafts")
    fewer = {m: v for m, v in fewer.items() if m in specs}
    return {
        **base_config(study, experiment),
        "contexts": contexts,
        "anchor_min": int(e.get("anchor_min") or max(contexts)),
        # room kept after each anchor (make_prompts): with the agreement's anchor_min and
        # continuation_tokens, the sweep's prompts are the first of the agreement's documents,
        # so the replay can be checked against these timed runs (analysis.replay.replay_check)
        "anchor_room": int(e.get("anchor_room", 0)),
        "n_prompts": n,
        "n_prompts_by_context": {
            str(c): (int(beyond) if beyond and c > 100 else n) for c in contexts
        },
        **({"n_prompts_by_arm": fewer} if fewer else {}),
        "max_new_tokens": int(e["max_new_tokens"]),
        "order": "interleaved",  # not the blocks of earlier results: another config hash
        "warmup_tokens": int(e.get("warmup_tokens", WARMUP_TOKENS)),
        "use_cache": experiment != "context_sweep_nocache",
        "reference_context": int(e.get("reference_context", 20)),
        "primary": str(e.get("primary") or next(iter(specs), "")),
        "arms": {BASELINE: "none", **specs},
    }


def run_context_sweep(study: Session, *, use_cache: bool = True) -> ExperimentResult:
    """04: time, speedup and acceptance per context, each context with its own paired baseline,
    on the same documents and anchors (a context with fewer prompts takes the first ones); plus
    the earlier study's speedup (one reference-context baseline over every row)."""
    experiment = "context_sweep" if use_cache else "context_sweep_nocache"
    cfg = sweep_config(study, experiment)
    return execute(study, experiment, cfg, lambda on_row: _sweep(study, cfg, on_row))


def context_sweep_config(study: Session) -> dict[str, Any]:
    """04's timed sweep's config (KV cache on)."""
    return sweep_config(study, "context_sweep")


def context_sweep_nocache_config(study: Session) -> dict[str, Any]:
    """04's cache-off ablation's config."""
    return sweep_config(study, "context_sweep_nocache")


def run_context_sweep_nocache(study: Session) -> ExperimentResult:
    """04: the context sweep with the KV cache off, on the very same prompts."""
    return run_context_sweep(study, use_cache=False)


def context_order(seed: int, prompt: int, contexts: Sequence[int]) -> list[int]:
    """The order prompt `prompt` runs its contexts in: a shuffle by a `random.Random` seeded
    from the config's seed and the prompt index (reproducible, different between prompts)."""
    order = list(contexts)
    random.Random(f"context order {seed} {prompt}").shuffle(order)
    return order


def sweep_blocks(cfg: dict[str, Any]) -> list[tuple[int, int, int]]:
    """(prompt, context, order) of every measured block in run order: prompts in the outer loop,
    each prompt's contexts (those with that many prompts) in `context_order`; `order` is the
    context's 0-based position in its prompt's order."""
    by_context = {c: int(cfg["n_prompts_by_context"][str(c)]) for c in cfg["contexts"]}
    blocks = []
    for i in range(max(by_context.values(), default=0)):
        mine = [c for c in cfg["contexts"] if i < by_context[c]]
        blocks += [(i, c, k) for k, c in enumerate(context_order(cfg["seed"], i, mine))]
    return blocks


def sweep_rows(
    study: Session, loaded: Any, cfg: dict[str, Any], arms: list[Any], on_row: Progress
) -> list[dict[str, Any]]:
    """The rows of every block of `sweep_blocks`, each block's arms paired after its warm-up
    (none with `warmup_tokens: 0`) and checkpointed under its context's segment and its prompt
    index; an arm of `n_prompts_by_arm` runs on the first of the prompts only. Returned by
    context, then prompt (their `order` column keeps the run order). The timed sweep's and the
    positive control's (`runner.implementations`) one loop."""
    prompts = {
        c: prompts_for(
            study,
            loaded,
            cfg["n_prompts_by_context"][str(c)],
            c,
            anchor_min=cfg["anchor_min"],
            continuation_tokens=cfg.get("anchor_room", 0),
        )
        for c in cfg["contexts"]
    }
    warm = 1 if cfg["warmup_tokens"] > 0 else 0
    block_rows: dict[tuple[int, int], list[dict[str, Any]]] = {}
    fewer = cfg.get("n_prompts_by_arm") or {}
    for i, c, k in tqdm(sweep_blocks(cfg), desc=f"{cfg['experiment']} blocks"):
        block_rows[(c, i)] = paired(
            [a for a in arms if i < fewer.get(a.method.name, i + 1)],
            [prompts[c][i]],
            max_new_tokens=cfg["max_new_tokens"],
            warmup=warm,
            warmup_tokens=cfg["warmup_tokens"],
            progress=f"{cfg['experiment']} context {c}",
            on_row=on_row,
            extra_cols={"context": c, "order": k},
            indices=[i],
            bar=False,
        )
    return [r for c in cfg["contexts"] for i in range(len(prompts[c])) for r in block_rows[(c, i)]]


def _sweep(study: Session, cfg: dict[str, Any], on_row: Progress) -> Run:
    """The sweep's rows (`sweep_rows`: a resumed run skips the finished blocks), its summary, its
    primary draft and each draft's kind."""
    loaded = load_target(study)
    use_cache = cfg["use_cache"]
    specs = {k: v for k, v in cfg["arms"].items() if k != BASELINE}
    arms = build_arms(study, loaded, specs, cfg["k"], use_cache=use_cache)
    rows = sweep_rows(study, loaded, cfg, arms, on_row)
    summary = sweep_summary(rows, cfg)
    summary["primary"] = cfg["primary"]
    summary["kinds"] = {
        m: draft_kind(get_drafter(study, loaded, s, use_cache=use_cache), loaded.model)
        for m, s in specs.items()
    }
    return Run(rows, summary)
