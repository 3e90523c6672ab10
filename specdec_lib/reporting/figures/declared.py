"""Draws the figures an experiment declares (`results.catalog`) into a folder: what
`study.setup` gives the runner as `Study.draw` for each result directory's `figures/` (and W&B
logs from there).
Knows nothing about how the summary or rows were computed.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

from specdec_lib.reporting.figures.style import save
from specdec_lib.results.catalog import experiment as declaration
from specdec_lib.results.declare import load


def draw(
    experiment: str,
    summary: dict[str, Any],
    rows: Sequence[dict[str, Any]],
    d: Path,
    files: Collection[str] | None = None,
) -> list[Path]:
    """Save each declared figure of `experiment` (or only those named in `files`) under `d`; a
    drawing that returns None, for want of data, writes no file. Returns the files written."""
    out = []
    for figure in declaration(experiment).figures:
        if files is not None and figure.file not in files:
            continue
        fig = load(figure.draw)(summary, rows)
        if fig is not None:
            save(fig, d / figure.file)
            out.append(d / figure.file)
    return out
