"""The single-context experiments: 01 the baseline, 02 the bigram drafter and 03 the transformer
draft(s) with greedy token identity per dtype, each paired with the baseline on the same prompts.

Builds configs, arms and rows; the summaries are `analysis.summary` and `analysis.single`'s.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from specdec_lib.analysis.single import headline_pair
from specdec_lib.analysis.summary import summarize
from specdec_lib.results.catalog import BASELINE
from specdec_lib.results.store import ExperimentResult
from specdec_lib.runner.context import (
    Study,
    base_config,
    build_arms,
    load_target,
    make_arm,
    transformer_specs,
)
from specdec_lib.runner.execute import Run, execute, pair_figures, paired
from specdec_lib.runner.prompts import prompts_for


def single_config(S: Study, experiment: str, arms: dict[str, str]) -> dict[str, Any]:
    e = S.exp(experiment)
    return {
        **base_config(S, experiment),
        "n_prompts": int(e["n_prompts"]),
        "context_tokens": int(e["context_tokens"]),
        "max_new_tokens": int(e["max_new_tokens"]),
        "arms": {BASELINE: "none", **arms},
    }


def run_baseline(S: Study) -> ExperimentResult:
    """01: the KV-cached autoregressive baseline: tokens/s and time per prompt."""
    cfg = single_config(S, "baseline", {})

    def compute(on_row):
        from specdec_lib import plots

        loaded = load_target(S)
        arms = build_arms(S, loaded, {}, cfg["k"])
        prompts = prompts_for(S, loaded, cfg["n_prompts"], cfg["context_tokens"])
        rows = paired(
            arms,
            prompts,
            max_new_tokens=cfg["max_new_tokens"],
            warmup=cfg["warmup"],
            progress="baseline",
            on_row=on_row,
        )
        sm = summarize(rows)
        b = sm[BASELINE]
        headline = {
            "tokens_per_s": b["tokens_per_s"],
            "wall_s": b["wall_s"],
            "s_per_token": b["total_wall_s"] / b["new_tokens"] if b["new_tokens"] else None,
            "n_prompts": b["n_prompts"],
            "max_new_tokens": cfg["max_new_tokens"],
            "context_tokens": cfg["context_tokens"],
        }
        return Run(
            rows,
            {"arms": sm, "headline": headline},
            lambda d: plots.tokens_per_s(rows, d / "tokens_per_s.png"),
        )

    return execute(S, "baseline", cfg, compute)


def run_pair(S: Study, experiment: str, specs: dict[str, str]) -> ExperimentResult:
    cfg = single_config(S, experiment, specs)
    return execute(S, experiment, cfg, lambda on_row: _pair(S, cfg, specs, on_row))


def _pair(S: Study, cfg: dict[str, Any], specs: dict[str, str], on_row) -> Run:
    loaded = load_target(S)
    arms = build_arms(S, loaded, specs, cfg["k"])
    prompts = prompts_for(S, loaded, cfg["n_prompts"], cfg["context_tokens"])
    rows = paired(
        arms,
        prompts,
        max_new_tokens=cfg["max_new_tokens"],
        warmup=cfg["warmup"],
        progress=cfg["experiment"],
        on_row=on_row,
    )
    sm = summarize(rows)
    main = next(iter(specs))
    return Run(rows, {"arms": sm, "headline": headline_pair(sm, main)}, pair_figures(sm, rows))


def run_bigram(S: Study) -> ExperimentResult:
    """02: the bigram drafter against its paired baseline."""
    return run_pair(S, "bigram", {"bigram": S.profile["drafts"]["bigram"]})


def run_transformer_draft(S: Study) -> ExperimentResult:
    """03: the transformer draft(s) against the paired baseline, and greedy token identity of
    the main draft per dtype (the profile's dtype and e.g. float32)."""
    specs = transformer_specs(S)
    cfg = single_config(S, "transformer_draft", specs)
    ident = S.exp("transformer_draft").get("identity", {}) or {}
    cfg["identity"] = {
        "dtypes": list(ident.get("dtypes", [])),
        "n_prompts": int(ident.get("n_prompts", 0)),
        "max_new_tokens": int(ident.get("max_new_tokens", 0)),
    }

    def compute(on_row):
        run = _pair(S, cfg, specs, on_row)
        main = next(iter(specs))
        by_dtype = {}
        id_rows: list[dict[str, Any]] = []
        main_dtype = str(load_target(S).dtype).removeprefix("torch.")
        for dt_name in [main_dtype, *cfg["identity"]["dtypes"]]:
            if dt_name in by_dtype:
                continue
            if dt_name == main_dtype:
                rows = [r for r in run.rows if r["method"] == main]
            else:
                if not cfg["identity"]["n_prompts"]:
                    continue
                loaded = load_target(S, dtype=dt_name)
                arms = [
                    make_arm(S, loaded, BASELINE, "none", cfg["k"]),
                    make_arm(S, loaded, main, specs[main], cfg["k"]),
                ]
                prompts = prompts_for(
                    S, loaded, cfg["identity"]["n_prompts"], cfg["context_tokens"]
                )
                rows = paired(
                    arms,
                    prompts,
                    max_new_tokens=cfg["identity"]["max_new_tokens"],
                    warmup=cfg["warmup"],
                    progress=f"identity {dt_name}",
                    on_row=on_row,
                    extra_cols={"dtype": dt_name},
                )
                id_rows += rows
                rows = [r for r in rows if r["method"] == main]
            by_dtype[dt_name] = {
                "dtype": dt_name,
                "n_prompts": len(rows),
                "max_new_tokens": max((r["new_tokens"] for r in rows), default=0),
                "identical_fraction": float(np.mean([bool(r["identical"]) for r in rows]))
                if rows
                else None,
                "divergence_positions": [
                    r["divergence_pos"] for r in rows if r["divergence_pos"] is not None
                ],
                "divergence_margins": [
                    r["divergence_margin"] for r in rows if r["divergence_margin"] is not None
                ],
            }
        run.summary["identity_by_dtype"] = by_dtype
        run.extra = {"identity.csv": id_rows} if id_rows else None
        return run

    return execute(S, "transformer_draft", cfg, compute)
