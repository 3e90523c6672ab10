"""Batched greedy continuations (core.batched) on the smoke pair's target in float32: prompts of
different lengths, left-padded into one batch with a KV cache, continue token for token as the
one-sequence greedy loop does, including a row that stops at an EOS while the others go on, and
at the max_new_tokens edges."""

from __future__ import annotations

import pytest
import torch

from specdec_lib import study
from specdec_lib.core.batched import greedy_batch, greedy_continuations, left_pad
from specdec_lib.data import article_token_ids
from specdec_lib.runner.context import load_target
from specdec_lib.runner.prompts import eval_articles

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
