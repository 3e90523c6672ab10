"""CI wiring: the workflow runs `.ci/run`, and under SPECDEC_STRICT (which `.ci/run` sets) a
missing Chromium or embedded model package fails instead of skipping, and `.ci/run` stops when
Chromium cannot be installed. Runs no test suite and installs nothing: `.ci/run` is executed with
a PATH of stubs (an `apt-get` that fails, a `make` that records its call)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import browser
import conftest
import pytest
import yaml
from conftest import STRICT_ENV, skip_or_fail, strict

ROOT = Path(__file__).resolve().parents[1]
SKIP, FAIL = pytest.skip.Exception, pytest.fail.Exception


def _outcome(check) -> tuple[type | None, str]:
    """What check() did: (SKIP or FAIL or None, its message). A skip that escapes a test would
    skip the test instead of failing it, so it is caught here and compared."""
    try:
        check()
    except (SKIP, FAIL) as exc:
        return type(exc), str(exc)
    return None, ""


def test_the_workflow_runs_ci_run_on_every_push_and_pull_request():
    """Catches: no workflow calling .ci/run (only book.yml existed), or invalid YAML."""
    wf = yaml.safe_load((ROOT / ".github" / "workflows" / "ci.yml").read_text(encoding="utf-8"))
    triggers = wf[True] if True in wf else wf["on"]  # YAML 1.1 reads the key `on` as True
    assert "push" in triggers and "pull_request" in triggers
    assert triggers["push"] is None and triggers["pull_request"] is None  # no branch filter
    (job,) = wf["jobs"].values()
    assert job["runs-on"] == "ubuntu-latest"
    steps = job["steps"]
    (py,) = [s for s in steps if s.get("uses", "").startswith("actions/setup-python")]
    assert str(py["with"]["python-version"]) == "3.11"
    assert [s["run"].strip() for s in steps if "run" in s] == ["bash .ci/run"]


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, False), ("", False), ("0", False), ("false", False), ("1", True), ("yes", True)],
)
def test_strict_reads_specdec_strict(monkeypatch, value, expected):
    """Catches: strict mode read from the wrong variable, or "0" taken as on."""
    if value is None:
        monkeypatch.delenv(STRICT_ENV, raising=False)
    else:
        monkeypatch.setenv(STRICT_ENV, value)
    assert strict() is expected


def test_a_missing_dependency_skips_without_strict_and_fails_with_it(monkeypatch):
    """Catches: skip_or_fail skipping under SPECDEC_STRICT (CI green without the tests)."""
    monkeypatch.delenv(STRICT_ENV, raising=False)
    assert _outcome(lambda: skip_or_fail("no widget")) == (SKIP, "no widget")
    monkeypatch.setenv(STRICT_ENV, "1")
    kind, message = _outcome(lambda: skip_or_fail("no widget"))
    assert kind is FAIL and message.startswith("no widget") and STRICT_ENV in message


def test_missing_chromium_fails_the_browser_tests_under_strict(monkeypatch):
    """Catches: the browser tests' Chromium check skipping under SPECDEC_STRICT."""
    monkeypatch.setattr(browser, "chromium", lambda: None)
    monkeypatch.delenv(STRICT_ENV, raising=False)
    kind, message = _outcome(browser.require_chromium)
    assert kind is SKIP and "Chromium" in message
    monkeypatch.setenv(STRICT_ENV, "1")
    kind, message = _outcome(browser.require_chromium)
    assert kind is FAIL and "Chromium" in message
    monkeypatch.setattr(browser, "chromium", lambda: "/usr/bin/chromium")
    assert browser.require_chromium() == "/usr/bin/chromium"


def test_a_missing_embedded_package_fails_the_real_model_tests_under_strict(monkeypatch):
    """Catches: the real-model tests' embedded-package check skipping under SPECDEC_STRICT."""
    from specdec_lib.models import embedded

    monkeypatch.setattr(embedded, "embedded_available", lambda: False)
    monkeypatch.delenv(STRICT_ENV, raising=False)
    kind, message = _outcome(lambda: conftest.embedded_model("float32"))
    assert kind is SKIP and "embedded" in message
    monkeypatch.setenv(STRICT_ENV, "1")
    kind, message = _outcome(lambda: conftest.embedded_model("float32"))
    assert kind is FAIL and "embedded" in message


def _run_ci(tmp_path: Path, strict_value: str | None) -> tuple[subprocess.CompletedProcess, bool]:
    """.ci/run with only stubs on PATH: no Chromium, an apt-get that fails, a make that records
    that it ran and stops the script. Returns the process and whether make ran."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "dirname", "id"):
        found = shutil.which(tool)
        assert found, tool
        (bin_dir / tool).symlink_to(found)
    marker = tmp_path / "make-ran"
    stubs = {"apt-get": "exit 100", "make": f': > "{marker}"; exit 3'}
    for name, body in stubs.items():
        (bin_dir / name).write_text(f"#!{shutil.which('bash')}\n{body}\n")
        (bin_dir / name).chmod(0o755)
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path)}
    if strict_value is not None:
        env[STRICT_ENV] = strict_value
    proc = subprocess.run(
        [str(bin_dir / "bash"), str(ROOT / ".ci" / "run")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return proc, marker.exists()


@pytest.mark.skipif(os.name != "posix", reason="runs .ci/run with bash")
def test_ci_run_stops_when_chromium_cannot_be_installed(tmp_path):
    """Catches: .ci/run going on to the tests after a failed Chromium install (the browser tests
    would then fail late, or skip where strict mode is off); .ci/run not strict by default."""
    proc, make_ran = _run_ci(tmp_path, None)
    assert proc.returncode == 1 and not make_ran, proc.stderr
    assert "chromium could not be installed" in proc.stderr


@pytest.mark.skipif(os.name != "posix", reason="runs .ci/run with bash")
def test_ci_run_goes_on_without_chromium_when_strict_is_off(tmp_path):
    """Catches: the strict stop firing when SPECDEC_STRICT=0 (a local run that may skip)."""
    proc, make_ran = _run_ci(tmp_path, "0")
    assert make_ran and proc.returncode == 3, proc.stderr
    assert "tests/test_browser.py will skip" in proc.stderr
