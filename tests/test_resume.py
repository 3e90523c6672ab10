"""Per-prompt resume inside an experiment: an experiment killed part-way (a lost Colab runtime)
and run again computes only the prompts it had not finished; the published rows hold the
finished prompts' measurements unchanged, and the checkpoint file is gone afterwards."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from specdec_lib.generate import Generator
from specdec_study import study
from specdec_study.results.store import read_rows, write_rows
from specdec_study.runner.experiments import RUNNERS
from specdec_study.runner.interleaved import sweep_blocks

pytestmark = pytest.mark.usefixtures("single_thread")


class Killed(Exception):
    pass


def counting(monkeypatch, kill_at: int | None = None) -> list[tuple[int, ...]]:
    """Record the prompt of every generate_ids call; raise Killed on call number kill_at."""
    calls: list[tuple[int, ...]] = []
    real = Generator.generate_ids

    def generate_ids(self, ids, spec, sampling):
        calls.append(tuple(ids))
        if kill_at is not None and len(calls) == kill_at:
            raise Killed
        return real(self, ids, spec, sampling)

    monkeypatch.setattr(Generator, "generate_ids", generate_ids)
    return calls


def test_a_killed_experiment_resumes_per_prompt(tmp_path, monkeypatch):
    """A rerun computes only the unfinished blocks and publishes the checkpointed rows as stored.

    Planted bugs it catches: resume recomputes a checkpointed prompt (the calls), drops one (the
    row count), or publishes other rows than the checkpoint's (planted and seen failing:
    `Checkpoint.done` handing back each row with its `wall_s` changed, and handing back a
    prompt's rows in reverse arm order)."""
    monkeypatch.delenv("FORCE", raising=False)
    monkeypatch.setenv("WANDB_MODE", "disabled")
    S = study.setup("smoke", results_dir=str(tmp_path), overrides={"n_prompts": 3})
    cfg = RUNNERS["context_sweep"].config(S)
    blocks = len(sweep_blocks(cfg))  # one (prompt, context) each
    arms = len(cfg["arms"])
    per_block = 2 * arms  # the block's warm-up, then its measured arms
    # kill during the first measured arm of the fifth block
    calls = counting(monkeypatch, kill_at=4 * per_block + arms + 1)
    with pytest.raises(Killed):
        study.run(S, "context_sweep")
    partial = list((tmp_path / "smoke").glob(".context_sweep.partial-*.jsonl"))
    assert len(partial) == 1 and len(partial[0].read_text().splitlines()) == 4
    stored = checkpointed_rows(partial[0], tmp_path / "stored.csv")
    assert not (tmp_path / "smoke" / "context_sweep").exists()  # nothing half-published
    finished = set(calls[: 4 * per_block])

    monkeypatch.undo()
    monkeypatch.delenv("FORCE", raising=False)
    monkeypatch.setenv("WANDB_MODE", "disabled")
    calls = counting(monkeypatch)
    result = study.run(S, "context_sweep")
    # the rerun ran the remaining blocks only, each after its own warm-up: none finished before
    # ran again
    assert len(calls) == per_block * (blocks - 4)
    assert not finished & set(calls)
    assert len(result.rows) == blocks * arms
    assert result.env["resumed_prompts"] == 4
    assert not list((tmp_path / "smoke").glob(".context_sweep.partial-*"))
    published_equal_checkpointed(result.rows, stored, cfg)


KEY = ["context", "prompt", "method"]


def checkpointed_rows(partial: Path, scratch: Path) -> pd.DataFrame:
    """The checkpoint's rows as publication writes them (through the same CSV writer)."""
    rows: list[dict[str, Any]] = []
    for line in partial.read_text(encoding="utf-8").splitlines():
        rows += json.loads(line)["rows"]
    write_rows(scratch, rows)
    return read_rows(scratch)


def published_equal_checkpointed(
    published: pd.DataFrame, stored: pd.DataFrame, cfg: dict[str, Any]
) -> None:
    """Every checkpointed row is published once, equal in every column (tokens, acceptance,
    call counts, timings as measured by the killed run), and the published rows keep the
    experiment's order (by context, then prompt, then arm) with resumed blocks in place."""
    assert len(stored) == 4 * len(cfg["arms"])
    for col in ("tokens", "wall_s", "accepted", "target_calls"):
        assert col in stored.columns, col
    assert not published.duplicated(KEY).any()
    got = published.set_index(KEY).loc[stored.set_index(KEY).index].reset_index()
    pd.testing.assert_frame_equal(got[stored.columns], stored, check_dtype=False)
    arm_order = {m: n for n, m in enumerate(cfg["arms"])}
    context_order = {c: n for n, c in enumerate(cfg["contexts"])}
    keys = list(
        zip(
            published["context"].map(context_order),
            published["prompt"],
            published["method"].map(arm_order),
            strict=True,
        )
    )
    assert keys == sorted(keys)


def test_force_discards_a_checkpoint(tmp_path, monkeypatch):
    monkeypatch.delenv("FORCE", raising=False)
    monkeypatch.setenv("WANDB_MODE", "disabled")
    S = study.setup("smoke", results_dir=str(tmp_path), overrides={"n_prompts": 2})
    calls = counting(monkeypatch, kill_at=2 + 2 + 1)  # warm-up (2 arms), prompt 0, then killed
    with pytest.raises(Killed):
        study.run(S, "bigram")
    monkeypatch.undo()
    monkeypatch.setenv("WANDB_MODE", "disabled")
    calls = counting(monkeypatch)
    S.force = True
    result = study.run(S, "bigram")
    assert len(calls) == 2 + 2 * 2 and result.env["resumed_prompts"] == 0


def test_a_forced_recompute_cut_short_leaves_nothing_once_the_result_is_reused(
    tmp_path, monkeypatch
):
    """FORCE=1 over a whole result, killed after a prompt (or in its publish): the old result
    stays whole and is reused by the next run, which also drops the checkpoint and the temporary
    folder that nothing would ever resume or replace."""
    monkeypatch.delenv("FORCE", raising=False)
    monkeypatch.setenv("WANDB_MODE", "disabled")
    S = study.setup("smoke", results_dir=str(tmp_path), overrides={"n_prompts": 2})
    first = study.run(S, "bigram")
    calls = counting(monkeypatch, kill_at=2 + 2 + 1)  # warm-up (2 arms), prompt 0, then killed
    S.force = True
    with pytest.raises(Killed):
        study.run(S, "bigram")
    assert list((tmp_path / "smoke").glob(".bigram.partial-*"))
    killed_in_publish = tmp_path / "smoke" / ".bigram.k1ll3d"  # what `writing` leaves on SIGKILL
    killed_in_publish.mkdir()
    (killed_in_publish / "summary.json").write_text("{}")
    S.force = False
    again = study.run(S, "bigram")
    assert again.path == first.path and len(calls) == 2 + 2 + 1  # reused, nothing recomputed
    assert not list((tmp_path / "smoke").glob(".bigram.partial-*"))
    assert not killed_in_publish.exists()


def test_a_killed_distribution_check_resumes_per_method_and_prompt(tmp_path, monkeypatch):
    """Killed inside the first sampling distribution check: the rerun redoes none of the
    (temperature, method, prompt) tests it had finished, and publishes the same tests as an
    uninterrupted run."""
    from specdec_study.runner import distribution

    real = distribution.first_token_samples

    def recording(kill_at: int | None) -> list[tuple]:
        calls: list[tuple] = []

        def first_token_samples(generator, prompt, k, sampling, seeds):
            calls.append((sampling.temperature, k, tuple(prompt), tuple(seeds)[:1]))
            if kill_at is not None and len(calls) == kill_at:
                raise Killed
            return real(generator, prompt, k, sampling, seeds)

        monkeypatch.setattr(distribution, "first_token_samples", first_token_samples)
        return calls

    monkeypatch.delenv("FORCE", raising=False)
    monkeypatch.setenv("WANDB_MODE", "disabled")
    S = study.setup("smoke", results_dir=str(tmp_path / "killed"))
    calls = recording(kill_at=4)  # baseline's two prompts and the first draft arm's first done
    with pytest.raises(Killed):
        study.run(S, "sampling")
    finished = set(calls[:3])
    calls = recording(kill_at=None)
    study.run(S, "sampling")
    assert calls and not finished & set(calls)
    whole = study.setup("smoke", results_dir=str(tmp_path / "whole"))
    study.run(whole, "sampling")
    tests = [
        (tmp_path / d / "smoke/sampling/distribution.csv").read_text() for d in ("killed", "whole")
    ]
    assert tests[0] == tests[1]
