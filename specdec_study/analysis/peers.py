"""The peers' summary (07): Hugging Face generate's arms beside ours, each with its tokens/s,
its paired speedup over our baseline and over HF greedy, and the fraction of outputs identical to
each greedy reference. HF reports no acceptance, so its arms carry none. And its declared shape
(`PeersSummary`).

Torch-free; knows nothing about how the rows were measured or where they are written.
"""

from __future__ import annotations

from typing import Any, TypedDict

import numpy as np

from specdec_study.analysis import stats
from specdec_study.analysis.summary import (
    ArmSummary,
    Num,
    SpeedupColumns,
    TokensPerSColumns,
    arm_walls,
)
from specdec_study.results.declare import (
    BASELINE,
    Experiment,
    Figure,
    SingleContextConfig,
    StudySummary,
)

# arm -> Hugging Face generate's mode (`specdec_lib.measure.huggingface.HFGenerator`)
HF_ARMS = {"hf-greedy": "greedy", "hf-prompt-lookup": "prompt_lookup", "hf-assisted": "assisted"}
HF_GREEDY = "hf-greedy"
ACCEPTANCE_KEYS = (
    "acceptance_rate",
    "mean_accepted_length",
    "position_acceptance",
    "accepted_histogram",
    "draft_share_of_time",
    "draft_s_per_token",
    "verify_s_per_call",
    "cost_ratio",
    "per_token_acceptance_iid",
    "predicted_speedup_leviathan",
    "verify_cost_ratio",
    "predicted_speedup_calibrated",
    "acceptance_rate_pooled",
)


class PeerRow(SpeedupColumns, TokensPerSColumns):
    """One arm's row of the table (`peers_table`)."""

    method: str
    implementation: str  # "hf" or "ours"
    speedup_vs_hf_greedy: Num
    identical_to_baseline: float
    identical_to_hf_greedy: Num


class PeerHeadline(TypedDict):
    """One arm's headline: its speedup over our baseline and identity with it."""

    speedup: Num
    identical_to_baseline: float


class PeersSummary(StudySummary):
    """07's summary.json (`peers_summary`); `peers_error` says why HF's arms did not run."""

    arms: dict[str, ArmSummary]
    table: list[PeerRow]
    peers_available: bool
    peers_error: str | None
    headline: dict[str, PeerHeadline]


def drop_acceptance(arms: dict[str, Any]) -> None:
    """Remove the acceptance statistics of HF's arms (in place): HF's generate reports no
    acceptance, so its rows hold none worth summarizing."""
    for m in HF_ARMS:
        for key in ACCEPTANCE_KEYS:
            arms.get(m, {}).pop(key, None)


def peers_table(rows: list[dict[str, Any]], arms: dict[str, Any], n: int) -> list[dict[str, Any]]:
    """One row per arm: tokens/s, speedup over our baseline and over HF greedy (when it ran),
    and identity with each greedy reference over the n prompts."""
    toks = {(r["method"], r["prompt"]): r["tokens"] for r in rows}
    hf_base = HF_GREEDY if HF_GREEDY in arms else None
    hf_wall = arm_walls(rows, hf_base) if hf_base else None
    table = []
    for m, s in arms.items():
        sp = s.get("speedup") or {}
        wall = arm_walls(rows, m)
        table.append(
            {
                "method": m,
                "implementation": "hf" if m in HF_ARMS else "ours",
                "tokens_per_s": s["tokens_per_s"]["median"],
                "tokens_per_s_ci_low": s["tokens_per_s"]["ci_low"],
                "tokens_per_s_ci_high": s["tokens_per_s"]["ci_high"],
                "speedup": sp.get("value", 1.0 if m == BASELINE else None),
                "speedup_ci_low": sp.get("ci_low"),
                "speedup_ci_high": sp.get("ci_high"),
                "speedup_vs_hf_greedy": stats.paired_speedup(hf_wall, wall).value
                if hf_wall is not None
                else None,
                "identical_to_baseline": s["identical_fraction"],
                "identical_to_hf_greedy": float(
                    np.mean([toks[(m, i)] == toks[(hf_base, i)] for i in range(n)])
                )
                if hf_base
                else None,
            }
        )
    return table


def peers_summary(
    rows: list[dict[str, Any]], arms: dict[str, Any], n: int, peers_error: str | None
) -> dict[str, Any]:
    """rows, their per-arm summary (HF's acceptance dropped) and the prompt count -> the peers'
    summary.json; peers_error says why HF's arms did not run (None: they did)."""
    table = peers_table(rows, arms, n)
    return {
        "arms": arms,
        "table": table,
        "peers_available": peers_error is None,
        "peers_error": peers_error,
        "headline": {
            t["method"]: {
                "speedup": t["speedup"],
                "identical_to_baseline": t["identical_to_baseline"],
            }
            for t in table
        },
    }


# --------------------------------------------------------------------------- declaration

peers = Experiment(
    "peers",
    "Hugging Face `generate` (greedy, prompt lookup, assisted) beside our decoders",
    call="study.run_peers(study_run)",
    summary=PeersSummary,
    config_shape=SingleContextConfig,
    figures=(
        Figure(
            "peers_speed.png",
            "Tokens per second (median, 95% interval) of our decoders (blue) and Hugging "
            "Face generate (orange) on the same prompts; the label is the share of outputs "
            "identical to greedy.",
        ),
    ),
)
