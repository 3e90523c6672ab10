"""Who may change a profile's result folder while someone else reads or writes it: the batch
lock (`<results>/<profile>/.batch.lock`, held by `environment.batch` for a whole `make evaluate`)
and the book lock of the folder (`<results>/<profile>/.book.lock`: shared by each book build that
reads the folder, exclusive for an import that changes it). An import is refused, in one line,
while either is held; a book build waits for an import (a few renames) rather than read half of
it. OS file locks (flock), released when their holder exits or is killed, so none goes stale.

Knows nothing about what is in the folder, and nothing about batches beyond their lock file.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from filelock import FileLock, Timeout

from specdec_study.environment.batch import LOCK_NAME as BATCH_LOCK
from specdec_study.environment.batch import holder
from specdec_lib.errors import SpecdecError

BOOK_LOCK = ".book.lock"


@contextlib.contextmanager
def _flock(path: Path, mode: int, wait_message: str | None) -> Iterator[bool]:
    """Hold flock `mode` on path; yields False at once (holding nothing) when another holds
    it and no wait_message is given, else says wait_message and waits."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
        except BlockingIOError:
            if wait_message is None:
                yield False
                return
            print(wait_message, file=sys.stderr, flush=True)
            fcntl.flock(fd, mode)
        yield True
    finally:
        os.close(fd)  # releases the lock


@contextlib.contextmanager
def reading(profile_dir: Path) -> Iterator[None]:
    """Hold the folder's book lock shared while a book is built from it (several builds may
    read at once); waits, said once, while an import changes the folder. Nothing when the
    folder does not exist."""
    if not Path(profile_dir).is_dir():
        yield
        return
    message = f"book: an import is changing {profile_dir}; waiting for it to finish"
    with _flock(Path(profile_dir) / BOOK_LOCK, fcntl.LOCK_SH, message):
        yield


@contextlib.contextmanager
def changing(profile_dir: Path) -> Iterator[None]:
    """Hold the folder's batch lock and its book lock exclusively while an import changes it;
    a one-line SpecdecError when a batch runs for it or a book is being built from it."""
    profile_dir = Path(profile_dir)
    profile_dir.mkdir(parents=True, exist_ok=True)
    batch = FileLock(str(profile_dir / BATCH_LOCK))
    try:
        batch.acquire(timeout=0)
    except Timeout:
        raise SpecdecError(
            f"a batch is running for {profile_dir} ({holder(profile_dir)}); import when it has "
            "finished"
        ) from None
    try:
        with _flock(profile_dir / BOOK_LOCK, fcntl.LOCK_EX, None) as held:
            if not held:
                raise SpecdecError(
                    f"a book is being built from {profile_dir}; import when it has finished"
                )
            yield
    finally:
        batch.release()
