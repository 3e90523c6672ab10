"""Writing and reading result directories. Results land in `<results>/<profile>/<experiment>/`:

    config.json     the experiment's config and its hash
    env.json        versions, hardware, dtype, git commit
    per_prompt.csv  one row per prompt and method
    summary.json    medians with bootstrap 95% CIs (n and method beside each), paired speedups,
                    pooled acceptance
    figures/        whatever the notebook drew

The directory is built under a temporary name and renamed into place, so it is complete or
absent, never half-written; a per-experiment lock keeps two batches from writing it at once, and
an existing result with the same config hash is reused unless forced, and only when it passes
`schema.result_problem` (a damaged directory is recomputed and never read back). A `Checkpoint`
keeps the rows of an experiment in progress. Torch-free; knows nothing about models or notebooks.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import math
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from filelock import FileLock

from specdec_lib.config import config_hash
from specdec_study.environment.secrets import scrub
from specdec_lib.errors import SpecdecError
from specdec_study.results.schema import (
    LIST_COLUMNS,
    PER_PROMPT_RECORD,
    decode_list,
    decode_row,
    encode_row,
    result_problem,
)


@dataclass
class ResultStore:
    """`<root>/<profile>/<experiment>/` with atomic publication and per-experiment locks."""

    root: Path
    profile: str

    def dir(self, experiment: str) -> Path:
        """The experiment's result directory (it may not exist yet)."""
        return Path(self.root) / self.profile / experiment

    def problem(self, experiment: str, *, study: bool = False) -> str | None:
        """Why the stored result cannot be reused (None when it is whole): schema.result_problem."""
        return result_problem(self.dir(experiment), study=study)

    def done(self, experiment: str, config: dict[str, Any], *, study: bool = False) -> bool:
        """Whether a whole result for this exact config is stored."""
        d = self.dir(experiment)
        if self.problem(experiment, study=study) is not None:
            return False
        saved = json.loads((d / "config.json").read_text(encoding="utf-8"))
        return saved.get("config_hash") == config_hash(config)

    @contextlib.contextmanager
    def writing(self, experiment: str) -> Iterator[Path]:
        """A temporary directory that becomes the experiment's directory on success."""
        final = self.dir(experiment)
        with self.lock(experiment):
            self.remove_stale(experiment)
            tmp = Path(tempfile.mkdtemp(prefix=f".{experiment}.", dir=final.parent))
            tmp.chmod(0o777 & ~_umask())  # mkdtemp's 0700 would hide the result from others
            try:
                yield tmp
                old = final.parent / f".{experiment}.old.{os.getpid()}"
                if final.exists():
                    final.rename(old)
                tmp.rename(final)
                shutil.rmtree(old, ignore_errors=True)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)

    def remove_stale(self, experiment: str) -> None:
        """Remove the temporary folders a killed writer left (`.<experiment>.*/`). Under the
        experiment's lock: a live writer holds it for as long as its folder exists."""
        with self.lock(experiment):
            for stale in self.dir(experiment).parent.glob(f".{experiment}.*"):
                if stale.is_dir():
                    shutil.rmtree(stale, ignore_errors=True)

    def lock(self, experiment: str) -> FileLock:
        """The experiment's inter-process lock; one object per path, so it is reentrant within
        a process (hold it around check-compute-publish; `writing` takes it again)."""
        d = self.dir(experiment)
        d.parent.mkdir(parents=True, exist_ok=True)
        path = str((d.parent / f".{experiment}.lock").resolve())
        if path not in _LOCKS:
            _LOCKS[path] = FileLock(path)
        return _LOCKS[path]


_LOCKS: dict[str, FileLock] = {}


def _umask() -> int:
    """This process's umask (read by setting it, then restoring it)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


class Checkpoint:
    """Per-prompt rows of an experiment in progress, so that a rerun after a crash or a lost
    Colab runtime skips every prompt already finished: one JSON line per (segment, prompt),
    appended, flushed and fsynced as soon as all arms ran the prompt, in
    `<results>/<profile>/.<experiment>.partial-<config hash>-<machine>.jsonl`, where `machine`
    (given by the runner) names the machine, the resolved dtype and the input files, so a run
    resumed elsewhere never mixes rows of two machines. A segment names one call of the paired
    runner (e.g. "context_sweep context 50"); a line only counts for the same prompt ids. A torn
    last line (killed mid-write) is ignored. The file is removed once the experiment is
    published; another config's or machine's file is removed when this one starts."""

    def __init__(
        self,
        store: ResultStore,
        experiment: str,
        config: dict[str, Any],
        fresh: bool,
        machine: str = "",
    ):
        directory = store.dir(experiment).parent
        directory.mkdir(parents=True, exist_ok=True)
        self.path = checkpoint_path(store, experiment, config, machine)
        for other in directory.glob(f".{experiment}.partial-*.jsonl"):
            if other != self.path or fresh:
                other.unlink(missing_ok=True)
        self._rows: dict[tuple[str, int], tuple[str, list[dict[str, Any]]]] = {}
        self.resumed = 0  # prompts taken from the file by this process
        if self.path.is_file():
            self._read()

    def _read(self) -> None:
        """Take every whole line; a torn last line is skipped quietly, any other damaged line
        (a byte that is not UTF-8, a line that is not a record) is said once, naming the
        file, and its prompt is recomputed."""
        lines = self.path.read_bytes().split(b"\n")
        damaged = 0
        for n, line in enumerate(lines):
            try:
                rec = json.loads(line.decode("utf-8"))
                self._rows[(rec["segment"], int(rec["prompt"]))] = (rec["ids"], rec["rows"])
            except (ValueError, KeyError, TypeError):  # UnicodeDecodeError is a ValueError
                torn = n == len(lines) - 1 and line.strip(b"\0").isascii()  # killed mid-write
                damaged += not torn
        if damaged:
            print(
                f"checkpoint {self.path}: {damaged} damaged line(s) ignored; their prompts are "
                "recomputed",
                file=sys.stderr,
            )

    @staticmethod
    def _ids_key(ids: Sequence[int]) -> str:
        return config_hash({"ids": [int(t) for t in ids]})

    def done(
        self, segment: str, prompts: Sequence[Any], indices: Sequence[int] | None = None
    ) -> dict[int, list[dict[str, Any]]]:
        """The finished prompts' rows by prompt index (`indices`: the prompts' indices, default
        their positions)."""
        out = {}
        index = range(len(prompts)) if indices is None else indices
        for i, p in zip(index, prompts, strict=True):
            hit = self._rows.get((segment, i))
            if hit is not None and hit[0] == self._ids_key(_prompt_ids(p)):
                out[i] = [decode_row(r) for r in hit[1]]  # a line written as text too
        self.resumed += len(out)
        return out

    def add(self, segment: str, i: int, ids: Sequence[int], rows: list[dict[str, Any]]) -> None:
        """Append one finished prompt's rows to the file, synced before returning."""
        rec = {"segment": segment, "prompt": i, "ids": self._ids_key(ids), "rows": scrub(rows)}
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(rec, default=_json_default) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def remove(self) -> None:
        """Delete the checkpoint file (once its result is published)."""
        self.path.unlink(missing_ok=True)


def checkpoint_path(
    store: ResultStore, experiment: str, config: dict[str, Any], machine: str = ""
) -> Path:
    """Where an experiment's checkpoint for this config on this machine lives (`Checkpoint`)."""
    name = f".{experiment}.partial-{config_hash(config)}" + (f"-{machine}" if machine else "")
    return store.dir(experiment).parent / f"{name}.jsonl"


def checkpoint_paths(store: ResultStore, experiment: str, config: dict[str, Any]) -> list[Path]:
    """The checkpoints of this config on any machine."""
    stem = checkpoint_path(store, experiment, config).name.removesuffix(".jsonl")
    directory = store.dir(experiment).parent
    return [p for p in directory.glob(f"{stem}*.jsonl") if p.is_file()]


def _prompt_ids(p: Any) -> tuple[int, ...]:
    """A prompt's token ids: a prompt object's `.ids`, or the sequence itself."""
    return tuple(p.ids) if hasattr(p, "ids") else tuple(p)


def _json_default(o: Any) -> Any:
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def clean(o: Any) -> Any:
    """Plain, strict JSON data: NaN/inf -> None, numpy scalars -> int/float, tuples -> lists,
    dict keys -> str (as `json` writes them, so the data equals what a reader gets back)."""
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        o = float(o)
    if isinstance(o, float) and not math.isfinite(o):
        return None
    if isinstance(o, dict):
        return {(k if isinstance(k, str) else str(k)): clean(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [clean(v) for v in o]
    return o


def write_json(path: Path, data: Any) -> None:
    """Strict JSON, secrets scrubbed, written to a temp file and renamed into place."""
    text = json.dumps(clean(scrub(data)), indent=2, sort_keys=True, default=_json_default)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text + "\n", encoding="utf-8")
    os.replace(tmp, path)


def write_rows(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    """Rows as CSV (list columns as `schema.LIST_COLUMNS` joins them, None -> empty, secrets
    scrubbed), written to a temp file and renamed into place."""
    buf = io.StringIO()
    if rows:
        w = csv.DictWriter(buf, fieldnames=list(rows[0].keys()), lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if v is None else v) for k, v in scrub(encode_row(r)).items()})
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(buf.getvalue(), encoding="utf-8")
    os.replace(tmp, path)


def file_sha256(path: Path) -> str:
    """The hex SHA-256 of a file's bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_rows(path: Path) -> pd.DataFrame:
    """A result's CSV as a DataFrame; the list columns (`schema.LIST_COLUMNS`) as lists of ints,
    read as text first (a `matches` cell "0010" is no number)."""
    df = pd.read_csv(path, dtype={c: str for c in LIST_COLUMNS})
    for c in LIST_COLUMNS:
        if c in df.columns:
            df[c] = pd.Series([decode_list(c, v) for v in df[c]], index=df.index, dtype=object)
    return df


@dataclass
class ExperimentResult:
    """One experiment directory read back: its config, environment, summary and per-prompt rows.
    The one result class: the study returns it, the book reads it."""

    config: dict[str, Any]
    env: dict[str, Any]
    summary: dict[str, Any]
    rows: pd.DataFrame
    path: Path = field(default_factory=Path)

    @property
    def name(self) -> str:
        """The experiment's name: its directory's."""
        return self.path.name

    @property
    def arms(self) -> dict[str, Any]:
        """Arm -> its summary (empty where the experiment has no arms)."""
        return self.summary.get("arms") or {}

    def role(self, role: str) -> str | None:
        """The arm that plays `role` (bigram, transformer, ngram), if any."""
        return (self.summary.get("roles") or {}).get(role)

    def extra_csv(self, name: str) -> pd.DataFrame | None:
        """Another CSV of the directory (e.g. the agreement's documents) read like the rows; None if absent."""
        f = self.path / name
        return read_rows(f) if f.is_file() else None

    def figures(self) -> list[Path]:
        """The PNGs in the directory's figures/, sorted."""
        d = self.path / "figures"
        return sorted(d.glob("*.png")) if d.is_dir() else []


def publish(
    store: ResultStore,
    experiment: str,
    config: dict[str, Any],
    env: dict[str, Any],
    rows: Sequence[dict[str, Any]],
    summary: dict[str, Any],
    figures: Callable[[Path], None] | None = None,
    extra: dict[str, Any] | None = None,
) -> Path:
    """Write every file of an experiment at once (atomically); returns its directory."""
    with store.writing(experiment) as tmp:
        write_json(tmp / "config.json", {**config, "config_hash": config_hash(config)})
        write_json(tmp / "env.json", env)
        write_rows(tmp / "per_prompt.csv", rows)
        record = {"rows": len(rows), "sha256": file_sha256(tmp / "per_prompt.csv")}
        write_json(tmp / "summary.json", {**summary, PER_PROMPT_RECORD: record})
        for name, data in (extra or {}).items():
            if name.endswith(".csv"):
                write_rows(tmp / name, data)
            else:
                write_json(tmp / name, data)
        if figures is not None:
            (tmp / "figures").mkdir()
            figures(tmp / "figures")
    return store.dir(experiment)


def load_result(path: Path, *, study: bool = False) -> ExperimentResult:
    """Read an experiment directory back (the study, the book and tests use this); a damaged
    one (`schema.result_problem`, stricter with study=True) is a one-line SpecdecError, never a
    partial result."""
    path = Path(path)
    problem = result_problem(path, study=study)
    if problem is None:
        try:
            return ExperimentResult(
                config=json.loads((path / "config.json").read_text(encoding="utf-8")),
                env=json.loads((path / "env.json").read_text(encoding="utf-8")),
                summary=json.loads((path / "summary.json").read_text(encoding="utf-8")),
                rows=read_rows(path / "per_prompt.csv"),
                path=path,
            )
        except (OSError, ValueError, pd.errors.EmptyDataError) as e:
            problem = f"it cannot be read ({type(e).__name__})"
    raise SpecdecError(
        f"result {path} is damaged ({problem}): rerun its notebook (or make evaluate) to "
        "recompute it"
    )
