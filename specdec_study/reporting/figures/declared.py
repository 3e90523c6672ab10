"""Draws the figures an experiment declares (`results.catalog`) into a folder: what
`study.setup` gives the runner as `Session.draw` for each result directory's `figures/` (and W&B
logs from there); and says in words what each declared figure shows (`alt_text`: the first line
of its drawing function's docstring), which the book gives the executed notebooks' images as
their alt text. Each declared figure carries its drawing (`Figure.draw`).
Knows nothing about how the summary or rows were computed.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

from specdec_study.reporting.figures.style import save
from specdec_study.results import catalog
from specdec_study.results.catalog import experiment as declaration

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
        fig = figure.draw(summary, rows)
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
                doc = (figure.draw.__doc__ or "").strip()
                return " ".join(doc.split("\n\n")[0].split()) or None
    return None


def notebook_experiments(name: str) -> list[str]:
    """The experiments a study notebook (`04_context_sweep`) runs, by name; [] for another."""
    for nb in (catalog.QUICK, *catalog.STUDY):
        if nb.name == name:
            return [e.name for e in nb.experiments]
    return []


def redraw(profile_dir: Path) -> list[Path]:
    """Redraw the declared figures of every result stored under `profile_dir` from its stored
    summary and rows (what the run drew them from), and put each new PNG where the profile's
    executed notebooks showed the old one byte for byte, so that they keep showing the stored
    figures (`runner.keep`). Nothing else in a result or notebook changes. Returns the files
    rewritten."""
    import base64

    import nbformat

    from specdec_study.results.read import load_results

    profile = load_results(profile_dir.name, profile_dir.parent)
    swapped: dict[str, str] = {}  # old PNG as base64 -> new
    changed: list[Path] = []
    for name, res in sorted(profile.results.items()):
        d = profile_dir / name / "figures"
        if not d.is_dir():
            continue
        old = {p.name: p.read_bytes() for p in d.glob("*.png")}
        for path in draw(name, res.summary, res.rows, d, files=set(old)):
            new = path.read_bytes()
            if new != old[path.name]:
                swapped[base64.b64encode(old[path.name]).decode()] = base64.b64encode(new).decode()
                changed.append(path)
    for nb_path in sorted((profile_dir / "notebooks").glob("*.ipynb")):
        nb = nbformat.read(nb_path, as_version=4)
        hits = 0
        for cell in nb.cells:
            for out in cell.get("outputs", []):
                png = out.get("data", {}).get("image/png")
                key = "".join(png).replace("\n", "") if isinstance(png, list) else png
                if key in swapped:
                    out["data"]["image/png"] = swapped[key]
                    hits += 1
        if hits:
            nbformat.write(nb, nb_path)
            changed.append(nb_path)
    return changed


def main(argv: Sequence[str]) -> int:
    """python -m specdec_study.reporting.figures.declared redraw results/embedded"""
    if len(argv) != 2 or argv[0] != "redraw" or not Path(argv[1]).is_dir():
        print("usage: python -m specdec_study.reporting.figures.declared redraw RESULTS/PROFILE")
        return 2
    for path in redraw(Path(argv[1])):
        print(path)
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
