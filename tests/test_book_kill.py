"""The book build interrupted or doubled (issue 25, "not yet tried"): a build stopped in the
middle leaves the last whole site in place (never a mix of two builds) and no process behind it,
and the next build succeeds; a second build into the same folder waits for the first instead of
restaging the notebooks under it (two `make evaluate` for different profiles each end with
`make book` into the checkout)."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from test_book import _build, write_synthetic

ROOT = Path(__file__).resolve().parents[1]
OLD_SITE = "<html>the last whole site</html>"


def load_build():
    spec = importlib.util.spec_from_file_location("book_build", ROOT / "book" / "build.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    return build


def start_build(tmp_path: Path, profile: str, results: Path) -> subprocess.Popen:
    work = tmp_path / "book"
    return subprocess.Popen(
        [sys.executable, str(ROOT / "book" / "build.py"), "--profile", profile,
         "--results", str(results), "--workdir", str(work)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip


def session_left(sid: int) -> list[int]:
    """Processes of the session sid that still run (zombies are done)."""
    left = []
    for entry in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            stat = (entry / "stat").read_text()
            fields = stat[stat.rindex(")") + 2 :].split()
            if int(fields[3]) == sid and fields[0] != "Z":
                left.append(int(entry.name))
    return left


def wait_for(condition, proc: subprocess.Popen, timeout_s: float = 300.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        assert time.monotonic() < deadline, "the build never got there"
        time.sleep(0.2)


def test_a_book_build_stopped_while_writing_pages_keeps_the_last_site_and_the_next_succeeds(
    tmp_path,
):
    results = tmp_path / "results"
    write_synthetic(results, "partial", only={"baseline", "bigram"})
    site = tmp_path / "book" / "_build" / "html"
    site.mkdir(parents=True)
    (site / "index.html").write_text(OLD_SITE, encoding="utf-8")
    build_dir = site.parent

    def writing_pages() -> bool:
        return any(p.name != "index.html" for p in build_dir.rglob("*.html"))

    proc = start_build(tmp_path, "partial", results)
    try:
        wait_for(writing_pages, proc)
        proc.send_signal(signal.SIGTERM)  # the build's own pid, as `kill PID` does
        proc.communicate(timeout=60)
        deadline = time.monotonic() + 2  # the build returns once its processes are gone
        while session_left(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert session_left(proc.pid) == [], "jupyter-book or its kernels run on as orphans"
    finally:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode != 0
    assert sorted(p.name for p in site.iterdir()) == ["index.html"]  # no page of the stopped one
    assert (site / "index.html").read_text(encoding="utf-8") == OLD_SITE

    again = _build(tmp_path, "partial", results)
    assert again.returncode == 0, again.stdout[-4000:] + again.stderr[-4000:]
    assert (site / "index.html").read_text(encoding="utf-8") != OLD_SITE
    assert "has not been run" in (site / "book/experiments/04_context_sweep.html").read_text()
    assert [p.name for p in build_dir.iterdir() if p.name.startswith(".partial")] == []


def test_a_second_book_build_into_the_same_folder_waits_for_the_first(tmp_path):
    build = load_build()
    results = tmp_path / "results"
    write_synthetic(results, "partial", only={"baseline"})
    work = tmp_path / "book"
    staging = work / build.STAGING
    with build.book_lock([work]):  # a first build runs
        proc = start_build(tmp_path, "partial", results)
        try:
            time.sleep(3)
            assert proc.poll() is None
            assert not staging.exists()  # nothing restaged under the running build
        finally:
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=30)
    assert proc.returncode != 0
    assert "waiting for" in err and "Traceback" not in err
