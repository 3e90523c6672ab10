"""03: the transformer draft(s) against the paired baseline on the same prompts, and the main
draft's greedy token identity per dtype (the profile's and e.g. float32).

The whole experiment: its notebook, its declaration, the shapes of its summary.json and config,
its config and run (given a `runner.lab.Lab`; the target in another dtype is `Lab.load_target`'s,
its dtype's name `Lab.target_dtype`), its identity summary; the pair's measurement, headline,
from-rows summary and figures are 02's (`bigram_draft`). Imports no runner and no torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np

from specdec_study.analysis.summary import Num
from specdec_study.experiments.baseline import single_config
from specdec_study.experiments.bigram_draft import (
    PAIR_FIGURES,
    PairSummary,
    from_rows,
    measure_pair,
)
from specdec_study.results.declare import (
    BASELINE,
    Experiment,
    Notebook,
    SingleContextConfig,
)

if TYPE_CHECKING:
    from specdec_study.results.store import ExperimentResult
    from specdec_study.runner.execute import Progress, Run
    from specdec_study.runner.lab import Lab


# --------------------------------------------------------------------------- shapes


class IdentitySummary(TypedDict):
    """03's greedy token identity in one dtype (`identity_summary`)."""

    dtype: str
    n_prompts: int
    max_new_tokens: int
    identical_fraction: Num
    divergence_positions: list[int]
    divergence_margins: list[float]


class TransformerSummary(PairSummary):
    """03's summary.json: the pair's, and the main draft's greedy identity per dtype."""

    identity_by_dtype: dict[str, IdentitySummary]


class IdentityCheckConfig(TypedDict):
    """03's greedy token identity check: the dtypes, prompts and tokens it compares."""

    dtypes: list[str]
    n_prompts: int
    max_new_tokens: int


class TransformerConfig(SingleContextConfig):
    """03's config: the transformer draft(s) beside the baseline, and the identity check."""

    identity: IdentityCheckConfig


# --------------------------------------------------------------------------- config and run


def specs(lab: Lab) -> dict[str, str]:
    """Arm name -> spec of the transformer drafts of 03 (the main one first)."""
    d = lab.profile["drafts"]
    out = {lab.arm_name(d["transformer"]): d["transformer"]}
    for spec in d.get("extra_transformers", []) or []:
        out[lab.arm_name(spec)] = spec
    return out


def config(lab: Lab) -> dict[str, Any]:
    """03's config: the pair's, plus the identity check's dtypes, prompts and tokens."""
    cfg = single_config(lab, specs(lab))
    ident = lab.section().get("identity", {}) or {}
    cfg["identity"] = {
        "dtypes": list(ident.get("dtypes", [])),
        "n_prompts": int(ident.get("n_prompts", 0)),
        "max_new_tokens": int(ident.get("max_new_tokens", 0)),
    }
    return cfg


def run(lab: Lab) -> ExperimentResult:
    """03: the transformer draft(s) against the paired baseline, and greedy token identity of
    the main draft per dtype (the profile's and e.g. float32)."""
    drafts = specs(lab)
    cfg = config(lab)
    return lab.execute(cfg, lambda on_row: _measure(lab, cfg, drafts, on_row))


def _measure(lab: Lab, cfg: dict[str, Any], drafts: dict[str, str], on_row: Progress) -> Run:
    out = measure_pair(lab, cfg, drafts, on_row)
    by_dtype, id_rows = _identity(lab, cfg, drafts, out.rows, on_row)
    out.summary["identity_by_dtype"] = by_dtype
    out.extra = {"identity.csv": id_rows} if id_rows else None
    return out


def _identity(
    lab: Lab,
    cfg: dict[str, Any],
    drafts: dict[str, str],
    rows: list[dict[str, Any]],
    on_row: Progress,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The main draft's greedy identity in the target's own dtype (from the pair's rows) and in
    each further dtype of the config (a paired run of its own, when it has prompts), and the
    further runs' rows (identity.csv)."""
    main = next(iter(drafts))
    main_dtype = lab.target_dtype()
    by_dtype: dict[str, Any] = {}
    id_rows: list[dict[str, Any]] = []
    for dt_name in dict.fromkeys([main_dtype, *cfg["identity"]["dtypes"]]):
        if dt_name == main_dtype:
            mine = [r for r in rows if r["method"] == main]
        elif not cfg["identity"]["n_prompts"]:
            continue
        else:
            new = _identity_rows(lab, cfg, main, drafts[main], dt_name, on_row)
            id_rows += new
            mine = [r for r in new if r["method"] == main]
        by_dtype[dt_name] = identity_summary(dt_name, mine)
    return by_dtype, id_rows


def _identity_rows(
    lab: Lab, cfg: dict[str, Any], main: str, spec: str, dtype: str, on_row: Progress
) -> list[dict[str, Any]]:
    """The baseline and the main draft paired in another dtype, on the identity's prompts."""
    loaded = lab.load_target(dtype=dtype)
    arms = [
        lab.arm(loaded, BASELINE, "none", cfg["k"]),
        lab.arm(loaded, main, spec, cfg["k"]),
    ]
    prompts = lab.prompts(loaded, cfg["identity"]["n_prompts"], cfg["context_tokens"])
    return lab.paired(
        arms,
        prompts,
        {"max_new_tokens": cfg["identity"]["max_new_tokens"], "warmup": cfg["warmup"]},
        progress=f"identity {dtype}",
        on_row=on_row,
        extra_cols={"dtype": dtype},
    )


# --------------------------------------------------------------------------- summary


def identity_summary(dtype: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """03's greedy token identity of one arm in one dtype: the fraction of prompts whose output
    equals the paired baseline's, and where (and at what top-2 margin) the others diverge."""
    return {
        "dtype": dtype,
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


# --------------------------------------------------------------------------- declaration

# this result directory's section of results/SCHEMA.md (`make notebooks` writes it there)
SCHEMA = """\
`arms`: `{"baseline", <transformer arm>, ...}` (embedded: `self`; colab-t4: `gemma-3-1b-pt` and,
where it loads, `gemma-3-270m`). `headline` as for bigram, for `roles.transformer`.
`identity_by_dtype`: dtype -> `{"dtype", "n_prompts", "max_new_tokens", "identical_fraction",
"divergence_positions": [...], "divergence_margins": [...]}` for the transformer arm vs the
baseline of the same dtype (greedy), e.g. `bfloat16` and `float32`; the rows are in the extra file
`identity.csv` (per_prompt.csv columns plus `dtype`).
"""

transformer_draft = Experiment(
    "transformer_draft",
    "a transformer draft against the paired baseline",
    schema=SCHEMA,
    figures=PAIR_FIGURES,
    summary=TransformerSummary,
    config_shape=TransformerConfig,
    build_config=config,
    run=run,
    summarize=from_rows,
)

NOTEBOOK = Notebook(
    "03_transformer_draft",
    "Transformer draft",
    "A transformer drafts: the target's own first layers (`self`, embedded profile) or "
    "gemma-3-1b-pt for gemma-3-4b-pt (colab-t4). Paired with the baseline; plus greedy "
    "token identity per dtype (the profile's and float32). Writes `transformer_draft/`.",
    (transformer_draft,),
)
