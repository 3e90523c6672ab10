"""The command line's contract: one-line errors with exit status 2, checked before any load."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from specdec_lib.errors import SpecdecError
from specdec_study.cli import main

ROOT = Path(__file__).resolve().parents[1]


def run_main(capsys, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    err = capsys.readouterr().err
    return code, err


BAD_INPUTS = [
    (["--prompt", ""], "empty"),
    (["--prompt", "   \t "], "empty"),
    (["--prompt", "hi", "--k", "0"], "K (draft length)"),
    (["--prompt", "hi", "--k", "100000"], "K (draft length)"),
    (["--prompt", "hi", "--max-new-tokens", "-1"], "max_new_tokens"),
    (["--prompt", "hi", "--temperature", "-0.5"], "temperature"),
    (["--prompt", "hi", "--top-p", "0"], "top-p"),
    (["--prompt", "hi", "--top-p", "1.5"], "top-p"),
    (["--prompt", "hi", "--top-k", "-3"], "top-k"),
    (["--prompt", "hi", "--draft", "unicorn"], "unknown drafter"),
    (["--prompt", "hi", "--draft", "self:0"], "unknown drafter"),
    (["--prompt", "hi", "--k", "four"], "invalid int"),
    (["--prompt", "hi", "--dtype", "int3"], "invalid choice"),
    (["--prompt-file", "/nonexistent/prompts.txt"], "cannot read prompt file"),
    (["--prompt", "hi", "--draft", "tree", "--temperature", "0.7"], "greedy only"),
    (["--prompt", "hi", "--draft", "tree:0"], "unknown drafter"),
    (["--prompt", "hi", "--draft", "tree", "--repetition-penalty", "1.2"], "repetition control"),
    (["--prompt", "hi", "--draft", "tree+shared", "--no-repeat-ngram-size", "3"], "chain drafter"),
    (["--prompt", "hi", "--repetition-penalty", "0"], "repetition penalty"),
    (["--prompt", "hi", "--no-repeat-ngram-size", "-2"], "no-repeat n-gram size"),
]


@pytest.mark.parametrize(("extra", "needle"), BAD_INPUTS)
def test_bad_input_exits_2_with_one_line(capsys, extra, needle):
    code, err = run_main(capsys, "generate", "--target", "embedded", *extra)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("specdec: error:")
    assert needle in lines[0]


def test_empty_prompt_file_is_refused(capsys, tmp_path):
    f = tmp_path / "p.txt"
    f.write_text("\n  \n\n", encoding="utf-8")
    code, err = run_main(capsys, "generate", "--target", "embedded", "--prompt-file", str(f))
    assert code == 2 and "no non-empty line" in err


def test_binary_prompt_file_is_refused(capsys, tmp_path):
    f = tmp_path / "p.bin"
    f.write_bytes(b"\xff\xfe\x00\x81garbage")
    code, err = run_main(capsys, "generate", "--target", "embedded", "--prompt-file", str(f))
    assert code == 2 and "cannot read prompt file" in err


def test_missing_prompt_is_refused(capsys):
    code, err = run_main(capsys, "generate", "--target", "embedded")
    assert code == 2 and "--prompt" in err


def test_unknown_command_is_refused(capsys):
    code, err = run_main(capsys, "fly")
    assert code == 2 and "invalid choice" in err


def test_bad_input_prints_no_traceback_from_a_real_process():
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "specdec_lib",
            "generate",
            "--target",
            "embedded",
            "--k",
            "0",
            "--prompt",
            "hello",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().count("\n") == 0
    assert proc.stdout == ""


def test_generate_hands_the_repetition_control_to_the_generator(monkeypatch, capsys):
    from specdec_lib.core.processors import RepetitionControl

    seen = {}

    class FakeGenerator:
        @classmethod
        def load(cls, target, draft, **kw):
            seen.update(kw)
            raise SpecdecError("stop here")

    import specdec_lib.generate

    monkeypatch.setattr(specdec_lib.generate, "Generator", FakeGenerator)
    argv = ["--prompt", "x", "--repetition-penalty", "1.2", "--no-repeat-ngram-size", "3"]
    code, _ = run_main(capsys, "generate", "--target", "embedded", *argv)
    assert code == 2 and seen["control"] == RepetitionControl(1.2, 3)
