"""A batch that would only reuse stored results keeps the executed notebooks as they are
(`specdec_study/runner/keep.py`): a fresh clone's `make evaluate` leaves `git status` clean. Any
reason to doubt the executed copy (forced, unfinished, other parameters or cells, a result not
reused or not the one it shows) executes the notebook as before."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from specdec_study.runner import keep

ROOT = Path(__file__).resolve().parents[1]
NB = "01_baseline"  # one experiment (baseline), one figure


@pytest.fixture
def copy(tmp_path, monkeypatch):
    """The committed embedded baseline and its executed notebook under tmp_path, the notebook's
    results_dir parameter pointing there; today's input files are those the result recorded."""
    results = tmp_path / "results"
    shutil.copytree(ROOT / "results/embedded/baseline", results / "embedded/baseline")
    nb = json.loads((ROOT / f"results/embedded/notebooks/{NB}.ipynb").read_text("utf-8"))
    nb["metadata"]["papermill"]["parameters"]["results_dir"] = str(results)
    executed = tmp_path / f"{NB}.ipynb"
    executed.write_text(json.dumps(nb), encoding="utf-8")
    env = json.loads((results / "embedded/baseline/env.json").read_text("utf-8"))
    monkeypatch.setattr(keep, "inputs_now", lambda config: env["inputs"])
    monkeypatch.delenv("FORCE", raising=False)
    return executed, results, nb


def why(executed: Path, results: Path, **kw) -> str | None:
    return keep.why_execute(NB, executed, "embedded", str(results), **kw)


def rewrite(executed: Path, nb: dict) -> None:
    executed.write_text(json.dumps(nb), encoding="utf-8")


def test_an_executed_notebook_whose_results_are_all_reused_is_kept(copy):
    executed, results, _ = copy
    assert why(executed, results) is None


def test_force_or_FORCE_executes_it_again(copy, monkeypatch):
    executed, results, _ = copy
    assert why(executed, results, force="true") == "forced"
    monkeypatch.setenv("FORCE", "1")
    assert why(executed, results) == "forced"


def test_a_missing_or_unfinished_executed_copy_is_executed(copy):
    executed, results, nb = copy
    assert "cannot be read" in why(executed.with_name("gone.ipynb"), results)
    nb["cells"][3]["metadata"]["papermill"]["status"] = "running"
    rewrite(executed, nb)
    assert why(executed, results) == "papermill did not finish it"
    nb["cells"][3]["metadata"]["papermill"]["status"] = "completed"
    nb["cells"][3]["outputs"].append(
        {"output_type": "error", "ename": "E", "evalue": "", "traceback": []}
    )
    rewrite(executed, nb)
    assert why(executed, results) == "papermill did not finish it"


def test_other_parameters_or_cells_execute_it_again(copy):
    executed, results, nb = copy
    assert "other parameters" in why(executed, results.with_name("elsewhere"))
    nb["metadata"]["papermill"]["parameters"]["n_prompts"] = 2
    rewrite(executed, nb)
    assert "other parameters" in why(executed, results)
    del nb["metadata"]["papermill"]["parameters"]["n_prompts"]
    nb["cells"][-1]["source"] = "print('changed')"
    rewrite(executed, nb)
    assert why(executed, results) == f"notebooks/{NB}.ipynb changed since it was executed"


def test_a_result_that_would_be_recomputed_executes_it_again(copy, monkeypatch):
    executed, results, _ = copy
    stored = json.loads((results / "embedded/baseline/env.json").read_text("utf-8"))["inputs"]
    data = next(label for label in stored if label.startswith("data "))
    name = next(iter(stored[data]))
    now = {**stored, data: {name: "0" * 64}}
    monkeypatch.setattr(keep, "inputs_now", lambda config: now)
    assert why(executed, results) == f"baseline: {data}: {name} changed (another sha256)"
    shutil.rmtree(results / "embedded/baseline")
    assert "is not a whole result for today's config" in why(executed, results)


def test_a_result_replaced_after_the_notebook_ran_executes_it_again(copy):
    """Same config, other measurements (another run, an imported bundle): other figures."""
    executed, results, _ = copy
    png = next((results / "embedded/baseline/figures").glob("*.png"))
    png.write_bytes(png.read_bytes() + b"\0")
    assert why(executed, results) == f"it does not show {keep.rel(png)} as stored"


def _kernel_ready() -> bool:
    kernels = ROOT / ".venv/share/jupyter/kernels/specdec"
    return (ROOT / ".venv/bin/papermill").exists() and kernels.is_dir()


@pytest.mark.skipif(not _kernel_ready(), reason="needs `make setup` (.venv, the specdec kernel)")
def test_make_evaluate_on_unchanged_inputs_rewrites_no_notebook_and_FORCE_does(tmp_path):
    """Old behaviour: the second batch re-executed the notebook, rewriting it with new
    timestamps (a fresh clone ended with seven modified committed notebooks)."""
    stamp = tmp_path / "stamp"
    stamp.touch()  # newer than requirements.txt: `setup` has nothing to do
    results = tmp_path / "results"
    executed = results / "smoke/notebooks" / f"{NB}.ipynb"
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE", "MAKEFLAGS", "MFLAGS")}
    env.update(WANDB_MODE="disabled")

    def evaluate(*extra: str) -> str:
        done = subprocess.run(
            ["make", "--no-print-directory", "evaluate", "PROFILE=smoke", "BOOK=0",
             f"NOTEBOOKS={NB}", f"RESULTS_DIR={results}", f"STAMP={stamp}", *extra],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        return done.stdout

    evaluate()
    first = executed.read_bytes()
    out = evaluate()
    assert executed.read_bytes() == first
    assert f"{NB}: every result reused" in out and "kept as executed" in out
    evaluate("FORCE=1")
    again = json.loads(executed.read_text("utf-8"))
    assert executed.read_bytes() != first and again["metadata"]["papermill"]["parameters"]["force"]
