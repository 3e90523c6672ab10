"""The shared-body drafter (`drafters.shared`): it runs the target's own body on the target's own
cache and leaves only the LM head to the verifier. Greedy output equals stepwise greedy decoding
(uncached recomputation) with every kept set from "all ids" (every guess right) to a handful
(almost every guess wrong), at EOS and length edges, behind prompt lookup, in float64 and float32;
sampled continuations follow the target's exact distribution."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import torch
from conftest import (
    VOCAB,
    check_stats,
    greedy_continuation,
    next_logits,
    random_prompt,
    stepwise_greedy,
    tiny_gemma,
)
from scipy.stats import chisquare

from specdec_lib.config import SamplingConfig
from specdec_lib.core.cache import CachedLM
from specdec_lib.core.decode import speculative_decode
from specdec_lib.core.sampling import logits_to_probs, make_generator
from specdec_lib.drafters.adaptive import AdaptiveDrafter
from specdec_lib.drafters.lookup import LookupDrafter
from specdec_lib.drafters.shared import SharedBodyDrafter
from specdec_lib.errors import SpecdecError

pytestmark = pytest.mark.usefixtures("single_thread")

CASES = [(1, 3), (2, 1), (5, 4), (9, 7), (14, 2), (20, 5)]  # (prompt length, K)
N_NEW = 12


def keep(n: int, seed: int = 0) -> torch.Tensor:
    """n distinct ids, sorted (which ids does not matter for losslessness)."""
    g = torch.Generator().manual_seed(seed)
    return torch.sort(torch.randperm(VOCAB, generator=g)[:n]).values


def run(model, drafter, prompt, k, n, **kw):
    target = CachedLM(model)
    gen = speculative_decode(target, drafter, prompt, k=k, max_new_tokens=n, **kw)
    check_stats(gen, k=k, prompt_len=len(prompt))  # the body calls are not verifications
    return gen


@pytest.mark.parametrize("n_keep", [VOCAB, 48, 4])
def test_greedy_shared_body_matches_stepwise_greedy(n_keep, target64):
    drafter = SharedBodyDrafter(keep(n_keep), VOCAB)
    accepted = proposed = 0
    for i, (length, k) in enumerate(CASES):
        prompt = random_prompt(300 + i, length)
        gen = run(target64, drafter, prompt, k, N_NEW)
        assert gen.tokens == greedy_continuation(target64, prompt, N_NEW), (n_keep, prompt, k)
        accepted, proposed = accepted + gen.stats.accepted, proposed + gen.stats.proposed
    assert proposed > 0
    if n_keep == VOCAB:  # the pruned head is the head: every guess is the target's own choice
        assert accepted == proposed
    if n_keep == 4:  # almost every guess is wrong: rejections at the first position
        assert accepted < proposed / 2


def test_greedy_shared_body_matches_stepwise_greedy_float32():
    model = tiny_gemma(seed=0, n_layers=4, dtype=torch.float32)
    drafter = SharedBodyDrafter(keep(48), VOCAB)
    for i, (length, k) in enumerate(CASES[::2]):
        prompt = random_prompt(310 + i, length)
        gen = run(model, drafter, prompt, k, N_NEW)
        assert gen.tokens == stepwise_greedy(model, prompt, N_NEW), (prompt, k)


def test_cache_holds_exactly_the_emitted_sequence_after_each_call(target64):
    """After a generation the target's cache holds prompt + tokens but the last, and its logits
    for the next position equal an uncached forward's."""
    prompt, k = random_prompt(320, 6), 4
    target = CachedLM(target64)
    gen = speculative_decode(target, SharedBodyDrafter(keep(20), VOCAB), prompt, k=k,
                             max_new_tokens=15)  # fmt: skip
    seq = prompt + gen.tokens
    assert target.tokens == seq[:-1]
    got = target.extend([seq[-1]], 1)[0]
    assert torch.allclose(got, next_logits(target64, seq), atol=1e-9)


@pytest.mark.parametrize("k", [1, 3, 4])
def test_max_new_tokens_edges_give_exact_lengths(k, target64):
    prompt = random_prompt(330, 4)
    ref = greedy_continuation(target64, prompt, 3 * (k + 1) + 2)
    for n in (0, 1, k, k + 1, 2 * (k + 1) + 1, 3 * (k + 1) - 1):
        for n_keep in (VOCAB, 6):
            gen = run(target64, SharedBodyDrafter(keep(n_keep), VOCAB), prompt, k, n)
            assert gen.tokens == ref[:n], (k, n, n_keep)
            assert all(d <= n - 1 for d in gen.stats.proposed_lengths)


def test_eos_inside_an_accepted_draft_stops_exactly_there(target64):
    prompt, k = random_prompt(340, 7), 5
    ref = greedy_continuation(target64, prompt, 30)
    m = next(i for i in range(2, 20) if i % (k + 1) not in (0, k) and ref[i] not in ref[:i])
    gen = run(target64, SharedBodyDrafter(keep(VOCAB), VOCAB), prompt, k, 30, eos_ids=[ref[m]])
    assert gen.tokens == stepwise_greedy(target64, prompt, 30, eos=ref[m]) == ref[: m + 1]
    assert gen.stats.stopped_by == "eos"
    assert gen.stats.accepted_lengths[-1] == k  # the EOS was an accepted draft token


def test_behind_prompt_lookup_both_kinds_of_draft_are_lossless(target64):
    """Lookup copies are verified by a target pass, shared-body guesses by the head alone."""
    drafter = LookupDrafter(SharedBodyDrafter(keep(32), VOCAB), k_fallback=4)
    hidden_drafts = 0
    for i, (length, k) in enumerate(CASES):
        prompt = random_prompt(350 + i, length) * 2  # a repeat for the lookup to copy
        gen = run(target64, drafter, prompt, k, N_NEW)
        assert gen.tokens == greedy_continuation(target64, prompt, N_NEW), (prompt, k)
        hidden_drafts += gen.stats.proposed
    assert hidden_drafts > 0


def test_with_an_adaptive_k_the_shared_body_stays_lossless(target64):
    """AdaptiveDrafter hands its target on to the shared-body drafter it wraps."""
    drafter = AdaptiveDrafter(SharedBodyDrafter(keep(24), VOCAB), k_start=2, k_max=6)
    for i, (length, k) in enumerate(CASES):
        prompt = random_prompt(370 + i, length)
        gen = run(target64, drafter, prompt, 6, N_NEW)
        assert gen.tokens == greedy_continuation(target64, prompt, N_NEW), (prompt, k)
        assert gen.stats.proposed > 0


def test_refuses_a_target_without_kv_cache(target64):
    target = CachedLM(target64, use_cache=False)
    with pytest.raises(SpecdecError, match="KV cache"):
        speculative_decode(target, SharedBodyDrafter(keep(8), VOCAB), [1, 2], k=2,
                           max_new_tokens=4)  # fmt: skip


def exact_two_token_distribution(model, prompt, sampling) -> dict[tuple[int, int], float]:
    p1 = logits_to_probs(next_logits(model, prompt)[None], sampling)[0].numpy()
    out = {}
    for a in np.flatnonzero(p1 > 0):
        p2 = logits_to_probs(next_logits(model, prompt + [int(a)])[None], sampling)[0].numpy()
        for b in np.flatnonzero(p2 > 0):
            out[(int(a), int(b))] = float(p1[a] * p2[b])
    return out


def pvalue(samples: list[tuple[int, ...]], exact: dict[tuple[int, ...], float]) -> float:
    """Chi-square of sampled tuples against exact probabilities, cells under 5 expected pooled;
    0 if a tuple of probability 0 was sampled (a lossless sampler never emits one)."""
    n = len(samples)
    seen = Counter(samples)
    if not set(seen) <= set(exact):
        return 0.0
    cells = sorted((p * n, seen[c]) for c, p in exact.items())
    exp, obs, pe, po = [], [], 0.0, 0
    for e, o in cells:
        if e < 5 or pe < 5:
            pe, po = pe + e, po + o
        else:
            exp.append(e)
            obs.append(o)
    exp.append(pe)
    obs.append(po)
    return float(chisquare(obs, np.array(exp) * n / sum(exp)).pvalue)


SAMPLINGS = [SamplingConfig(temperature=1.0), SamplingConfig(temperature=0.7, top_k=40, top_p=0.9)]


@pytest.mark.parametrize("sampling", SAMPLINGS)
def test_sampled_continuations_follow_the_target(sampling):
    model = tiny_gemma(seed=3, n_layers=2)
    prompt, n = random_prompt(360, 5), 3000
    exact = exact_two_token_distribution(model, prompt, sampling)
    target = CachedLM(model)
    drafter = SharedBodyDrafter(keep(40, seed=1), VOCAB)
    samples, first_accepted = [], Counter()
    for seed in range(n):
        gen = speculative_decode(target, drafter, prompt, k=2, max_new_tokens=2,
                                 sampling=sampling, generator=make_generator(seed))  # fmt: skip
        samples.append(tuple(gen.tokens))
        first_accepted[gen.stats.accepted_lengths[0]] += 1
    assert first_accepted[0] > n // 50 and first_accepted[1] > n // 50  # both paths exercised
    firsts = {(a,): sum(p for (x, _), p in exact.items() if x == a) for a, _ in exact}
    assert pvalue([s[:1] for s in samples], firsts) > 1e-3
    assert pvalue(samples, exact) > 1e-3
    # the test has power: the pruned head's own distribution is not the target's
    q = torch.zeros(VOCAB, dtype=torch.float64)
    ids = keep(40, seed=1)
    q[ids] = logits_to_probs(next_logits(model, prompt)[ids][None], sampling)[0].double()
    draws = torch.multinomial(q, n, replacement=True, generator=torch.Generator().manual_seed(0))
    assert pvalue([(int(t),) for t in draws], firsts) < 1e-3


def understated_q(choose):
    """A subtly broken draft: the token is drawn as it should be, but the q it reports is 0.8
    times the distribution it was drawn from, so the verifier accepts with min(1, 1.25 p / q)
    (the verifier tests' subtle control, here inside the shared-body drafter)."""

    def broken(*args, **kw):
        tok, q = choose(*args, **kw)
        return tok, (None if q is None else 0.8 * q)

    return broken


def test_a_subtly_broken_shared_body_sampler_fails_the_distribution_check(monkeypatch):
    """The checks of `test_sampled_continuations_follow_the_target` (same model, prompt, draft,
    sample size; here with top-k/top-p at T = 0.7) reject the shared-body drafter when the q it
    reports is 20% too low. Planted bug it catches: `understated_q` wrapped around the drafter's
    `choose`. The first-token check is what catches it (p 1.5e-6 here, 5e-4 at T = 1); the
    two-token check alone would not (p 0.004 and 0.79), its cells being many and thin."""
    from specdec_lib.drafters import shared

    sampling = SAMPLINGS[1]
    monkeypatch.setattr(shared, "choose", understated_q(shared.choose))
    model = tiny_gemma(seed=3, n_layers=2)
    prompt, n = random_prompt(360, 5), 3000
    exact = exact_two_token_distribution(model, prompt, sampling)
    target = CachedLM(model)
    drafter = SharedBodyDrafter(keep(40, seed=1), VOCAB)
    samples = []
    for seed in range(n):
        gen = speculative_decode(target, drafter, prompt, k=2, max_new_tokens=2,
                                 sampling=sampling, generator=make_generator(seed))  # fmt: skip
        samples.append(tuple(gen.tokens))
    firsts = {(a,): sum(p for (x, _), p in exact.items() if x == a) for a, _ in exact}
    assert min(pvalue([s[:1] for s in samples], firsts), pvalue(samples, exact)) < 1e-3
