"""Reading a profile's result directories back, for the book: `load_profile(name)` gives a
`Profile` (experiment -> `Result`, and what is damaged), plus the roles and sweep tables every
reader needs. Torch-free; knows nothing about decoding, tables or figures."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from specdec_lib.results.catalog import EXPERIMENTS
from specdec_lib.results.schema import result_problem

REPO_ROOT = Path(__file__).resolve().parents[2]


DEFAULT_PROFILE = "embedded"


REAL_PROFILES = ("embedded", "colab-t4")


def book_profile() -> str:
    """The profile the book shows: $SPECDEC_BOOK_PROFILE, default embedded."""
    return os.environ.get("SPECDEC_BOOK_PROFILE") or DEFAULT_PROFILE


def results_root() -> Path:
    """$SPECDEC_RESULTS (default results/); relative paths are taken from the repository root."""
    p = Path(os.environ.get("SPECDEC_RESULTS") or "results")
    return p if p.is_absolute() else REPO_ROOT / p


@dataclass
class Result:
    """One experiment directory, read back (mirrors results.store.load_result)."""

    name: str
    path: Path
    config: dict[str, Any]
    env: dict[str, Any]
    summary: dict[str, Any]
    rows: pd.DataFrame

    @property
    def arms(self) -> dict[str, Any]:
        return self.summary.get("arms") or {}

    def role(self, role: str) -> str | None:
        """The arm that plays `role` (bigram, transformer, ngram), if any."""
        return (self.summary.get("roles") or {}).get(role)

    def extra_csv(self, name: str) -> pd.DataFrame | None:
        f = self.path / name
        return _read_csv(f) if f.is_file() else None

    def figures(self) -> list[Path]:
        d = self.path / "figures"
        return sorted(d.glob("*.png")) if d.is_dir() else []


LIST_COLUMNS = ("accepted_lengths", "proposed_lengths", "tokens", "matches")


def _read_csv(path: Path) -> pd.DataFrame:
    df = pd.read_csv(path, dtype={c: str for c in LIST_COLUMNS})
    for c in LIST_COLUMNS:
        if c in df.columns:
            df[c] = df[c].fillna("")
    return df


def load_result(path: Path) -> Result | None:
    """The experiment at `path`, or None when it is absent or damaged (schema.result_problem)."""
    path = Path(path)
    if result_problem(path, study=True) is not None:
        return None
    try:
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
        env = json.loads((path / "env.json").read_text(encoding="utf-8"))
        summary = json.loads((path / "summary.json").read_text(encoding="utf-8"))
        rows = _read_csv(path / "per_prompt.csv")
    except (OSError, ValueError, pd.errors.EmptyDataError):
        return None
    return Result(path.name, path, config, env, summary, rows)


@dataclass
class Profile:
    """The results of one profile: experiment name -> Result (absent experiments are missing)."""

    name: str
    root: Path
    results: dict[str, Result] = field(default_factory=dict)
    damaged: dict[str, str] = field(default_factory=dict)  # experiment -> what is wrong

    def get(self, experiment: str) -> Result | None:
        return self.results.get(experiment)

    def has(self, *experiments: str) -> bool:
        return all(e in self.results for e in experiments)

    def missing(self, *experiments: str) -> list[str]:
        return [e for e in (experiments or EXPERIMENTS) if e not in self.results]

    @property
    def empty(self) -> bool:
        return not self.results

    def notebook(self, name: str) -> Path:
        return self.root / self.name / "notebooks" / f"{name}.ipynb"

    def env(self) -> dict[str, Any]:
        """The environment of the first experiment that has one."""
        for e in EXPERIMENTS:
            if e in self.results:
                return self.results[e].env
        return {}


def load_profile(name: str | None = None, root: Path | None = None) -> Profile:
    name = name or book_profile()
    root = Path(root) if root is not None else results_root()
    prof = Profile(name, root)
    for e in EXPERIMENTS:
        d = root / name / e
        problem = result_problem(d, study=True) if d.exists() else None
        r = load_result(d) if d.exists() and problem is None else None
        if r is not None:
            prof.results[e] = r
        elif d.exists():
            prof.damaged[e] = problem or "unreadable"
    return prof


def damaged_results(name: str, root: Path) -> dict[str, str]:
    """Experiment -> what is wrong, for every result directory of the profile that exists but is
    damaged (the book refuses to build over these)."""
    out = {}
    for e in EXPERIMENTS:
        d = Path(root) / name / e
        if d.exists():
            problem = result_problem(d, study=True)
            if problem is not None:
                out[e] = problem
    return out


def profiles_with_results(root: Path | None = None, include: Iterable[str] = ()) -> list[str]:
    """Profiles under root with at least one experiment: the real ones, plus those in include."""
    root = Path(root) if root is not None else results_root()
    wanted = list(dict.fromkeys([*include, *REAL_PROFILES]))
    return [p for p in wanted if not load_profile(p, root).empty]


def role_arm(res: Result | None, role: str) -> str | None:
    if res is None:
        return None
    arm = res.role(role)
    if arm:
        return arm
    drafts = {"bigram": "bigram", "ngram": "ngram"}
    for name, s in res.arms.items():
        if drafts.get(role) and s.get("draft") == drafts[role]:
            return name
    return None


def sweep_table(res: Result | None) -> pd.DataFrame | None:
    """The flat `table` of a context sweep (one row per context x arm)."""
    if res is None or not res.summary.get("table"):
        return None
    df = pd.DataFrame(res.summary["table"])
    df["context"] = df["context"].astype(int)
    return df.sort_values(["context", "method"]).reset_index(drop=True)


def sweep_contexts(res: Result | None) -> list[int]:
    if res is None:
        return []
    ctx = res.summary.get("contexts") or res.config.get("contexts") or []
    if not ctx and "context" in res.rows.columns:
        ctx = res.rows["context"].dropna().unique().tolist()
    return sorted(int(c) for c in ctx)


def _context_col(rows: pd.DataFrame) -> str:
    return "context" if "context" in rows.columns else "context_tokens"
