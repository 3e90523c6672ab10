"""One batch at a time per results folder:
`python -m specdec_lib.environment.batch DIR -- COMMAND ...`.

Runs COMMAND while holding `DIR/.batch.lock` (`make evaluate` wraps its notebooks and the book
build in it, with DIR = <RESULTS_DIR>/<PROFILE>). The per-experiment locks of `experiments` only
keep two writers from corrupting a directory; without this lock two batches would both compute
every experiment and the published timings would come from a contended machine. A second batch
for the same folder is refused at once (exit 2, one line naming the running one's pid and start
time) rather than made to wait: it would otherwise start computing, on a machine still busy, as
soon as the first finished. The lock is an OS file lock, released when its holder exits or is
killed, so a crashed batch never leaves it stale.

Knows nothing about notebooks, experiments or make: it holds a lock around a command.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

from filelock import FileLock, Timeout

LOCK_NAME = ".batch.lock"
INFO_NAME = ".batch.lock.json"  # who holds the lock (pid, start, command), for the refusal


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
        return subprocess.call(command)
    except KeyboardInterrupt:
        return 130
    finally:
        (folder / INFO_NAME).unlink(missing_ok=True)
        lock.release()


def main(argv: list[str] | None = None) -> int:
    """`python -m specdec_lib.environment.batch DIR -- COMMAND ...`; 2 on a usage error."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 3 or args[1] != "--":
        print(
            "usage: python -m specdec_lib.environment.batch DIR -- COMMAND [ARGS...]",
            file=sys.stderr,
        )
        return 2
    return run_locked(Path(args[0]), args[2:])


if __name__ == "__main__":
    sys.exit(main())
