"""04's positive control (`implementations`): the implementations a hand-written study plausibly
used, timed side by side on the context sweep's documents and anchors, interleaved exactly as the
sweep is (`sweep_blocks`: prompt by prompt, each prompt's contexts in the seeded order, each
(prompt, context) block after its own warm-up, its arms paired and rotated by `paired`).

Six arms run in every block: the cached baseline (the reference of token identity), the uncached
baseline, and one speculative arm per variant (`analysis.implementations.CACHES`): `cached`
(target and draft cached), `mixed_target` (the target recomputes the prefix at every call, the
draft cached), `mixed_draft` (the target cached, the draft re-reads the whole sequence for every
token it drafts) and `nocache` (both recompute). Builds the config, arms and rows; the summary is
`analysis.implementations`'.
"""

from __future__ import annotations

from typing import Any

from specdec_lib.errors import SpecdecError
from specdec_lib.measure.paired import WARMUP_TOKENS, Arm
from specdec_study.analysis.implementations import (
    CACHED_BASELINE,
    UNCACHED_BASELINE,
    VARIANTS,
    implementations_summary,
    variant_arms,
)
from specdec_study.results.catalog import BASELINE
from specdec_study.results.store import ExperimentResult
from specdec_study.runner.execute import Progress, Run, execute
from specdec_study.runner.interleaved import interleaved_rows
from specdec_study.runner.session import Session, base_config, load_target, make_arm

EXPERIMENT = "implementations"
assert CACHED_BASELINE == BASELINE  # the cached baseline is the reference arm (token identity)


def implementations_config(study: Session) -> dict[str, Any]:
    """The positive control's config: its own contexts, prompt count, tokens and draft
    (`experiments.implementations`), the context sweep's anchors (`anchor_min`, `anchor_room`), so
    that its prompts are the first of the sweep's documents, and the variants it times (all four
    unless the section lists `variants`)."""
    e = study.exp(EXPERIMENT)
    sweep = study.section("context_sweep") or {}
    contexts = [int(c) for c in e["contexts"]]
    chosen = [str(v) for v in (e.get("variants") or VARIANTS)]
    unknown = sorted(set(chosen) - set(VARIANTS))
    if unknown:
        known = ", ".join(VARIANTS)
        raise SpecdecError(f"{EXPERIMENT}: variants {unknown} unknown; known: {known}")
    chosen = [v for v in VARIANTS if v in chosen]  # one order, whatever the profile's
    if not chosen:
        raise SpecdecError(f"{EXPERIMENT}: no variant to run")
    variants = variant_arms(chosen)
    draft = str(e["draft"])
    baselines = [b for b in (CACHED_BASELINE, UNCACHED_BASELINE) if any(
        a["baseline"] == b for a in variants.values())]  # fmt: skip
    if CACHED_BASELINE not in baselines:
        baselines.insert(0, CACHED_BASELINE)  # always: the reference of token identity
    n = int(e["n_prompts"])
    sweep_contexts = [int(c) for c in sweep.get("contexts") or contexts]
    return {
        **base_config(study, EXPERIMENT),
        "contexts": contexts,
        "anchor_min": int(sweep.get("anchor_min") or max(sweep_contexts + contexts)),
        "anchor_room": int(sweep.get("anchor_room", 0)),
        "n_prompts": n,
        "n_prompts_by_context": {str(c): n for c in contexts},
        "max_new_tokens": int(e["max_new_tokens"]),
        "order": "interleaved",
        "warmup_tokens": int(e.get("warmup_tokens", WARMUP_TOKENS)),
        "reference_context": int(e.get("reference_context", 20)),
        "draft": draft,
        "arms": {**{b: "none" for b in baselines}, **{v: draft for v in variants}},
        "arm_cache": {
            **{
                b: {"target": b == CACHED_BASELINE, "draft": b == CACHED_BASELINE}
                for b in baselines
            },  # fmt: skip
            **{
                v: {"target": a["target_cache"], "draft": a["draft_cache"]}
                for v, a in variants.items()
            },  # fmt: skip
        },
        "variants": variants,
    }


def build_variant_arms(study: Session, loaded: Any, cfg: dict[str, Any]) -> list[Arm]:
    """Every arm of the config, the cached baseline first, each with its own caches."""
    return [
        make_arm(
            study,
            loaded,
            name,
            spec,
            cfg["k"],
            use_cache=cfg["arm_cache"][name]["target"],
            draft_cache=cfg["arm_cache"][name]["draft"],
        )
        for name, spec in cfg["arms"].items()
    ]


def arm_variant(cfg: dict[str, Any]) -> dict[str, str]:
    """Arm -> the `variant` column of its rows: a speculative arm's variant; the uncached
    baseline's `nocache`; the cached baseline's `cached` (it is also the mixed variants')."""
    out = {CACHED_BASELINE: "cached", UNCACHED_BASELINE: "nocache"}
    out.update({v: v for v in cfg["variants"]})
    return out


def run_implementations(study: Session) -> ExperimentResult:
    """04's positive control: each variant's single-divisor and paired speedup and its tokens per
    target call at every context, on the same prompts."""
    cfg = implementations_config(study)
    return execute(study, EXPERIMENT, cfg, lambda on_row: _compute(study, cfg, on_row))


def _compute(study: Session, cfg: dict[str, Any], on_row: Progress) -> Run:
    """Every block of `sweep_blocks` after its warm-up, checkpointed per (context, prompt) as the
    sweep's are; rows by context, then prompt, each with its `variant` and its draft's cache."""
    loaded = load_target(study)
    arms = build_variant_arms(study, loaded, cfg)
    variant = arm_variant(cfg)
    rows = interleaved_rows(study, loaded, cfg, arms, on_row)
    for r in rows:
        r["variant"] = variant[r["method"]]
        r["draft_cache"] = bool(cfg["arm_cache"][r["method"]]["draft"])
    return Run(rows, implementations_summary(rows, cfg))
