"""The time estimate a notebook prints before it starts (runner/estimate.py): the target calls
counted from a made-up config, priced by made-up costs, checked by hand; and the table printed by
`study.print_estimate` on the smoke pair (measured there), or one line when all is stored."""

from __future__ import annotations

import math

import pytest

from specdec_study import study
from specdec_study.runner import estimate
from specdec_study.runner.estimate import Calls, Costs, minutes, work

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


def target(calls):
    return [c for c in calls if c.model == estimate.TARGET]


def test_a_paired_experiment_counts_prefill_and_decode_per_arm_and_prompt():
    calls = work("bigram", PAIR)
    # per prompt: each arm one prefill of 10 tokens; the baseline 10 steps; the draft (K = 4)
    # between ceil(10 / 5) = 2 and 10 verifications of 5 tokens
    assert sorted((c.low, c.high, c.tokens) for c in target(calls)) == sorted(
        [(3, 3, 10), (30, 30, 1), (3, 3, 10), (6, 30, 5)]
    )
    lo, hi = minutes(calls, COSTS)  # the draft model's own steps unpriced: they count nothing
    assert estimate.unpriced({"bigram": calls}, COSTS) == ["model:some/draft"]
    # seconds per prompt: baseline 0.025 + 10 x 0.01; draft 0.025 + 2 (or 10) x 0.02
    assert lo == pytest.approx(3 * (0.125 + 0.065) / 60)
    assert hi == pytest.approx(3 * (0.125 + 0.225) / 60)


def test_a_model_draft_makes_k_steps_of_its_own_per_verification_at_its_step_cost():
    calls = [c for c in work("bigram", PAIR) if c.model == "model:some/draft"]
    # per prompt: its prefill of the 10 prompt tokens, then 4 steps per verification call
    assert sorted((c.low, c.high, c.tokens) for c in calls) == [(3, 3, 10), (24, 120, 1)]
    draft = Costs({1: 0.002, 10: 0.004})
    with_draft = Costs(COSTS.seconds, drafts={"model:some/draft": draft})
    lo, hi = minutes(work("bigram", PAIR), with_draft)
    lo0, hi0 = minutes(work("bigram", PAIR), COSTS)
    assert lo - lo0 == pytest.approx((3 * 0.004 + 24 * 0.002) / 60)
    assert hi - hi0 == pytest.approx((3 * 0.004 + 120 * 0.002) / 60)
    # without a cache the draft feeds its prompt and half the new tokens at every step
    off = work("context_sweep_nocache", {**PAIR, "contexts": [10], "use_cache": False})
    assert {c.tokens for c in off if c.model and c.low > 3} == {10 + 10 // 2}


def test_a_sweep_counts_every_context_and_the_cache_off_run_feeds_its_whole_sequence():
    sweep = {**PAIR, "contexts": [10, 100], "n_prompts": 2}
    calls = target(work("context_sweep", sweep))
    assert sum(c.low for c in calls) == 2 * 2 * (1 + 10 + 1 + 2)
    assert sum(c.high for c in calls) == 2 * 2 * (1 + 10 + 1 + 10)
    off = work("context_sweep_nocache", {**sweep, "use_cache": False})
    steps = [c for c in off if c.low == 2 * 10]  # the baseline's steps at each context
    assert sorted(c.tokens for c in steps) == [1 + 10 + 5, 1 + 100 + 5]


def test_a_sweep_arm_on_fewer_prompts_is_counted_on_those_only():
    sweep = {**PAIR, "contexts": [10, 100], "n_prompts": 2}
    fewer = target(work("context_sweep", {**sweep, "n_prompts_by_arm": {"d": 1}}))
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
    forwards = [c for c in target(calls) if c.tokens in (10 + 8, 100 + 8, 500 + 8)]
    # the target + the quantized copy (priced as the target): 2 forwards per view of a scored
    # (document, context), the text view at context 10 on 2 documents; the model draft's own
    assert sorted((c.tokens, c.low) for c in forwards) == [(18, 2 * 6), (108, 2 * 4), (508, 2 * 1)]
    own = [(c.tokens, c.low) for c in calls if c.model == "model:x"]
    assert own == [(18, 6), (108, 4), (508, 1)]
    decode = [c for c in calls if c.tokens == 5]
    assert [(c.low, c.high) for c in decode] == [(8, 32), (8, 32), (2, 8)]


def test_a_batched_continuation_is_ceil_documents_over_b_batches_of_t_calls():
    cfg = {
        "contexts": [10, 100],
        "test_range": [10, 100],
        "text_contexts": [],
        "n_documents": 10,
        "n_documents_text": 0,
        "continuation_tokens": 8,
        "continuation_batch": 4,
        "arms": {"c": "bigram"},
    }
    calls = [c for c in work("agreement", cfg) if c.batch > 1]
    # ceil(10 / 4) = 3 batches per context: a prefill of the prompt (c + 1 tokens per row) and
    # T - 1 = 7 steps of 4 rows
    assert sorted((c.low, c.tokens, c.batch) for c in calls) == [
        (3, 11, 4), (3, 101, 4), (21, 1, 4), (21, 1, 4)]  # fmt: skip
    # a batched step: as measured at that batch, else as one call of B tokens
    assert Costs({1: 0.01, 5: 0.02}, batched={4: 0.012}).step(4) == 0.012
    assert COSTS.step(4) == COSTS.of(4) and COSTS.step(1) == COSTS.of(1)
    assert Costs({1: 0.01}, batched={8: 0.018}).step(4) == pytest.approx(0.01 + 0.008 * 3 / 7)
    step = Calls(21, 21, 1, 4)
    assert minutes([step], COSTS)[0] == pytest.approx(21 * COSTS.of(4) / 60)
    prefill = Calls(3, 3, 101, 4)  # a batch's prefill: one call of 4 x 101 tokens
    assert minutes([prefill], COSTS)[0] == pytest.approx(3 * COSTS.of(404) / 60)


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
    from specdec_study.runner.experiments import RUNNERS

    lo = hi = 0.0
    configs = {
        "agreement": RUNNERS["agreement"].config(S),
        "context_sweep": RUNNERS["context_sweep"].config(S),
    }
    drafts = {c.model for cfg in configs.items() for c in work(*cfg) if c.model}
    assert drafts == {"model:tiny-random-draft"}  # its own steps, measured on its model
    priced = Costs(COSTS.seconds, drafts={d: COSTS for d in drafts})
    for name, cfg in configs.items():
        a, b = minutes(work(name, cfg), priced)
        lo, hi = lo + a, hi + b
    assert rows["total"][-1] == estimate._span(lo, hi)


def test_nothing_is_measured_when_every_result_is_stored(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("FORCE", raising=False)
    S = study.setup("smoke-pair", results_dir=str(tmp_path))
    monkeypatch.setattr(type(S.store), "done", lambda *a, **k: True)
    monkeypatch.setattr(estimate, "measure_costs", lambda *a, **k: pytest.fail("measured"))
    assert study.print_estimate(S, ("agreement",)) is None
    assert "nothing to run" in capsys.readouterr().out


@pytest.mark.usefixtures("single_thread")
def test_a_batched_agreement_is_priced_at_a_batched_step_measured_on_the_target(
    tmp_path, capsys, monkeypatch
):
    import copy

    monkeypatch.delenv("FORCE", raising=False)
    S = study.setup("smoke-pair", results_dir=str(tmp_path))
    S.profile = copy.deepcopy(S.profile)
    S.profile["experiments"]["agreement"]["continuation_batch"] = 2
    seen = []
    real = estimate.measure_batched_step

    def measured(model, batch, **kw):
        seen.append(batch)
        return real(model, batch, **kw)

    monkeypatch.setattr(estimate, "measure_batched_step", measured)
    text = study.print_estimate(S, ("agreement",))
    assert seen == [2] and text is not None
    head = text.splitlines()[0]
    assert "a step of 2 rows" in head and "a step of draft model:tiny-random-draft" in head
    ms = float(head.split("a step of 2 rows ")[1].split(" ms")[0])
    assert ms > 0 and math.isfinite(ms)
