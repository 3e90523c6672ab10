"""Repetition control inside verification (issue 23): HF's semantics row by row, greedy
speculation token-identical to step-by-step greedy under the same control (forced rejections, an
EOS inside a draft, max_new_tokens edges), our control against HF `generate` with the same
settings, speculative sampling exact for the processed distribution, and a planted bug (the
processor blind to the accepted draft tokens) that these tests catch."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest
import torch
from conftest import VOCAB, OracleDrafter, next_logits, random_prompt, speculate
from test_bench import loaded_tiny, prompt
from test_verify import (
    chisquare_pvalue,
    default_prompt,
    lookup_prompt,
    model_drafter,
    ngram_drafter,
    prefix_counts,
)
from transformers import NoRepeatNGramLogitsProcessor, RepetitionPenaltyLogitsProcessor

from specdec_lib.config import SamplingConfig
from specdec_lib.core.cache import CachedLM
from specdec_lib.core.decode import autoregressive_decode, speculative_decode
from specdec_lib.core.processors import RepetitionControl
from specdec_lib.core.sampling import logits_to_probs, make_generator
from specdec_lib.drafters.ngram import NgramDrafter
from specdec_lib.errors import SpecdecError
from specdec_lib.measure.huggingface import hf_generate

pytestmark = pytest.mark.usefixtures("single_thread")

LOOPING_SEEDS = (5, 7)  # prompts whose plain greedy continuation repeats bigrams within 14 tokens
STRONG = RepetitionControl(repetition_penalty=2.0, no_repeat_ngram_size=2)
CONTROLS = {
    "penalty": RepetitionControl(repetition_penalty=1.5),
    "no_repeat_2": RepetitionControl(no_repeat_ngram_size=2),
    "both": STRONG,
}


def blind_process(self, logits, prefix, drafts=()):
    """The planted bug: every row processed against the prefix alone, the accepted draft tokens
    before it left out."""
    return torch.cat([ORIGINAL(self, logits[i : i + 1], prefix) for i in range(logits.shape[0])])


ORIGINAL = RepetitionControl.process


def controlled_stepwise(model, prompt_ids, n, control, eos=None) -> list[int]:
    """Reference: one uncached forward per token, the control applied to the whole sequence."""
    seq, out = list(prompt_ids), []
    for _ in range(n):
        tok = int(control.process(next_logits(model, seq)[None], seq)[0].argmax())
        out.append(tok)
        seq.append(tok)
        if eos is not None and tok == eos:
            break
    return out


# ----------------------------------------------------------------------------- HF semantics


@pytest.mark.parametrize("name", list(CONTROLS))
def test_each_row_is_processed_as_hf_processes_the_sequence_up_to_it(name):
    control = CONTROLS[name]
    g = torch.Generator().manual_seed(0)
    prefix = torch.randint(0, 8, (12,), generator=g).tolist()
    drafts = torch.randint(0, 8, (4,), generator=g).tolist()
    logits = torch.randn(5, 8, generator=g, dtype=torch.float64)
    ours = control.process(logits, prefix, drafts)
    hf = []
    if control.repetition_penalty != 1.0:
        hf.append(RepetitionPenaltyLogitsProcessor(control.repetition_penalty))
    if control.no_repeat_ngram_size:
        hf.append(NoRepeatNGramLogitsProcessor(control.no_repeat_ngram_size))
    for i in range(5):
        ids = torch.tensor([prefix + drafts[:i]])
        want = logits[i : i + 1].clone()
        for proc in hf:
            want = proc(ids, want)
        assert torch.equal(ours[i], want[0]), (name, i)
    assert not torch.equal(ours, logits)  # the control changed something


def test_an_inactive_control_hands_the_logits_back_untouched():
    logits = torch.randn(3, 8, dtype=torch.bfloat16)
    assert RepetitionControl().process(logits, [1, 2], [3, 4]) is logits


def test_bfloat16_logits_are_processed_in_float32_as_hf_does():
    logits = torch.randn(2, 8, dtype=torch.bfloat16)
    out = RepetitionControl(repetition_penalty=1.2).process(logits, [1, 2], [3])
    want = RepetitionPenaltyLogitsProcessor(1.2)(torch.tensor([[1, 2, 3]]), logits[1:].float())
    assert out.dtype == torch.float32 and torch.equal(out[1], want[0])


def test_no_repeat_bans_nothing_before_the_sequence_holds_n_minus_1_tokens():
    control = RepetitionControl(no_repeat_ngram_size=3)
    logits = torch.zeros(2, 4)
    assert torch.equal(control.process(logits, [1], [1]), logits)


@pytest.mark.parametrize(
    "kw",
    [
        {"repetition_penalty": 0.0},
        {"repetition_penalty": float("nan")},
        {"no_repeat_ngram_size": -1},
        {"no_repeat_ngram_size": 2.5},
    ],
)
def test_bad_control_settings_are_refused(kw):
    with pytest.raises(SpecdecError):
        RepetitionControl(**kw)


# ----------------------------------------------------------------------------- greedy identity


def check_identity(target, control, k: int, wrong_at: int | None) -> None:
    """Greedy speculation (an oracle drafter with forced rejections, and the n-gram drafter)
    under `control` equals the controlled stepwise reference, on two prompts."""
    for seed in LOOPING_SEEDS:
        p, n = random_prompt(seed, 6), 14
        ref = controlled_stepwise(target, p, n + k, control)
        gen = speculate(target, OracleDrafter(p, ref, VOCAB, wrong_at), p, k, n, control=control)
        assert gen.tokens == ref[:n], (seed, "oracle")
        s = gen.stats
        if wrong_at is not None:  # the rejection happened exactly where it was forced
            assert s.accepted_lengths == [min(wrong_at, d) for d in s.proposed_lengths]
        else:
            assert s.acceptance_rate == 1.0
        gen = speculate(target, NgramDrafter(), p, k, n, control=control)
        assert gen.tokens == ref[:n], (seed, "ngram")


@pytest.mark.parametrize("name", list(CONTROLS))
@pytest.mark.parametrize(("k", "wrong_at"), [(4, None), (4, 0), (4, 2), (1, None)])
def test_greedy_speculation_under_the_control_equals_stepwise_greedy(name, k, wrong_at, target64):
    check_identity(target64, CONTROLS[name], k, wrong_at)


def test_the_control_changes_the_greedy_continuation(target64):
    """Otherwise the identity tests above could pass with the control ignored."""
    for name, control in CONTROLS.items():
        changed = [
            controlled_stepwise(target64, random_prompt(s, 6), 14, control)
            != controlled_stepwise(target64, random_prompt(s, 6), 14, RepetitionControl())
            for s in LOOPING_SEEDS
        ]
        assert any(changed), name


def test_an_eos_inside_an_accepted_draft_stops_there_under_the_control(target64):
    p, k = random_prompt(12, 7), 4
    ref = controlled_stepwise(target64, p, 40, STRONG)
    # an EOS id first seen at a draft position past the first of its call (all drafts accepted)
    m = next(i for i in range(6, 40) if i % (k + 1) not in (0, k) and ref[i] not in ref[:i])
    gen = speculate(
        target64, OracleDrafter(p, ref, VOCAB), p, k, 40, eos_ids=[ref[m]], control=STRONG
    )
    assert gen.tokens == ref[: m + 1] == controlled_stepwise(target64, p, 40, STRONG, ref[m])
    assert gen.stats.stopped_by == "eos" and gen.stats.accepted_lengths[-1] > m % (k + 1)


@pytest.mark.parametrize("k", [1, 3, 4])
def test_max_new_tokens_edges_under_the_control(k, target64):
    p = random_prompt(17, 4)
    ref = controlled_stepwise(target64, p, 2 * (k + 1) + 2, STRONG)
    for n in sorted({1, 2, k, k + 1}):
        gen = speculate(target64, OracleDrafter(p, ref, VOCAB), p, k, n, control=STRONG)
        assert gen.tokens == ref[:n], (k, n)


@pytest.mark.parametrize("name", list(CONTROLS))
def test_the_greedy_tests_catch_a_processor_blind_to_accepted_drafts(name, monkeypatch, target64):
    """The planted bug: rows processed against the prefix without the accepted draft tokens
    (the reference keeps the right processing: it calls one row at a time, which the bug
    leaves unchanged)."""
    monkeypatch.setattr(RepetitionControl, "process", blind_process)
    with pytest.raises(AssertionError):
        check_identity(target64, CONTROLS[name], 4, None)


def test_tree_verification_refuses_a_control(target64):
    from specdec_lib.core.decode import verify_step
    from specdec_lib.core.draft import Draft

    lm = CachedLM(target64)
    with pytest.raises(SpecdecError, match="tree verification"):
        verify_step(
            lm,
            [1, 2],
            Draft([3, 4], parents=[-1, -1]),
            SamplingConfig(),
            make_generator(0),
            STRONG,
        )


# ----------------------------------------------------------------------------- against HF


@pytest.fixture(scope="module")
def tiny32():
    return loaded_tiny(torch.float32)


@pytest.mark.parametrize(
    "control",
    [RepetitionControl(repetition_penalty=1.3), RepetitionControl(1.3, 3)],
    ids=["penalty", "penalty_and_no_repeat_3"],
)
@pytest.mark.parametrize("seed", range(3))
def test_our_control_matches_hf_generate_with_the_same_settings_in_float32(tiny32, control, seed):
    p = prompt(seed)
    hf, _ = hf_generate(tiny32, p, max_new_tokens=24, mode="greedy", control=control)
    plain, _ = hf_generate(tiny32, p, max_new_tokens=24, mode="greedy")
    ours = autoregressive_decode(
        CachedLM(tiny32.model), p, max_new_tokens=24, eos_ids=[1], control=control
    )
    spec = speculative_decode(
        CachedLM(tiny32.model),
        NgramDrafter(),
        p,
        k=4,
        max_new_tokens=24,
        eos_ids=[1],
        control=control,
    )
    lookup, _ = hf_generate(
        tiny32, p, max_new_tokens=24, mode="prompt_lookup", k=4, control=control
    )
    assert ours.tokens == hf == spec.tokens == lookup
    assert hf != plain or seed  # the control changed HF's own output (on the first prompt)


# ----------------------------------------------------------------------------- sampling

SAMPLING_CONTROL = RepetitionControl(repetition_penalty=3.0, no_repeat_ngram_size=2)
T07 = SamplingConfig(temperature=0.7)
N_NEW, N_SAMPLES = 3, 2000


def exact_controlled(model, prompt_ids, n, sampling, control) -> dict[tuple[int, ...], float]:
    """{continuation: probability} by enumeration, each step from an uncached forward with the
    control applied to the whole sequence, then temperature."""
    dist = {}
    for cont in itertools.product(range(model.vocab), repeat=n):
        prob, seq = 1.0, list(prompt_ids)
        for tok in cont:
            logits = control.process(next_logits(model, seq)[None], seq)
            prob *= float(logits_to_probs(logits, sampling)[0, tok])
            seq.append(tok)
            if prob == 0.0:
                break
        dist[cont] = prob
    return dist


def controlled_sampling_pvalue(drafter, fake_target, control, p: list[int]):
    """Smallest chi-square p-value of the first token, first two and all three against the exact
    processed distribution, over n_samples seeds; and the first call's accepted counts."""
    target = CachedLM(fake_target, use_cache=False)
    seen, first = Counter(), Counter()
    for seed in range(N_SAMPLES):
        gen = speculative_decode(
            target,
            drafter,
            p,
            k=2,
            max_new_tokens=N_NEW,
            sampling=T07,
            generator=make_generator(seed),
            control=control,
        )
        seen[tuple(gen.tokens)] += 1
        first[gen.stats.accepted_lengths[0]] += 1
    exact = exact_controlled(fake_target, p, N_NEW, T07, control)
    pvalues = [
        chisquare_pvalue(prefix_counts(seen, j), dict(prefix_counts(exact, j)))
        for j in range(1, N_NEW + 1)
    ]
    return min(pvalues), first


@pytest.mark.parametrize(
    ("make", "control", "make_prompt"),
    [
        (model_drafter, SAMPLING_CONTROL, default_prompt),
        # no-repeat bigrams would reject every copied bigram: the n-gram runs under the penalty,
        # on a prompt whose copies the target often accepts
        (ngram_drafter, RepetitionControl(repetition_penalty=1.3), lookup_prompt),
    ],
    ids=["model", "ngram"],
)
def test_speculative_sampling_under_the_control_follows_the_processed_distribution(
    make, control, make_prompt, fake_target, fake_draft
):
    """Power: with 2000 samples the same test rejects the planted bug below (p < 1e-3)."""
    drafter = make(fake_target, fake_draft)
    pvalue, first = controlled_sampling_pvalue(
        drafter, fake_target, control, make_prompt(fake_target)
    )
    assert first[0] > N_SAMPLES // 50 and first[2] > N_SAMPLES // 50, first
    assert pvalue > 1e-3, pvalue


def test_the_sampling_test_catches_a_processor_blind_to_accepted_drafts(
    monkeypatch, fake_target, fake_draft
):
    drafter = model_drafter(fake_target, fake_draft)
    monkeypatch.setattr(RepetitionControl, "process", blind_process)
    sampled = Counter()
    target = CachedLM(fake_target, use_cache=False)
    for seed in range(N_SAMPLES):
        gen = speculative_decode(
            target,
            drafter,
            [1, 3, 2, 5, 1],
            k=2,
            max_new_tokens=N_NEW,
            sampling=T07,
            generator=make_generator(seed),
            control=SAMPLING_CONTROL,
        )
        sampled[tuple(gen.tokens)] += 1
    monkeypatch.setattr(RepetitionControl, "process", ORIGINAL)
    exact = exact_controlled(fake_target, [1, 3, 2, 5, 1], N_NEW, T07, SAMPLING_CONTROL)
    pvalues = [
        chisquare_pvalue(prefix_counts(sampled, j), dict(prefix_counts(exact, j)))
        for j in range(1, N_NEW + 1)
    ]
    assert min(pvalues) < 1e-3, pvalues
