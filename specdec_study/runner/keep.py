"""Whether a batch (`make evaluate`) may keep a notebook's executed copy rather than execute the
notebook again: a run that would only reuse stored results must not rewrite the executed
notebooks (`results/<profile>/notebooks/`, committed for the embedded profile) with new
timestamps and a "reusing" log in place of the record of the run that measured them.

`why_execute(name, executed, profile, results_dir, force)` is None (keep it) only when all hold:
- not forced (the argument or $FORCE, read as the notebooks read them);
- the executed copy exists, can be read, and papermill finished it cleanly (no failed,
  running or pending cell, no error output);
- it was executed with exactly this profile and results folder (as the batch stores them, a
  local absolute path scrubbed: `environment.scrub`) and no other parameter but `force`, from
  the cells of `notebooks/<name>.ipynb` as they are now;
- every experiment of the notebook that the profile runs would be reused: a whole result for
  today's config hash whose recorded input files have not changed (`runner.execute.cached`'s
  tests, without its clean-up or its messages);
- it shows each of those results' figures byte for byte (a result replaced after the notebook
  ran, by another run or an imported bundle, has other figures).
Otherwise it is the reason, in words, and the batch executes the notebook as before.

    python -m specdec_study.runner.keep NAME EXECUTED --profile P --results-dir R [--force F]

exits 0 when the notebook is kept, 1 when it must be executed (one line saying which and why),
2 on a usage error. Knows nothing about papermill or make; changes no file.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from specdec_lib.errors import SpecdecError
from specdec_study.environment.scrub import scrub_text
from specdec_study.results.catalog import STUDY
from specdec_study.results.inputs import changed_input
from specdec_study.runner.execute import inputs_now, rel
from specdec_study.runner.experiments import RUNNERS
from specdec_study.runner.session import ROOT, Session, parse_flag, setup

INJECTED = "injected-parameters"  # the tag of the cell papermill adds with the parameters
UNFINISHED = ("failed", "running", "pending")  # a papermill cell status short of completed


def _source(cell: dict[str, Any]) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def _scrubbed(parameters: dict[str, Any]) -> dict[str, Any]:
    return {k: scrub_text(v) if isinstance(v, str) else v for k, v in parameters.items()}


def run_problem(nb: dict[str, Any], name: str, parameters: dict[str, str]) -> str | None:
    """Why the executed notebook `nb` is not a clean run of `notebooks/<name>.ipynb` as it is now
    with `parameters` (and `force`, whatever its value); None when it is."""
    pm = nb.get("metadata", {}).get("papermill") or {}
    if pm.get("exception") or not pm.get("end_time"):
        return "papermill did not finish it"
    for cell in nb.get("cells", []):
        status = (cell.get("metadata", {}).get("papermill") or {}).get("status")
        if status in UNFINISHED or any(
            o.get("output_type") == "error" for o in cell.get("outputs", [])
        ):
            return "papermill did not finish it"
    # the batch scrubs a local absolute path in the stored parameters: compare them scrubbed
    given = {k: v for k, v in (pm.get("parameters") or {}).items() if k != "force"}
    if _scrubbed(given) != _scrubbed(parameters):
        return f"it was executed with other parameters ({given})"
    cells = [
        _source(c)
        for c in nb.get("cells", [])
        if INJECTED not in c.get("metadata", {}).get("tags", [])
    ]
    source = json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text(encoding="utf-8"))
    if cells != [_source(c) for c in source.get("cells", [])]:
        return f"notebooks/{name}.ipynb changed since it was executed"
    return None


def shown_images(nb: dict[str, Any]) -> set[str]:
    """The base64 text of every PNG the notebook's outputs show."""
    found = set()
    for cell in nb.get("cells", []):
        for o in cell.get("outputs", []):
            png = o.get("data", {}).get("image/png")
            if png:
                found.add("".join(png).replace("\n", "") if isinstance(png, list) else png)
    return found


def result_problem(
    study: Session, experiment: str, config: dict[str, Any], shown: set[str]
) -> str | None:
    """Why `experiment` would not be reused as the executed notebook shows it (None: it would)."""
    d = study.store.dir(experiment)
    if not study.store.done(experiment, config, study=True):
        return f"{rel(d)} is not a whole result for today's config"
    env = json.loads((d / "env.json").read_text(encoding="utf-8"))
    stored = env.get("inputs")
    if isinstance(stored, dict) and (changed := changed_input(stored, inputs_now(config))):
        return f"{experiment}: {changed}"
    for png in sorted(d.glob("figures/*.png")):
        if base64.b64encode(png.read_bytes()).decode("ascii") not in shown:
            return f"it does not show {rel(png)} as stored"
    return None


def why_execute(
    name: str, executed: Path, profile: str, results_dir: str, force: bool | str = False
) -> str | None:
    """Why the batch must execute notebook `name` again rather than keep `executed` (module
    docstring); None: keep it."""
    if parse_flag(force, "force") or parse_flag(os.environ.get("FORCE", ""), "FORCE"):
        return "forced"
    notebook = next((nb for nb in STUDY if nb.name == name), None)
    if notebook is None:
        raise SpecdecError(f"unknown notebook {name!r}; known: {', '.join(n.name for n in STUDY)}")
    try:
        nb = json.loads(executed.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return f"{executed} cannot be read"
    if why := run_problem(nb, name, {"profile": profile, "results_dir": results_dir}):
        return why
    study = setup(profile, results_dir=results_dir)
    shown = shown_images(nb)
    for e in notebook.experiments:
        if study.section(e.name) is None:
            continue  # the profile does not run it: nothing would be computed
        if why := result_problem(study, e.name, RUNNERS[e.name].config(study), shown):
            return why
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """The CLI: 0 (one line) keep the executed notebook, 1 execute it, 2 a usage error."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("name", help="the notebook, e.g. 01_baseline")
    ap.add_argument("executed", type=Path, help="its executed copy")
    ap.add_argument("--profile", required=True)
    ap.add_argument("--results-dir", required=True)
    ap.add_argument("--force", default="false")
    args = ap.parse_args(argv)
    try:
        why = why_execute(args.name, args.executed, args.profile, args.results_dir, args.force)
    except SpecdecError as e:
        print(e, file=sys.stderr)
        return 2
    if why is not None:
        print(f"{args.name}: executing it ({why})")
        return 1
    print(
        f"{args.name}: every result reused and {args.executed} shows them: kept as executed "
        "(FORCE=1 executes it again)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
