"""Batched greedy continuations (core.batched) on the smoke pair's target in float32: prompts of
different lengths, left-padded into one batch with a KV cache, continue token for token as the
one-sequence greedy loop does, including a row that stops at an EOS while the others go on, and
at the max_new_tokens edges."""

from __future__ import annotations

import copy
import json

import pytest
import torch

from specdec_lib.core.batched import greedy_batch, greedy_continuations, left_pad
from specdec_lib.data import article_token_ids
from specdec_lib.errors import SpecdecError
from specdec_study import study
from specdec_study.experiments import agreement as agreement_module
from specdec_study.runner import continuations
from specdec_study.runner.experiments import RUNNERS
from specdec_study.runner.prompts import eval_articles
from specdec_study.runner.session import load_target

pytestmark = pytest.mark.usefixtures("single_thread")
LENGTHS = (3, 17, 40, 9, 28)  # ragged prompts, the longest not first


@pytest.fixture(scope="module")
def target_and_prompts(tmp_path_factory):
    S = study.setup("smoke-pair", results_dir=str(tmp_path_factory.mktemp("batched")))
    loaded = load_target(S, "float32")
    ids = article_token_ids(loaded.tokenizer, eval_articles(S))
    bos = int(loaded.tokenizer.bos_token_id)
    prompts = [[bos, *ids[i][: n - 1]] for i, n in enumerate(LENGTHS)]
    return loaded, prompts


def one_by_one(model, prompt: list[int], n: int, eos: set[int]) -> list[int]:
    """The reference: one sequence, no padding and no cache, the argmax of the last position
    appended at every step, stopping after an EOS."""
    seq, out = list(prompt), []
    with torch.inference_mode():
        for _ in range(n):
            tok = int(model(input_ids=torch.tensor([seq])).logits[0, -1].argmax())
            out.append(tok)
            seq.append(tok)
            if tok in eos:
                break
    return out


def test_a_ragged_batch_continues_as_one_sequence_at_a_time(target_and_prompts):
    loaded, prompts = target_and_prompts
    pad = int(loaded.tokenizer.pad_token_id)
    got = greedy_batch(loaded.model, prompts, 12, pad_id=pad)
    assert got == [one_by_one(loaded.model, p, 12, set()) for p in prompts]
    assert all(len(g) == 12 for g in got)


def test_a_row_that_ends_stops_while_the_others_go_on(target_and_prompts):
    loaded, prompts = target_and_prompts
    pad = int(loaded.tokenizer.pad_token_id)
    free = [one_by_one(loaded.model, p, 12, set()) for p in prompts]
    # an "EOS" the second row emits at its 4th step and some other row never emits
    eos = next(t for t in free[1][3:] if any(t not in g for g in free) and free[1].index(t) >= 3)
    want = [one_by_one(loaded.model, p, 12, {eos}) for p in prompts]
    assert len(want[1]) < 12 and any(len(w) == 12 for w in want)  # one ends, one goes on
    got = greedy_batch(loaded.model, prompts, 12, pad_id=pad, eos_ids={eos})
    assert got == want
    assert all(w[-1] == eos for w in want if len(w) < 12)


@pytest.mark.parametrize("n", [0, 1, 2])
def test_max_new_tokens_edges(target_and_prompts, n):
    loaded, prompts = target_and_prompts
    pad = int(loaded.tokenizer.pad_token_id)
    got = greedy_batch(loaded.model, prompts, n, pad_id=pad)
    assert got == [one_by_one(loaded.model, p, n, set()) for p in prompts]
    assert [len(g) for g in got] == [n] * len(prompts)


@pytest.mark.parametrize("batch_size", [1, 2, 5, 8])
def test_any_batch_size_gives_the_same_continuations_in_order(target_and_prompts, batch_size):
    loaded, prompts = target_and_prompts
    pad = int(loaded.tokenizer.pad_token_id)
    want = [one_by_one(loaded.model, p, 6, set()) for p in prompts]
    got = greedy_continuations(loaded.model, prompts, 6, batch_size=batch_size, pad_id=pad)
    assert got == want


def test_left_padding_right_aligns_each_prompt_under_its_mask():
    ids, mask = left_pad([[5, 6], [7], [1, 2, 3]], pad_id=0)
    assert ids.tolist() == [[0, 5, 6], [0, 0, 7], [1, 2, 3]]
    assert mask.tolist() == [[0, 1, 1], [0, 0, 1], [1, 1, 1]]


# --- the agreement with continuation_batch: the same rows, resumable, its own config ----------


class Killed(Exception):
    pass


def batched_study(root, batch: int | None):
    """The smoke pair's study under `root`, its agreement's continuation_batch set to `batch`."""
    S = study.setup("smoke-pair", results_dir=str(root))
    S.profile = copy.deepcopy(S.profile)
    if batch is not None:
        S.profile["experiments"]["agreement"]["continuation_batch"] = batch
    return S


def per_prompt(S) -> str:
    return (S.store.dir("agreement") / "per_prompt.csv").read_text()


@pytest.fixture
def quiet(monkeypatch):
    monkeypatch.delenv("FORCE", raising=False)
    monkeypatch.setenv("WANDB_MODE", "disabled")


def test_a_batched_agreement_publishes_the_rows_of_the_one_at_a_time_pass(tmp_path, quiet):
    one = batched_study(tmp_path / "one", None)
    two = batched_study(tmp_path / "two", 2)
    study.run(one, "agreement")
    study.run(two, "agreement")
    assert per_prompt(one) == per_prompt(two)  # float64: the same continuations, the same rows
    cfg = json.loads((two.store.dir("agreement") / "config.json").read_text())
    assert cfg["continuation_batch"] == 2 and cfg["continuation_by"] == "none"
    # unset: the config as before
    assert "continuation_batch" not in RUNNERS["agreement"].config(one)


def test_a_killed_batched_agreement_resumes_without_recomputing(tmp_path, monkeypatch, quiet):
    calls: list[tuple[int, int]] = []
    real = agreement_module._rows_at

    def rows_at(lab, loaded, drafters, kinds, seq, cont, doc, p, context, view):
        calls.append((doc, context))
        if len(calls) == 3:  # document 0 at context 10 finished (two views), 1 not
            raise Killed
        return real(lab, loaded, drafters, kinds, seq, cont, doc, p, context, view)

    monkeypatch.setattr(agreement_module, "_rows_at", rows_at)
    S = batched_study(tmp_path / "killed", 2)
    with pytest.raises(Killed):
        study.run(S, "agreement")
    monkeypatch.setattr(agreement_module, "_rows_at", real)
    generated: list[list[int]] = []
    real_batch = continuations.greedy_continuations

    def counted(model, prompts, n, **kw):
        generated.append([len(p) for p in prompts])
        return real_batch(model, prompts, n, **kw)

    monkeypatch.setattr(continuations, "greedy_continuations", counted)
    study.run(S, "agreement")
    assert generated == [[11], [101, 101]]  # document 1 at 10 alone, then both at 100
    whole = batched_study(tmp_path / "whole", 2)
    study.run(whole, "agreement")
    assert per_prompt(S) == per_prompt(whole)
    assert json.loads((S.store.dir("agreement") / "env.json").read_text())["resumed_prompts"] == 1


def test_a_batch_with_a_lossless_run_named_is_refused_in_one_line(tmp_path):
    S = batched_study(tmp_path, 4)
    S.profile["experiments"]["agreement"]["continuation_by"] = "best"
    with pytest.raises(SpecdecError, match="continuation_batch 4 decodes plain greedy"):
        RUNNERS["agreement"].config(S)
