"""The seeded fault run (tests/faults.py, `make faults`, a sample in .ci/run) notices what it
exists to notice: a rerun whose tokens differ, a half-written result, a leftover temporary
folder or checkpoint, a planted secret in a file."""

from __future__ import annotations

from pathlib import Path

import faults
from conftest import whole_config, whole_summary

from specdec_study.results.store import ResultStore, publish

ROOT = Path(__file__).resolve().parents[1]


def published(root: Path) -> Path:
    rows = [{"prompt": i, "method": "baseline", "tokens": [i, 7, 9], "wall_s": 0.1 * i}
            for i in range(3)]  # fmt: skip
    summary = whole_summary("baseline", "smoke")
    store = ResultStore(root, faults.PROFILE)
    config = whole_config("baseline", faults.PROFILE)
    return publish(store, "baseline", config, {"python": "3"}, rows, summary)


def test_a_rerun_with_other_tokens_is_a_difference_and_equal_ones_are_not(tmp_path):
    d = published(tmp_path)
    same = {"baseline": faults.deterministic(d)}
    assert faults.differences(tmp_path, same) == []
    other = {"baseline": [tuple(c.replace("7", "8") for c in row) for row in same["baseline"]]}
    assert faults.differences(tmp_path, other) == [
        "baseline: the rerun's tokens differ from the uninterrupted run's"
    ]


def test_a_half_written_result_and_leftovers_are_found(tmp_path):
    d = published(tmp_path)
    assert faults.half_written(tmp_path) == [] and faults.leftovers(tmp_path) == []
    (d / "summary.json").write_bytes(b'{"experiment": "base')
    assert faults.half_written(tmp_path)[0].startswith("baseline is half-written")
    (d.parent / ".baseline.k1ll3d").mkdir()
    (d.parent / ".baseline.partial-abc.jsonl").write_text("{}\n")
    assert faults.leftovers(tmp_path) == [
        "left behind: .baseline.k1ll3d",
        "left behind: .baseline.partial-abc.jsonl",
    ]


def test_a_result_file_that_no_longer_parses_is_found(tmp_path):
    d = published(tmp_path)
    assert faults.unreadable(tmp_path) == []
    (d / "env.json").write_bytes(b'{"python": "3"\0\0}')
    (d / "per_prompt.csv").write_bytes((d / "per_prompt.csv").read_bytes() + b"\xff")
    found = faults.unreadable(tmp_path)
    assert [f.split(" is ")[0] for f in found] == ["baseline/env.json", "baseline/per_prompt.csv"]


def test_a_planted_secret_in_any_file_is_found(tmp_path):
    (tmp_path / "w" / "run").mkdir(parents=True)
    (tmp_path / "w" / "run" / "config.yaml").write_text(f"key: {faults.PLANTED['HF_TOKEN']}\n")
    assert faults.secrets_in(tmp_path) == [f"HF_TOKEN in {tmp_path / 'w/run/config.yaml'}"]


def test_damage_is_seeded_and_changes_the_file(tmp_path):
    import random

    f = tmp_path / "x.json"
    done = []
    for seed in range(6):
        f.write_bytes(b'{"a": 1, "b": [1, 2, 3]}')
        what = faults.damage_bytes(f, random.Random(seed))
        assert f.read_bytes() != b'{"a": 1, "b": [1, 2, 3]}'
        done.append(what)
    f.write_bytes(b'{"a": 1, "b": [1, 2, 3]}')
    assert faults.damage_bytes(f, random.Random(0)) == done[0]


def test_make_faults_and_the_ci_sample_run_the_fault_script():
    make = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "$(PY) tests/faults.py --faults $(FAULTS) --seed $(SEED)" in make
    assert "FAULTS ?= 50" in make  # 20 kills: the "at least 20 points"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert ".venv/bin/python tests/faults.py --faults 4 --seed 1" in ci
    assert faults.KINDS[:4] == ("sigkill", "damage", "sigterm", "disk")
