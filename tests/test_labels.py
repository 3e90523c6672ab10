"""What the book's fixed pages say about the method matches the code: the glossary's interval
rule is stats.bca_allowed's, and its example self-draft is described as all of the target's
layers. Reads book/glossary.md and calls torch-free code only."""

from __future__ import annotations

import re
from pathlib import Path

from specdec_study.analysis import stats

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
    entry = _entry("self-draft")
    assert "first 18 layers" not in entry
    assert "all 18 of the target's layers" in entry


def _embedded_with_identity(ident: dict | None):
    """The committed embedded profile, its transformer_draft's identity record replaced."""
    import copy

    from specdec_study.results.read import load_results

    p = load_results("embedded", ROOT / "results")
    res = copy.deepcopy(p.get("transformer_draft"))
    if ident is None:
        res.summary.pop("identity_by_dtype", None)
    else:
        res.summary["identity_by_dtype"] = ident
    p.results["transformer_draft"] = res
    return p


def test_the_introduction_promises_an_explanation_of_divergences_only_where_there_were_some():
    from specdec_study.reporting import identity

    same = {"bfloat16": {"dtype": "bfloat16", "identical_fraction": 1.0, "n_prompts": 6}}
    clause = identity.identity_clause(_embedded_with_identity(same))
    assert "not always" not in clause and "0 of 6 in bfloat16" in clause
    assert "no margin to plot" in identity.identity_sentence(_embedded_with_identity(same))
    differ = {"bfloat16": {"dtype": "bfloat16", "identical_fraction": 0.5, "n_prompts": 6,
                           "divergence_margins": [0.1, 0.2, 0.05]}}  # fmt: skip
    clause = identity.identity_clause(_embedded_with_identity(differ))
    assert "not always token-identical (3 of 6 in bfloat16 differed)" in clause
    assert "no margin" not in identity.identity_sentence(_embedded_with_identity(differ))
    assert "whether" in identity.identity_clause(_embedded_with_identity(None))


def test_the_transformer_draft_beside_the_earlier_study_states_its_measured_cost():
    """self:18:16384 was set beside the earlier study's 1B draft without saying it costs about
    what the target does; the note reads c from every arm that ran that spec."""
    from specdec_study.reporting import tables
    from specdec_study.results.read import load_results

    p = load_results("embedded", ROOT / "results")
    cs = [
        a["cost_ratio"]
        for e in tables.COST_EXPERIMENTS
        for name, a in p.get(e).arms.items()
        if p.get(e).config["arms"].get(name) == "self:18:16384"
    ]
    note = tables.transformer_note(p)
    assert "`self:18:16384`" in note and "about what the target's does" in note
    assert f"{min(cs):.2f}-{max(cs):.2f} over the {len(cs)} arms" in note
