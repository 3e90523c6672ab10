"""Issue 38, cases 9, 10 and 11: a prompt file without a size (a device, a FIFO) is held to the
size limit as it is read; a bundle member of an unsupported compression and a results folder
that is a file are one line; a RESULTS_DIR with a space stops make before anything is created;
a profile naming one key twice is refused; `--max-new-tokens 0` is refused."""

from __future__ import annotations

import os
import subprocess
import threading
import zipfile
from pathlib import Path

import pytest
from test_import_bundle import bundles, refused  # noqa: F401 - the fixture

import specdec_study.cli as cli
from specdec_lib.errors import SpecdecError
from specdec_study.environment.profiles import load_profile

ROOT = Path(__file__).resolve().parents[1]


def one_line(capsys, *argv: str) -> str:
    assert cli.main(list(argv)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("specdec: error:"), err
    return err


def test_dev_zero_as_a_prompt_file_is_held_to_the_size_limit(capsys, monkeypatch):
    monkeypatch.setattr(cli, "MAX_PROMPT_FILE_BYTES", 1000)
    err = one_line(capsys, "generate", "--target", "embedded", "--prompt-file", "/dev/zero")
    assert "more than 1,000 bytes" in err


def test_a_fifo_as_a_prompt_file_is_held_to_the_size_limit(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(cli, "MAX_PROMPT_FILE_BYTES", 1000)
    fifo = tmp_path / "prompts"
    os.mkfifo(fifo)

    def write() -> None:
        with open(fifo, "wb") as f:
            try:
                f.write(b"hello\n" * 10_000)
            except BrokenPipeError:
                pass

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    err = one_line(capsys, "generate", "--target", "embedded", "--prompt-file", str(fifo))
    assert "more than 1,000 bytes" in err


def test_max_new_tokens_zero_is_refused(capsys):
    err = one_line(
        capsys, "generate", "--target", "embedded", "--prompt", "hi", "--max-new-tokens", "0"
    )
    assert "max_new_tokens must be at least 1" in err


def test_a_profile_naming_a_key_twice_is_refused(tmp_path):
    text = (ROOT / "profiles" / "smoke.yaml").read_text(encoding="utf-8")
    dup = tmp_path / "smoke.yaml"
    dup.write_text(text + "\nseed: 1\nseed: 2\n", encoding="utf-8")
    with pytest.raises(SpecdecError, match="duplicate key 'seed'") as e:
        load_profile(str(dup))
    assert "\n" not in str(e.value)


def test_a_results_dir_with_a_space_stops_make_before_anything_is_created(tmp_path):
    proc = subprocess.run(
        ["make", "-C", str(ROOT), "evaluate", f"RESULTS_DIR={tmp_path}/a b", "PROFILE=smoke"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode != 0 and "RESULTS_DIR" in proc.stderr
    assert not (ROOT / "b").exists() and not list(tmp_path.iterdir())


def implode(src: Path, out: Path) -> Path:
    """A copy of the zip at src whose first member claims compression method 6 (implode)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            zout.writestr(info.filename, zin.read(info), compress_type=zipfile.ZIP_STORED)
    data = bytearray(out.read_bytes())
    local = data.index(b"PK\x03\x04")
    data[local + 8 : local + 10] = (6).to_bytes(2, "little")
    central = data.index(b"PK\x01\x02")
    data[central + 10 : central + 12] = (6).to_bytes(2, "little")
    out.write_bytes(bytes(data))
    return out


def test_an_imploded_bundle_member_is_refused_in_one_line(
    bundles,  # noqa: F811
    tmp_path,
    capsys,
    monkeypatch,
):
    bad = implode(bundles["old"], tmp_path / "imploded.zip")
    monkeypatch.setenv("SPECDEC_RESULTS", str(tmp_path / "results"))
    refused(capsys, str(bad))
    assert not (tmp_path / "results").exists()


def test_a_results_folder_that_is_a_file_is_refused_in_one_line(
    bundles,  # noqa: F811
    tmp_path,
    capsys,
    monkeypatch,
):
    (tmp_path / "results").write_text("a file\n")
    monkeypatch.setenv("SPECDEC_RESULTS", str(tmp_path / "results"))
    assert "is a file" in refused(capsys, str(bundles["old"]))
