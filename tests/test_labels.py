"""What the book's fixed pages say about the method matches the code: the glossary's interval
rule is stats.bca_allowed's, and its example self-draft is described as all of the target's
layers. Reads book/glossary.md and calls torch-free code only."""

from __future__ import annotations

import re
from pathlib import Path

from specdec_lib.analysis import stats

ROOT = Path(__file__).resolve().parents[1]
GLOSSARY = (ROOT / "book" / "glossary.md").read_text(encoding="utf-8")


def _entry(term: str) -> str:
    text = GLOSSARY[GLOSSARY.index(f"\n{term}\n") :]
    return " ".join(text.split("\n\n", 1)[0].split())


def test_glossary_states_the_bootstrap_rule_the_code_applies():
    entry = _entry("paired bootstrap")
    first_bca = next(n for n in range(1, 100) if stats.bca_allowed(n))
    assert "BCa" in entry and f"n = {first_bca} prompts" in entry
    assert f"{stats.N_RESAMPLES:,} resamples" in entry
    assert re.search(r"percentiles below", entry)


def test_glossary_does_not_call_the_pruned_head_self_draft_a_truncated_model():
    entry = _entry("drafter spec")
    assert "first 18 layers" not in entry
    assert "all 18 of the target's layers" in entry
