"""The figures the study writes into a result directory, by file: each function draws with
specdec_lib.reporting.figures (the same functions the book uses) and saves the PNG at `path`
(or into directory `d`). Kept under its old name and signatures for the study's callers; new code
can call reporting.figures directly: `figures.save(arms.speedup_bars(arms), path)`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from specdec_lib.reporting.earlier import earlier_recomputed
from specdec_lib.reporting.figures import arms as A
from specdec_lib.reporting.figures import context as C
from specdec_lib.reporting.figures.style import save


def tokens_per_s(rows: Sequence[dict[str, Any]], path: Path) -> None:
    save(A.tokens_per_s(rows), path)


def speedup_bars(arms: dict[str, Any], path: Path) -> None:
    save(A.speedup_bars(arms), path)


def position_acceptance(arms: dict[str, Any], path: Path) -> None:
    save(A.position_acceptance(arms), path)


def accepted_histogram(arms: dict[str, Any], path: Path) -> None:
    save(A.accepted_histogram(arms), path)


def time_split(rows: Sequence[dict[str, Any]], path: Path) -> None:
    save(A.time_split(rows), path)


def context_figures(summary: dict[str, Any], d: Path) -> None:
    """A context sweep's four figures (cache on or off, as the summary says)."""
    save(C.speedup_vs_context(summary), d / "speedup_vs_context.png")
    save(C.acceptance_vs_context(summary), d / "acceptance_vs_context.png")
    save(C.time_vs_context(summary), d / "time_vs_context.png")
    save(C.earlier_style_vs_paired([summary]), d / "earlier_style_vs_paired.png")


def agreement(summary: dict[str, Any], path: Path) -> None:
    save(C.agreement_vs_context(summary, published=earlier_recomputed()), path)


def measured_vs_predicted(summary: dict[str, Any], path: Path) -> None:
    save(A.measured_vs_predicted(summary), path)


def sampling_speedup(summary: dict[str, Any], path: Path) -> None:
    save(A.sampling_speedup(summary), path)


def distribution_check(summary: dict[str, Any], path: Path) -> None:
    save(A.distribution_check(summary), path)


def peers(summary: dict[str, Any], path: Path) -> None:
    save(A.peers(summary), path)
