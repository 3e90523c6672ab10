"""06: speculative sampling at each temperature (acceptance, speedup), and the empirical check
that the first sampled token follows the target's exact distribution (`runner.distribution`),
through the library's own drafter and verifier, for the baseline and every checked draft arm.

Builds the config, arms and rows; the summaries are `analysis.speculative_sampling`'s. Both
parts resume: the timed runs per prompt, the distribution check per (temperature, method, prompt).
"""

from __future__ import annotations

from typing import Any

from specdec_lib.config import SamplingConfig
from specdec_lib.errors import SpecdecError
from specdec_lib.measure.paired import Arm
from specdec_study.analysis.speculative_sampling import (
    sequence_family,
    temperature_headline,
    temperature_rows,
)
from specdec_study.analysis.summary import summarize
from specdec_study.results.catalog import BASELINE
from specdec_study.results.store import Checkpoint, ExperimentResult
from specdec_study.runner.distribution import distribution_checks, sequence_checks
from specdec_study.runner.execute import Progress, Run, execute, paired
from specdec_study.runner.prompts import prompts_for
from specdec_study.runner.session import Session, arm_name, base_config, build_arms, load_target


def sampling_specs(study: Session) -> dict[str, str]:
    """The transformer draft (the headline's) and the bigram."""
    d = study.profile["drafts"]
    return {arm_name(d["transformer"]): d["transformer"], arm_name(d["bigram"]): d["bigram"]}


def sampling_config(study: Session) -> dict[str, Any]:
    """06's config: temperatures, the paired runs and the distribution and sequence checks."""
    e = study.exp("sampling")
    specs = sampling_specs(study)
    dist = e.get("distribution", {}) or {}
    checked = [str(a) for a in dist.get("arms", list(specs))]
    if not set(checked) <= set(specs):
        raise SpecdecError(
            f"sampling.distribution.arms {checked} must name arms of this experiment: "
            f"{', '.join(specs)}"
        )
    return {
        **base_config(study, "sampling"),
        "temperatures": [float(t) for t in e["temperatures"]],
        "n_prompts": int(e["n_prompts"]),
        "context_tokens": int(e["context_tokens"]),
        "max_new_tokens": int(e["max_new_tokens"]),
        "distribution": {
            "n_prompts": int(dist.get("n_prompts", 2)),
            "n_samples": int(dist.get("n_samples", 200)),
            "arms": checked,
            # the first emitted token depends only on the first draft position: one drafted
            # token exercises accept, reject and residual at the lowest cost per sample
            "k": 1,
        },
        "sequence": sequence_config(study, e.get("sequence")),
        "arms": {BASELINE: "none", **specs},
    }


def sequence_config(study: Session, seq: dict[str, Any] | None) -> dict[str, Any] | None:
    """The check of positions 1..m (`runner.distribution.sequence_checks`), from the profile's
    `sampling.sequence` (None when it has none): the drafts it runs (names in the profile's
    `drafts`: a high-acceptance one such as the n-gram copy and a low one such as the bigram),
    their K, the positions, the seeds per method, the looping prompt (the first prompt's
    `loop_tokens` tokens after its first, repeated `repeats` times, so that copying drafts are
    accepted), and the verdict's thresholds (`analysis.speculative_sampling.sequence_verdict`)."""
    if not seq:
        return None
    drafts = study.profile["drafts"]
    names = [str(a) for a in seq.get("drafts", ["ngram", "bigram"])]
    if missing := [a for a in names if a not in drafts]:
        raise SpecdecError(
            f"sampling.sequence.drafts {missing} are not in the profile's drafts: "
            f"{', '.join(drafts)}"
        )
    return {
        "drafts": {arm_name(drafts[a]): drafts[a] for a in names},
        "k": int(seq.get("k", 2)),
        "positions": int(seq.get("positions", 3)),
        "n_samples": int(seq["n_samples"]),
        "loop_tokens": int(seq.get("loop_tokens", 16)),
        "repeats": int(seq.get("repeats", 4)),
        "tvd_target": float(seq.get("tvd_target", 0.05)),
        "min_path": int(seq.get("min_path", 50)),
    }


def looping_prompt(ids: list[int], loop_tokens: int, repeats: int) -> list[int]:
    """ids[0], then ids[1 : 1 + loop_tokens] repeated: a prompt whose continuation repeats."""
    if len(ids) < 1 + loop_tokens:
        raise SpecdecError(f"a looping prompt needs {1 + loop_tokens} tokens, got {len(ids)}")
    return ids[:1] + ids[1 : 1 + loop_tokens] * repeats


def run_sampling(study: Session) -> ExperimentResult:
    """06: speculative sampling at each temperature (acceptance, speedup), and an empirical
    check that the first sampled token follows the target's exact distribution, for the
    baseline and every speculative arm, with the smallest TVD the check detects."""
    cfg = sampling_config(study)
    return execute(study, "sampling", cfg, lambda on_row: _sampling(study, cfg, on_row))


def _sampling(study: Session, cfg: dict[str, Any], on_row: Progress) -> Run:
    loaded = load_target(study)
    specs = sampling_specs(study)
    main = next(iter(specs))
    arms = build_arms(study, loaded, specs, cfg["k"])
    prompts = prompts_for(study, loaded, cfg["n_prompts"], cfg["context_tokens"])
    seq_cfg = cfg["sequence"]
    seq_gens: dict[str, tuple[Any, int]] = {}
    if seq_cfg:
        seq_arms = build_arms(study, loaded, seq_cfg["drafts"], seq_cfg["k"])
        seq_gens = {
            a.method.name: (a.generator, seq_cfg["k"] if i else 0) for i, a in enumerate(seq_arms)
        }
        loop = looping_prompt(list(prompts[0].ids), seq_cfg["loop_tokens"], seq_cfg["repeats"])
    rows: list[dict[str, Any]] = []
    by_t, table, dist_rows, checks, headline = {}, [], [], {}, {}
    seq_checks, seq_rows = {}, []
    for t in cfg["temperatures"]:
        samp = SamplingConfig(temperature=t, seed=cfg["seed"])
        rs = paired(
            arms,
            prompts,
            max_new_tokens=cfg["max_new_tokens"],
            sampling=samp,
            warmup=cfg["warmup"] if t == cfg["temperatures"][0] else 0,
            progress=f"sampling T={t}",
            on_row=on_row,
            extra_cols={"temperature": t},
        )
        rows += rs
        sm = summarize(rs)
        by_t[str(t)] = {"arms": sm}
        table += temperature_rows(t, sm)
        check, drows = _check(cfg, arms, prompts, samp, t, getattr(on_row, "checkpoint", None))
        dist_rows += drows
        checks[str(t)] = check
        headline[str(t)] = temperature_headline(sm, check, main, cfg["distribution"]["arms"])
        if seq_cfg:
            seq_checks[str(t)], srows = sequence_checks(seq_gens, loop, samp, seq_cfg, t)
            seq_rows += srows
    summary = {
        "temperatures": cfg["temperatures"],
        "by_temperature": by_t,
        "table": table,
        "distribution_check": checks,
        "headline": headline,
    }
    extra = {"distribution.csv": dist_rows}
    if seq_cfg:
        summary["sequence_check"] = sequence_family(seq_checks)  # one family: all of them
        extra["sequence.csv"] = seq_rows
    return Run(rows, summary, extra)


def _check(
    cfg: dict[str, Any],
    arms: list[Arm],
    prompts: list[Any],
    samp: SamplingConfig,
    t: float,
    checkpoint: Checkpoint | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The distribution check at one temperature: the baseline (a control for the test itself)
    and the profile's checked arms (default: every draft arm), each on its own seeds."""
    dist = cfg["distribution"]
    nd, ns = dist["n_prompts"], dist["n_samples"]
    gens = {BASELINE: (arms[0].generator, 0)}
    gens.update(
        {a.method.name: (a.generator, dist["k"]) for a in arms[1:] if a.method.name in dist["arms"]}
    )
    by_method, drows = distribution_checks(gens, prompts[:nd], samp, ns, t, checkpoint)
    return {"n_samples_per_prompt": ns, "n_prompts": nd, **by_method}, drows
