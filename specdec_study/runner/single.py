"""The single-context experiments: 01 the baseline, 02 the bigram drafter and 03 the transformer
draft(s) with greedy token identity per dtype, each paired with the baseline on the same prompts.

Builds configs, arms and rows; the summaries are `analysis.summary` and `analysis.single`'s.
"""

from __future__ import annotations

from typing import Any

from specdec_study.analysis.single import baseline_headline, headline_pair, identity_summary
from specdec_study.analysis.summary import summarize
from specdec_study.results.catalog import BASELINE
from specdec_study.results.store import ExperimentResult
from specdec_study.runner.execute import Progress, Run, execute, paired, paired_by_config
from specdec_study.runner.prompts import prompts_for
from specdec_study.runner.session import (
    Session,
    base_config,
    build_arms,
    load_target,
    make_arm,
    transformer_specs,
)


def single_config(study: Session, experiment: str, arms: dict[str, str]) -> dict[str, Any]:
    """The config of a single-context experiment pairing these arms with the baseline."""
    e = study.exp(experiment)
    return {
        **base_config(study, experiment),
        "n_prompts": int(e["n_prompts"]),
        "context_tokens": int(e["context_tokens"]),
        "max_new_tokens": int(e["max_new_tokens"]),
        "arms": {BASELINE: "none", **arms},
    }


def bigram_specs(study: Session) -> dict[str, str]:
    """Arm name -> spec of 02's one draft, the profile's bigram."""
    return {"bigram": study.profile["drafts"]["bigram"]}


def baseline_config(study: Session) -> dict[str, Any]:
    """01's config: the baseline alone."""
    return single_config(study, "baseline", {})


def bigram_config(study: Session) -> dict[str, Any]:
    """02's config: the bigram drafter beside the baseline."""
    return single_config(study, "bigram", bigram_specs(study))


def transformer_config(study: Session) -> dict[str, Any]:
    """03's config: the pair's, plus the identity check's dtypes, prompts and tokens."""
    cfg = single_config(study, "transformer_draft", transformer_specs(study))
    ident = study.exp("transformer_draft").get("identity", {}) or {}
    cfg["identity"] = {
        "dtypes": list(ident.get("dtypes", [])),
        "n_prompts": int(ident.get("n_prompts", 0)),
        "max_new_tokens": int(ident.get("max_new_tokens", 0)),
    }
    return cfg


# --------------------------------------------------------------------------- 01 baseline


def run_baseline(study: Session) -> ExperimentResult:
    """01: the KV-cached autoregressive baseline: tokens/s and time per prompt."""
    cfg = baseline_config(study)
    return execute(study, "baseline", cfg, lambda on_row: _baseline(study, cfg, on_row))


def _baseline(study: Session, cfg: dict[str, Any], on_row: Progress) -> Run:
    loaded = load_target(study)
    arms = build_arms(study, loaded, {}, cfg["k"])
    prompts = prompts_for(study, loaded, cfg["n_prompts"], cfg["context_tokens"])
    rows = paired_by_config(arms, prompts, cfg, progress="baseline", on_row=on_row)
    sm = summarize(rows)
    return Run(rows, {"arms": sm, "headline": baseline_headline(sm, cfg)})


# --------------------------------------------------------------------------- 02 .. 03 pairs


def run_pair(study: Session, experiment: str, specs: dict[str, str]) -> ExperimentResult:
    """A single-context experiment: these drafts paired with the baseline on the same prompts."""
    cfg = single_config(study, experiment, specs)
    return execute(study, experiment, cfg, lambda on_row: _pair(study, cfg, specs, on_row))


def _pair(study: Session, cfg: dict[str, Any], specs: dict[str, str], on_row: Progress) -> Run:
    loaded = load_target(study)
    arms = build_arms(study, loaded, specs, cfg["k"])
    prompts = prompts_for(study, loaded, cfg["n_prompts"], cfg["context_tokens"])
    rows = paired_by_config(arms, prompts, cfg, progress=cfg["experiment"], on_row=on_row)
    sm = summarize(rows)
    main = next(iter(specs))
    return Run(rows, {"arms": sm, "headline": headline_pair(sm, main)})


def run_bigram(study: Session) -> ExperimentResult:
    """02: the bigram drafter against its paired baseline."""
    return run_pair(study, "bigram", bigram_specs(study))


def run_transformer_draft(study: Session) -> ExperimentResult:
    """03: the transformer draft(s) against the paired baseline, and greedy token identity of
    the main draft per dtype (the profile's and e.g. float32)."""
    specs = transformer_specs(study)
    cfg = transformer_config(study)
    return execute(
        study, "transformer_draft", cfg, lambda on_row: _transformer(study, cfg, specs, on_row)
    )


def _transformer(
    study: Session, cfg: dict[str, Any], specs: dict[str, str], on_row: Progress
) -> Run:
    run = _pair(study, cfg, specs, on_row)
    by_dtype, id_rows = _identity(study, cfg, specs, run.rows, on_row)
    run.summary["identity_by_dtype"] = by_dtype
    run.extra = {"identity.csv": id_rows} if id_rows else None
    return run


def _identity(
    study: Session,
    cfg: dict[str, Any],
    specs: dict[str, str],
    rows: list[dict[str, Any]],
    on_row: Progress,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The main draft's greedy identity in the target's own dtype (from the pair's rows) and in
    each further dtype of the config (a paired run of its own, when it has prompts), and the
    further runs' rows (identity.csv)."""
    main = next(iter(specs))
    main_dtype = str(load_target(study).dtype).removeprefix("torch.")
    by_dtype: dict[str, Any] = {}
    id_rows: list[dict[str, Any]] = []
    for dt_name in dict.fromkeys([main_dtype, *cfg["identity"]["dtypes"]]):
        if dt_name == main_dtype:
            mine = [r for r in rows if r["method"] == main]
        elif not cfg["identity"]["n_prompts"]:
            continue
        else:
            new = _identity_rows(study, cfg, main, specs[main], dt_name, on_row)
            id_rows += new
            mine = [r for r in new if r["method"] == main]
        by_dtype[dt_name] = identity_summary(dt_name, mine)
    return by_dtype, id_rows


def _identity_rows(
    study: Session, cfg: dict[str, Any], main: str, spec: str, dtype: str, on_row: Progress
) -> list[dict[str, Any]]:
    """The baseline and the main draft paired in another dtype, on the identity's prompts."""
    loaded = load_target(study, dtype=dtype)
    arms = [
        make_arm(study, loaded, BASELINE, "none", cfg["k"]),
        make_arm(study, loaded, main, spec, cfg["k"]),
    ]
    prompts = prompts_for(study, loaded, cfg["identity"]["n_prompts"], cfg["context_tokens"])
    return paired(
        arms,
        prompts,
        max_new_tokens=cfg["identity"]["max_new_tokens"],
        warmup=cfg["warmup"],
        progress=f"identity {dtype}",
        on_row=on_row,
        extra_cols={"dtype": dtype},
    )
