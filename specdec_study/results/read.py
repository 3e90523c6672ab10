"""Reading a profile's result directories back, for the book: `load_results(profile)` gives a
`Profile` (experiment -> `ExperimentResult` through `store.load_result`, and what is damaged),
plus the roles and sweep tables every reader needs. Torch-free; knows nothing about decoding,
tables or figures (and nothing about profile YAML files: that is `study.load_profile`)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from specdec_lib import ROOT
from specdec_lib.errors import SpecdecError
from specdec_study.results.catalog import EXPERIMENTS
from specdec_study.results.schema import result_problem
from specdec_study.results.store import ExperimentResult, load_result

DEFAULT_PROFILE = "embedded"
REAL_PROFILES = ("embedded", "colab-t4")


def book_profile() -> str:
    """The profile the book shows: $SPECDEC_BOOK_PROFILE, default embedded."""
    return os.environ.get("SPECDEC_BOOK_PROFILE") or DEFAULT_PROFILE


def results_root() -> Path:
    """$SPECDEC_RESULTS (default results/); relative paths are taken from the repository root."""
    p = Path(os.environ.get("SPECDEC_RESULTS") or "results")
    return p if p.is_absolute() else ROOT / p


@dataclass
class Profile:
    """The results of one profile: experiment name -> its result (absent ones are missing)."""

    name: str
    root: Path
    results: dict[str, ExperimentResult] = field(default_factory=dict)
    damaged: dict[str, str] = field(default_factory=dict)  # experiment -> what is wrong

    def get(self, experiment: str) -> ExperimentResult | None:
        """The stored result of an experiment, or None."""
        return self.results.get(experiment)

    def has(self, *experiments: str) -> bool:
        """Whether every named experiment is stored."""
        return all(e in self.results for e in experiments)

    def missing(self, *experiments: str) -> list[str]:
        """The named experiments (default: all) that are not stored."""
        return [e for e in (experiments or EXPERIMENTS) if e not in self.results]

    @property
    def empty(self) -> bool:
        """Whether no experiment is stored."""
        return not self.results

    def notebook(self, name: str) -> Path:
        """The path of the executed notebook `name` of this profile."""
        return self.root / self.name / "notebooks" / f"{name}.ipynb"

    def env(self) -> dict[str, Any]:
        """The environment of the first experiment that has one."""
        for e in EXPERIMENTS:
            if e in self.results:
                return self.results[e].env
        return {}


def load_results(name: str | None = None, root: Path | None = None) -> Profile:
    """Every whole result directory of profile `name` (default: the book's) under `root`
    (default: results_root()); damaged ones are listed with what is wrong, never read."""
    name = name or book_profile()
    root = Path(root) if root is not None else results_root()
    prof = Profile(name, root)
    for e in EXPERIMENTS:
        d = root / name / e
        if not d.exists():
            continue
        try:
            prof.results[e] = load_result(d, study=True)
        except SpecdecError:
            prof.damaged[e] = result_problem(d, study=True) or "unreadable"
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
    return [p for p in wanted if not load_results(p, root).empty]


def role_arm(res: ExperimentResult | None, role: str) -> str | None:
    """The arm that plays a role (the result's own record, else by draft), or None. The record
    is profile-wide (the role's draft may not have run in this experiment): a recorded arm
    that is not one of this result's arms is no answer."""
    if res is None:
        return None
    arm = res.role(role)
    if arm and arm in experiment_arms(res):
        return arm
    drafts = {"bigram": "bigram", "ngram": "ngram"}
    for name, s in res.arms.items():
        if drafts.get(role) and s.get("draft") == drafts[role]:
            return name
    return None


def experiment_arms(res: ExperimentResult) -> list[str]:
    """Every arm an experiment ran: its config's arms, its summary's, and the methods of a
    sweep's stored table (a sweep's summary has no `arms`), in that order, each once."""
    arms = list(res.config.get("arms") or {}) + list(res.arms)
    table = res.summary.get("table")
    if isinstance(table, list):
        arms += [r["method"] for r in table if isinstance(r, dict) and r.get("method")]
    return list(dict.fromkeys(arms))


def stored_sweep_table(res: ExperimentResult | None) -> pd.DataFrame | None:
    """The flat `table` of a context sweep (one row per context x arm)."""
    if res is None or not res.summary.get("table"):
        return None
    df = pd.DataFrame(res.summary["table"])
    df["context"] = df["context"].astype(int)
    return df.sort_values(["context", "method"]).reset_index(drop=True)


def sweep_contexts(res: ExperimentResult | None) -> list[int]:
    """A sweep's contexts, sorted (from its summary, config or rows); [] without one."""
    if res is None:
        return []
    ctx = res.summary.get("contexts") or res.config.get("contexts") or []
    if not ctx and "context" in res.rows.columns:
        ctx = res.rows["context"].dropna().unique().tolist()
    return sorted(int(c) for c in ctx)
