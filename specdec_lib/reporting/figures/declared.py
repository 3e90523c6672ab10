"""Draws the figures an experiment declares (`results.catalog`) into a folder: what
`study.setup` gives the runner as `Study.draw` for each result directory's `figures/` (and W&B
logs from there); and says in words what each declared figure shows (`alt_text`: the first line
of its drawing function's docstring), which the book gives the executed notebooks' images as
their alt text.
Knows nothing about how the summary or rows were computed.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

from specdec_lib.reporting.figures.style import save
from specdec_lib.results import catalog
from specdec_lib.results.catalog import experiment as declaration
from specdec_lib.results.declare import load

# how a notebook's reading captions a figure under it (reporting.readings.display_reading)
CAPTION_RE = re.compile(r"Figure (\d+) \((?:`)?([\w.-]+\.png)(?:`)?\)\.")


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


def alt_text(file: str, experiments: Sequence[str] = ()) -> str | None:
    """What the declared figure `file` shows, in one sentence (the first docstring line of the
    function that draws it), looked up among `experiments` first, then every declaration; None
    when no experiment declares that file."""
    declared = [e for _, e in catalog.declared().values()]
    ordered = [e for e in declared if e.name in experiments] + declared
    for e in ordered:
        for figure in e.figures:
            if figure.file == file:
                doc = (load(figure.draw).__doc__ or "").strip()
                return " ".join(doc.split("\n\n")[0].split()) or None
    return None


def notebook_experiments(name: str) -> list[str]:
    """The experiments a study notebook (`04_context_sweep`) runs, by name; [] for another."""
    for nb in (catalog.QUICK, *catalog.STUDY):
        if nb.name == name:
            return [load(r).name for r in nb.experiments]
    return []
