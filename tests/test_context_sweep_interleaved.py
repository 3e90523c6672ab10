"""The timed context sweep is interleaved: prompts in the outer loop, each prompt's contexts in a
seeded random order, a short warm-up of every arm before every measured (prompt, context)
block, and a run interrupted part-way resumes per block to the very rows an uninterrupted run
gives (on the smoke profile's tiny model)."""

from __future__ import annotations

from typing import Any

import pytest

from specdec_lib.errors import SpecdecError
from specdec_lib.generate import Generator
from specdec_study import study
from specdec_study.runner.experiments import RUNNERS
from specdec_study.runner.interleaved import context_order, sweep_blocks

pytestmark = pytest.mark.usefixtures("single_thread")

DETERMINISTIC = ("prompt", "context", "order", "method", "tokens", "accepted", "proposed")


class Killed(Exception):
    pass


def counting(monkeypatch, kill_at: int | None = None) -> list[tuple[tuple[int, ...], int]]:
    """Record (prompt ids, max_new_tokens) of every generate_ids call; raise Killed on call
    number kill_at."""
    calls: list[tuple[tuple[int, ...], int]] = []
    real = Generator.generate_ids

    def generate_ids(self, ids, spec, sampling):
        calls.append((tuple(ids), spec.max_new_tokens))
        if kill_at is not None and len(calls) == kill_at:
            raise Killed
        return real(self, ids, spec, sampling)

    monkeypatch.setattr(Generator, "generate_ids", generate_ids)
    return calls


def smoke(tmp_path, monkeypatch, warmup_tokens: int | None = None) -> study.Session:
    monkeypatch.delenv("FORCE", raising=False)
    monkeypatch.setenv("WANDB_MODE", "disabled")
    S = study.setup("smoke", results_dir=str(tmp_path))
    if warmup_tokens is not None:
        S.profile["experiments"]["context_sweep"]["warmup_tokens"] = warmup_tokens
    return S


def records(result: Any) -> list[dict[str, Any]]:
    """A published result's per-prompt rows, in file order."""
    return result.rows.to_dict("records")


def key(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted(tuple(str(r[c]) for c in DETERMINISTIC) for r in rows)


def test_each_prompt_has_its_own_context_order_reproducible_from_the_seed():
    contexts = [10, 20, 50, 100]
    orders = [tuple(context_order(0, i, contexts)) for i in range(8)]
    assert all(sorted(o) == contexts for o in orders)  # a permutation of the contexts
    assert len(set(orders)) > 1  # not one order for every prompt
    assert orders == [tuple(context_order(0, i, contexts)) for i in range(8)]  # reproducible
    assert orders != [tuple(context_order(1, i, contexts)) for i in range(8)]  # seeded


def test_blocks_run_prompt_by_prompt_and_skip_contexts_without_that_prompt():
    cfg = {
        "seed": 3,
        "contexts": [10, 20, 200],
        "n_prompts_by_context": {"10": 3, "20": 3, "200": 1},
    }
    blocks = sweep_blocks(cfg)
    assert [b[0] for b in blocks] == [0, 0, 0, 1, 1, 2, 2]  # prompts in the outer loop
    for i in range(3):
        mine = [(c, k) for p, c, k in blocks if p == i]
        assert [k for _, k in mine] == list(range(len(mine)))  # order: position within prompt
        have = [c for c in cfg["contexts"] if i < cfg["n_prompts_by_context"][str(c)]]
        assert [c for c, _ in mine] == context_order(3, i, have)


def test_a_short_warm_up_precedes_every_measured_block(tmp_path, monkeypatch):
    S = smoke(tmp_path, monkeypatch, warmup_tokens=3)
    cfg = RUNNERS["context_sweep"].config(S)
    assert cfg["order"] == "interleaved" and cfg["warmup_tokens"] == 3
    arms, full = len(cfg["arms"]), cfg["max_new_tokens"]
    calls = counting(monkeypatch)
    result = study.run(S, "context_sweep")
    blocks = sweep_blocks(cfg)
    assert len(calls) == len(blocks) * 2 * arms
    assert len(result.rows) == len(blocks) * arms  # warm-ups are not recorded
    by_block = {(r["prompt"], r["context"]): r for r in records(result)}
    for j, (i, c, k) in enumerate(blocks):
        chunk = calls[j * 2 * arms : (j + 1) * 2 * arms]
        warm, measured = chunk[:arms], chunk[arms:]
        assert [t for _, t in warm] == [3] * arms and [t for _, t in measured] == [full] * arms
        assert len({ids for ids, _ in chunk}) == 1  # the warm-up runs on the block's prompt
        assert len(chunk[0][0]) == by_block[(i, c)]["prompt_tokens"]
        assert by_block[(i, c)]["order"] == k


def test_an_interrupted_sweep_resumes_per_block_to_the_uninterrupted_rows(tmp_path, monkeypatch):
    S = smoke(tmp_path / "whole", monkeypatch)
    whole = study.run(S, "context_sweep")
    cfg = RUNNERS["context_sweep"].config(S)
    arms, blocks = len(cfg["arms"]), sweep_blocks(cfg)
    finished = 5
    # killed during the second measured arm of block `finished` (after its warm-up)
    S = smoke(tmp_path / "cut", monkeypatch)
    calls = counting(monkeypatch, kill_at=finished * 2 * arms + arms + 2)
    with pytest.raises(Killed):
        study.run(S, "context_sweep")
    done_ids = {ids for ids, _ in calls[: finished * 2 * arms]}

    monkeypatch.undo()
    S = smoke(tmp_path / "cut", monkeypatch)
    calls = counting(monkeypatch)
    resumed = study.run(S, "context_sweep")
    assert len(calls) == (len(blocks) - finished) * 2 * arms  # finished blocks are not rerun
    assert not done_ids & {ids for ids, _ in calls}
    assert resumed.env["resumed_prompts"] == finished
    assert key(records(resumed)) == key(records(whole))
    assert [(r["context"], r["prompt"]) for r in records(resumed)] == [
        (r["context"], r["prompt"]) for r in records(whole)
    ]


def test_a_draft_on_fewer_prompts_runs_the_first_ones_paired_with_their_baseline(
    tmp_path, monkeypatch
):
    S = smoke(tmp_path, monkeypatch)
    e = S.profile["experiments"]["context_sweep"]
    arm = next(m for m in RUNNERS["context_sweep"].config(S)["arms"] if m != "baseline")
    e["draft_prompts"] = {arm: 1}
    cfg = RUNNERS["context_sweep"].config(S)
    assert cfg["n_prompts_by_arm"] == {arm: 1} and cfg["n_prompts"] > 1
    result = study.run(S, "context_sweep")
    rows = records(result)
    assert {r["prompt"] for r in rows if r["method"] == arm} == {0}
    assert {r["prompt"] for r in rows if r["method"] == "baseline"} == set(range(cfg["n_prompts"]))
    for c in cfg["contexts"]:
        s = result.summary["by_context"][str(c)]["arms"][arm]
        base = next(r for r in rows if r["method"] == "baseline" and r["context"] == c)
        mine = next(r for r in rows if r["method"] == arm and r["context"] == c)
        assert s["n_prompts"] == 1
        assert s["speedup"]["value"] == pytest.approx(base["wall_s"] / mine["wall_s"])


def test_draft_prompts_naming_no_sweep_draft_is_refused(tmp_path, monkeypatch):
    S = smoke(tmp_path, monkeypatch)
    S.profile["experiments"]["context_sweep"]["draft_prompts"] = {"nosuch": 1}
    with pytest.raises(SpecdecError, match="draft_prompts names"):
        RUNNERS["context_sweep"].config(S)
