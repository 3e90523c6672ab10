"""Read an offline W&B run back from its transaction log (`offline-run-*/run-<id>.wandb`).

The log is LevelDB's log format with a 7-byte file header (":W&B", magic 0xBEE1, version 0):
32 KiB blocks of chunks, each with a 7-byte header (crc32c, length, type FULL/FIRST/MIDDLE/LAST),
whose payloads join into serialized `wandb_internal_pb2.Record`s. This is what a W&B user sees
after `wandb sync`: the run's name, group, job type and tags, its config, every history step,
the final summary, and the files and artifacts it logged. Checksums are not verified. Knows
nothing about the study.
"""

from __future__ import annotations

import json
import struct
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BLOCK = 32768
FILE_HEADER = struct.Struct("<4sHB")
CHUNK_HEADER = struct.Struct("<IHB")
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


def records(path: Path) -> list[bytes]:
    """The serialized records of a .wandb file, in order."""
    data = Path(path).read_bytes()
    ident, magic, _version = FILE_HEADER.unpack_from(data, 0)
    if ident != b":W&B" or magic != 0xBEE1:
        raise ValueError(f"{path}: not a W&B transaction log")
    out: list[bytes] = []
    pos, pending = FILE_HEADER.size, b""
    while pos + CHUNK_HEADER.size <= len(data):
        left = BLOCK - pos % BLOCK
        if left < CHUNK_HEADER.size:  # block trailer padding
            pos += left
            continue
        _crc, length, kind = CHUNK_HEADER.unpack_from(data, pos)
        pos += CHUNK_HEADER.size
        payload = data[pos : pos + length]
        pos += length
        if kind == FULL:
            out.append(payload)
        elif kind == FIRST:
            pending = payload
        elif kind == MIDDLE:
            pending += payload
        elif kind == LAST:
            out.append(pending + payload)
            pending = b""
        else:  # zero padding at the end of a file that was still being written
            break
    return out


@dataclass
class OfflineRun:
    name: str = ""
    group: str = ""
    job_type: str = ""
    tags: list[str] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    history: list[dict[str, Any]] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    artifacts: list[dict[str, Any]] = field(default_factory=list)
    metrics: dict[str, dict[str, Any]] = field(default_factory=dict)


def _items(items) -> dict[str, Any]:
    """Items as a dict; a nested key (media: ["figures/x", "_type"]) becomes nested dicts."""
    out: dict[str, Any] = {}
    for it in items:
        try:
            value = json.loads(it.value_json)
        except json.JSONDecodeError:
            value = it.value_json
        path = list(it.nested_key) or [it.key]
        node = out
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = value
    return out


def _parsed(path: Path) -> list:
    from wandb.proto import wandb_internal_pb2 as pb

    out = []
    for raw in records(path):
        rec = pb.Record()
        rec.ParseFromString(raw)
        out.append(rec)
    return out


def read_run(path: Path, wait_s: float = 30.0) -> OfflineRun:
    """One offline run: `path` is its folder (offline-run-*) or its .wandb file. W&B's service
    writes the log after `finish()` returns: wait up to wait_s for the run's exit record."""
    path = Path(path)
    if path.is_dir():
        path = next(path.glob("*.wandb"))
    deadline = time.monotonic() + wait_s
    recs = _parsed(path)
    while not any(r.WhichOneof("record_type") == "exit" for r in recs):
        if time.monotonic() > deadline:
            break
        time.sleep(0.2)
        recs = _parsed(path)
    run = OfflineRun()
    for rec in recs:
        kind = rec.WhichOneof("record_type")
        if kind == "run":
            r = rec.run  # written again later (e.g. at exit) with only some fields set
            run.name = r.display_name or run.name
            run.group = r.run_group or run.group
            run.job_type = r.job_type or run.job_type
            run.tags = list(r.tags) or run.tags
            run.config.update(_items(r.config.update))
        elif kind == "config":
            run.config.update(_items(rec.config.update))
        elif kind == "history":
            run.history.append(_items(rec.history.item))
        elif kind == "summary":
            run.summary.update(_items(rec.summary.update))
            for it in rec.summary.remove:
                run.summary.pop(it.nested_key[0] if it.nested_key else it.key, None)
        elif kind == "files":
            run.files += [f.path for f in rec.files.files]
        elif kind == "artifact":
            a = rec.artifact
            run.artifacts.append(
                {"name": a.name, "type": a.type, "files": [m.path for m in a.manifest.contents]}
            )
        elif kind == "metric":
            m = rec.metric
            run.metrics[m.name or m.glob_name] = {
                "step_metric": m.step_metric,
                "summary_none": m.summary.none,
            }
    return run


def read_runs(wandb_dir: Path) -> list[OfflineRun]:
    """Every offline run under a W&B folder (WANDB_DIR or its wandb/ subfolder)."""
    return [read_run(p) for p in sorted(Path(wandb_dir).rglob("offline-run-*")) if p.is_dir()]
