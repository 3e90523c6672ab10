"""The generated reading of a result directory (reporting.readings) on synthetic results."""

from __future__ import annotations

import re

import pytest
from test_book import write_synthetic

from specdec_study.pages import NOTEBOOKS
from specdec_study.reporting import readings as present


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    return write_synthetic(tmp_path_factory.mktemp("present"), "synthetic", notebooks=False)


def test_every_reading_says_what_ran_with_n_and_intervals(synthetic):
    for exps in NOTEBOOKS.values():
        for exp in exps:
            text = present.reading(synthetic / exp)
            assert text.startswith(f"### `{exp}`") and "**What was run.**" in text, exp
            assert re.search(r"n = \d+ prompts", text), exp
            assert "**Headline**" in text and re.search(r"\[[-0-9.]+[x%]?, [-0-9.]+", text), exp
            assert not re.search(r"\bnan\b|\bNaN\b|\bNone\b", text), exp
            tables = [ln for ln in text.splitlines() if ln.startswith("|")]
            assert tables, exp
            widths = {ln.count("|") for ln in tables if not ln.startswith("|--")}
            assert all(w >= 3 for w in widths), exp


def test_k_sweep_table_shows_every_k_it_ran(synthetic):
    import json

    ks = json.loads((synthetic / "k_sweep" / "summary.json").read_text())["table"]
    rows = present.table_rows(ks)
    assert [r["K"] for r in rows] == [str(t["k"]) for t in ks]


def test_numbers_are_rounded_with_units():
    assert present.interval(1.23456, 1.0, 1.5, "x") == "1.23x [1.00x, 1.50x]"
    assert present.interval(0.8765, None, None, "%") == "87.6%"
    assert present.fmt(float("nan"), "x") == present.DASH
    assert present.fmt(None) == present.DASH


def test_every_figure_the_batch_draws_has_a_written_caption():
    from test_notebooks import FIGURES

    names = {f.removesuffix(".png") for figs in FIGURES.values() for f in figs}
    assert names <= set(present.CAPTIONS), names - set(present.CAPTIONS)


def test_reconciliation_lists_each_measurement_of_the_same_setup(synthetic):
    from specdec_study.reporting import reconcile

    spec, k = reconcile.setup_of(synthetic)
    rows = reconcile.measurements(synthetic)
    exps = {r["experiment"] for r in rows}
    assert {"transformer_draft", "context_sweep"} <= exps, exps
    assert "context_sweep_nocache" not in exps and "sampling" not in exps  # other setups
    text = reconcile.explanation(rows, spec, k)
    assert f"`{spec}` at K = {k}" in text and "context tokens" in text
    assert ("share a common value" in text) != ("do not all share" in text)


def test_the_agreement_rule_is_one_common_value_in_every_interval():
    from specdec_study.reporting.reconcile import overlap

    assert overlap([{"ci_low": 0.9, "ci_high": 1.1}, {"ci_low": 1.0, "ci_high": 1.2}])
    assert not overlap([{"ci_low": 0.9, "ci_high": 0.95}, {"ci_low": 1.0, "ci_high": 1.2}])


def test_declared_figures_are_the_committed_results_figures():
    """Each experiment's declared figures are exactly the PNGs of its committed embedded result
    (what execute draws is what the study has always written)."""
    from specdec_lib import ROOT
    from specdec_study.results import catalog

    for e in catalog.EXPERIMENTS:
        have = sorted(p.name for p in (ROOT / "results/embedded" / e / "figures").glob("*.png"))
        assert have == sorted(f.file for f in catalog.experiment(e).figures), e


def test_the_agreement_reading_counts_documents_and_positions_not_prompts():
    """The agreement's config has n_documents and continuation_tokens, no n_prompts: its reading
    once said "n = None prompts, None new tokens"."""
    ran = {"profile": "p", "target": "t", "dtype": "float32", "device": "cpu"}
    config = {**ran, "experiment": "agreement", "n_documents": 40, "continuation_tokens": 64}
    text = present.what_was_run({"experiment": "agreement"}, config, {})
    assert "n = 40 documents, 64 teacher-forced positions each" in text
    assert "None" not in text
    timed = present.what_was_run(
        {"experiment": "x"}, {**ran, "n_prompts": 6, "max_new_tokens": 32}, {}
    )
    assert "n = 6 prompts, 32 new tokens each" in timed


def test_every_reading_says_what_the_run_showed_with_n_and_the_hypotheses_it_feeds(synthetic):
    """Not only what ran: each reading states what the files show (an interval against 1x, a
    sweep's first against its last cell, the sampling checks), with n, and names the hypotheses
    its files feed."""
    for exps in NOTEBOOKS.values():
        for exp in exps:
            text = present.reading(synthetic / exp)
            assert "**What it showed.**" in text, exp
            shown = text.split("**What it showed.**")[1]
            assert re.search(r"n = \d+", shown), exp
            for h in present.bears_on(exp):
                assert h in shown and "paradox" in shown, (exp, h)
    assert present.bears_on("agreement") == ["H3"]
    assert set(present.bears_on("context_sweep")) == {"H1", "H2", "H4"}
    bigram = present.reading(synthetic / "bigram").split("**What it showed.**")[1]
    said = r"`bigram` ran at [0-9.]+x \[[0-9.]+x, [0-9.]+x\] the baseline's speed"
    assert re.search(said, bigram)


def test_a_speedup_reading_follows_its_interval():
    def said(lo, hi):
        arms = {"baseline": {"n_prompts": 5}, "d": {"n_prompts": 5, "speedup": {
            "value": (lo + hi) / 2, "ci_low": lo, "ci_high": hi}}}  # fmt: skip
        return present.showed({"experiment": "bigram", "arms": arms})

    assert "interval above 1.00x" in said(1.1, 1.3)
    assert "interval below 1.00x" in said(0.7, 0.9)
    assert "includes 1.00x" in said(0.9, 1.1)
