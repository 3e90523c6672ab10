"""The figures of a result directory, each a function (summary, rows) -> Figure or None that the
figures' declarations are bound to (`declared.DRAWINGS`) and `runner.execute` draws into
`figures/` (so W&B logs them too). Each picks its input from the summary or the rows and calls the
drawing in `arms` or `context_length`. The first paragraph of each docstring says what the figure
shows to a reader: the book gives it to the executed notebooks' images as alt text
(`declared.alt_text`). Knows nothing about which experiment has which figure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from specdec_study.analysis import rules
from specdec_study.analysis.agreement import SEPARATE
from specdec_study.reporting.earlier import earlier_recomputed
from specdec_study.reporting.figures import context_length as context_figures

Rows = Sequence[dict[str, Any]]


def agreement_vs_context(summary: dict[str, Any], rows: Rows) -> Any:
    """Each draft's teacher-forced agreement and implied acceptance against context, and its
    change from context 10 to 100, beside the earlier study's acceptance."""
    return context_figures.agreement_vs_context(summary, published=earlier_recomputed())


def ladder_dose_response(summary: dict[str, Any], rows: Rows) -> Any:
    """Scatter of each draft's agreement level against its change in tokens per call from
    context 10 to 100, with the threshold and the earlier study's pair."""
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
    """Each draft's replayed tokens per call and acceptance against context length."""
    return context_figures.replay_vs_context(summary.get("continuation") or {})
