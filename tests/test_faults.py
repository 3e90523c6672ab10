"""Fault injection (issue 16): damaged caches and results, hostile arguments and prompt files,
failed notebooks, concurrent batches and malformed profiles each end in one line or a repair,
never in garbage with exit 0, a traceback or a stale result."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from specdec_lib import models
from specdec_lib.cli import main
from specdec_lib.config import SamplingConfig
from specdec_lib.errors import SpecdecError

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
    from specdec_lib.study import tiny_random_model

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
    monkeypatch.setattr(models, "_FULL_HASH_LIMIT", 4096)
    monkeypatch.setattr(models, "_BLOCK", 64)
    d = models.embedded_cache_dir()
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
        info["files"] = models._file_records(d)
    models._write_marker_info(d, info)


def test_a_sound_cache_passes_its_check(fake_cache):
    assert models.cache_problem(fake_cache) is None
    assert models.cache_problem(fake_cache, full=True) is None


def test_a_deleted_tokenizer_is_detected_and_refused_in_one_line_without_the_package(
    fake_cache, monkeypatch
):
    (fake_cache / "tokenizer.json").unlink()
    assert models.cache_problem(fake_cache) == "tokenizer.json is missing"
    monkeypatch.setattr(models, "_has_module", lambda name: False)
    with pytest.raises(SpecdecError, match=r"is damaged \(tokenizer.json is missing\)") as e:
        models.ensure_embedded_cache()
    assert "\n" not in str(e.value)


def test_a_truncated_weights_file_is_rebuilt_when_the_package_is_there(fake_cache, monkeypatch):
    w = fake_cache / "model.safetensors"
    w.write_bytes(w.read_bytes()[:1000])
    assert "model.safetensors is 1,000 bytes" in models.cache_problem(fake_cache)
    built = []

    def fake_build(target: Path) -> None:
        built.append(target)
        write_fake_cache(target)

    monkeypatch.setattr(models, "_has_module", lambda name: True)
    monkeypatch.setattr(models, "_build_embedded_cache", fake_build)
    assert models.ensure_embedded_cache() == fake_cache
    assert built == [fake_cache] and models.cache_problem(fake_cache) is None


def test_damage_to_a_sampled_block_is_caught_every_load_and_anywhere_by_the_full_check(
    fake_cache,
):
    w = fake_cache / "model.safetensors"
    data = bytearray(w.read_bytes())
    data[-10] ^= 0xFF  # inside the last block, which is always sampled
    w.write_bytes(bytes(data))
    assert "sampled sha256" in models.cache_problem(fake_cache)
    data[-10] ^= 0xFF
    data[len(data) // 2 + 3 * 64 + 7] ^= 0xFF  # between sampled blocks: the full check's job
    w.write_bytes(bytes(data))
    assert models.cache_problem(fake_cache) is None  # the documented limit of the fast check
    assert "does not match its recorded sha256" in models.cache_problem(fake_cache, full=True)


def test_a_legacy_cache_is_adopted_only_when_its_weights_are_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(models, "_FULL_HASH_LIMIT", 4096)
    good, bad = tmp_path / "good", tmp_path / "bad"
    write_fake_cache(good, legacy=True)
    assert models.cache_problem(good) is None
    assert "files" in json.loads((good / models._MARKER).read_text())  # recorded from now on
    write_fake_cache(bad, legacy=True)
    w = bad / "model.safetensors"
    w.write_bytes(w.read_bytes()[:-100])
    assert models.cache_problem(bad) == "model.safetensors is truncated or its header is damaged"


def test_an_incomplete_cache_that_cannot_be_written_is_one_line(fake_cache, monkeypatch):
    (fake_cache / models._MARKER).unlink()

    class ReadOnlyLock:
        def __init__(self, path):
            pass

        def __enter__(self):
            raise PermissionError(13, "Permission denied")

        def __exit__(self, *exc):
            return False

    monkeypatch.setattr(models, "_has_module", lambda name: True)
    monkeypatch.setattr(models, "FileLock", ReadOnlyLock)
    with pytest.raises(SpecdecError, match="cannot be written \\(Permission denied\\)") as e:
        models.ensure_embedded_cache()
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
    import specdec_lib.cli as cli

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
    from specdec_lib.cli import read_prompts

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
