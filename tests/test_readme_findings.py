"""The README's opening findings agree with the committed results: every speedup it states
(`2.33x [2.08, 2.79]`) is one that page one computes from the files (reporting.headline), and
the verdict labels it names are the rules' labels. A stale README line fails here."""

from __future__ import annotations

import re
from pathlib import Path

from specdec_study import pages as R
from specdec_study.reporting import headline as H

ROOT = Path(__file__).resolve().parents[1]
SPEEDUP = re.compile(r"\d+\.\d\dx \[\d+\.\d\d, \d+\.\d\d\]")


def findings() -> str:
    """The README's text before its first section heading."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return text.split("\n## ", 1)[0]


def computed() -> set[str]:
    """Page one's speedups, formatted as the README writes them ('2.33x [2.08, 2.79]')."""
    p = R.load_results("embedded", ROOT / "results")
    benches = H.bench_runs(p)
    found = []
    for b in benches.values():
        found += [*H.looping(b).values(), *H.loop_free(b).values()]
    found += [H.experiment_speedup(p, e) for e in ("bigram", "transformer_draft")]
    return {s.text.split(", n=")[0] for s in found if s is not None}


def test_every_speedup_the_readme_states_is_computed_from_the_results():
    stated = SPEEDUP.findall(findings())
    assert len(stated) >= 5, stated  # the findings are there
    assert sorted(set(stated) - computed()) == []


def test_the_readme_s_verdict_labels_are_the_rules():
    labels = {v.key: v.label for v in R.verdicts(R.load_results("embedded", ROOT / "results"))}
    for key, label in re.findall(r"\((H\d) (not supported|supported|inconclusive)\)", findings()):
        assert labels[key] == label, (key, label, labels[key])
