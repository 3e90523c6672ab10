"""What a W&B user sees: offline runs read back from their transaction logs.

One run written here by the Tracker on a small made-up result directory (fast), and the runs of
the smoke batch (the session's `smoke_batch` fixture): group per batch, job type per experiment,
tags, per-arm series, the per-prompt table, figures, the result directory as an artifact, and a
summary of headline numbers only.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import FAKE_SECRETS, files_containing

pytest.importorskip("wandb")

from wandb_read import read_runs  # noqa: E402

from specdec_study.environment.tracking import Tracker  # noqa: E402
from specdec_study.results import catalog  # noqa: E402

EXPERIMENTS = list(catalog.EXPERIMENTS)


def _user_keys(d: dict) -> set[str]:
    return {k for k in d if not k.startswith("_")}


def _typed(run, kind: str) -> dict[str, dict]:
    """History values that are W&B media of one type (table-file, image-file)."""
    return {
        k: v
        for step in run.history
        for k, v in step.items()
        if isinstance(v, dict) and v.get("_type") == kind
    }


def test_a_run_has_group_arms_table_figures_artifact_and_headline_summary(tmp_path, monkeypatch):
    for name, value in FAKE_SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("WANDB_MODE", "offline")
    result = tmp_path / "result"
    (result / "figures").mkdir(parents=True)
    rows = "prompt,method,context,tokens_per_s,wall_s,tokens\n" + "".join(
        f"{i},{m},20,{10 + i},{0.5 + i},1 2 3\n" for i in range(3) for m in ("baseline", "self")
    )
    (result / "per_prompt.csv").write_text(rows)
    (result / "summary.json").write_text("{}")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(2, 2))
    ax.plot([1, 2])
    fig.savefig(result / "figures" / "speedup.png")
    plt.close(fig)

    secret = FAKE_SECRETS["HF_TOKEN"]
    t = Tracker("specdec-test", "p/exp", {"a": 1, "leak": secret}, dir=tmp_path,
                group="batch-1", job_type="exp", tags=["p", "dtype=float32"])  # fmt: skip
    assert t.run is not None
    for i in range(3):
        for m in ("baseline", "self"):
            t.log_row({"prompt": i, "method": m, "context": 20, "tokens_per_s": 10.0 + i,
                       "wall_s": 0.5, "identical": True})  # fmt: skip
    t.log_row({"prompt": 0, "method": "self", "temperature": 0.7, "tokens_per_s": 9.0})
    t.publish(result, "p-exp", {"speedup/value": 1.25, "n_prompts": 3})
    t.finish()

    (run,) = read_runs(tmp_path)
    assert (run.name, run.group, run.job_type) == ("p/exp", "batch-1", "exp")
    assert run.tags == ["p", "dtype=float32"]
    assert run.config["leak"] == "***" and run.config["a"] == 1
    keys = {k for step in run.history for k in step}
    assert {"arms/context=20/baseline/tokens_per_s", "arms/context=20/self/tokens_per_s"} <= keys
    assert "tokens_per_s" not in keys and "wall_s" not in keys  # no mixed series
    assert "arms/temperature=0_7/self/tokens_per_s" in keys  # a "." would nest in W&B
    series = [s["arms/context=20/self/tokens_per_s"] for s in run.history
              if "arms/context=20/self/tokens_per_s" in s]  # fmt: skip
    assert series == [10.0, 11.0, 12.0]
    assert "per_prompt/rows" in _typed(run, "table-file")
    assert "figures/speedup" in _typed(run, "image-file")
    (art,) = [a for a in run.artifacts if a["type"] == "result"]
    assert art["name"] == "p-exp"
    assert {"per_prompt.csv", "summary.json", "figures/speedup.png"} <= set(art["files"])
    assert _user_keys(run.summary) == {"speedup/value", "n_prompts"}
    assert files_containing(tmp_path / "wandb", [secret]) == []


def test_smoke_batch_runs_read_back(smoke_batch):
    results = smoke_batch[0]
    runs = read_runs(results / "wandb")
    by_job = {r.job_type: r for r in runs}
    assert sorted(by_job) == sorted(EXPERIMENTS), [r.job_type for r in runs]
    groups = {r.group for r in runs}
    assert len(groups) == 1 and "" not in groups  # one batch, one group
    for exp, run in by_job.items():
        assert run.name == f"smoke/{exp}" and "smoke" in run.tags
        summary = json.loads((results / "smoke" / exp / "summary.json").read_text())
        arms = {k.split("/")[-2] for step in run.history for k in step if k.startswith("arms/")}
        methods = set(summary.get("arms", {}))
        for cell in ("by_context", "by_temperature"):
            for v in summary.get(cell, {}).values():
                methods |= set(v["arms"])
        if exp != "agreement":  # agreement rows are per draft, not timed arms
            assert methods and methods <= arms, (exp, methods, arms)
        assert "per_prompt/rows" in _typed(run, "table-file"), exp
        figs = {p.stem for p in (results / "smoke" / exp / "figures").glob("*.png")}
        assert {f"figures/{f}" for f in figs} <= set(_typed(run, "image-file")), exp
        (art,) = [a for a in run.artifacts if a["type"] == "result"]
        assert {"config.json", "env.json", "summary.json", "per_prompt.csv"} <= set(art["files"])
        headline = _user_keys(run.summary)
        assert headline and not headline & {"wall_s", "tokens_per_s", "prompt", "article"}, exp
        series = [k for k in headline if k.startswith(("arms/", "figures/", "per_prompt/"))]
        assert not series, (exp, series[:5])
    assert files_containing(results / "wandb", FAKE_SECRETS.values()) == []


def test_reader_rejects_other_files(tmp_path: Path):
    from wandb_read import records

    f = tmp_path / "x.wandb"
    f.write_bytes(b"not a log at all")
    with pytest.raises(ValueError, match="not a W&B transaction log"):
        records(f)


class _StuckRun:
    """A W&B run whose finish blocks (a flaky network) or raises."""

    def __init__(self, raises: bool = False):
        import threading

        self.release = threading.Event()
        self.raises = raises
        self.dir = "/results/p/wandb/run-1/files"

    def finish(self) -> None:
        if self.raises:
            raise ConnectionError("no network")
        self.release.wait(30)


def test_finish_is_bounded_in_time_and_says_where_the_run_is(monkeypatch, capsys):
    import time

    monkeypatch.setenv("WANDB_FINISH_TIMEOUT", "0.2")
    t = Tracker.__new__(Tracker)
    t.run = stuck = _StuckRun()
    start = time.monotonic()
    t.finish()
    assert time.monotonic() - start < 5 and t.run is None
    err = capsys.readouterr().err
    assert "did not finish within 0.2 s" in err and stuck.dir in err and "wandb sync" in err
    stuck.release.set()
    t.finish()  # a second call does nothing


def test_a_failing_finish_is_said_not_raised(monkeypatch, capsys):
    t = Tracker.__new__(Tracker)
    t.run = _StuckRun(raises=True)
    t.finish()
    assert "finishing the run failed (ConnectionError)" in capsys.readouterr().err


def test_offline_runs_are_kept_beside_the_results_by_default(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from specdec_study.runner import execute

    seen = {}
    monkeypatch.setattr(execute, "Tracker", lambda *a, **k: seen.update(k))
    S = SimpleNamespace(name="p", store=SimpleNamespace(dir=lambda e: tmp_path / "res" / "p" / e))
    config = {"dtype": "float32", "device": "cpu"}
    monkeypatch.delenv("WANDB_DIR", raising=False)
    execute.tracker_for(S, "exp", config)
    assert seen["dir"] == tmp_path / "res" / "p"
    monkeypatch.setenv("WANDB_DIR", str(tmp_path / "elsewhere"))
    execute.tracker_for(S, "exp", config)
    assert seen["dir"] == tmp_path / "elsewhere"
