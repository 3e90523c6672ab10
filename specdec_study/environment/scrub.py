"""Clean executed notebooks before they are committed: no progress-bar logs, no warnings, no local
absolute paths in their outputs or metadata.

    python -m specdec_study.environment.scrub NOTEBOOK [NOTEBOOK ...]     clean in place
    python -m specdec_study.environment.scrub --check NOTEBOOK [...]   list problems, exit 1 if any

The batch (`make evaluate`) runs it on each notebook papermill has written. `problems` is what the
tests and `--check` use; `scrub` removes what `problems` finds. A path under the repository
(`/somewhere/specdec/results/...`) becomes relative (`results/...`); any other local absolute path
keeps its last component only. `/content/...` is left alone: it is Colab's working folder, named in
the notebooks' Colab set-up instructions, not a path of the machine that ran the batch.

Works on the notebook's JSON with the standard library; knows nothing about experiments, models
or the book. Never touches a cell's source.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import nbformat

from specdec_lib.errors import SpecdecError

# a local absolute path of the machine that ran the batch (Colab's /content is not one)
LOCAL_PATH = re.compile(
    r"(?<![\w.:/])/(?:work|home|tmp|root|Users|private|var/folders)/[^\s'\"`<>)\]]*"
)
# the folders at the repository's top level: a path through one of them is made relative
REPO_DIRS = (
    "specdec_lib",
    "specdec_study",
    "results",
    "notebooks",
    "book",
    "data",
    "profiles",
    "tests",
)
_IN_REPO = re.compile(r"/(?:" + "|".join(REPO_DIRS) + r")(?:/|$)")
# a tqdm line: "label:  40%|████      | 4/10 [00:12<00:18, 3.1s/it]"
PROGRESS = re.compile(r"\d+%\|.*\|\s*\d+(?:\.\d+)?[kMG]?/\S+ \[|\d+(?:\.\d+)?\s*(?:it/s|s/it)\]")
# a Python warning as printed: "path.py:35: UserWarning: ..." or "FutureWarning: ..."
WARNING = re.compile(r"(?:^|:\d+: )\w*Warning: ")


def _relative(match: re.Match[str]) -> str:
    path = match.group(0)
    inside = list(_IN_REPO.finditer(path))
    if inside:
        return path[inside[0].start() + 1 :]
    return path.rstrip("/").rsplit("/", 1)[-1] or path


def scrub_text(text: str) -> str:
    """Local absolute paths in text made relative (or cut to their last component)."""
    return LOCAL_PATH.sub(_relative, text)


def _terminal_lines(text: str) -> list[str]:
    """What a terminal shows of each line: the text after its last carriage return."""
    return [ln.rstrip("\r").rsplit("\r", 1)[-1] for ln in text.split("\n")]


def scrub_stream(text: str) -> str:
    """A stream's text without progress-bar lines, warnings (with the source line Python echoes
    under each, indented) and local paths."""
    kept: list[str] = []
    in_warning = False
    for line in _terminal_lines(text):
        if WARNING.search(line):
            in_warning = True
            continue
        if in_warning and line.startswith((" ", "\t")):
            continue
        in_warning = False
        if PROGRESS.search(line):
            continue
        kept.append(scrub_text(line))
    out = "\n".join(kept)
    return out if out.strip() else ""


def _as_text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def _scrub_value(value: Any) -> Any:
    """Every string inside value (a JSON value) with its local paths scrubbed."""
    if isinstance(value, str):
        return scrub_text(value)
    if isinstance(value, list):
        return [_scrub_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _scrub_value(v) for k, v in value.items()}
    return value


def scrub_outputs(outputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A code cell's outputs, consecutive streams of one name joined, then cleaned; streams left
    empty are dropped."""
    joined: list[dict[str, Any]] = []
    for o in outputs:
        if o.get("output_type") == "stream":
            text = _as_text(o.get("text", ""))
            prev = joined[-1] if joined else None
            if prev and prev.get("output_type") == "stream" and prev.get("name") == o.get("name"):
                prev["text"] += text
                continue
            joined.append({**o, "text": text})
        else:
            joined.append(_scrub_value(o))
    out = []
    for o in joined:
        if o.get("output_type") == "stream":
            o["text"] = scrub_stream(o["text"])
            if not o["text"]:
                continue
        out.append(o)
    return out


def scrub(nb: dict[str, Any]) -> dict[str, Any]:
    """The notebook (its JSON) cleaned: outputs and metadata; sources untouched."""
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code":
            cell["outputs"] = scrub_outputs(cell.get("outputs", []))
        cell["metadata"] = _scrub_value(cell.get("metadata", {}))
    nb["metadata"] = _scrub_value(nb.get("metadata", {}))
    return nb


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)


def _line_problems(where: str, text: str, stream: bool) -> list[str]:
    found = []
    for line in _terminal_lines(text) if stream else text.split("\n"):
        if m := LOCAL_PATH.search(line):
            found.append(f"{where}: local path {m.group(0)!r}")
        if stream and PROGRESS.search(line):
            found.append(f"{where}: progress bar {line.strip()[:60]!r}")
        if stream and WARNING.search(line):
            found.append(f"{where}: warning {line.strip()[:80]!r}")
    return found


def problems(nb: dict[str, Any]) -> list[str]:
    """What must not be committed: local paths anywhere (sources, outputs, metadata), progress
    bars and warnings in stream outputs. Empty when the notebook is clean."""
    found: list[str] = []
    for i, cell in enumerate(nb.get("cells", [])):
        found += _line_problems(f"cell {i} source", _as_text(cell.get("source", "")), False)
        for s in _strings(cell.get("metadata", {})):
            found += _line_problems(f"cell {i} metadata", s, False)
        for o in cell.get("outputs", []):
            stream = o.get("output_type") == "stream"
            for s in _strings({k: v for k, v in o.items() if k != "output_type"}):
                found += _line_problems(f"cell {i} output", s, stream)
    for s in _strings(nb.get("metadata", {})):
        found += _line_problems("notebook metadata", s, False)
    return found


def _read(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise SpecdecError(f"scrub: {path} is not a readable notebook ({e})") from None


def scrub_file(path: Path) -> bool:
    """Clean one notebook file in place; True when it changed."""
    before = path.read_text(encoding="utf-8")
    nb = nbformat.from_dict(scrub(_read(path)))
    after = nbformat.writes(nb, version=nbformat.NO_CONVERT)
    after += "\n" if before.endswith("\n") else ""  # the file's own ending
    if after != before:
        path.write_text(after, encoding="utf-8")
        return True
    return False


def main(argv: Sequence[str] | None = None) -> int:
    """The CLI: scrub the notebooks in place, or with --check list their problems (1 if any)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("notebooks", nargs="+", type=Path)
    ap.add_argument("--check", action="store_true", help="list problems, change nothing")
    args = ap.parse_args(argv)
    try:
        bad = 0
        for path in args.notebooks:
            if args.check:
                for p in problems(_read(path)):
                    print(f"{path}: {p}")
                    bad += 1
            elif scrub_file(path):
                print(f"scrub: cleaned {path}")
    except SpecdecError as e:
        print(e, file=sys.stderr)
        return 2
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
