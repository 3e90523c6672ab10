"""The figures of a result directory, each a function (summary, rows) -> Figure or None that the
experiments' declarations name (`results.declare.Figure.draw`) and `runner.execute` draws into
`figures/` (so W&B logs them too). Each picks its input from the summary or the rows and calls the
drawing in `arms` or `context_length`. Knows nothing about which experiment has which figure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from specdec_lib.analysis import rules
from specdec_lib.analysis.agreement import SEPARATE
from specdec_lib.reporting.earlier import earlier_recomputed
from specdec_lib.reporting.figures import arms as arm_figures
from specdec_lib.reporting.figures import context_length as context_figures

Rows = Sequence[dict[str, Any]]
K_SWEEP_ARMS = ("k2", "k4", "k8", "adaptive")  # the K sweep's acceptance-per-position arms


def tokens_per_s(summary: dict[str, Any], rows: Rows) -> Any:
    """Tokens per second per prompt (the rows)."""
    return arm_figures.tokens_per_s(rows)


def speedup(summary: dict[str, Any], rows: Rows) -> Any:
    """Speedup bars of the summary's arms."""
    return arm_figures.speedup_bars(summary["arms"])


def position_acceptance(summary: dict[str, Any], rows: Rows) -> Any:
    """Acceptance per draft position of the summary's arms."""
    return arm_figures.position_acceptance(summary["arms"])


def k_sweep_position_acceptance(summary: dict[str, Any], rows: Rows) -> Any:
    """Acceptance per draft position of a few K and adaptive K."""
    return arm_figures.position_acceptance(
        {k: v for k, v in summary["arms"].items() if k in K_SWEEP_ARMS}
    )


def accepted_histogram(summary: dict[str, Any], rows: Rows) -> Any:
    """Accepted tokens per verification of the summary's arms."""
    return arm_figures.accepted_histogram(summary["arms"])


def time_split(summary: dict[str, Any], rows: Rows) -> Any:
    """Where the seconds went (the rows)."""
    return arm_figures.time_split(rows)


def speedup_vs_context(summary: dict[str, Any], rows: Rows) -> Any:
    """Paired speedup per context."""
    return context_figures.speedup_vs_context(summary)


def acceptance_vs_context(summary: dict[str, Any], rows: Rows) -> Any:
    """Acceptance per context."""
    return context_figures.acceptance_vs_context(summary)


def time_vs_context(summary: dict[str, Any], rows: Rows) -> Any:
    """Total seconds per arm per context."""
    return context_figures.time_vs_context(summary)


def earlier_style_vs_paired(summary: dict[str, Any], rows: Rows) -> Any:
    """The earlier study's speedup beside the paired one."""
    return context_figures.earlier_style_vs_paired([summary])


def agreement_vs_context(summary: dict[str, Any], rows: Rows) -> Any:
    """Teacher-forced agreement per context, beside the earlier study's acceptance."""
    return context_figures.agreement_vs_context(summary, published=earlier_recomputed())


def ladder_dose_response(summary: dict[str, Any], rows: Rows) -> Any:
    """The ladder's change against its level, with the threshold and the earlier study's pair."""
    cont = summary.get("continuation") or {}
    own = {d for d, k in (summary.get("kinds") or {}).items() if k == SEPARATE}
    levels = {d: v for d, v in (cont.get("levels") or {}).items() if d in own}
    return context_figures.ladder_dose_response(
        cont,
        own,
        (rules.published_level(), rules.published_ratio()),
        rules.MATERIAL_RATIO,
        decisive=rules.decisive_draft(levels),
    )


def replay_vs_context(summary: dict[str, Any], rows: Rows) -> Any:
    """Replayed tokens per call and acceptance of every draft against context."""
    return context_figures.replay_vs_context(summary.get("continuation") or {})


def measured_vs_predicted(summary: dict[str, Any], rows: Rows) -> Any:
    """Measured speedup per K beside the predictions."""
    return arm_figures.measured_vs_predicted(summary)


def sampling_speedup(summary: dict[str, Any], rows: Rows) -> Any:
    """Speedup and acceptance per temperature."""
    return arm_figures.sampling_speedup(summary)


def distribution_check(summary: dict[str, Any], rows: Rows) -> Any:
    """First sampled token against the target's exact distribution."""
    return arm_figures.distribution_check(summary)


def peers(summary: dict[str, Any], rows: Rows) -> Any:
    """Tokens per second of our decoders and Hugging Face generate."""
    return arm_figures.peers(summary)
