"""Whether rows recomputed today equal the committed rows, in their deterministic columns, and the
record of the last check (`results/<profile>/reproduce.json`).

`compare_rows(new, old)` pairs rows by the identifying columns both tables have (`KEY_COLUMNS`:
article, anchor, context, method, draft, temperature, view, ...) and compares exactly the
deterministic columns both have (`DETERMINISTIC`: greedy token ids, accepted / proposed counts,
per-position agreement `matches`, ...); timings (`wall_s`, `tokens_per_s`, ...) are not in that
list and never compared. It is generic over columns, so a result with new columns is compared
on those it shares with the committed one (a key column only one side has is not used, so two
committed rows may then share a key: a recomputed row passes when it equals one of them).

Torch-free; knows nothing about how the rows were computed (runner.reproduce runs them).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from specdec_study.results.store import ExperimentResult, file_sha256, write_json

RECORD_FILE = "reproduce.json"
PASSED, FAILED, NOT_COMPARABLE, SKIPPED = "passed", "failed", "not comparable", "skipped"

# columns that say which measurement a row is (what pairs a recomputed row with a committed one)
KEY_COLUMNS = (
    "prompt",
    "document",
    "article",
    "anchor",
    "context",
    "context_tokens",
    "method",
    "draft",
    "arm",
    "temperature",
    "k",
    "view",
    "use_cache",
    "dtype",
)
# columns that the same code, prompts, dtype and machine kind give exactly again
DETERMINISTIC = (
    "tokens",
    "new_tokens",
    "prompt_tokens",
    "accepted",
    "proposed",
    "accepted_lengths",
    "proposed_lengths",
    "target_calls",
    "stopped_by",
    "identical",
    "matches",
    "agree",
    "positions",
    "agreement",
    "order",  # the context sweep's seeded run order: a schedule, not what identifies a row
)
MAX_DETAILS = 5  # mismatches named per experiment


@dataclass
class Comparison:
    """One experiment's check: the outcome, how many rows and which columns were compared, and
    the first mismatches (or why nothing could be compared)."""

    outcome: str
    rows: int = 0
    keys: list[str] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)
    details: list[str] = field(default_factory=list)
    committed_sha256: str = ""  # of the committed per_prompt.csv it was compared with


def rows_fingerprint(res: ExperimentResult) -> str:
    """The sha256 of a result's per_prompt.csv: which committed rows a check compared with."""
    f = Path(res.path) / "per_prompt.csv"
    return file_sha256(f) if f.is_file() else ""


def _same(a: Any, b: Any) -> bool:
    """Two lists (`schema.LIST_COLUMNS`: token ids, lengths, `matches`) or two texts equal as
    such, else equal as numbers (1 == 1.0; NaN == NaN), else as text."""
    if isinstance(a, (list, str)) and type(a) is type(b):
        return a == b
    try:
        x, y = float(a), float(b)
    except (TypeError, ValueError):
        return str(a) == str(b)
    return x == y or (math.isnan(x) and math.isnan(y))


def _key_text(df: pd.DataFrame, keys: list[str]) -> pd.Series:
    """One text per row naming its measurement ("method=bigram article=3 ...")."""
    parts = [df[k].map(lambda v, k=k: f"{k}={_norm(v)}") for k in keys]
    return pd.concat(parts, axis=1).agg(" ".join, axis=1) if parts else pd.Series(dtype=str)


def _norm(v: Any) -> str:
    """A key value as text that does not depend on how the CSV typed its column (3 == 3.0)."""
    try:
        x = float(v)
    except (TypeError, ValueError):
        return str(v)
    return str(int(x)) if x.is_integer() else repr(x)


def _differing(new: dict[str, Any], old: dict[str, Any], cols: list[str]) -> list[str]:
    """The columns in which two rows differ."""
    return [c for c in cols if not _same(new[c], old[c])]


def _incomparable(
    keys: list[str], cols: list[str], new: pd.DataFrame, old: pd.DataFrame
) -> str | None:
    """Why two tables cannot be compared at all, or None."""
    if not keys:
        return "no identifying column in common"
    if not cols:
        return "no deterministic column in common"
    return "no rows" if new.empty or old.empty else None


def _by_key(df: pd.DataFrame, keys: list[str], cols: list[str]) -> dict[str, list[dict[str, Any]]]:
    """Key text -> the rows (their deterministic columns) that share it."""
    out: dict[str, list[dict[str, Any]]] = {}
    for key, row in zip(_key_text(df, keys), df[cols].to_dict("records"), strict=True):
        out.setdefault(key, []).append(row)
    return out


def compare_rows(new: pd.DataFrame, old: pd.DataFrame) -> Comparison:
    """new's rows against old's rows of the same measurement, in the deterministic columns."""
    keys = [c for c in KEY_COLUMNS if c in new.columns and c in old.columns]
    cols = [c for c in DETERMINISTIC if c in new.columns and c in old.columns]
    why = _incomparable(keys, cols, new, old)
    if why is not None:
        return Comparison(NOT_COMPARABLE, keys=keys, columns=cols, details=[why])
    committed = _by_key(old, keys, cols)
    differing: list[str] = []  # one entry per recomputed row that differs
    compared = 0
    for key, rows in _by_key(new, keys, cols).items():
        for row in rows if key in committed else []:
            compared += 1
            bad = min((_differing(row, c, cols) for c in committed[key]), key=len)
            if bad:
                differing.append(f"{key}: {', '.join(bad)} differ")
    if not compared:
        return Comparison(NOT_COMPARABLE, 0, keys, cols, ["no recomputed row is a committed one"])
    named = differing[:MAX_DETAILS]
    if len(differing) > len(named):
        named.append(f"... {len(differing) - len(named)} more rows differ")
    return Comparison(FAILED if differing else PASSED, compared, keys, cols, named)


def skipped(reason: str) -> Comparison:
    """A check that did not run, with why."""
    return Comparison(SKIPPED, details=[reason])


# ------------------------------------------------------------------ the record


def record_path(results_root: Path, profile: str) -> Path:
    """Where a profile's reproduction record lives: <results_root>/<profile>/reproduce.json."""
    return Path(results_root) / profile / RECORD_FILE


def write_record(
    path: Path,
    commit: str | None,
    date: str,
    prompts: int,
    machine: str,
    checks: dict[str, Comparison],
) -> None:
    """reproduce.json: the commit, date and machine of the check and each experiment's
    comparison."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    write_json(
        path,
        {
            "commit": commit,
            "date": date,
            "prompts": prompts,
            "machine": machine,
            # every check that ran passed (one skipped on this machine is neither)
            "passed": all(c.outcome == PASSED for c in checks.values() if c.outcome != SKIPPED)
            and any(c.outcome == PASSED for c in checks.values()),
            "experiments": {e: asdict(c) for e, c in checks.items()},
        },
    )


def read_record(path: Path) -> dict[str, Any] | None:
    """The last check's record, or None where there is none (or it does not parse)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def report_lines(checks: dict[str, Comparison]) -> list[str]:
    """What the command prints: one line saying why when every check was skipped for the same
    reason, else one entry per experiment (with its mismatches)."""
    reasons = {c.details[0] if c.details else "" for c in checks.values()}
    if checks and all(c.outcome == SKIPPED for c in checks.values()) and len(reasons) == 1:
        return [f"reproduce: skipped: {reasons.pop()}"]
    return [outcome_line(e, c) for e, c in checks.items()]


def outcome_line(experiment: str, c: Comparison) -> str:
    """One line per experiment for the terminal."""
    head = f"{experiment}: {c.outcome}"
    if c.outcome in (PASSED, FAILED):
        head += f" ({c.rows} rows; {', '.join(c.columns)})"
    return head + "".join(f"\n  {d}" for d in c.details if c.outcome != PASSED)
