"""The first-token distribution check of speculative sampling: the first token a generator emits
after a prompt, over many seeds, through the library's own drafter and verifier, tested against
the target's exact next-token distribution (`analysis.stats.goodness_of_fit`), beside the
distribution the drafter alone would give.

Knows nothing about profiles, experiments or result files: it takes generators (anything with
`.lm`, a CachedLM, and `.drafter`) and prompts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from specdec_lib.analysis import stats
from specdec_lib.analysis.sampling import method_check, tvd_between
from specdec_lib.config import SamplingConfig
from specdec_lib.core import decode
from specdec_lib.core.draft import Draft
from specdec_lib.core.sampling import logits_to_probs, make_generator
from specdec_lib.core.verify import pad_vocab


class _Recording:
    """A target that remembers the logits of its last call (for `first_token_samples`)."""

    def __init__(self, lm) -> None:
        self.lm, self.logits = lm, None

    def extend(self, ids, n):
        self.logits = self.lm.extend(ids, n)
        return self.logits

    def head(self, hidden):
        self.logits = self.lm.head(hidden)
        return self.logits

    def rollback(self, n: int) -> None:
        self.lm.rollback(n)


def first_token_samples(generator, prompt: Sequence[int], k: int, sampling, seeds) -> list[int]:
    """The first token the generator emits after prompt, once per seed, through the library's
    own drafter and verifier, with the prompt prefilled once.

    For every seed the drafter proposes and the verifier (`verify.speculative_verify`) decides
    with that seed's generator. The target's call on [seq[-1]] + draft is deterministic, so it
    runs through `decode.verify_step` once per distinct draft; later seeds that propose the same
    draft are verified on that call's probabilities (a deterministic draft, or the baseline's
    empty one, then costs one target call in all instead of one per seed)."""
    lm, drafter = generator.lm, generator.drafter
    seq = list(prompt)
    decode.prefill(lm, seq)
    drafter.begin(seq)
    seen: dict[tuple[int, ...], Any] = {}  # draft -> the target's p [d + 1, V] for it
    out = []
    for s in seeds:
        g = make_generator(int(s))
        lm.rollback(len(seq) - 1)
        draft = drafter.propose(seq, k, sampling, g) if k > 0 else Draft([])
        key = tuple(draft.tokens)
        if sampling.greedy or key not in seen:
            rec = _Recording(lm)
            verdict = decode.verify_step(rec, seq, draft, sampling, g)
            seen[key] = logits_to_probs(rec.logits, sampling)
        else:
            p = seen[key]
            q = pad_vocab(draft.q, p.shape[-1]) if draft.q is not None else None
            verdict = decode.speculative_verify(draft.tokens, q, p, g)
        out.append(draft.tokens[0] if verdict.n_accepted > 0 else verdict.next_token)
    lm.rollback(len(seq) - 1)
    return out


def exact_next_probs(generator, prompt: Sequence[int], sampling) -> np.ndarray:
    """The target's exact p for the token after prompt (after temperature/top-k/top-p)."""
    lm = generator.lm
    decode.prefill(lm, list(prompt))
    logits = lm.extend([prompt[-1]], 1)
    lm.rollback(len(prompt) - 1)
    return logits_to_probs(logits, sampling)[0].double().cpu().numpy()


def draft_first_probs(generator, prompt: Sequence[int], k: int, sampling) -> np.ndarray:
    """[V] the distribution the drafter draws its first token after prompt from (a point mass
    for a deterministic drafter): what a verifier that accepted every draft would emit."""
    lm, drafter = generator.lm, generator.drafter
    seq = list(prompt)
    decode.prefill(lm, seq)
    drafter.begin(seq)
    lm.rollback(len(seq) - 1)
    draft = drafter.propose(seq, k, sampling, make_generator(0))
    lm.rollback(len(seq) - 1)
    if not draft.tokens:
        return np.zeros(0)  # no draft: the target emits the first token itself
    if draft.q is not None:
        return draft.q[0].double().cpu().numpy()
    q = np.zeros(draft.tokens[0] + 1)
    q[draft.tokens[0]] = 1.0
    return q


def method_tests(
    gen: Any, k: int, prompts: Sequence[Any], sampling: SamplingConfig, seeds_at: Any, desc: str
) -> tuple[list[dict[str, Any]], list[float | None]]:
    """One method's goodness-of-fit test per prompt (n samples on the seeds `seeds_at(i)` gives
    prompt i), and for a method that drafts (k > 0) the TVD of its unverified first draft per
    prompt that has more than one bin (a prompt with one bin tests nothing)."""
    tests, unverified = [], []
    for i, p in enumerate(tqdm(prompts, desc=desc)):
        ids = list(p.ids)
        samples = first_token_samples(gen, ids, k, sampling, seeds_at(i))
        probs = exact_next_probs(gen, ids, sampling)
        r = stats.goodness_of_fit(samples, probs)
        r["tvd_unverified"] = None  # the baseline drafts nothing
        if k:
            r["tvd_unverified"] = tvd_between(probs, draft_first_probs(gen, ids, k, sampling))
            if r["dof"]:
                unverified.append(r["tvd_unverified"])
        tests.append(r)
    return tests, unverified


def distribution_checks(
    gens: dict[str, tuple[Any, int]], prompts, sampling, n_samples: int, t: float
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Per method (baseline and speculative arms): n_samples first tokens per prompt through the
    library's drafter and verifier, tested against the target's exact p (chi-square over pooled
    bins, prompts combined), with the smallest TVD the combined test detects (80% power, alpha
    0.05) and, for speculative arms, the TVD a verifier that accepted every draft would produce.
    Every method and prompt gets its own seeds, so no two methods share random draws."""
    out: dict[str, Any] = {}
    rows: list[dict[str, Any]] = []
    for j, (mname, (gen, k)) in enumerate(gens.items()):

        def seeds_at(i: int, j: int = j) -> Iterable[int]:
            start = 1_000_000 * (j + 1) + 10_000 * i
            return range(start, start + n_samples)

        desc = f"distribution T={t} {mname}"
        tests, unverified = method_tests(gen, k, prompts, sampling, seeds_at, desc)
        rows += [{"temperature": t, "prompt": i, "method": mname, **r} for i, r in enumerate(tests)]
        out[mname] = method_check(tests, unverified, bool(k))
    return out, rows
