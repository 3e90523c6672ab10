"""Summaries of the single-context experiments (01 baseline, 02 bigram, 03 transformer draft):
their headlines from the per-arm summaries of `analysis.summary.summarize`.

Torch-free; knows nothing about how the rows were measured or where they are written.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from specdec_lib.results.catalog import BASELINE


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
