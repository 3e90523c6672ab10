"""One batch at a time per results folder:
`python -m specdec_study.environment.batch DIR -- COMMAND ...`.

Runs COMMAND while holding `DIR/.batch.lock` (`make evaluate` wraps its notebooks and the book
build in it, with DIR = <RESULTS_DIR>/<PROFILE>). The per-experiment locks of `experiments` only
keep two writers from corrupting a directory; without this lock two batches would both compute
every experiment and the published timings would come from a contended machine. A second batch
for the same folder is refused at once (exit 2, one line naming the running one's pid and start
time) rather than made to wait: it would otherwise start computing, on a machine still busy, as
soon as the first finished. The lock is an OS file lock, released when its holder exits or is
killed, so a crashed batch never leaves it stale.

The command runs in a process group of its own. SIGTERM, SIGINT or SIGHUP to the holder (the pid
a refusal names) stops the whole batch before the lock is released: SIGTERM goes to the group
and to every process below the command (a Jupyter kernel starts a session of its own), the
holder waits for them to exit (SIGKILL after `GRACE_S`), then releases. Only SIGKILL of the
holder itself, which no process can catch, still leaves its command running.

Knows nothing about notebooks, experiments or make: it holds a lock around a command.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from filelock import FileLock, Timeout

LOCK_NAME = ".batch.lock"
INFO_NAME = ".batch.lock.json"  # who holds the lock (pid, start, command), for the refusal
GRACE_S = 20.0  # how long a stopped batch's processes get to exit before SIGKILL
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def holder(folder: Path) -> str:
    """Who holds the folder's batch lock ('pid P, started T'), as its info file says."""
    try:
        info = json.loads((folder / INFO_NAME).read_text(encoding="utf-8"))
        return f"pid {info['pid']}, started {info['started']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "holder unknown"


def run_locked(folder: Path, command: list[str]) -> int:
    """COMMAND's exit status, or 2 (one line on stderr) when another batch holds the lock."""
    folder.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(folder / LOCK_NAME))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        print(
            f"specdec: error: another batch is running for {folder} ({holder(folder)}); wait for "
            "it to finish or use another RESULTS_DIR",
            file=sys.stderr,
        )
        return 2
    try:
        info = {
            "pid": os.getpid(),
            "started": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
            "command": command,
        }
        (folder / INFO_NAME).write_text(json.dumps(info) + "\n", encoding="utf-8")
        return run_group(command)
    finally:
        (folder / INFO_NAME).unlink(missing_ok=True)
        lock.release()


def _processes() -> dict[int, tuple[int, int, str, str]]:
    """pid -> (parent pid, process group, state, start time) of every process (/proc; empty
    where there is none)."""
    out = {}
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (command) "
        out[int(entry.name)] = (int(fields[1]), int(fields[2]), fields[0], fields[19])
    return out


def _tree(root: int) -> dict[int, str]:
    """root and every process below it: pid -> start time (to never signal a reused pid)."""
    procs = _processes()
    found, todo = {}, [root]
    while todo:
        pid = todo.pop()
        if pid in procs and pid not in found:
            found[pid] = procs[pid][3]
            todo += [p for p, (ppid, *_) in procs.items() if ppid == pid]
    return found


def _left(pgid: int, tree: dict[int, str]) -> list[int]:
    """The processes of the group or the tree that are still running (zombies are done)."""
    return [
        pid
        for pid, (_, pgrp, state, start) in _processes().items()
        if state != "Z" and (pgrp == pgid or tree.get(pid) == start)
    ]


def _signal_all(pgid: int, pids: list[int] | dict[int, str], signum: int) -> None:
    with contextlib.suppress(OSError):
        os.killpg(pgid, signum)
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signum)


def run_group(
    command: list[str], cwd: Path | None = None, env: dict[str, str] | None = None
) -> int:
    """COMMAND's exit status, run in a group of its own; a stop signal to this process stops
    the group and everything below the command, and returns once they are gone (128 + the
    signal)."""
    proc = subprocess.Popen(command, start_new_session=True, cwd=cwd, env=env)
    stopped: list[int] = []
    tree: dict[int, str] = {}

    def stop(signum: int, _frame: object) -> None:
        if not stopped:
            tree.update(_tree(proc.pid))
        stopped.append(signum)
        _signal_all(proc.pid, tree, signal.SIGTERM)

    previous = {s: signal.signal(s, stop) for s in STOP_SIGNALS}
    try:
        code = proc.wait()
        if stopped:
            deadline = time.monotonic() + GRACE_S
            while (left := _left(proc.pid, tree)) and time.monotonic() < deadline:
                time.sleep(0.1)
            if left:
                _signal_all(proc.pid, left, signal.SIGKILL)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    return 128 + stopped[0] if stopped else code


def main(argv: list[str] | None = None) -> int:
    """`python -m specdec_study.environment.batch DIR -- COMMAND ...`; 2 on a usage error."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 3 or args[1] != "--":
        print(
            "usage: python -m specdec_study.environment.batch DIR -- COMMAND [ARGS...]",
            file=sys.stderr,
        )
        return 2
    return run_locked(Path(args[0]), args[2:])


if __name__ == "__main__":
    sys.exit(main())
