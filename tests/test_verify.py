"""Greedy verification and speculative sampling: unit cases on hand-made p and q, then the
statistical losslessness test of the whole decode loop (with a check that it can fail)."""

from __future__ import annotations

import dataclasses
import itertools
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
import torch
from conftest import FAKE_VOCAB, FakeLM, next_logits
from scipy.stats import chisquare

from specdec_lib.config import SamplingConfig
from specdec_lib.core import decode, verify
from specdec_lib.core.cache import CachedLM
from specdec_lib.core.decode import speculative_decode
from specdec_lib.core.sampling import logits_to_probs, make_generator, sample, uniform
from specdec_lib.core.verify import Verdict, greedy_verify, pad_vocab, residual, speculative_verify
from specdec_lib.drafters.bigram import BigramDrafter
from specdec_lib.drafters.model import ModelDrafter
from specdec_lib.drafters.ngram import NgramDrafter

pytestmark = pytest.mark.usefixtures("single_thread")

# ---------------------------------------------------------------------------------------------
# greedy_verify


def test_greedy_verify_accepts_matching_prefix_then_corrects():
    assert greedy_verify([5, 6, 7], [5, 6, 9, 1]) == Verdict(2, 9)


def test_greedy_verify_all_matching_takes_the_bonus_token():
    assert greedy_verify([5, 6, 7], [5, 6, 7, 8]) == Verdict(3, 8)


def test_greedy_verify_first_mismatch_stops_even_if_later_drafts_match():
    assert greedy_verify([4, 6, 7], [5, 6, 7, 8]) == Verdict(0, 5)


def test_greedy_verify_empty_draft_returns_the_target_argmax():
    assert greedy_verify([], [3]) == Verdict(0, 3)


# ---------------------------------------------------------------------------------------------
# pad_vocab and residual


def test_pad_vocab_gives_unreachable_ids_zero_draft_probability():
    q = torch.tensor([[0.5, 0.5], [0.25, 0.75]])
    padded = pad_vocab(q, 4)
    assert padded.shape == (2, 4)
    assert torch.equal(padded[:, :2], q) and torch.equal(padded[:, 2:], torch.zeros(2, 2))
    assert pad_vocab(q, 2) is q
    with pytest.raises(ValueError):
        pad_vocab(q, 1)


def test_pad_vocab_error_names_the_draft_and_target_vocabularies():
    """The one-line error gives the draft's vocabulary (q's last axis) and the target's.
    Catches: the message reading q's row count, q.shape[-2] (3 here), as the draft's width."""
    with pytest.raises(
        ValueError, match=r"draft vocabulary \(5\) is wider than the target's \(4\)"
    ):
        pad_vocab(torch.full((3, 5), 0.2), 4)


def test_residual_is_the_positive_part_of_p_minus_q():
    p = torch.tensor([0.5, 0.2, 0.3, 0.0])
    q = torch.tensor([0.1, 0.6, 0.1, 0.2])
    torch.testing.assert_close(residual(p, q, 1), torch.tensor([0.4, 0.0, 0.2, 0.0]))


def test_residual_of_a_point_mass_removes_only_the_draft_token():
    p = torch.tensor([0.5, 0.2, 0.3])
    assert torch.equal(residual(p, None, 0), torch.tensor([0.0, 0.2, 0.3]))
    assert torch.equal(p, torch.tensor([0.5, 0.2, 0.3]))  # p itself is not modified


def test_residual_falls_back_to_p_when_p_equals_q():
    p = torch.tensor([0.5, 0.5])
    assert torch.equal(residual(p, p.clone(), 0), p)
    assert torch.equal(residual(torch.tensor([0.0, 1.0]), None, 1), torch.tensor([0.0, 1.0]))


# ---------------------------------------------------------------------------------------------
# speculative_verify on hand-made distributions

P = torch.tensor([0.10, 0.40, 0.20, 0.30, 0.00], dtype=torch.float64)
Q = torch.tensor([0.30, 0.20, 0.20, 0.10, 0.20], dtype=torch.float64)


def gof_pvalue(counts: np.ndarray, probs) -> float:
    """Chi-square goodness of fit of counts against probabilities (renormalised in float64)."""
    probs = np.asarray(probs, dtype=np.float64)
    return float(chisquare(counts, probs / probs.sum() * counts.sum()).pvalue)


def run_verify(draft, q, p, seeds):
    return [speculative_verify(draft, q, p, make_generator(s)) for s in seeds]


@pytest.mark.parametrize("q", [Q[None], None], ids=["sampled", "point_mass"])
def test_a_token_the_target_never_gives_is_rejected_even_at_u_zero(monkeypatch, q):
    """Accept iff u < p(x) / q(x): at p(x) = 0 the draft token is rejected for every u in
    [0, 1), u = 0 included. Catches: the rejection test `u * q >= p` written `u * q > p`, which
    accepts the token when u = 0 (emitting a token the target gives probability 0)."""
    monkeypatch.setattr(verify, "uniform", lambda n, g: torch.zeros(n, dtype=torch.float64))
    v = speculative_verify([4], q, torch.stack([P, P]), make_generator(0))
    assert v.n_accepted == 0 and v.next_token != 4


@pytest.mark.parametrize("x", range(5))
def test_accept_probability_is_min_one_p_over_q(x):
    n = 4000
    verdicts = run_verify([x], Q[None], torch.stack([P, P]), range(n))
    rate = sum(v.n_accepted for v in verdicts) / n
    a = min(1.0, float(P[x] / Q[x]))
    if a in (0.0, 1.0):
        assert rate == a  # certain events are certain, not just likely
    else:
        assert abs(rate - a) < 5 * (a * (1 - a) / n) ** 0.5


def test_rejection_samples_from_the_normalised_residual():
    x = 0  # p/q = 1/3: rejected two times in three
    verdicts = run_verify([x], Q[None], torch.stack([P, P]), range(6000))
    rejected = [v.next_token for v in verdicts if v.n_accepted == 0]
    r = (P - Q).clamp_min(0)
    r = r / r.sum()  # support {1, 3}: 0.2 / 0.4 and 0.2 / 0.4
    counts = np.bincount(rejected, minlength=5)
    assert set(np.flatnonzero(counts)) == {1, 3}
    support = [1, 3]
    assert gof_pvalue(counts[support], r[support].numpy()) > 1e-3


def test_single_step_output_follows_p_when_draft_is_sampled_from_q():
    n = 6000
    out = []
    for s in range(n):
        g = make_generator(s)
        x = sample(Q, g)
        v = speculative_verify([x], Q[None], torch.stack([P, P]), g)
        out.append(x if v.n_accepted else v.next_token)
    counts = np.bincount(out, minlength=5)
    assert counts[4] == 0  # p(4) = 0 although q(4) = 0.2
    support = [0, 1, 2, 3]
    assert gof_pvalue(counts[support], P[support].numpy()) > 1e-3


def test_accepted_draft_is_followed_by_a_bonus_from_the_last_row():
    p = torch.stack([torch.tensor([0.0, 1.0, 0.0]), torch.tensor([0.0, 0.0, 1.0])])
    q = torch.tensor([[0.0, 1.0, 0.0]])
    for v in run_verify([1], q, p, range(50)):
        assert v == Verdict(1, 2)


def test_point_mass_q_none_behaves_exactly_as_one_hot_q():
    g = torch.Generator().manual_seed(0)
    p = torch.softmax(torch.randn(4, 6, generator=g), -1)
    draft = [2, 0, 5]
    one_hot = torch.nn.functional.one_hot(torch.tensor(draft), 6).float()
    seeds = range(500)
    assert run_verify(draft, None, p, seeds) == run_verify(draft, one_hot, p, seeds)


def test_point_mass_rejection_never_returns_the_rejected_token():
    g = torch.Generator().manual_seed(1)
    p = torch.softmax(torch.randn(3, 6, generator=g), -1)
    draft = [int(p[0].argmax()), int(p[1].argmax())]
    seen_rejections = set()
    for v in run_verify(draft, None, p, range(2000)):
        if v.n_accepted < len(draft):
            assert v.next_token != draft[v.n_accepted]
            seen_rejections.add(v.n_accepted)
    assert seen_rejections == {0, 1}  # rejections at both positions were exercised


def test_point_mass_acceptance_rate_is_p_of_the_draft_token():
    p = torch.tensor([[0.25, 0.75], [0.5, 0.5]])
    n = 4000
    rate = sum(v.n_accepted for v in run_verify([1], None, p, range(n))) / n
    assert abs(rate - 0.75) < 5 * (0.75 * 0.25 / n) ** 0.5


def test_identical_p_and_q_always_accept():
    g = torch.Generator().manual_seed(2)
    p = torch.softmax(torch.randn(5, 7, generator=g), -1)
    draft = [3, 1, 4, 1]
    for v in run_verify(draft, p[:4].clone(), p, range(500)):
        assert v.n_accepted == 4


def test_zero_target_probability_draft_is_always_rejected():
    p = torch.tensor([[0.0, 0.5, 0.5], [1.0, 0.0, 0.0]])
    q = torch.tensor([[1.0, 0.0, 0.0]])
    for v in run_verify([0], q, p, range(300)):
        assert v.n_accepted == 0 and v.next_token in (1, 2)


def test_empty_draft_samples_from_the_first_row():
    p = torch.tensor([[0.0, 0.0, 1.0]])
    assert speculative_verify([], None, p, make_generator(0)) == Verdict(0, 2)


def test_speculative_verify_is_seed_deterministic():
    g = torch.Generator().manual_seed(3)
    p = torch.softmax(torch.randn(4, 6, generator=g), -1)
    q = torch.softmax(torch.randn(3, 6, generator=g), -1)
    assert run_verify([1, 2, 3], q, p, range(100)) == run_verify([1, 2, 3], q, p, range(100))


# ---------------------------------------------------------------------------------------------
# Statistical losslessness of the whole decode loop

T1 = SamplingConfig(temperature=1.0)
T07 = SamplingConfig(temperature=0.7, top_k=4, top_p=0.9)


def exact_continuations(model: FakeLM, prompt: list[int], n: int, sampling: SamplingConfig):
    """{continuation: probability} over all n-token continuations, by enumeration with the
    library's logits_to_probs applied to full uncached forwards."""
    dist: dict[tuple[int, ...], float] = {}
    for cont in itertools.product(range(model.vocab), repeat=n):
        prob = 1.0
        for i in range(n):
            p = logits_to_probs(next_logits(model, prompt + list(cont[:i]))[None], sampling)[0]
            prob *= float(p[cont[i]])
            if prob == 0.0:
                break
        dist[cont] = prob
    total = sum(dist.values())
    assert abs(total - 1.0) < 1e-5
    return {c: p / total for c, p in dist.items()}


def chisquare_pvalue(observed: Counter, expected: dict[tuple[int, ...], float]) -> float:
    """Pearson chi-square of observed continuations against exact probabilities. Bins with an
    expected count under 5 are pooled (and the pool grown until it reaches 5). A continuation of
    probability 0 that was observed gives p-value 0: a lossless sampler can never emit it."""
    n = sum(observed.values())
    if any(observed[c] for c, p in expected.items() if p == 0.0):
        return 0.0
    assert set(observed) <= set(expected)
    bins = sorted((p * n, observed[c]) for c, p in expected.items() if p > 0.0)
    pooled_e = pooled_o = 0.0
    rest = []
    for e, o in bins:  # ascending expected count
        if pooled_e < 5 or e < 5:
            pooled_e, pooled_o = pooled_e + e, pooled_o + o
        else:
            rest.append((e, o))
    exp = np.array([e for e, _ in rest] + [pooled_e])
    obs = np.array([o for _, o in rest] + [pooled_o])
    assert len(exp) >= 3 and exp.min() >= 5
    return float(chisquare(obs, exp * obs.sum() / exp.sum()).pvalue)


def model_drafter(_fake_target, fake_draft, **kw):
    return ModelDrafter(fake_draft, use_cache=False, **kw)


def bigram_drafter(fake_target, _fake_draft):
    """Fitted on text sampled from the target (as the real bigram is fitted on real text), so its
    point-mass guesses are accepted often enough to exercise every path."""
    fit = [1]
    g = make_generator(4)
    for _ in range(300):
        fit.append(sample(logits_to_probs(next_logits(fake_target, fit[-2:])[None], T1)[0], g))
    return BigramDrafter.fit(fit, FAKE_VOCAB)


def ngram_drafter(fake_target, fake_draft):
    return NgramDrafter(max_ngram=2, fallback=bigram_drafter(fake_target, fake_draft))


def narrow_model_drafter(fake_target, fake_draft):
    """The draft only knows the first V - 2 ids: its q is padded with zeros for the verifier."""
    return model_drafter(fake_target, fake_draft, vocab_size=FAKE_VOCAB - 2)


def default_prompt(_fake_target) -> list[int]:
    return [1, 3, 2, 5, 1]


def lookup_prompt(fake_target) -> list[int]:
    """[1, a, b, c, 1], where a is the target's favourite after (c, 1) and b after (1, a): the
    lookup copies "a b c" from the earlier 1, so its drafts are plausible but not certain."""
    c = 4
    a = int(next_logits(fake_target, [c, 1]).argmax())
    b = int(next_logits(fake_target, [1, a]).argmax())
    return [1, a, b, c, 1]


@dataclass(frozen=True)
class Case:
    drafter: Callable  # (fake_target, fake_draft) -> Drafter
    sampling: SamplingConfig
    k: int
    n_new: int  # the continuation whose joint distribution is tested
    n_samples: int
    prompt: Callable = default_prompt


CASES = {
    # K=2 over 3 tokens: rejection at either draft position, the bonus, and a second call
    "model_t1": Case(model_drafter, T1, k=2, n_new=3, n_samples=2000),
    "model_t07_topk_topp": Case(model_drafter, T07, k=2, n_new=3, n_samples=2000),
    # the first 2 new tokens: K is cut to 1 by max_new_tokens
    "model_narrow_vocab_t1": Case(narrow_model_drafter, T1, k=4, n_new=2, n_samples=1500),
    "bigram_point_mass_t1": Case(bigram_drafter, T1, k=2, n_new=3, n_samples=2000),
    "ngram_point_mass_t07": Case(
        ngram_drafter, T07, k=3, n_new=3, n_samples=2000, prompt=lookup_prompt
    ),
}

_EXACT: dict = {}


def prefix_counts(dist: dict, j: int) -> Counter:
    """Marginalise continuations (counts or probabilities) onto their first j tokens."""
    out: Counter = Counter()
    for cont, v in dist.items():
        out[cont[:j]] += v
    return out


def losslessness_pvalue(case: Case, fake_target, fake_draft) -> tuple[float, Counter]:
    """Generate case.n_samples continuations (seeds 0..n-1) with speculative sampling and
    compare them with the exact target distribution: chi-square tests of the first token, the
    first two, ..., the whole continuation (a bias in one position is clearer in a marginal
    than in the joint). Returns the smallest p-value, and how many drafts the first
    verification accepted."""
    prompt = case.prompt(fake_target)
    drafter = case.drafter(fake_target, fake_draft)
    target = CachedLM(fake_target, use_cache=False)
    seen: Counter = Counter()
    first_accepted: Counter = Counter()
    for seed in range(case.n_samples):
        gen = speculative_decode(
            target,
            drafter,
            prompt,
            k=case.k,
            max_new_tokens=case.n_new,
            sampling=case.sampling,
            generator=make_generator(seed),
        )
        assert len(gen.tokens) == case.n_new
        seen[tuple(gen.tokens)] += 1
        first_accepted[gen.stats.accepted_lengths[0]] += 1
    key = (tuple(prompt), case.n_new, case.sampling)
    if key not in _EXACT:
        _EXACT[key] = exact_continuations(fake_target, prompt, case.n_new, case.sampling)
    exact = _EXACT[key]
    pvalues = [
        chisquare_pvalue(prefix_counts(seen, j), dict(prefix_counts(exact, j)))
        for j in range(1, case.n_new + 1)
    ]
    return min(pvalues), first_accepted


@pytest.mark.parametrize("name", list(CASES))
def test_speculative_sampling_matches_exact_target_distribution(name, fake_target, fake_draft):
    case = CASES[name]
    pvalue, first_accepted = losslessness_pvalue(case, fake_target, fake_draft)
    # only meaningful if the first draft was often rejected outright and often fully accepted
    k_eff = min(case.k, case.n_new - 1)
    assert first_accepted[0] > case.n_samples // 50, first_accepted
    assert first_accepted[k_eff] > case.n_samples // 50, first_accepted
    assert pvalue > 1e-3, f"{name}: continuations do not follow the target (p = {pvalue:.2e})"


def accept_every_draft(draft, q, p, generator):
    """A broken verifier: takes every draft token and samples the bonus from p."""
    return Verdict(len(draft), sample(p[len(draft)], generator))


def resample_from_p(draft, q, p, generator):
    """A subtly broken verifier: the right acceptance test, but a rejection resamples from p
    instead of the residual max(0, p - q)."""
    v = speculative_verify(draft, q, p, generator)
    if v.n_accepted < len(draft):
        return Verdict(v.n_accepted, sample(p[v.n_accepted], generator))
    return v


def bonus_from_last_draft_row(draft, q, p, generator):
    """A broken verifier with an off-by-one: after accepting all K drafts, the bonus is drawn
    from the row of the last draft token instead of the row after it."""
    v = speculative_verify(draft, q, p, generator)
    if draft and v.n_accepted == len(draft):
        return Verdict(v.n_accepted, sample(p[len(draft) - 1], generator))
    return v


def accept_a_quarter_too_often(draft, q, p, generator):
    """A subtly broken verifier: accepts with probability min(1, 1.25 p / q); the residual and
    the bonus are right."""
    u = uniform(len(draft), generator)
    for i, x in enumerate(draft):
        qx = 1.0 if q is None else float(q[i, x])
        if float(u[i]) * qx >= 1.25 * float(p[i, x]):
            return Verdict(i, sample(residual(p[i], None if q is None else q[i], x), generator))
    return Verdict(len(draft), sample(p[len(draft)], generator))


@pytest.mark.parametrize(
    ("broken", "name", "n_samples"),
    [
        # the subtle bias with the full sample size of the losslessness test
        (accept_a_quarter_too_often, "model_t1", None),
        (accept_a_quarter_too_often, "bigram_point_mass_t1", None),
        # gross errors are caught with far fewer samples (which only makes detection harder)
        (accept_every_draft, "model_t1", 500),
        (resample_from_p, "model_t1", 500),
        (bonus_from_last_draft_row, "bigram_point_mass_t1", 1000),
    ],
)
def test_statistical_test_rejects_a_broken_verifier(
    broken, name, n_samples, monkeypatch, fake_target, fake_draft
):
    monkeypatch.setattr(decode, "speculative_verify", broken)
    case = CASES[name]
    if n_samples is not None:
        case = dataclasses.replace(case, n_samples=n_samples)
    pvalue, _ = losslessness_pvalue(case, fake_target, fake_draft)
    assert pvalue < 1e-3, f"{broken.__name__} went undetected on {name} (p = {pvalue:.2e})"
