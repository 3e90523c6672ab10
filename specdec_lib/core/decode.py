"""The decode loop: draft -> verify -> cache update -> emit, returning tokens with stats.

Start at `speculative_decode`, one screen: each step is one call to a function below it. One loop
serves both decoders: with `NoDrafter` every target call scores one position, which is the KV-cached
autoregressive baseline. What the loop needs of a drafter is `core.draft`'s interface; it knows
no drafter in particular. Invariant: the target's cache holds every token of `seq` but the last,
so a call feeds [seq[-1], d_1..d_K] and reads K + 1 rows of logits; after accepting n drafts it
keeps seq + d_1..d_n and crops the rest. The prompt's first len - 1 tokens are prefilled in one
call (logits of its last position only). The accept/reject rules are `core/verify.py`'s.

The special cases sit beside the loop, not in it: a tree draft is cut and verified by
`core/token_tree.py` (`clip_tree_draft`, `verify_tree_draft`); a shared-body draft brings the
target's hidden states, so `draft_logits` applies the LM head alone; a repetition control is
handed to the drafter in `begin_sequence` and processes the target's logits in `verify_draft`.

Knows nothing about files, W&B or how prompts were chosen; never prints.
"""

from __future__ import annotations

import time
from collections.abc import Collection
from dataclasses import dataclass, field

import torch

from specdec_lib.config import SamplingConfig
from specdec_lib.core.cache import CachedLM
from specdec_lib.core.draft import Draft, Drafter, NoDrafter
from specdec_lib.core.processors import NO_CONTROL, RepetitionControl
from specdec_lib.core.sampling import greedy_ids, logits_to_probs, make_generator
from specdec_lib.core.token_tree import clip_tree_draft, verify_tree_draft
from specdec_lib.core.verify import Verdict, greedy_verify, pad_vocab, speculative_verify
from specdec_lib.errors import SpecdecError


def speculative_decode(
    target: CachedLM,
    drafter: Drafter,
    prompt: list[int],
    *,
    k: int,
    max_new_tokens: int,
    sampling: SamplingConfig = SamplingConfig(),
    eos_ids: Collection[int] = (),
    generator: torch.Generator | None = None,
    control: RepetitionControl = NO_CONTROL,
) -> Generation:
    """Generate up to max_new_tokens after prompt (stopping after an EOS), drafting up to k;
    `control` (repetition penalty, no-repeat n-grams) processes the target's logits."""
    if not prompt:
        raise SpecdecError("the prompt is empty: give at least one token")
    if max_new_tokens < 0:
        raise SpecdecError(f"max_new_tokens must be >= 0, got {max_new_tokens}")
    generator = generator if generator is not None else make_generator(sampling.seed)
    eos, seq, stats, device = set(eos_ids), list(prompt), GenStats(), target.device
    device_sync(device)
    t0 = time.perf_counter()
    begin_sequence(target, drafter, seq, control)  # the drafter's hooks, then the prefill
    device_sync(device)
    stats.prefill_s = time.perf_counter() - t0
    stats.target_calls = 1 if len(seq) > 1 else 0
    while stats.new_tokens < max_new_tokens:
        k_eff = min(k, max_new_tokens - stats.new_tokens - 1)  # room for the bonus token
        t1 = time.perf_counter()
        draft = propose(drafter, seq, k_eff, sampling, generator)  # 1. draft
        device_sync(device)
        t2 = time.perf_counter()
        verdict = verify_draft(target, seq, draft, sampling, generator, control)  # 2. verify
        target.rollback(len(seq) + verdict.n_accepted)  # 3. cache: seq + the accepted drafts
        device_sync(device)
        t3 = time.perf_counter()
        emitted = emitted_tokens(draft, verdict, eos)  # 4. emit: accepted + correction/bonus
        seq.extend(emitted)
        d = draft.depth  # a tree counts its longest path
        stats.record(d, verdict.n_accepted, len(emitted), t2 - t1, t3 - t2)
        if emitted[-1] in eos:
            stats.stopped_by = "eos"
            break
        drafter.observe(seq, d, verdict.n_accepted)
    stats.wall_s = time.perf_counter() - t0
    return Generation(seq[len(prompt) :], stats)


def autoregressive_decode(
    target: CachedLM,
    prompt: list[int],
    *,
    max_new_tokens: int,
    sampling: SamplingConfig = SamplingConfig(),
    eos_ids: Collection[int] = (),
    generator: torch.Generator | None = None,
    control: RepetitionControl = NO_CONTROL,
) -> Generation:
    """The baseline: one target call per token, KV-cached (or not, per `target.use_cache`)."""
    return speculative_decode(
        target,
        NoDrafter(),
        prompt,
        k=1,
        max_new_tokens=max_new_tokens,
        sampling=sampling,
        eos_ids=eos_ids,
        generator=generator,
        control=control,
    )


def begin_sequence(
    target: CachedLM, drafter: Drafter, seq: list[int], control: RepetitionControl
) -> None:
    """Hand the drafter the target, the repetition control and the prompt; prefill the target."""
    drafter.attach(target)
    drafter.process_with(control)
    drafter.begin(seq)
    prefill(target, seq)


def prefill(target: CachedLM, prompt: list[int]) -> None:
    """Cache all prompt tokens but the last."""
    target.reset()
    if len(prompt) > 1:
        target.extend(prompt[:-1], 1)


def propose(
    drafter: Drafter, seq: list[int], k: int, sampling: SamplingConfig, generator: torch.Generator
) -> Draft:
    """The drafter's proposal after seq, cut to k tokens; nothing asked for at k = 0."""
    draft = drafter.propose(seq, k, sampling, generator) if k > 0 else Draft([])
    return clip_draft(draft, k)  # the target's extra cached positions are cropped after verify


def clip_draft(draft: Draft, k: int) -> Draft:
    """The draft cut to at most k tokens (and k + 1 hidden states); a tree to depth k."""
    if draft.parents is not None:
        return clip_tree_draft(draft, k)
    if len(draft.tokens) <= k:
        return draft
    return Draft(
        draft.tokens[:k],
        None if draft.q is None else draft.q[:k],
        None if draft.target_hidden is None else draft.target_hidden[: k + 1],
    )


def verify_draft(
    target: CachedLM,
    seq: list[int],
    draft: Draft,
    sampling: SamplingConfig,
    generator: torch.Generator,
    control: RepetitionControl = NO_CONTROL,
) -> Verdict:
    """The accept/reject decision on one draft: one target call on [seq[-1]] + draft, `control`
    processing row i against seq + draft[:i], then `verify`'s rule. The cache then holds all of
    the draft (the caller rolls it back); a tree goes to `tree.verify_tree_draft`."""
    if draft.parents is not None:
        return verify_tree_draft(target, seq, draft, sampling, control)
    logits = control.process(draft_logits(target, seq, draft), seq, draft.tokens)  # [d + 1, V]
    if sampling.greedy:
        return greedy_verify(draft.tokens, greedy_ids(logits))
    p = logits_to_probs(logits, sampling)  # [d + 1, V]
    q = pad_vocab(draft.q, p.shape[-1]) if draft.q is not None else None
    return speculative_verify(draft.tokens, q, p, generator)


def draft_logits(target: CachedLM, seq: list[int], draft: Draft) -> torch.Tensor:
    """The target's [d + 1, V] logits after seq and after each draft token: one call on
    [seq[-1]] + draft, or only the LM head where the drafter already ran the target's body on
    them (`Draft.target_hidden`: the shared-body drafter)."""
    if draft.target_hidden is not None:
        return target.head(draft.target_hidden)
    return target.extend([seq[-1], *draft.tokens], len(draft.tokens) + 1)


def verify_step(
    target: CachedLM,
    seq: list[int],
    draft: Draft,
    sampling: SamplingConfig,
    generator: torch.Generator,
    control: RepetitionControl = NO_CONTROL,
) -> Verdict:
    """`verify_draft`, then the cache rolled back to seq + the accepted drafts: one verification
    as the loop makes it, for callers that step it themselves."""
    verdict = verify_draft(target, seq, draft, sampling, generator, control)
    target.rollback(len(seq) + verdict.n_accepted)
    return verdict


def emitted_tokens(draft: Draft, verdict: Verdict, eos: Collection[int]) -> list[int]:
    """What one verification emits: the accepted drafts (a tree's accepted path) and the target's
    correction or bonus, cut after the first EOS among them."""
    path = verdict.path if verdict.path is not None else draft.tokens[: verdict.n_accepted]
    emitted = [*path, verdict.next_token]
    for i, tok in enumerate(emitted):
        if tok in eos:
            return emitted[: i + 1]
    return emitted


def device_sync(device: torch.device) -> None:
    """Wait for queued kernels so that timers measure work, not launches."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


@dataclass
class GenStats:
    """What one generation cost and how its drafts fared."""

    new_tokens: int = 0
    target_calls: int = 0  # prefill included
    draft_calls: int = 0  # propose() calls that returned at least one token
    proposed: int = 0
    accepted: int = 0
    accepted_lengths: list[int] = field(default_factory=list)  # n per target call after prefill
    proposed_lengths: list[int] = field(default_factory=list)  # d per call (0: nothing drafted)
    draft_s: float = 0.0
    verify_s: float = 0.0
    prefill_s: float = 0.0
    wall_s: float = 0.0
    stopped_by: str = "max_new_tokens"  # or "eos"

    def record(
        self, proposed: int, accepted: int, emitted: int, draft_s: float, verify_s: float
    ) -> None:
        """One verification: d drafted (a tree's depth), n accepted, the tokens it emitted and
        the seconds spent drafting and verifying."""
        self.draft_s += draft_s
        self.verify_s += verify_s
        self.target_calls += 1
        self.draft_calls += proposed > 0
        self.proposed += proposed
        self.accepted += accepted
        self.accepted_lengths.append(accepted)
        self.proposed_lengths.append(proposed)
        self.new_tokens += emitted

    @property
    def acceptance_rate(self) -> float:
        """accepted / proposed: the earlier study's "acceptance" figure."""
        return self.accepted / self.proposed if self.proposed else 0.0

    @property
    def mean_accepted_length(self) -> float:
        """Tokens emitted per target call after prefill, bonus included: mean of (n + 1)."""
        n = len(self.accepted_lengths)
        return (sum(self.accepted_lengths) + n) / n if n else 0.0

    def position_acceptance(self, k: int) -> list[float | None]:
        """P(draft i accepted | drafts 1..i-1 accepted and i was proposed), i = 1..k."""
        reached = [0] * k
        took = [0] * k
        for n, d in zip(self.accepted_lengths, self.proposed_lengths, strict=True):
            for i in range(min(d, n + 1, k)):
                reached[i] += 1
                took[i] += i < n
        return [t / r if r else None for t, r in zip(took, reached, strict=True)]

    def accepted_histogram(self, k: int) -> list[int]:
        """How many verifications with a draft accepted 0, 1, ..., k of it."""
        hist = [0] * (k + 1)
        for n, d in zip(self.accepted_lengths, self.proposed_lengths, strict=True):
            if d:
                hist[min(n, k)] += 1
        return hist

    def summary(self, k: int | None = None) -> dict:
        """The stats as a plain dict, with position acceptance and the histogram up to k."""
        k = k if k is not None else max(self.proposed_lengths, default=0)
        return {
            "new_tokens": self.new_tokens,
            "target_calls": self.target_calls,
            "draft_calls": self.draft_calls,
            "proposed": self.proposed,
            "accepted": self.accepted,
            "acceptance_rate": self.acceptance_rate,
            "mean_accepted_length": self.mean_accepted_length,
            "position_acceptance": self.position_acceptance(k),
            "accepted_histogram": self.accepted_histogram(k),
            "draft_s": self.draft_s,
            "verify_s": self.verify_s,
            "prefill_s": self.prefill_s,
            "wall_s": self.wall_s,
            "stopped_by": self.stopped_by,
        }


@dataclass
class Generation:
    """The new tokens of one generation, with its stats."""

    tokens: list[int]  # new tokens only
    stats: GenStats
