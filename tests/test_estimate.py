"""The time estimate a notebook prints before it starts (runner/estimate.py): the target calls
counted from a made-up config, priced by made-up costs, checked by hand; and the table printed by
`study.print_estimate` on the smoke pair (measured there), or one line when all is stored."""

from __future__ import annotations

import math

import pytest

from specdec_lib import study
from specdec_lib.runner import estimate
from specdec_lib.runner.estimate import Calls, Costs, minutes, work

# a step 10 ms, a K + 1 = 5 token verification 20 ms, a 105-token call 120 ms
COSTS = Costs({1: 0.01, 5: 0.02, 105: 0.12})
PAIR = {
    "arms": {"baseline": "none", "d": "model:some/draft"},
    "k": 4,
    "n_prompts": 3,
    "context_tokens": 10,
    "max_new_tokens": 10,
}


def test_a_call_costs_the_measured_sizes_interpolated_and_extended():
    assert COSTS.of(1) == 0.01 and COSTS.of(5) == 0.02
    assert COSTS.of(10) == pytest.approx(0.025)  # 0.02 + 0.10 * 5 / 100
    assert COSTS.of(205) == pytest.approx(0.22)  # the last segment's slope beyond it
    assert Costs({1: 0.5}).of(99) == 0.5


def test_a_paired_experiment_counts_prefill_and_decode_per_arm_and_prompt():
    calls = work("bigram", PAIR)
    # per prompt: each arm one prefill of 10 tokens; the baseline 10 steps; the draft (K = 4)
    # between ceil(10 / 5) = 2 and 10 verifications of 5 tokens
    assert sorted((c.low, c.high, c.tokens) for c in calls) == sorted(
        [(3, 3, 10), (30, 30, 1), (3, 3, 10), (6, 30, 5)]
    )
    lo, hi = minutes(calls, COSTS)
    # seconds per prompt: baseline 0.025 + 10 x 0.01; draft 0.025 + 2 (or 10) x 0.02
    assert lo == pytest.approx(3 * (0.125 + 0.065) / 60)
    assert hi == pytest.approx(3 * (0.125 + 0.225) / 60)


def test_a_sweep_counts_every_context_and_the_cache_off_run_feeds_its_whole_sequence():
    sweep = {**PAIR, "contexts": [10, 100], "n_prompts": 2}
    calls = work("context_sweep", sweep)
    assert sum(c.low for c in calls) == 2 * 2 * (1 + 10 + 1 + 2)
    assert sum(c.high for c in calls) == 2 * 2 * (1 + 10 + 1 + 10)
    off = work("context_sweep_nocache", {**sweep, "use_cache": False})
    steps = [c for c in off if c.low == 2 * 10]  # the baseline's steps at each context
    assert sorted(c.tokens for c in steps) == [1 + 10 + 5, 1 + 100 + 5]


def test_a_sweep_arm_on_fewer_prompts_is_counted_on_those_only():
    sweep = {**PAIR, "contexts": [10, 100], "n_prompts": 2}
    fewer = work("context_sweep", {**sweep, "n_prompts_by_arm": {"d": 1}})
    # the baseline as before (2 prompts x 2 contexts x (1 + 10)); the draft on 1 prompt
    assert sum(c.low for c in fewer) == 2 * 2 * (1 + 10) + 1 * 2 * (1 + 2)
    assert sum(c.high for c in fewer) == 2 * 2 * (1 + 10) + 1 * 2 * (1 + 10)


def test_the_agreement_counts_a_continuation_and_a_forward_per_model():
    cfg = {
        "contexts": [10, 100, 500],
        "test_range": [10, 100],
        "text_contexts": [10],
        "n_documents": 4,
        "n_documents_other": 1,
        "n_documents_text": 2,
        "continuation_tokens": 8,
        "continuation_k": 4,
        "arms": {"a": "model:x", "b": "exit:9", "c": "bigram", "d": "quant:8:0"},
    }
    calls = work("agreement", cfg)
    forwards = [c for c in calls if c.tokens in (10 + 8, 100 + 8, 500 + 8)]
    # the target + 2 drafts of their own: 3 forwards per scored (document, context), the text
    # view at context 10 on 2 documents
    assert sorted((c.tokens, c.low) for c in forwards) == [
        (18, 3 * 2), (18, 3 * 4), (108, 3 * 4), (508, 3 * 1)]  # fmt: skip
    decode = [c for c in calls if c.tokens == 5]
    assert [(c.low, c.high) for c in decode] == [(8, 32), (8, 32), (2, 8)]


def test_the_table_has_a_row_per_experiment_and_the_total():
    works = {"bigram": work("bigram", PAIR), "baseline": [Calls(600, 600, 1)]}
    text = estimate.estimate_table(works, COSTS)
    lines = text.splitlines()
    assert "decode step 10.0 ms" in lines[0] and "5 tokens 20.0 ms" in lines[0]
    assert [ln.split()[0] for ln in lines[1:]] == ["experiment", "bigram", "baseline", "total"]
    assert lines[3].split()[-1] == "0.1"  # 600 steps of 10 ms: 6 s
    lo, hi = minutes(works["bigram"], COSTS)
    assert lines[-1].split()[-1] == estimate._span(lo + 0.1, hi + 0.1)


@pytest.mark.usefixtures("single_thread")
def test_a_notebook_prints_its_estimate_before_it_starts(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("FORCE", raising=False)
    S = study.setup("smoke-pair", results_dir=str(tmp_path))
    measured = {}
    real = estimate.measure_costs

    def fixed(model, k, longest, **kw):  # measured for real, priced at COSTS for the arithmetic
        measured.update(real(model, k, longest, **kw))
        return dict(COSTS.seconds)

    monkeypatch.setattr(estimate, "measure_costs", fixed)
    text = study.print_estimate(S, ("agreement", "context_sweep"))
    out = capsys.readouterr().out
    assert text and text in out
    assert {1, 5} <= set(measured) and all(s > 0 and math.isfinite(s) for s in measured.values())
    rows = {ln.split()[0]: ln.split() for ln in out.splitlines()[1:]}
    assert set(rows) == {"experiment", "agreement", "context_sweep", "total"}
    # the total is the sum of the two experiments' calls at these costs
    from specdec_lib.runner.agreement import agreement_config
    from specdec_lib.runner.context_sweep import sweep_config

    lo = hi = 0.0
    configs = {"agreement": agreement_config(S), "context_sweep": sweep_config(S, "context_sweep")}
    for name, cfg in configs.items():
        a, b = minutes(work(name, cfg), COSTS)
        lo, hi = lo + a, hi + b
    assert rows["total"][-1] == estimate._span(lo, hi)


def test_nothing_is_measured_when_every_result_is_stored(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("FORCE", raising=False)
    S = study.setup("smoke-pair", results_dir=str(tmp_path))
    monkeypatch.setattr(type(S.store), "done", lambda *a, **k: True)
    monkeypatch.setattr(estimate, "measure_costs", lambda *a, **k: pytest.fail("measured"))
    assert study.print_estimate(S, ("agreement",)) is None
    assert "nothing to run" in capsys.readouterr().out
