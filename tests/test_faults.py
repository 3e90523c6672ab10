"""Fault injection (issue 16): damaged caches and results, hostile arguments and prompt files,
failed notebooks, concurrent batches and malformed profiles each end in one line or a repair,
never in garbage with exit 0, a traceback or a stale result."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import write_profile

from specdec_lib.config import SamplingConfig
from specdec_lib.errors import SpecdecError
from specdec_lib.models import embedded
from specdec_study.cli import main

ROOT = Path(__file__).resolve().parents[1]


def one_line_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("specdec: error:"), err
    assert "Traceback" not in err
    return lines[0]


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    cap = capsys.readouterr()
    return code, cap.out, cap.err


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory) -> Path:
    """A tiny random Gemma 3 with a word-level tokenizer saved as a local model directory
    (context window 4096 tokens, one token per whitespace-separated word)."""
    from specdec_study.study import tiny_random_model

    d = tmp_path_factory.mktemp("tiny")
    m = tiny_random_model("float32", vocab=512, hidden=32, layers=2, heads=2)
    m.model.save_pretrained(d)
    m.tokenizer.save_pretrained(d)
    return d


def tiny_args(tiny_dir: Path, *extra: str) -> list[str]:
    return [
        "generate",
        "--target",
        str(tiny_dir),
        "--dtype",
        "float32",
        "--device",
        "cpu",
        "--max-new-tokens",
        "3",
        *extra,
    ]


# ----------------------------------------------------------------- 1. the embedded model cache


@pytest.fixture
def fake_cache(tmp_path, monkeypatch) -> Path:
    """A small stand-in for the embedded cache, recorded like a real build; the weights file
    is 'large' (sampled hash) because the limit is lowered."""
    monkeypatch.setenv("SPECDEC_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(embedded, "_FULL_HASH_LIMIT", 4096)
    monkeypatch.setattr(embedded, "_BLOCK", 64)
    d = embedded.embedded_cache_dir()
    write_fake_cache(d)
    return d


def write_fake_cache(d: Path, legacy: bool = False) -> None:
    import torch
    from safetensors.torch import save_file

    d.mkdir(parents=True, exist_ok=True)
    save_file({"w": torch.arange(40_000, dtype=torch.float32)}, str(d / "model.safetensors"))
    (d / "config.json").write_text('{"model_type": "gemma3_text"}')
    (d / "tokenizer.json").write_text('{"model": {"vocab": {"a": 0}}}')
    info: dict = {"source": "test"}
    if not legacy:
        info["files"] = embedded._file_records(d)
    embedded._write_marker_info(d, info)


def test_a_sound_cache_passes_its_check(fake_cache):
    assert embedded.cache_problem(fake_cache) is None
    assert embedded.cache_problem(fake_cache, full=True) is None


def test_a_deleted_tokenizer_is_detected_and_refused_in_one_line_without_the_package(
    fake_cache, monkeypatch
):
    (fake_cache / "tokenizer.json").unlink()
    assert embedded.cache_problem(fake_cache) == "tokenizer.json is missing"
    monkeypatch.setattr(embedded, "_has_module", lambda name: False)
    with pytest.raises(SpecdecError, match=r"is damaged \(tokenizer.json is missing\)") as e:
        embedded.ensure_embedded_cache()
    assert "\n" not in str(e.value)


def test_a_truncated_weights_file_is_rebuilt_when_the_package_is_there(fake_cache, monkeypatch):
    w = fake_cache / "model.safetensors"
    w.write_bytes(w.read_bytes()[:1000])
    assert "model.safetensors is 1,000 bytes" in embedded.cache_problem(fake_cache)
    built = []

    def fake_build(target: Path) -> None:
        built.append(target)
        write_fake_cache(target)

    monkeypatch.setattr(embedded, "_has_module", lambda name: True)
    monkeypatch.setattr(embedded, "_build_embedded_cache", fake_build)
    assert embedded.ensure_embedded_cache() == fake_cache
    assert built == [fake_cache] and embedded.cache_problem(fake_cache) is None


def test_damage_to_a_sampled_block_is_caught_every_load_and_anywhere_by_the_full_check(
    fake_cache,
):
    w = fake_cache / "model.safetensors"
    data = bytearray(w.read_bytes())
    data[-10] ^= 0xFF  # inside the last block, which is always sampled
    w.write_bytes(bytes(data))
    assert "sampled sha256" in embedded.cache_problem(fake_cache)
    data[-10] ^= 0xFF
    data[len(data) // 2 + 3 * 64 + 7] ^= 0xFF  # between sampled blocks: the full check's job
    w.write_bytes(bytes(data))
    assert embedded.cache_problem(fake_cache) is None  # the documented limit of the fast check
    assert "does not match its recorded sha256" in embedded.cache_problem(fake_cache, full=True)


def test_a_legacy_cache_is_adopted_only_when_its_weights_are_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(embedded, "_FULL_HASH_LIMIT", 4096)
    good, bad = tmp_path / "good", tmp_path / "bad"
    write_fake_cache(good, legacy=True)
    assert embedded.cache_problem(good) is None
    assert "files" in json.loads((good / embedded._MARKER).read_text())  # recorded from now on
    write_fake_cache(bad, legacy=True)
    w = bad / "model.safetensors"
    w.write_bytes(w.read_bytes()[:-100])
    assert embedded.cache_problem(bad) == "model.safetensors is truncated or its header is damaged"


def test_an_incomplete_cache_that_cannot_be_written_is_one_line(fake_cache, monkeypatch):
    (fake_cache / embedded._MARKER).unlink()

    class ReadOnlyLock:
        def __init__(self, path):
            pass

        def __enter__(self):
            raise PermissionError(13, "Permission denied")

        def __exit__(self, *exc):
            return False

    monkeypatch.setattr(embedded, "_has_module", lambda name: True)
    monkeypatch.setattr(embedded, "FileLock", ReadOnlyLock)
    with pytest.raises(SpecdecError, match="cannot be written \\(Permission denied\\)") as e:
        embedded.ensure_embedded_cache()
    assert "SPECDEC_CACHE" in str(e.value) and "\n" not in str(e.value)


# ----------------------------------------------------------------- 2. temperature


@pytest.mark.parametrize("t", ["nan", "inf", "-inf", "1e-40", "1e-5", "1e9"])
def test_a_nan_infinite_or_underflowing_temperature_is_one_line(capsys, t):
    argv = ["generate", "--target", "embedded", "--prompt", "hi", f"--temperature={t}"]
    code, out, err = run_cli(capsys, *argv)
    assert code == 2 and out == ""
    assert "temperature must be 0 (greedy) or in [0.001, 100]" in one_line_error(err)


@pytest.mark.parametrize("t", [float("nan"), float("inf"), 1e-40, -0.0 - 1, True])
def test_the_library_refuses_the_same_temperatures(t):
    with pytest.raises(SpecdecError, match="temperature"):
        SamplingConfig(temperature=t)


def test_sane_temperatures_are_kept():
    for t in (0, 0.0, 1e-3, 0.7, 1, 100):
        assert SamplingConfig(temperature=t).temperature == t


# ----------------------------------------------------------------- 5. one line, not a traceback


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--target", "/tmp"], "'/tmp' is a directory without config.json"),
        (["--target", ""], "model name '' is empty"),
        (["--target", "   "], "is empty"),
        (["--target", "a/b/c"], "is not a model directory or a hub id"),
        (["--target", "embedded", "--seed", "18446744073709551616"], "seed must be an integer"),
        (["--target", "embedded", "--seed", "-1"], "seed must be an integer"),
        (["--target", "embedded", "--prompt", "a\udcffb"], "not valid UTF-8 text"),
    ],
)
def test_hostile_arguments_are_one_line(capsys, extra, needle):
    argv = ["generate", "--prompt", "hello", *extra]
    code, out, err = run_cli(capsys, *argv)
    assert code == 2 and out == ""
    assert needle in one_line_error(err)


def test_a_non_utf8_byte_in_argv_is_one_line_from_a_real_process():
    proc = subprocess.run(
        [sys.executable, "-m", "specdec_lib", "generate", "--target", "embedded"]
        + ["--prompt", os.fsdecode(b"caf\xe9 au lait")],
        capture_output=True,
        cwd=ROOT,
        timeout=300,
    )
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 2 and proc.stdout == b""
    assert "undecodable byte 0xe9 at character 4" in one_line_error(err)


def test_output_piped_to_head_stops_quietly(tiny_dir, tmp_path):
    prompts = tmp_path / "p.txt"
    prompts.write_text("".join(f"the cat sat {i}\n" for i in range(40)), encoding="utf-8")
    cmd = [sys.executable, "-m", "specdec_lib", *tiny_args(tiny_dir, "--prompt-file", str(prompts))]
    cmd += ["--json"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = proc.stdout.readline()
    proc.stdout.close()  # what `| head -1` does after one line
    err = proc.stderr.read().decode()
    proc.wait(timeout=300)
    assert json.loads(first)["line"] == 1
    assert "Traceback" not in err and "BrokenPipe" not in err
    assert proc.returncode == 141


# ----------------------------------------------------------------- 6. prompt files


def test_a_too_long_line_is_refused_before_any_prompt_is_generated(capsys, tiny_dir, tmp_path):
    f = tmp_path / "p.txt"
    f.write_text("the cat\n" + "word " * 5000 + "\nthe dog\n", encoding="utf-8")
    code, out, err = run_cli(capsys, *tiny_args(tiny_dir, "--prompt-file", str(f), "--json"))
    assert code == 2 and out == ""  # nothing printed for line 1, line 3 never run
    line = one_line_error(err)  # 9: no loading bar or warning before the error
    assert "prompt file line 2:" in line and "context window of 4096 tokens" in line


def test_a_huge_one_line_file_is_refused_before_loading(capsys, tmp_path):
    f = tmp_path / "big.txt"
    f.write_text("x" * 1_000_001, encoding="utf-8")
    code, out, err = run_cli(capsys, "generate", "--target", "embedded", "--prompt-file", str(f))
    assert code == 2 and out == ""
    assert "line 1 has 1,000,001 characters; the limit is 1,000,000" in one_line_error(err)


def test_a_file_over_the_size_limit_is_refused_by_its_size(capsys, tmp_path, monkeypatch):
    import specdec_study.cli as cli

    monkeypatch.setattr(cli, "MAX_PROMPT_FILE_BYTES", 100)
    f = tmp_path / "big.txt"
    f.write_text("hello\n" * 50, encoding="utf-8")
    code, _, err = run_cli(capsys, "generate", "--target", "embedded", "--prompt-file", str(f))
    assert code == 2 and "is 300 bytes; the limit is 100" in one_line_error(err)


def test_a_bad_byte_names_its_line(capsys, tmp_path):
    f = tmp_path / "p.txt"
    f.write_bytes(b"fine\nalso fine\nnot \xff fine\n")
    code, _, err = run_cli(capsys, "generate", "--target", "embedded", "--prompt-file", str(f))
    assert code == 2 and "line 3 is not UTF-8 text (byte 0xff)" in one_line_error(err)


def test_lines_split_on_newlines_only_bom_dropped_and_outputs_carry_their_line(
    capsys, tiny_dir, tmp_path
):
    from specdec_study.cli import read_prompts

    text = "\ufeffthe cat\fsat\r\n\n   \nthe\x85dog\u2028ran\u2029far\nlast line"
    f = tmp_path / "p.txt"
    f.write_text(text, encoding="utf-8")
    args = main.__globals__["build_parser"]().parse_args(
        ["generate", "--target", "x", "--prompt-file", str(f)]
    )
    got = [(p.line, p.text) for p in read_prompts(args)]
    assert got == [(1, "the cat\fsat"), (4, "the\x85dog\u2028ran\u2029far"), (5, "last line")]
    code, out, err = run_cli(capsys, *tiny_args(tiny_dir, "--prompt-file", str(f), "--json"))
    assert code == 0, err
    assert [json.loads(x)["line"] for x in out.splitlines()] == [1, 4, 5]


# ----------------------------------------------------------------- 3. damaged results


@pytest.fixture(scope="module")
def smoke_baseline(tmp_path_factory) -> Path:
    """The smoke profile's baseline result, computed once into a scratch results folder."""
    from specdec_study import study

    os.environ.setdefault("WANDB_MODE", "disabled")
    root = tmp_path_factory.mktemp("results")
    study.run(study.setup("smoke", results_dir=str(root)), "baseline")
    return root


DAMAGE = {
    "per_prompt.csv deleted": ("per_prompt.csv", None, "per_prompt.csv is missing"),
    "empty summary": ("summary.json", "{}", "summary.json is empty"),
    "config of []": ("config.json", "[]", "config.json holds a list, not an object"),
    "summary without headline": (
        "summary.json",
        '{"experiment": "baseline", "profile": "smoke"}',
        "summary.json has no 'headline' (dict)",
    ),
    "summary not of its declared shape": (
        "summary.json",
        '{"experiment": "baseline", "profile": "smoke", "roles": {}, "arms": {}, '
        '"headline": {"x": 1}}',
        "summary.json['headline'] has no 'tokens_per_s'",
    ),
    "truncated csv": ("per_prompt.csv", "prompt,method,wall_s\n0,baseline\n", "row 1 has 2"),
    "csv without rows": ("per_prompt.csv", "prompt,method\n", "per_prompt.csv has no rows"),
}


def damage(d: Path, name: str, content: str | None) -> None:
    if content is None:
        (d / name).unlink()
    else:
        (d / name).write_text(content, encoding="utf-8")


@pytest.mark.parametrize("case", list(DAMAGE))
def test_a_damaged_result_is_recomputed_never_reused(smoke_baseline, tmp_path, capsys, case):
    import shutil

    from specdec_study import study
    from specdec_study.results.schema import result_problem

    root = tmp_path / "results"
    shutil.copytree(smoke_baseline, root)
    d = root / "smoke" / "baseline"
    assert result_problem(d, study=True) is None
    name, content, why = DAMAGE[case]
    damage(d, name, content)
    assert why in result_problem(d, study=True)
    monkey_env = {k: v for k, v in os.environ.items() if k != "FORCE"}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(os, "environ", monkey_env)
        res = study.run(study.setup("smoke", results_dir=str(root)), "baseline")
    out = capsys.readouterr().out
    assert "is damaged" in out and "recomputing" in out and "reusing" not in out
    assert result_problem(d, study=True) is None and len(res.rows) == 3


def test_reading_a_damaged_result_is_one_line(smoke_baseline, tmp_path):
    import shutil

    from specdec_study.results.store import load_result

    shutil.copytree(smoke_baseline, tmp_path / "r")
    d = tmp_path / "r" / "smoke" / "baseline"
    (d / "per_prompt.csv").unlink()
    with pytest.raises(SpecdecError, match="is damaged \\(per_prompt.csv is missing\\)"):
        load_result(d)


def load_build():
    import importlib.util

    spec = importlib.util.spec_from_file_location("book_build", ROOT / "book" / "build.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("strict", [False, True])
def test_the_book_refuses_a_damaged_result_and_marks_it(smoke_baseline, tmp_path, capsys, strict):
    import shutil

    from specdec_study import pages as report

    root = tmp_path / "results"
    shutil.copytree(smoke_baseline, root)
    (root / "smoke" / "baseline" / "per_prompt.csv").unlink()
    build = load_build()
    argv = ["--profile", "smoke", "--results", str(root), "--workdir", str(tmp_path / "book")]
    code = build.main(argv + (["--strict"] if strict else []))
    err = capsys.readouterr().err
    assert code == 2
    assert "damaged results are not rendered: baseline (per_prompt.csv is missing)" in err
    assert not (tmp_path / "book" / "_build").exists()  # refused before building
    prof = report.load_results("smoke", root)
    assert "baseline" not in prof.results and "baseline" in prof.damaged
    assert "DAMAGED, not shown: `baseline` (per_prompt.csv is missing)" in report.missing_note(
        prof, "baseline"
    )


# ----------------------------------------------------------------- 4. failed notebooks


def test_a_failed_notebook_fails_the_book_build_strict_or_not(smoke_baseline, tmp_path, capsys):
    import shutil

    import nbformat

    build = load_build()
    clean = nbformat.read(ROOT / "results/embedded/notebooks/01_baseline.ipynb", as_version=4)
    assert build.notebook_failure(clean) is None
    root = tmp_path / "results"
    shutil.copytree(smoke_baseline, root)
    nbs = root / "smoke" / "notebooks"
    nbs.mkdir()
    failed = nbformat.v4.new_notebook()
    failed.metadata["papermill"] = {"exception": True}
    failed.cells.append(nbformat.v4.new_code_cell("1 / 0"))
    nbformat.write(failed, nbs / "01_baseline.ipynb")
    argv = ["--profile", "smoke", "--results", str(root), "--workdir", str(tmp_path / "book")]
    for extra in ([], ["--strict"]):
        assert build.main(argv + extra) == 2
        err = capsys.readouterr().err
        assert "failed notebooks are not rendered: 01_baseline (papermill marked" in err
    # an error output or an unfinished cell counts too, with or without papermill's flag
    failed.metadata["papermill"] = {"exception": None}
    failed.cells[0].outputs = [nbformat.v4.new_output("error", ename="E", evalue="", traceback=[])]
    assert build.notebook_failure(failed) == "cell 0 raised an error"
    failed.cells[0].outputs = []
    failed.cells[0].metadata["papermill"] = {"status": "running"}
    assert build.notebook_failure(failed) == "cell 0 is running"


# ----------------------------------------------------------------- 8. profiles


def _set(path: str, value):
    def edit(prof):
        *parents, last = path.split(".")
        node = prof
        for p in parents:
            node = node[p]
        node[last] = value

    return edit


BAD_PROFILES = [
    ("experiments.baseline.n_prompts", 2.7, "must be an integer >= 0, got 2.7"),
    ("experiments.baseline.n_prompts", 0, "must be an integer >= 1, got 0"),
    ("experiments.baseline.n_prompts", "3", "must be an integer >= 0, got '3'"),
    ("experiments.baseline.n_prompts", True, "got True"),
    ("dtype", "float8", "dtype must be one of auto, float32, bfloat16, float16, float64"),
    ("device", "tpu", "device must be one of auto, cpu, cuda, got 'tpu'"),
    ("data_source", "web", "data_source must be one of"),
    ("seed", -1, "seed must be an integer >= 0"),
    ("k", 0, "k must be an integer >= 1 and <= 64"),
    ("target", 3, "target must be a non-empty string, got 3"),
    ("drafts", ["bigram"], "drafts must be a mapping"),
    ("experiments", [1], "experiments must be a mapping"),
    ("experiments.baseline", 5, "experiments.baseline must be a mapping"),
    ("experiments.k_sweep.ks", [1, "2"], "experiments.k_sweep.ks must be a non-empty list"),
    ("experiments.context_sweep.contexts", 10, "contexts must be a non-empty list"),
    ("experiments.sampling.temperatures", [0.7, float("nan")], "temperatures must be a"),
    ("experiments.transformer_draft.identity.dtypes", ["float8"], "identity.dtypes must be"),
    ("experiments.transformer_draft.identity.n_prompts", 1.5, "identity.n_prompts must be"),
]


@pytest.mark.parametrize(("key", "value", "needle"), BAD_PROFILES)
def test_a_profile_with_a_wrong_type_or_value_is_one_line(tmp_path, key, value, needle):
    from specdec_study.study import load_profile, setup

    path = write_profile(tmp_path, "bad", _set(key, value))
    with pytest.raises(SpecdecError) as e:
        load_profile(str(path))
    assert needle in str(e.value) and "\n" not in str(e.value)
    assert "bad.yaml" in str(e.value)
    with pytest.raises(SpecdecError):
        setup(str(path))


def test_malformed_yaml_and_non_mapping_profiles_are_one_line(tmp_path):
    from specdec_study.environment.profiles import load_profile

    (tmp_path / "broken.yaml").write_text("name: x\nexperiments: {baseline: [\n", "utf-8")
    with pytest.raises(SpecdecError, match="is not valid YAML at line"):
        load_profile(str(tmp_path / "broken.yaml"))
    (tmp_path / "list.yaml").write_text("- 1\n- 2\n", "utf-8")
    with pytest.raises(SpecdecError, match="must be a mapping of keys, not list"):
        load_profile(str(tmp_path / "list.yaml"))
    (tmp_path / "none.yaml").write_text("target: embedded\n", "utf-8")
    with pytest.raises(SpecdecError, match="has no 'drafts'"):
        load_profile(str(tmp_path / "none.yaml"))


def test_the_shipped_profiles_pass_and_sources_match_the_data_module():
    from specdec_lib import data
    from specdec_study.environment import profiles

    good, bad = profiles.all_profiles()
    assert bad == {} and {p["name"] for p in good} >= {"embedded", "smoke", "colab-t4"}
    assert profiles.DATA_SOURCES == data.SOURCES


def test_one_malformed_profile_does_not_break_the_book_page_for_the_others(tmp_path, monkeypatch):
    """Runs the reproducibility chapter's profile cell against a folder holding smoke and a
    malformed file: smoke is tabled, the bad file is listed as not shown."""
    import re

    from specdec_study.environment import profiles

    write_profile(tmp_path, "smoke", lambda p: None)
    (tmp_path / "broken.yaml").write_text("target: [unclosed\n", "utf-8")
    monkeypatch.setattr(profiles, "PROFILES", tmp_path)
    page = (ROOT / "book" / "reproducibility.md").read_text(encoding="utf-8")
    cells = re.findall(r"```\{code-cell\} ipython3\n(.*?)```", page, re.S)
    cell = next(c for c in cells if "all_profiles" in c)
    cell = "\n".join(ln for ln in cell.splitlines() if not ln.startswith(":tags:"))
    shown: list[str] = []
    import pandas as pd

    from specdec_study import pages as report

    exec(cell, {"R": report, "pd": pd, "Markdown": str, "display": shown.append})
    text = "\n".join(shown)
    assert "`smoke`" in text and "Not shown (malformed)" in text and "broken.yaml" in text


# ----------------------------------------------------------------- 7. one batch at a time


def test_a_second_batch_for_the_same_folder_is_refused_in_one_line(tmp_path):
    folder = tmp_path / "results" / "smoke"
    started = tmp_path / "started"
    first = subprocess.Popen(
        [sys.executable, "-m", "specdec_study.environment.batch", str(folder), "--",
         sys.executable, "-c",
         f"import pathlib, time; pathlib.Path({str(started)!r}).touch(); time.sleep(60)"],
        cwd=ROOT,
        start_new_session=True,
    )  # fmt: skip
    try:
        for _ in range(600):
            if started.exists():
                break
            first.poll()
            assert first.returncode is None
            time.sleep(0.1)
        second = subprocess.run(
            [sys.executable, "-m", "specdec_study.environment.batch", str(folder), "--", "true"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert second.returncode == 2
        line = one_line_error(second.stderr)
        assert f"another batch is running for {folder} (pid {first.pid}, started" in line
    finally:
        first.terminate()  # the holder stops its command's group, then releases the lock
        first.wait(timeout=60)
    # the lock dies with its holder: the next batch runs
    again = subprocess.run(
        [sys.executable, "-m", "specdec_study.environment.batch", str(folder), "--", "true"],
        cwd=ROOT,
        timeout=120,
    )
    assert again.returncode == 0


def test_make_evaluate_runs_its_notebooks_and_book_under_the_batch_lock():
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    evaluate = text.split("\nevaluate:", 1)[1].split("\n\n", 1)[0]
    assert "-m specdec_study.environment.batch $(RESULTS_DIR)/$(PROFILE) --" in evaluate
    assert "_evaluate-locked" in evaluate
    locked = text.split("\n_evaluate-locked:", 1)[1].split("\n\n", 1)[0]
    assert "papermill" in locked and "book" in locked


@pytest.mark.parametrize(
    ("draft", "needle"),
    [("self:²", "'self:²'"), ("self:١", "'self:١'"), ("model:.", "'.'"), ("model:", "'model:'")],
)
def test_bad_drafter_specs_are_one_line(capsys, tiny_dir, draft, needle):
    code, out, err = run_cli(capsys, *tiny_args(tiny_dir, "--prompt", "the cat", "--draft", draft))
    assert code == 2 and out == ""
    assert needle in one_line_error(err)
