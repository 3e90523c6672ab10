"""The quick path's time on a T4 at stated costs (runner/t4.py): the 4B's and the 1B's step from
their parameter formula in bfloat16 over the T4's bandwidth share, a batch priced as one step up
to the ridge, and colab-t4-quick's printed estimate within the issue's 20 minutes."""

from __future__ import annotations

import re

import pytest

from specdec_study.environment.profiles import load_profile
from specdec_study.runner import t4
from specdec_study.runner.estimate import minutes, unpriced
from specdec_study.runner.real_shapes import DRAFT, SHAPES, TARGET


def test_a_stated_step_reads_the_weights_in_bfloat16_at_the_stated_share():
    for model in (TARGET, DRAFT):
        weights = SHAPES[model].params() * 2  # bfloat16
        assert t4.call_seconds(model, 1) == pytest.approx(
            weights / (t4.T4_BANDWIDTH * t4.BANDWIDTH_SHARE)
        )
    # the 4B: about 7.8 GB a step, 40 ms at 60% of 320 GB/s
    assert 0.035 < t4.call_seconds(TARGET, 1) < 0.045


def test_rows_up_to_the_ridge_cost_one_step_and_beyond_it_more():
    ridge = t4.ridge_rows()
    assert t4.call_seconds(TARGET, ridge) == t4.call_seconds(TARGET, 1)
    assert t4.call_seconds(TARGET, ridge + 1) > t4.call_seconds(TARGET, 1)


def test_the_quick_profile_batches_its_continuations_below_the_ridge():
    ag = load_profile(t4.QUICK)["experiments"]["agreement"]
    assert 1 < int(ag["continuation_batch"]) <= t4.ridge_rows()


def test_the_printed_quick_estimate_is_within_twenty_minutes(capsys):
    lo, hi = t4.print_t4_estimate()
    out = capsys.readouterr().out
    assert 0 < lo <= hi <= t4.BUDGET_MINUTES
    total = next(ln for ln in out.splitlines() if ln.split()[:1] == ["total"])
    printed = [float(x) for x in re.findall(r"\d+(?:\.\d+)?", total)]
    assert max(printed) <= t4.BUDGET_MINUTES
    assert max(printed) == pytest.approx(hi, abs=0.51)  # the table rounds
    # the stated step times and what is not included are printed with it
    assert f"{1000 * t4.call_seconds(TARGET, 1):.1f} ms" in out
    assert "not included" in out and "11 GB" in out


def test_the_estimate_counts_the_draft_steps_and_would_overrun_without_the_batch():
    works, k = t4.quick_works()
    costs = t4.t4_costs(works, k)
    drafts = {c.model for w in works.values() for c in w if c.model}
    assert "model:google/gemma-3-1b-pt" in drafts and not unpriced(works, costs)
    batched = minutes(works["agreement"], costs)[1]
    # the same documents one sequence at a time: T - 1 target steps per (document, context)
    ag = load_profile(t4.QUICK)["experiments"]["agreement"]
    steps = ag["n_documents"] * len(ag["contexts"]) * (ag["continuation_tokens"] - 1)
    batched_steps = sum(c.low for c in works["agreement"] if c.batch > 1 and c.tokens == 1)
    assert batched_steps * ag["continuation_batch"] >= steps  # every document decoded
    assert steps * costs.of(1) / 60 > batched + 5  # the batch saves more than five minutes
