"""The bench's result folder (`bench.record`): written whole or not at all, read back by the
performance chapter with the same numbers, named by the groups it ran. No model, no timing:
a fake run's summary (the committed one's); tests/test_bench.py writes one from a real run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specdec_lib.errors import SpecdecError
from specdec_study.bench import record
from specdec_study.reporting import performance as perf

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / "results" / "embedded" / perf.BENCH_RUN


def _fake_run() -> tuple[dict, dict, dict]:
    """(config, env, summary) of a run: the committed summary, a config and an environment."""
    summary = json.loads((COMMITTED / "summary.json").read_text(encoding="utf-8"))
    summary["cpu"] = {"vendor": "V", "family": 25, "model": 17, "model_name": "Z", "cores": 4}
    config = {"target": "embedded", "groups": ["long", "short"], "n_prompts": 10, "seed": 0}
    config |= {"dtype": "auto", "device": "auto", "presets": "auto", "arms": [], "quick": False}
    env = {"date": "2027-01-02", "git_commit": "0123456789abcdef", "device": "cpu"}
    env["header"] = record.header(config, summary, env)
    return config, env, summary


def test_a_written_run_reads_back_with_the_same_numbers_and_its_header(tmp_path):
    config, env, summary = _fake_run()
    folder = record.write_run(tmp_path / "p" / "bench", config, env, summary, "group arm\n")
    assert sorted(p.name for p in folder.iterdir()) == sorted(record.FILES)
    back = perf.read_bench(folder)
    assert {k: v for k, v in back.items() if k != "_header"} == summary
    assert perf.bench_date(back) == "2027-01-02"
    assert perf.bench_machine(back) == "4-core V family 25 model 17 (Z), no AVX2"
    assert perf.provenance_markdown(back).count("`bench/`") == 1
    stored = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    assert stored["groups"] == ["long", "short"] and len(stored["config_hash"]) == 16
    assert "--groups long,short --prompts 10" in back["_header"]
    assert (folder / record.LOG).read_text(encoding="utf-8") == "group arm\n"


def test_a_failed_write_leaves_the_folder_as_it_was(tmp_path):
    """A run whose files cannot be written (here a summary that is not JSON data) publishes
    nothing: a first run stays whole, and no temporary folder is left beside it."""
    config, env, summary = _fake_run()
    folder = record.write_run(tmp_path / "p" / "bench", config, env, summary, "first\n")
    with pytest.raises(TypeError):
        record.write_run(folder, config, env, {**summary, "bad": object()}, "second\n")
    assert (folder / record.LOG).read_text(encoding="utf-8") == "first\n"
    assert perf.read_bench(folder)["groups"] == summary["groups"]
    assert [p.name for p in folder.parent.iterdir() if p.name != ".bench.lock"] == ["bench"]


def test_an_unwritable_place_is_one_line(tmp_path):
    config, env, summary = _fake_run()
    (tmp_path / "p").write_text("a file where the profile folder would be", encoding="utf-8")
    with pytest.raises(SpecdecError, match="cannot write") as e:
        record.write_run(tmp_path / "p" / "bench", config, env, summary, "")
    assert "\n" not in str(e.value)


@pytest.mark.parametrize(
    ("groups", "name"),
    [
        (("long", "short", "loopfree"), "bench"),
        (("long", "short"), "bench"),
        (("short",), "bench"),
        (("loopfree",), "bench-loopfree"),
    ],
)
def test_the_default_folder_is_named_by_the_groups_run(groups, name):
    assert record.run_name(groups) == name


def test_the_command_refuses_a_file_as_its_folder_before_loading_anything(tmp_path, capsys):
    from specdec_study.cli import main

    taken = tmp_path / "bench.txt"
    taken.write_text("an old printed run\n", encoding="utf-8")
    assert main(["bench", "--target", "embedded", "--out", str(taken)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is a file, not a result folder" in err


def test_another_target_without_a_folder_is_refused_before_loading_anything(tmp_path, capsys):
    """The default folder is the embedded model's bench: another target's run must not replace
    it, so without --out the command stops in one line, naming the folder."""
    from specdec_study.cli import main

    assert main(["bench", "--target", str(tmp_path / "some-model")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "needs --out" in err and "embedded" in err
