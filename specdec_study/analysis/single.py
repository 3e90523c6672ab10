"""Summaries of the single-context experiments (01 baseline, 02 bigram, 03 transformer draft):
their headlines from the per-arm summaries of `analysis.summary.summarize`, and their declared
summary shapes.

Torch-free; knows nothing about how the rows were measured or where they are written.
"""

from __future__ import annotations

from typing import Any, TypedDict

import numpy as np

from specdec_study.analysis.summary import ArmSummary, MedianCI, Num, PointCI
from specdec_study.results.declare import (
    BASELINE,
    Experiment,
    Figure,
    SingleContextConfig,
    StudySummary,
)


class BaselineHeadline(TypedDict):
    """01's headline (`baseline_headline`)."""

    tokens_per_s: MedianCI
    wall_s: MedianCI
    s_per_token: Num
    n_prompts: int
    max_new_tokens: int
    context_tokens: int


class PairHeadline(TypedDict):
    """02 and 03's headline (`headline_pair`)."""

    arm: str
    speedup: PointCI | None
    acceptance_rate: PointCI | None
    mean_accepted_length: PointCI | None
    identical_fraction: float
    tokens_per_s: MedianCI
    baseline_tokens_per_s: MedianCI
    n_prompts: int


class IdentitySummary(TypedDict):
    """03's greedy token identity in one dtype (`identity_summary`)."""

    dtype: str
    n_prompts: int
    max_new_tokens: int
    identical_fraction: Num
    divergence_positions: list[int]
    divergence_margins: list[float]


class BaselineSummary(StudySummary):
    """01's summary.json."""

    arms: dict[str, ArmSummary]
    headline: BaselineHeadline


class PairSummary(StudySummary):
    """02's summary.json (and 03's, with the identity beside it)."""

    arms: dict[str, ArmSummary]
    headline: PairHeadline


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


def headline_pair(arms: dict[str, Any], arm: str) -> dict[str, Any]:
    """02 and 03's headline: the main draft arm against the paired baseline."""
    s = arms[arm]
    return {
        "arm": arm,
        "speedup": s.get("speedup"),
        "acceptance_rate": s.get("acceptance_rate"),
        "mean_accepted_length": s.get("mean_accepted_length"),
        "identical_fraction": s.get("identical_fraction"),
        "tokens_per_s": s.get("tokens_per_s"),
        "baseline_tokens_per_s": arms[BASELINE]["tokens_per_s"],
        "n_prompts": s.get("n_prompts"),
    }


def baseline_headline(arms: dict[str, Any], cfg: dict[str, Any]) -> dict[str, Any]:
    """01's headline: the baseline's tokens/s, time per prompt and per token, and its n."""
    b = arms[BASELINE]
    return {
        "tokens_per_s": b["tokens_per_s"],
        "wall_s": b["wall_s"],
        "s_per_token": b["total_wall_s"] / b["new_tokens"] if b["new_tokens"] else None,
        "n_prompts": b["n_prompts"],
        "max_new_tokens": cfg["max_new_tokens"],
        "context_tokens": cfg["context_tokens"],
    }


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


# --------------------------------------------------------------------------- declarations

PAIR_FIGURES = (
    Figure(
        "speedup.png",
        "Speedup of each drafting arm over the baseline on the same prompts (total "
        "baseline time / total arm time); whiskers: 95% paired-bootstrap interval. Above 1 is "
        "faster; an interval that straddles 1 is no measured speedup.",
    ),
    Figure(
        "position_acceptance.png",
        "Probability that draft position i is accepted given that positions "
        "1..i-1 were. A flat line is what the i.i.d. model behind Leviathan et al.'s prediction "
        "assumes; a falling one means long drafts pay off less than predicted.",
    ),
    Figure(
        "accepted_histogram.png",
        "Accepted draft tokens per verification, as a share of verifications. "
        "Mass at K is whole drafts accepted; mass at 0 is drafting time wasted.",
    ),
    Figure(
        "time_split.png",
        "Where the seconds went, summed over prompts: prefill, drafting, verification "
        "and the rest. A drafter pays its acceptance with the drafting bar.",
    ),
)

baseline = Experiment(
    "baseline",
    "the KV-cached autoregressive baseline: one target call per generated token",
    call="study.run_baseline(study_run)",
    summary=BaselineSummary,
    config_shape=SingleContextConfig,
    figures=(
        Figure(
            "tokens_per_s.png",
            "Tokens per second of each prompt under the baseline; the dashed line is the "
            "median. The spread is the noise that every speedup interval has to beat.",
        ),
    ),
)
bigram = Experiment(
    "bigram",
    "a bigram drafter (a table fitted on WikiText-2) against the paired baseline",
    call="study.run_bigram(study_run)",
    figures=PAIR_FIGURES,
    summary=PairSummary,
    config_shape=SingleContextConfig,
)
transformer_draft = Experiment(
    "transformer_draft",
    "a transformer draft against the paired baseline",
    call="study.run_transformer_draft(study_run)",
    figures=PAIR_FIGURES,
    summary=TransformerSummary,
    config_shape=TransformerConfig,
)
