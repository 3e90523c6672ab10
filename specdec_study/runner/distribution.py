"""The first-token distribution check of speculative sampling: the first token a generator emits
after a prompt, over many seeds, through the library's own drafter and verifier, tested against
the target's exact next-token distribution (`analysis.stats.goodness_of_fit`), beside the
distribution the drafter alone would give.

Knows nothing about profiles, experiments or result files: it takes generators (anything with
`.lm`, a CachedLM, and `.drafter`) and prompts.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from specdec_lib.config import SamplingConfig
from specdec_lib.core import decode
from specdec_lib.core.draft import Draft
from specdec_lib.core.sampling import logits_to_probs, make_generator
from specdec_lib.core.verify import pad_vocab
from specdec_lib.errors import SpecdecError
from specdec_study.analysis import stats
from specdec_study.experiments.speculative_sampling import method_check, sequence_check, tvd_between


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
    gen: Any,
    k: int,
    prompts: Sequence[Any],
    sampling: SamplingConfig,
    seeds_at: Any,
    desc: str,
    checkpoint: Any = None,
) -> tuple[list[dict[str, Any]], list[float | None]]:
    """One method's goodness-of-fit test per prompt (n samples on the seeds `seeds_at(i)` gives
    prompt i), and for a method that drafts (k > 0) the TVD of its unverified first draft per
    prompt that has more than one bin (a prompt with one bin tests nothing). With a checkpoint
    (`results.store.Checkpoint`; segment `desc`) each prompt's test is saved as it finishes and
    a rerun takes the finished ones from it."""
    done = checkpoint.done(desc, prompts) if checkpoint is not None else {}
    tests, unverified = [], []
    for i, p in enumerate(tqdm(prompts, desc=desc)):
        ids = list(p.ids)
        if i in done:
            r = done[i][0]
        else:
            samples = first_token_samples(gen, ids, k, sampling, seeds_at(i))
            probs = exact_next_probs(gen, ids, sampling)
            r = stats.goodness_of_fit(samples, probs)
            r["tvd_unverified"] = None  # the baseline drafts nothing
            if k:
                r["tvd_unverified"] = tvd_between(probs, draft_first_probs(gen, ids, k, sampling))
            if checkpoint is not None:
                checkpoint.add(desc, i, ids, [r])
        if k and r["dof"]:
            unverified.append(r["tvd_unverified"])
        tests.append(r)
    return tests, unverified


def distribution_checks(
    gens: dict[str, tuple[Any, int]],
    prompts,
    sampling,
    n_samples: int,
    t: float,
    checkpoint: Any = None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Per method (baseline and speculative arms): n_samples first tokens per prompt through the
    library's drafter and verifier, tested against the target's exact p (chi-square over pooled
    bins, prompts combined), with the smallest TVD the combined test detects (80% power, alpha
    0.05) and, for speculative arms, the TVD a verifier that accepted every draft would produce.
    Every method and prompt gets its own seeds, so no two methods share random draws. A
    checkpoint keeps each (method, prompt) test as it finishes (`method_tests`)."""
    out: dict[str, Any] = {}
    rows: list[dict[str, Any]] = []
    for j, (mname, (gen, k)) in enumerate(gens.items()):

        def seeds_at(i: int, j: int = j) -> Iterable[int]:
            start = 1_000_000 * (j + 1) + 10_000 * i
            return range(start, start + n_samples)

        desc = f"distribution T={t} {mname}"
        tests, unverified = method_tests(gen, k, prompts, sampling, seeds_at, desc, checkpoint)
        rows += [{"temperature": t, "prompt": i, "method": mname, **r} for i, r in enumerate(tests)]
        out[mname] = method_check(tests, unverified, bool(k))
    return out, rows


# --------------------------------------------------------------------------- positions 1..m

# how an emitted token came about: an accepted draft, the residual's draw after the call's first
# draft was rejected or after an accepted prefix, the bonus after a fully accepted draft, or the
# target's own draw when nothing was drafted (the baseline, or a call with no room left to draft)
PATHS = ("accept", "residual_first", "residual_later", "bonus", "target")
DRAFT_PATHS = PATHS[:4]
MIN_GROUP = 10  # a prefix seen fewer times has too few samples to test (every bin pooled)
MEMO = 64  # target calls remembered (each holds its rows of logits over the vocabulary)


class _PromptTarget:
    """The target behind a prompt prefilled once, for many decode runs after it: `reset` returns
    to the prompt (its KV prefix is reused across seeds), and a call on a context scored among
    the last MEMO calls returns the same logits without running the model (the target is
    deterministic, so a draw from them is a draw from what a fresh call would give). A new
    context runs its generated tokens and the call's ids over the cached prompt, then rolls back
    to the prompt."""

    def __init__(self, lm, prompt: Sequence[int]) -> None:
        self.lm, self.device = lm, lm.device
        self.prompt, self.prefix = list(prompt), list(prompt[:-1])
        self.tokens: list[int] = []  # the context's tokens after the cached prefix
        self.memo: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
        self.prefilling = False
        decode.prefill(lm, self.prompt)

    def reset(self) -> None:
        self.tokens, self.prefilling = [], True

    def extend(self, ids, n: int):
        ids, prefilling, self.prefilling = list(ids), self.prefilling, False
        if prefilling and ids == self.prefix:  # `decode.prefill`: already cached
            return None
        key = (tuple(self.tokens), tuple(ids), n)
        if key in self.memo:
            self.memo.move_to_end(key)
        else:
            self.lm.rollback(len(self.prefix))
            self.memo[key] = self.lm.extend(self.tokens + ids, n)
            self.lm.rollback(len(self.prefix))
            if len(self.memo) > MEMO:
                self.memo.popitem(last=False)
        self.tokens += ids
        return self.memo[key]

    def rollback(self, n_keep: int) -> None:
        self.tokens = self.tokens[: n_keep - len(self.prefix)]

    def head(self, hidden):
        raise SpecdecError("the sequence check needs drafts that do not run the target's body")

    def probs(self, prefix: Sequence[int], sampling) -> np.ndarray:
        """[V] the target's exact p for the token after prompt + prefix."""
        self.lm.rollback(len(self.prefix))
        logits = self.lm.extend([self.prompt[-1], *prefix], 1)
        self.lm.rollback(len(self.prefix))
        return logits_to_probs(logits, sampling)[0].double().cpu().numpy()


def token_paths(accepted: Sequence[int], proposed: Sequence[int], m: int) -> list[str]:
    """The path (`PATHS`) of each of the first m emitted tokens, from a run's per-call accepted
    and proposed counts: n accepted drafts, then the token the call emits itself."""
    out: list[str] = []
    for n, d in zip(accepted, proposed, strict=True):
        out += ["accept"] * n
        if d == 0:
            out.append("target")
        elif n == d:
            out.append("bonus")
        else:
            out.append("residual_later" if n else "residual_first")
    return out[:m]


def sequence_samples(
    target: _PromptTarget, drafter, k: int, sampling, seeds, m: int
) -> list[tuple[tuple[int, ...], tuple[str, ...]]]:
    """The first m tokens (and the path of each) that the library's own decode loop
    (`decode.speculative_decode`: its drafter and verifier) emits after the prompt, per seed."""
    out = []
    for s in seeds:
        gen = decode.speculative_decode(
            target,  # type: ignore[arg-type]  # the part of CachedLM the loop uses
            drafter,
            list(target.prompt),
            k=k,
            max_new_tokens=m,
            sampling=sampling,
            generator=make_generator(int(s)),
        )
        st = gen.stats
        paths = token_paths(st.accepted_lengths, st.proposed_lengths, m)
        out.append((tuple(gen.tokens[:m]), tuple(paths)))
    return out


def sequence_tests(
    generator, prompt: Sequence[int], k: int, sampling, seeds, m: int
) -> tuple[list[dict[str, Any]], dict[str, dict[str, int]]]:
    """Positions 1..m tested: one decode run of m tokens per seed, the samples grouped by
    (position i, the i - 1 tokens before it); each group of at least MIN_GROUP samples is tested
    against the target's exact conditional p(. | prompt, prefix) (`stats.goodness_of_fit`).
    The joint of the m tokens is the product of these conditionals, so together they test it.
    Returns the tests (position, prefix, counts per path) and, per position, how many tested
    tokens (in groups with two bins or more) came by each path."""
    target = _PromptTarget(generator.lm, prompt)
    samples = sequence_samples(target, generator.drafter, k, sampling, seeds, m)
    groups: dict[tuple[int, ...], list[tuple[int, str]]] = {}
    for toks, paths in samples:
        for i in range(min(m, len(toks))):
            groups.setdefault(toks[:i], []).append((toks[i], paths[i]))
    tests: list[dict[str, Any]] = []
    by_pos = {str(i + 1): dict.fromkeys(PATHS, 0) for i in range(m)}
    for prefix, drawn in sorted(groups.items(), key=lambda kv: (len(kv[0]), -len(kv[1]))):
        if len(drawn) < MIN_GROUP:
            continue
        r = stats.goodness_of_fit([t for t, _ in drawn], target.probs(prefix, sampling))
        counts = dict.fromkeys(PATHS, 0)
        for _, path in drawn:
            counts[path] += 1
        if r["dof"]:
            for path, c in counts.items():
                by_pos[str(len(prefix) + 1)][path] += c
        where = {"position": len(prefix) + 1, "prefix": " ".join(map(str, prefix))}
        tests.append({**where, **r, **counts})
    generator.lm.rollback(len(prompt) - 1)
    return tests, by_pos


def sequence_checks(
    gens: dict[str, tuple[Any, int]], prompt: Sequence[int], sampling, cfg: dict[str, Any], t: float
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Per method (the baseline, then the drafts): `cfg["n_samples"]` decode runs of
    `cfg["positions"]` tokens after prompt on the method's own seeds, tested at every position
    against the target's exact conditionals, with what the test detects and how many tested
    tokens each verifier path produced; `experiments.speculative_sampling.sequence_check` gives the
    verdict."""
    out: dict[str, Any] = {}
    rows: list[dict[str, Any]] = []
    n, m = int(cfg["n_samples"]), int(cfg["positions"])
    for j, (mname, (gen, k)) in enumerate(tqdm(gens.items(), desc=f"sequence check T={t}")):
        start = 5_000_000 + 1_000_000 * j  # apart from the first-token check's seeds
        tests, by_pos = sequence_tests(gen, prompt, k, sampling, range(start, start + n), m)
        rows += [{"temperature": t, "method": mname, **r} for r in tests]
        needed = DRAFT_PATHS if k else ("target",)
        out[mname] = sequence_check(tests, by_pos, needed, cfg["tvd_target"], cfg["min_path"])
    return out, rows
