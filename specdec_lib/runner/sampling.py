"""06: speculative sampling at each temperature (acceptance, speedup), and the empirical check
that the first sampled token follows the target's exact distribution (`runner.distribution`),
through the library's own drafter and verifier, for the baseline and every checked draft arm.

Builds the config, arms and rows; the summaries are `analysis.sampling`'s. The timed runs resume
per prompt; the distribution check is not checkpointed: an interrupted run restarts it.
"""

from __future__ import annotations

from typing import Any

from specdec_lib.analysis.sampling import temperature_headline, temperature_rows
from specdec_lib.analysis.summary import summarize
from specdec_lib.config import SamplingConfig
from specdec_lib.errors import SpecdecError
from specdec_lib.measure.paired import Arm
from specdec_lib.results.catalog import BASELINE
from specdec_lib.results.store import ExperimentResult
from specdec_lib.runner.context import Study, arm_name, base_config, build_arms, load_target
from specdec_lib.runner.distribution import distribution_checks
from specdec_lib.runner.execute import Progress, Run, execute, paired
from specdec_lib.runner.prompts import prompts_for


def sampling_specs(S: Study) -> dict[str, str]:
    """The transformer draft (the headline's) and the bigram."""
    d = S.profile["drafts"]
    return {arm_name(d["transformer"]): d["transformer"], arm_name(d["bigram"]): d["bigram"]}


def sampling_config(S: Study) -> dict[str, Any]:
    e = S.exp("sampling")
    specs = sampling_specs(S)
    dist = e.get("distribution", {}) or {}
    checked = [str(a) for a in dist.get("arms", list(specs))]
    if not set(checked) <= set(specs):
        raise SpecdecError(
            f"sampling.distribution.arms {checked} must name arms of this experiment: "
            f"{', '.join(specs)}"
        )
    return {
        **base_config(S, "sampling"),
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
        "arms": {BASELINE: "none", **specs},
    }


def run_sampling(S: Study) -> ExperimentResult:
    """06: speculative sampling at each temperature (acceptance, speedup), and an empirical
    check that the first sampled token follows the target's exact distribution, for the
    baseline and every speculative arm, with the smallest TVD the check detects."""
    cfg = sampling_config(S)
    return execute(S, "sampling", cfg, lambda on_row: _sampling(S, cfg, on_row))


def _sampling(S: Study, cfg: dict[str, Any], on_row: Progress) -> Run:
    loaded = load_target(S)
    specs = sampling_specs(S)
    main = next(iter(specs))
    arms = build_arms(S, loaded, specs, cfg["k"])
    prompts = prompts_for(S, loaded, cfg["n_prompts"], cfg["context_tokens"])
    rows: list[dict[str, Any]] = []
    by_t, table, dist_rows, checks, headline = {}, [], [], {}, {}
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
        check, drows = _check(cfg, arms, prompts, samp, t)
        dist_rows += drows
        checks[str(t)] = check
        headline[str(t)] = temperature_headline(sm, check, main, cfg["distribution"]["arms"])
    summary = {
        "temperatures": cfg["temperatures"],
        "by_temperature": by_t,
        "table": table,
        "distribution_check": checks,
        "headline": headline,
    }
    return Run(rows, summary, {"distribution.csv": dist_rows})


def _check(
    cfg: dict[str, Any], arms: list[Arm], prompts: list[Any], samp: SamplingConfig, t: float
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The distribution check at one temperature: the baseline (a control for the test itself)
    and the profile's checked arms (default: every draft arm), each on its own seeds."""
    dist = cfg["distribution"]
    nd, ns = dist["n_prompts"], dist["n_samples"]
    gens = {BASELINE: (arms[0].generator, 0)}
    gens.update(
        {a.method.name: (a.generator, dist["k"]) for a in arms[1:] if a.method.name in dist["arms"]}
    )
    by_method, drows = distribution_checks(gens, prompts[:nd], samp, ns, t)
    return {"n_samples_per_prompt": ns, "n_prompts": nd, **by_method}, drows
