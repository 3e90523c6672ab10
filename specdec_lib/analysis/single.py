"""Summaries of the single-context experiments (01 baseline, 02 bigram, 03 transformer draft):
their headlines from the per-arm summaries of `analysis.summary.summarize`.

Torch-free; knows nothing about how the rows were measured or where they are written.
"""

from __future__ import annotations

from typing import Any

from specdec_lib.results.catalog import BASELINE


def headline_pair(arms: dict[str, Any], arm: str) -> dict[str, Any]:
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
