"""Reading a profile's results (`results.read`): whole result directories are read, a damaged one
is listed with what is wrong and never read, absent ones are missing; an arm's role comes from
the result's record or, failing that, its draft."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

from specdec_study.results.read import (
    damaged_results,
    load_results,
    profiles_with_results,
    role_arm,
    sweep_contexts,
)

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / "results" / "embedded"


def test_whole_damaged_and_missing_results_are_told_apart(tmp_path):
    """A copy of the committed baseline is read; a copy of the committed bigram whose rows were
    altered after publication (their recorded sha256 no longer matches) is damaged, never read.
    Planted bugs it catches (each seen failing): a damaged directory left out of `damaged`,
    `missing` listing the stored ones instead of the absent ones."""
    prof_dir = tmp_path / "mine"
    prof_dir.mkdir()
    shutil.copytree(COMMITTED / "baseline", prof_dir / "baseline")
    shutil.copytree(COMMITTED / "bigram", prof_dir / "bigram")
    rows = prof_dir / "bigram" / "per_prompt.csv"
    rows.write_text(rows.read_text() + "\n")  # one byte more
    p = load_results("mine", tmp_path)
    assert list(p.results) == ["baseline"] and p.has("baseline") and not p.has("bigram")
    assert set(p.damaged) == {"bigram"} and p.damaged == damaged_results("mine", tmp_path)
    assert "baseline" not in p.missing() and "bigram" in p.missing() and "peers" in p.missing()
    assert p.env() == p.results["baseline"].env and not p.empty
    assert profiles_with_results(tmp_path, include=["mine", "none"]) == ["mine"]


def test_role_arm_from_the_record_else_the_draft():
    """Planted bug it catches (seen failing): the draft fallback ignored (None for a result
    without roles)."""
    recorded = SimpleNamespace(
        role=lambda r: {"bigram": "bg"}.get(r),
        arms={},
        config={"arms": {"bg": "bigram"}},
        summary={},
    )
    by_draft = SimpleNamespace(
        role=lambda r: None, arms={"b2": {"draft": "bigram"}}, config={}, summary={}
    )
    assert role_arm(recorded, "bigram") == "bg"
    assert role_arm(by_draft, "bigram") == "b2"
    assert role_arm(by_draft, "transformer") is None and role_arm(None, "bigram") is None


def test_sweep_contexts_sorted_from_summary_config_or_rows():
    import pandas as pd

    def res(summary, config, contexts):
        return SimpleNamespace(summary=summary, config=config,
                               rows=pd.DataFrame({"context": contexts}))  # fmt: skip

    assert sweep_contexts(res({"contexts": [100, 10]}, {}, [])) == [10, 100]
    assert sweep_contexts(res({}, {"contexts": ["50", "20"]}, [])) == [20, 50]
    assert sweep_contexts(res({}, {}, [30, 10, 30])) == [10, 30]
    assert sweep_contexts(None) == []
