"""Speculative sampling is exact on a real Gemma 3 with its KV cache: the joint distribution of
the first m tokens that `core.decode.speculative_decode` emits is tested against the target's
exact joint, enumerated by full uncached forwards of every prefix.

Why this test beside `test_verify`'s and `runner.distribution.sequence_tests`: those run the
decode loop on a fake table LM without a cache, or on a target that recomputes every call's
context from the cached prompt (`distribution._PromptTarget`), so neither reaches the KV cache's
rollback after a partial accept. Here the target is a `CachedLM` (growing cache, the CPU fast
view) over a tiny random Gemma 3 from the library's own builder (`runner.tiny.tiny_random_model`,
24 ids, its LM head scaled so that next-token distributions are peaked like a trained model's),
on a prompt that is the target's own greedy loop and runs past the sliding window, so that the
n-gram copy is proposed at every call and accepted about half of the time. Every verifier path
is exercised and counted (`runner.distribution.token_paths`): an accepted draft, the residual
after a rejected first draft, the residual after an accepted prefix, the bonus.

The test: n decode runs per case (seeds apart per case), each run's m tokens binned as one of
the `MAX_BINS` most probable continuations (each with an expected count >= `MIN_EXPECTED`) or
the pooled rest, and Pearson's chi-square against the exact bin probabilities at alpha = 0.001.
Power (`analysis.stats.detectable_tvd`: noncentral chi-square, 16 dof, alpha 0.001, 80%):
a binned total-variation distance of 0.076 at 1500 runs, 0.085 at 1200, 0.104 at 800. A run
costs tens of milliseconds on the CPU (prefill and 1-3 target calls of a real model), so the
cases are sized for a few minutes in all; detecting a TVD of 0.03 takes 9,563 runs per case
(`stats.samples_to_detect`); `SPECDEC_EXACT_RUNS=10000` gives every case that many. Measured
once with more runs: n-gram K = 2, T = 1.0, 11,000 runs (detects 0.028): p = 0.34; K = 4,
5,000 runs (detects 0.041): p = 0.54. A deviation that only moves mass among continuations
inside the pooled rest is invisible. The planted bugs below (a quarter too many acceptances, the
residual after an accepted prefix taken at the first row, a KV rollback that keeps a rejected
draft, a repetition penalty the wrong way round) each fail it at 400 to 1500 runs.

Slow: about six thousand decode runs in all (two minutes on an idle CPU).
"""

from __future__ import annotations

import dataclasses
import os
from collections import Counter
from dataclasses import dataclass

import pytest
import torch
from scipy import stats as sps
from transformers import RepetitionPenaltyLogitsProcessor

from specdec_lib.config import SamplingConfig
from specdec_lib.core import decode
from specdec_lib.core.cache import CachedLM
from specdec_lib.core.decode import speculative_decode
from specdec_lib.core.draft import Drafter
from specdec_lib.core.processors import NO_CONTROL, RepetitionControl
from specdec_lib.core.sampling import make_generator, sample, uniform
from specdec_lib.core.verify import Verdict, residual
from specdec_lib.drafters.model import ModelDrafter
from specdec_lib.drafters.ngram import NgramDrafter
from specdec_study.analysis import stats
from specdec_study.runner.distribution import DRAFT_PATHS, token_paths
from specdec_study.runner.tiny import tiny_random_model

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("single_thread")]

VOCAB = 24  # ids of the tiny target (20 words and 4 specials)
HEAD_SCALE = 3.0  # the LM head's weights times this: peaked next-token distributions
PROMPT_TOKENS = 36  # the target's greedy continuation of <bos>: past the sliding window (32)
RUNS = int(os.environ.get("SPECDEC_EXACT_RUNS", "0"))  # > 0: every case runs this many
ALPHA = 0.001
MIN_EXPECTED = 5.0  # a continuation gets a bin of its own when N * P >= this
MAX_BINS = 16  # the most probable continuations binned; the rest pooled in one bin
MIN_PATH = 150  # tested tokens each verifier path must have emitted in a case


@dataclass(frozen=True)
class Case:
    drafter: str  # "ngram" or "model"
    k: int
    m: int  # tokens per run: K + 1, so that the first call's bonus is among them
    temperature: float
    penalty: float = 1.0  # HF's repetition_penalty (1.0: off)
    n: int = 1000  # decode runs (SPECDEC_EXACT_RUNS overrides it)

    @property
    def control(self) -> RepetitionControl:
        return (
            RepetitionControl(repetition_penalty=self.penalty) if self.penalty != 1 else NO_CONTROL
        )


CASES = {
    "ngram_k2_t1": Case("ngram", 2, 3, 1.0, n=1500),
    "ngram_k4_t1": Case("ngram", 4, 5, 1.0, n=800),
    "ngram_k2_t07_penalty": Case("ngram", 2, 3, 0.7, penalty=1.2, n=1200),
    "model_k2_t1": Case("model", 2, 3, 1.0, n=800),
}


@pytest.fixture(scope="module")
def target() -> torch.nn.Module:
    m = tiny_random_model("float64", vocab=VOCAB, hidden=32, layers=2, seed=0).model
    m.lm_head.weight.mul_(HEAD_SCALE)
    return m


@pytest.fixture(scope="module")
def prompt(target) -> list[int]:
    """<bos> and the target's own greedy continuation: a loop the n-gram copy proposes."""
    seq = [2]
    while len(seq) < PROMPT_TOKENS:
        seq.append(int(next_probs(target, [seq], 1.0, 1.0)[0].argmax()))
    assert NgramDrafter().lookup(seq, 2), "the greedy continuation does not repeat"
    return seq


def draft_model(target: torch.nn.Module) -> torch.nn.Module:
    """The target with its LM head perturbed: a sampled draft whose q is near p (not equal)."""
    m = tiny_random_model("float64", vocab=VOCAB, hidden=32, layers=2, seed=0).model
    g = torch.Generator().manual_seed(7)
    w = target.lm_head.weight
    m.lm_head.weight.copy_(w + 0.5 * w.std() * torch.randn(w.shape, generator=g, dtype=w.dtype))
    return m


@torch.no_grad()
def next_probs(model, seqs: list[list[int]], temperature: float, penalty: float) -> torch.Tensor:
    """[B, V] the exact next-token distributions after seqs (equal lengths): one uncached
    forward, HF's own repetition penalty processor, temperature."""
    ids = torch.tensor(seqs, dtype=torch.long)
    logits = model(input_ids=ids, use_cache=False, logits_to_keep=1).logits[:, -1]
    if penalty != 1.0:
        logits = RepetitionPenaltyLogitsProcessor(penalty)(ids, logits)
    return torch.softmax(logits.double() / temperature, -1)


def exact_top(model, prompt: list[int], case: Case, floor: float) -> dict[tuple[int, ...], float]:
    """{continuation: exact probability} of every m-token continuation with probability >=
    floor (a continuation's prefixes are at least as probable, so the tree is cut there)."""
    level: dict[tuple[int, ...], float] = {(): 1.0}
    for _ in range(case.m):
        prefixes = list(level)
        probs = next_probs(
            model, [prompt + list(c) for c in prefixes], case.temperature, case.penalty
        )
        level = {
            (*c, t): level[c] * float(probs[i, t])
            for i, c in enumerate(prefixes)
            for t in range(probs.shape[1])
            if level[c] * float(probs[i, t]) >= floor
        }
    return level


def detects(n: int) -> float:
    """The binned TVD that n runs detect with 80% power at ALPHA, at MAX_BINS bins."""
    return stats.detectable_tvd(n, MAX_BINS, ALPHA)


def make_drafter(case: Case, target: torch.nn.Module) -> Drafter:
    return NgramDrafter() if case.drafter == "ngram" else ModelDrafter(draft_model(target))


def run(case: Case, target, prompt, seeds) -> tuple[Counter, Counter]:
    """The m tokens of one `speculative_decode` per seed on a cached target, and how many
    tokens each verifier path emitted."""
    lm = CachedLM(target)
    drafter = make_drafter(case, target)
    sampling = SamplingConfig(temperature=case.temperature)
    seen: Counter = Counter()
    paths: Counter = Counter()
    for s in seeds:
        gen = speculative_decode(
            lm, drafter, prompt, k=case.k, max_new_tokens=case.m, sampling=sampling,
            generator=make_generator(s), control=case.control,
        )  # fmt: skip
        assert len(gen.tokens) == case.m
        seen[tuple(gen.tokens)] += 1
        paths.update(token_paths(gen.stats.accepted_lengths, gen.stats.proposed_lengths, case.m))
    return seen, paths


def joint_test(case: Case, target, prompt, seen: Counter) -> dict:
    """Pearson's chi-square of the runs' continuations against the exact joint: the most
    probable continuations binned, the rest pooled; with the TVD it detects (80%, ALPHA)."""
    n = sum(seen.values())
    top = exact_top(target, prompt, case, MIN_EXPECTED / n)
    binned = sorted(top, key=top.get, reverse=True)[:MAX_BINS]
    exp = [n * top[c] for c in binned]
    obs = [seen[c] for c in binned]
    exp.append(n - sum(exp))
    obs.append(n - sum(obs))
    assert min(exp) >= MIN_EXPECTED, exp
    res = sps.chisquare(obs, exp)
    dof = len(exp) - 1
    return {
        "p_value": float(res.pvalue),
        "dof": dof,
        "detectable_tvd": stats.detectable_tvd(n, dof, ALPHA),
        "binned_mass": sum(top[c] for c in binned),
    }


def check(case: Case, target, prompt, seed0: int) -> tuple[dict, Counter]:
    seen, paths = run(case, target, prompt, range(seed0, seed0 + case.n))
    return joint_test(case, target, prompt, seen), paths


@pytest.mark.parametrize("name", list(CASES))
def test_speculative_decode_on_a_cached_gemma_follows_the_exact_joint(name, target, prompt):
    case = CASES[name]
    case = dataclasses.replace(case, n=RUNS) if RUNS > 0 else case
    res, paths = check(case, target, prompt, 1_000_000 * (1 + list(CASES).index(name)))
    print(name, res, dict(paths))  # shown with -s: the p-value, power and counts per path
    assert res["detectable_tvd"] <= detects(case.n), res
    assert all(paths[p] >= MIN_PATH for p in DRAFT_PATHS), paths
    assert res["p_value"] > ALPHA, (res, paths)


# ------------------------------------------------------------------------------ planted bugs


def accepts_more(draft, q, p, generator):
    """Accepts with min(1, 1.25 p / q); the residual and the bonus are right."""
    u = uniform(len(draft), generator)
    for i, x in enumerate(draft):
        qx = 1.0 if q is None else float(q[i, x])
        if float(u[i]) * qx >= 1.25 * float(p[i, x]):
            return Verdict(i, sample(residual(p[i], None if q is None else q[i], x), generator))
    return Verdict(len(draft), sample(p[len(draft)], generator))


def residual_at_first_row(draft, q, p, generator):
    """After an accepted prefix, the residual of the first draft's row."""
    u = uniform(len(draft), generator)
    for i, x in enumerate(draft):
        qx = 1.0 if q is None else float(q[i, x])
        if float(u[i]) * qx >= float(p[i, x]):
            return Verdict(
                i, sample(residual(p[0], None if q is None else q[0], draft[0]), generator)
            )
    return Verdict(len(draft), sample(p[len(draft)], generator))


ROLLBACK = CachedLM.rollback


def rollback_keeps_a_rejected_draft(self, n_keep: int) -> None:
    """After a partial accept the cache keeps one token too many (the rejected draft's)."""
    ROLLBACK(self, min(n_keep + 1, len(self.tokens)))


def penalty_the_wrong_way(self, out, seq, drafts) -> None:
    """A seen token's positive logit multiplied by r and a negative one divided (HF divides a
    positive logit and multiplies a negative one)."""
    r = self.repetition_penalty
    for i in range(out.shape[0]):
        seen = sorted(set(seq) | set(drafts[:i]))
        idx = torch.tensor(seen)
        v = out[i, idx]
        out[i, idx] = torch.where(v < 0, v / r, v * r)


@pytest.mark.parametrize(
    ("owner", "attr", "broken", "name", "n"),
    [
        (decode, "speculative_verify", accepts_more, "ngram_k2_t1", 400),
        (decode, "speculative_verify", residual_at_first_row, "ngram_k4_t1", 1000),
        (CachedLM, "rollback", rollback_keeps_a_rejected_draft, "ngram_k2_t1", 1500),
        (RepetitionControl, "_penalise", penalty_the_wrong_way, "ngram_k2_t07_penalty", 600),
    ],
    ids=["accepts_more", "residual_at_first_row", "rollback", "penalty_sign"],
)
def test_the_joint_test_catches_a_planted_bug(
    owner, attr, broken, name, n, target, prompt, monkeypatch
):
    """Each planted bug fails the test with fewer runs than its case has."""
    monkeypatch.setattr(owner, attr, broken)
    res, _ = check(dataclasses.replace(CASES[name], n=n), target, prompt, 50_000_000)
    assert res["p_value"] < ALPHA, res
