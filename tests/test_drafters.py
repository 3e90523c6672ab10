"""Drafters on their own: the bigram fit, prompt lookup, the model drafter's cache and q, and the
self-draft's early exit and pruned head."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import VOCAB, greedy_continuation, next_logits, random_prompt, stepwise_greedy

from specdec_lib.config import SamplingConfig
from specdec_lib.core.cache import CachedLM
from specdec_lib.core.decode import speculative_decode
from specdec_lib.core.draft import Draft, Drafter
from specdec_lib.core.sampling import logits_to_probs, make_generator
from specdec_lib.drafters.bigram import BigramDrafter
from specdec_lib.drafters.model import ModelDrafter
from specdec_lib.drafters.ngram import NgramDrafter, find_match
from specdec_lib.drafters.self_draft import SelfDrafter, early_exit_model, frequent_ids
from specdec_lib.errors import SpecdecError

pytestmark = pytest.mark.usefixtures("single_thread")

GREEDY = SamplingConfig()
GEN = make_generator(0)

# ---------------------------------------------------------------------------------------------
# bigram


def test_bigram_fit_picks_the_most_frequent_next_token():
    ids = [0, 1, 0, 2, 0, 2, 0, 2, 1, 3, 1, 3, 1, 0]
    # after 0: 1 once, 2 three times; after 1: 0 twice, 3 twice -> tie, lowest id 0
    # after 2: 0 twice, 1 once; after 3: 1 twice
    bigram = BigramDrafter.fit(ids, 5)
    assert [bigram.next_of(t) for t in range(4)] == [2, 0, 0, 1]


def test_bigram_ties_go_to_the_lowest_id():
    bigram = BigramDrafter.fit([4, 3, 4, 1, 4, 2, 4], 5)  # after 4: 3, 1, 2 once each
    assert bigram.next_of(4) == 1


def test_bigram_backs_off_to_the_most_frequent_token_for_unseen_contexts():
    ids = [1, 2, 2, 3, 2, 1, 4]  # 4 only ends the data; 0 never occurs
    bigram = BigramDrafter.fit(ids, 6)
    assert bigram.backoff == 2
    assert bigram.next_of(4) == 2 and bigram.next_of(0) == 2 and bigram.next_of(5) == 2
    assert bigram.next_of(99) == 2 and bigram.next_of(-1) == 2  # outside the table
    # overall frequency ties also go to the lowest id
    assert BigramDrafter.fit([3, 1, 3, 1], 4).backoff == 1


def test_bigram_chains_k_tokens_as_a_point_mass():
    bigram = BigramDrafter.fit([1, 2, 3, 1, 2, 3, 1], 4)
    draft = bigram.propose([0, 3], 5, GREEDY, GEN)
    assert draft.tokens == [1, 2, 3, 1, 2] and draft.q is None


@pytest.mark.parametrize("ids", [[], [3]])
def test_bigram_needs_two_tokens_of_fit_data(ids):
    with pytest.raises(SpecdecError):
        BigramDrafter.fit(ids, 5)


@pytest.mark.parametrize("ids", [[0, 5], [-1, 2]])
def test_bigram_rejects_ids_outside_the_vocabulary(ids):
    with pytest.raises(SpecdecError):
        BigramDrafter.fit(ids, 5)


# ---------------------------------------------------------------------------------------------
# n-gram lookup


def test_find_match_returns_the_most_recent_earlier_occurrence():
    seq = np.array([1, 2, 9, 1, 2, 8, 1, 2])
    assert find_match(seq, 2) == 3
    assert find_match(seq, 3) == -1
    assert find_match(np.array([1, 2]), 2) == -1
    assert find_match(np.array([7, 7, 7]), 2) == 0  # overlapping with the suffix is fine


def test_ngram_prefers_the_longest_match():
    # the 3-gram (5, 6, 7) occurred early, followed by 1; the 1-gram 7 occurred later, then 4
    seq = [5, 6, 7, 1, 0, 7, 4, 0, 5, 6, 7]
    assert NgramDrafter(max_ngram=3).lookup(seq, 2) == [1, 0]
    assert NgramDrafter(max_ngram=1).lookup(seq, 2) == [4, 0]


def test_ngram_takes_the_most_recent_match():
    seq = [3, 4, 1, 3, 4, 2, 9, 3, 4]
    assert NgramDrafter(max_ngram=2).lookup(seq, 3) == [2, 9, 3]


def test_ngram_overlapping_copy_fills_k_on_short_loops():
    assert NgramDrafter(max_ngram=3).lookup([1, 2, 1, 2, 1, 2], 5) == [1, 2, 1, 2, 1]
    assert NgramDrafter(max_ngram=3).lookup([5, 5], 4) == [5, 5, 5, 5]
    assert NgramDrafter(max_ngram=2).lookup([8, 1, 2, 3, 1, 2, 3], 7) == [1, 2, 3, 1, 2, 3, 1]


def test_ngram_min_size_is_respected():
    seq = [1, 2, 3, 9, 4, 5, 3]  # only a 1-gram match (3)
    assert NgramDrafter(max_ngram=3, min_ngram=1).lookup(seq, 2) == [9, 4]
    assert NgramDrafter(max_ngram=3, min_ngram=2).lookup(seq, 2) == []


def test_ngram_without_match_proposes_nothing_or_the_fallback():
    seq = [1, 2, 3, 4]
    assert NgramDrafter().propose(seq, 3, GREEDY, GEN) == Draft([])
    bigram = BigramDrafter.fit([4, 0, 0, 2, 2, 1], 5)  # 4 -> 0 -> 0 ...
    draft = NgramDrafter(fallback=bigram).propose(seq, 3, GREEDY, GEN)
    assert draft.tokens == [0, 0, 0] and draft.q is None


def test_ngram_with_a_full_match_does_not_call_the_fallback():
    class Boom(Drafter):
        def propose(self, seq, k, sampling, generator):
            raise AssertionError("fallback called although the lookup filled the draft")

    assert NgramDrafter(fallback=Boom()).propose([1, 2, 1], 4, GREEDY, GEN).tokens == [2, 1, 2, 1]


def test_ngram_rejects_a_sampling_fallback():
    class Sampler(Drafter):
        def propose(self, seq, k, sampling, generator):
            return Draft([0] * k, torch.full((k, 3), 1 / 3))

    with pytest.raises(SpecdecError):
        NgramDrafter(fallback=Sampler()).propose([1, 2], 2, GREEDY, GEN)


@pytest.mark.parametrize(("lo", "hi"), [(0, 3), (3, 2)])
def test_ngram_rejects_bad_sizes(lo, hi):
    with pytest.raises(SpecdecError):
        NgramDrafter(max_ngram=hi, min_ngram=lo)


# ---------------------------------------------------------------------------------------------
# model drafter


def test_model_drafter_greedy_proposes_the_draft_models_greedy_continuation(draft64):
    drafter = ModelDrafter(draft64)
    drafter.begin([])
    prompt = random_prompt(30, 7)
    assert drafter.propose(prompt, 6, GREEDY, GEN).tokens == stepwise_greedy(draft64, prompt, 6)


def test_model_drafter_cache_follows_rollbacks_exactly(draft64):
    """Cached and uncached drafters propose the same tokens through a history of partial
    acceptances, corrections and a fresh prompt."""
    cached, plain = ModelDrafter(draft64), ModelDrafter(draft64, use_cache=False)
    seq = random_prompt(31, 5)
    for d in (cached, plain):
        d.begin(seq)
    for step in range(6):
        a = cached.propose(seq, 4, GREEDY, GEN)
        b = plain.propose(seq, 4, GREEDY, GEN)
        assert a.tokens == b.tokens
        n_acc = step % 4  # keep some drafts, then a correction that differs from the draft
        seq = seq + a.tokens[:n_acc] + [(a.tokens[n_acc] + 1 + step) % VOCAB]
        # after syncing, the cache has exactly the tokens it claims
        assert cached.lm.cache.get_seq_length() == len(cached.lm.tokens)
    fresh = random_prompt(32, 3)
    for d in (cached, plain):
        d.begin(fresh)
    assert cached.propose(fresh, 3, GREEDY, GEN).tokens == stepwise_greedy(draft64, fresh, 3)


def test_model_drafter_sampling_returns_the_q_it_sampled_from(draft64):
    sampling = SamplingConfig(temperature=0.8, top_k=20, top_p=0.95)
    drafter = ModelDrafter(draft64)
    drafter.begin([])
    prompt = random_prompt(33, 4)
    draft = drafter.propose(prompt, 5, sampling, make_generator(1))
    assert draft.q.shape == (5, VOCAB)
    for i, tok in enumerate(draft.tokens):
        expected = logits_to_probs(next_logits(draft64, prompt + draft.tokens[:i])[None], sampling)
        torch.testing.assert_close(draft.q[i], expected[0], rtol=1e-6, atol=1e-7)
        assert float(draft.q[i, tok]) > 0
    again = ModelDrafter(draft64)
    again.begin([])
    assert again.propose(prompt, 5, sampling, make_generator(1)).tokens == draft.tokens


def test_model_drafter_narrow_vocab_only_proposes_shared_ids(draft64):
    drafter = ModelDrafter(draft64, vocab_size=40)
    drafter.begin([])
    prompt = random_prompt(34, 6)
    greedy = drafter.propose(prompt, 8, GREEDY, GEN).tokens
    assert all(t < 40 for t in greedy)
    sampled = drafter.propose(prompt, 8, SamplingConfig(temperature=1.0), make_generator(2))
    assert sampled.q.shape == (8, 40) and all(t < 40 for t in sampled.tokens)


def test_model_drafter_wide_vocab_is_sliced_to_the_target(wide_draft64):
    assert wide_draft64.config.vocab_size > VOCAB
    drafter = ModelDrafter(wide_draft64, vocab_size=VOCAB)
    drafter.begin([])
    draft = drafter.propose(random_prompt(35, 5), 6, SamplingConfig(temperature=1.0), GEN)
    assert draft.q.shape == (6, VOCAB) and all(t < VOCAB for t in draft.tokens)


def test_narrow_and_wide_vocab_drafters_run_under_sampling(target64, draft64, wide_draft64):
    """pad_vocab widens the narrow q for the verifier; the emitted ids stay in the target's."""
    sampling = SamplingConfig(temperature=1.0, seed=4)
    for drafter in (
        ModelDrafter(draft64, vocab_size=60),
        ModelDrafter(wide_draft64, vocab_size=VOCAB),
    ):
        gen = speculative_decode(
            CachedLM(target64),
            drafter,
            random_prompt(36, 5),
            k=3,
            max_new_tokens=12,
            sampling=sampling,
        )
        assert len(gen.tokens) == 12 and all(0 <= t < VOCAB for t in gen.tokens)


# ---------------------------------------------------------------------------------------------
# self-draft


@pytest.mark.parametrize("n_layers", [1, 2, 3])
def test_early_exit_equals_the_targets_first_layers(n_layers, target64):
    ids = torch.tensor([random_prompt(37, 11)])
    with torch.no_grad():
        hidden = target64(input_ids=ids, use_cache=False, output_hidden_states=True).hidden_states
        expected = target64.lm_head(target64.model.norm(hidden[n_layers]))
        got = early_exit_model(target64, n_layers)(input_ids=ids, logits_to_keep=0).logits
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-12)


def test_self_draft_leaves_the_target_untouched(target64):
    seq = random_prompt(38, 9)
    before = next_logits(target64, seq)
    head = target64.lm_head
    SelfDrafter(target64, n_layers=1, vocab_size=VOCAB)
    SelfDrafter(target64, n_layers=2, vocab_size=VOCAB, keep_ids=torch.arange(0, VOCAB, 2))
    assert target64.config.num_hidden_layers == 4 == target64.model.config.num_hidden_layers
    assert target64.lm_head is head and head.weight.shape == (VOCAB, 32)
    assert torch.equal(next_logits(target64, seq), before)


def test_self_draft_shares_the_targets_weights(target64):
    draft = SelfDrafter(target64, n_layers=2, vocab_size=VOCAB).lm.model
    assert draft.model.layers[0] is target64.model.layers[0]
    assert draft.model.embed_tokens is target64.model.embed_tokens


def test_self_draft_with_all_layers_is_always_accepted(target64):
    prompt, n = random_prompt(39, 6), 12
    drafter = SelfDrafter(target64, n_layers=4, vocab_size=VOCAB)
    gen = speculative_decode(CachedLM(target64), drafter, prompt, k=3, max_new_tokens=n)
    assert gen.tokens == greedy_continuation(target64, prompt, n)
    assert gen.stats.accepted_lengths == gen.stats.proposed_lengths


def test_pruned_head_proposes_the_argmax_over_kept_ids(target64):
    keep = torch.tensor(sorted(random_prompt(40, 40)))
    keep = torch.unique(keep)
    drafter = SelfDrafter(target64, n_layers=2, vocab_size=VOCAB, keep_ids=keep)
    assert drafter.keep == keep.numel() and drafter.lm.model.lm_head.weight.shape[0] == keep.numel()
    exit2 = early_exit_model(target64, 2)
    seq = random_prompt(41, 5)
    drafter.begin(seq)
    draft = drafter.propose(seq, 5, GREEDY, GEN)
    for i, tok in enumerate(draft.tokens):
        logits = next_logits(exit2, seq + draft.tokens[:i])
        assert tok == int(keep[logits[keep].argmax()])


def test_pruned_head_q_covers_the_full_vocabulary_with_zeros_outside_keep(target64):
    keep = torch.arange(3, VOCAB, 3)
    drafter = SelfDrafter(target64, n_layers=2, vocab_size=VOCAB, keep_ids=keep)
    seq = random_prompt(42, 5)
    drafter.begin(seq)
    draft = drafter.propose(seq, 4, SamplingConfig(temperature=1.0), make_generator(3))
    assert draft.q.shape == (4, VOCAB)
    outside = torch.ones(VOCAB, dtype=torch.bool)
    outside[keep] = False
    assert torch.equal(draft.q[:, outside], torch.zeros(4, int(outside.sum())))
    torch.testing.assert_close(draft.q.sum(-1), torch.ones(4))
    assert all(t in keep.tolist() for t in draft.tokens)


def test_self_draft_rejects_bad_layer_counts_and_layouts(target64):
    for n in (0, 5):
        with pytest.raises(SpecdecError):
            SelfDrafter(target64, n_layers=n, vocab_size=VOCAB)
    with pytest.raises(SpecdecError):
        early_exit_model(torch.nn.Linear(2, 2), 1)


def test_frequent_ids_keeps_the_most_frequent_sorted_with_ties_to_lower_ids():
    ids = [5, 5, 5, 2, 2, 7, 7, 1, 0]
    assert frequent_ids(ids, 8, 3).tolist() == [2, 5, 7]
    assert frequent_ids(ids, 8, 4).tolist() == [0, 2, 5, 7]  # 0 and 1 tie: 0 first
