"""Per-prompt resume inside an experiment: an experiment killed part-way (a lost Colab runtime)
and run again computes only the prompts it had not finished; the published rows hold the
finished prompts' measurements unchanged, and the checkpoint file is gone afterwards."""

from __future__ import annotations

import pytest

from specdec_lib import study
from specdec_lib.generate import Generator
from specdec_lib.runner.context_sweep import sweep_blocks

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
    monkeypatch.delenv("FORCE", raising=False)
    monkeypatch.setenv("WANDB_MODE", "disabled")
    S = study.setup("smoke", results_dir=str(tmp_path), overrides={"n_prompts": 3})
    cfg = study.sweep_config(S, "context_sweep")
    blocks = len(sweep_blocks(cfg))  # one (prompt, context) each
    arms = len(cfg["arms"])
    per_block = 2 * arms  # the block's warm-up, then its measured arms
    # kill during the first measured arm of the fifth block
    calls = counting(monkeypatch, kill_at=4 * per_block + arms + 1)
    with pytest.raises(Killed):
        study.run_context_sweep(S)
    partial = list((tmp_path / "smoke").glob(".context_sweep.partial-*.jsonl"))
    assert len(partial) == 1 and len(partial[0].read_text().splitlines()) == 4
    assert not (tmp_path / "smoke" / "context_sweep").exists()  # nothing half-published
    finished = set(calls[: 4 * per_block])

    monkeypatch.undo()
    monkeypatch.delenv("FORCE", raising=False)
    monkeypatch.setenv("WANDB_MODE", "disabled")
    calls = counting(monkeypatch)
    result = study.run_context_sweep(S)
    # the rerun ran the remaining blocks only, each after its own warm-up: none finished before
    # ran again
    assert len(calls) == per_block * (blocks - 4)
    assert not finished & set(calls)
    assert len(result.rows) == blocks * arms
    assert result.env["resumed_prompts"] == 4
    assert not list((tmp_path / "smoke").glob(".context_sweep.partial-*"))


def test_force_discards_a_checkpoint(tmp_path, monkeypatch):
    monkeypatch.delenv("FORCE", raising=False)
    monkeypatch.setenv("WANDB_MODE", "disabled")
    S = study.setup("smoke", results_dir=str(tmp_path), overrides={"n_prompts": 2})
    calls = counting(monkeypatch, kill_at=2 + 2 + 1)  # warm-up (2 arms), prompt 0, then killed
    with pytest.raises(Killed):
        study.run_bigram(S)
    monkeypatch.undo()
    monkeypatch.setenv("WANDB_MODE", "disabled")
    calls = counting(monkeypatch)
    S.force = True
    result = study.run_bigram(S)
    assert len(calls) == 2 + 2 * 2 and result.env["resumed_prompts"] == 0
