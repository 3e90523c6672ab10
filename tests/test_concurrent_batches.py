"""Batches that overlap (issue 25, "not yet tried"): the book built while an evaluate publishes
reads only complete results, and two profiles evaluated at once into one RESULTS_DIR each end
whole, in their own folder, with nothing of the other mixed in."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from conftest import whole_config, whole_summary

from specdec_study.results.schema import result_problem
from specdec_study.results.store import ResultStore, publish

ROOT = Path(__file__).resolve().parents[1]

HANGING_WRITER = """
import pathlib, sys, time
from specdec_study.results.store import ResultStore, publish
root, flag = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
rows = [{"prompt": i, "method": "baseline", "wall_s": 0.1} for i in range(3)]
def figures(d):
    flag.write_text(str(d))  # the files are written, the folder not yet renamed into place
    time.sleep(120)
publish(ResultStore(root, "smoke"), "bigram", {"experiment": "bigram"}, {"python": "3"}, rows,
        {"experiment": "bigram", "profile": "smoke", "headline": {"x": 1}}, figures)
"""


def load_build():
    spec = importlib.util.spec_from_file_location("book_build", ROOT / "book" / "build.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    return build


def test_the_book_built_while_an_evaluate_publishes_reads_only_complete_results(tmp_path):
    build = load_build()
    results = tmp_path / "results"
    rows = [{"prompt": i, "method": "baseline", "wall_s": 0.1} for i in range(3)]
    summary = whole_summary("baseline", "smoke")
    store = ResultStore(results, "smoke")
    config = whole_config("baseline", "smoke")
    publish(store, "baseline", config, {"python": "3"}, rows, summary)
    nbs = results / "smoke" / "notebooks"
    nbs.mkdir()
    whole = (ROOT / "results/embedded/notebooks/01_baseline.ipynb").read_bytes()
    (nbs / "01_baseline.ipynb").write_bytes(whole[: len(whole) // 3])  # papermill mid-save
    flag = tmp_path / "writing"
    writer = subprocess.Popen(
        [sys.executable, "-c", HANGING_WRITER, str(results), str(flag)],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, start_new_session=True,
    )  # fmt: skip
    try:
        for _ in range(600):
            if flag.exists() and flag.read_text():
                break
            assert writer.poll() is None
            time.sleep(0.1)
        tmp = Path(flag.read_text()).parent  # figures/ inside the temporary folder
        assert tmp.name.startswith(".bigram.") and (tmp / "summary.json").is_file()
        build.check_results("smoke", results)  # the half-published bigram is not a result
        workdir = tmp_path / "book"
        workdir.mkdir()
        shutil.copy(ROOT / "_toc.yml", workdir / "_toc.yml")
        status = build.stage(workdir, "smoke", results, strict=False)
    finally:
        writer.kill()
        writer.wait(timeout=30)
    assert status["01_baseline"] == "placeholder"  # cut short: shown as not run
    staged = workdir / build.STAGING / "files"
    assert sorted(p.name for p in staged.iterdir()) == ["baseline"]


PAIR_WORKER = """
import sys
from specdec_study import study
S = study.setup(sys.argv[1], results_dir=sys.argv[2])
study.run(S, "baseline")
study.run(S, "bigram")
"""


def test_two_profiles_evaluated_at_once_into_one_results_dir_each_end_whole_and_unmixed(
    tmp_path,
):
    from specdec_lib.config import config_hash
    from specdec_study.environment.profiles import load_profile
    from specdec_study.runner.experiments import RUNNERS
    from specdec_study.runner.session import Session

    results = tmp_path / "results"
    env = {k: v for k, v in os.environ.items() if k != "FORCE"}
    env.update(WANDB_MODE="disabled", PYTHONPATH=str(ROOT))
    profiles = ("smoke", "smoke-pair")
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "specdec_study.environment.batch",
                str(results / p),
                "--",
                sys.executable,
                "-c",
                PAIR_WORKER,
                p,
                str(results),
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for p in profiles
    ]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err[-2000:] for _, err in outs]
    assert sorted(p.name for p in results.iterdir()) == sorted(profiles)
    makers = {"baseline": RUNNERS["baseline"].config, "bigram": RUNNERS["bigram"].config}
    for name in profiles:
        S = Session(load_profile(name), results)
        folder = results / name
        assert sorted(p.name for p in folder.iterdir() if not p.name.startswith(".")) == sorted(
            makers
        )
        assert [p.name for p in folder.iterdir() if p.name.startswith(".") and p.is_dir()] == []
        for exp, make in makers.items():
            d = folder / exp
            assert result_problem(d, study=True) is None
            assert json.loads((d / "summary.json").read_text())["profile"] == name
            assert json.loads((d / "config.json").read_text())["config_hash"] == config_hash(
                make(S)
            )
