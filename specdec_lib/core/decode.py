"""The autoregressive and speculative decode loops. They return tokens with stats; never print.

One loop serves both: with `NoDrafter` every target call scores one position, which is the
KV-cached autoregressive baseline. What the loop needs of a drafter is `core.draft`'s interface;
it knows no drafter in particular. Invariant: the target's cache holds every token of `seq` but
the last, so a call feeds [seq[-1], d_1..d_K] and reads K + 1 rows of logits; after accepting n
drafts it keeps seq + d_1..d_n and crops the rest. The prompt's first len - 1 tokens are
prefilled in one call (logits of its last position only).

Knows nothing about files, W&B or how prompts were chosen.
"""

from __future__ import annotations

import time
from collections.abc import Collection
from dataclasses import dataclass, field

import torch

from specdec_lib.config import SamplingConfig
from specdec_lib.core.cache import CachedLM
from specdec_lib.core.draft import Draft, Drafter, NoDrafter
from specdec_lib.core.processors import NO_CONTROL, TREE_NO_CONTROL, RepetitionControl
from specdec_lib.core.sampling import greedy_ids, logits_to_probs, make_generator
from specdec_lib.core.verify import Verdict, greedy_verify, pad_vocab, speculative_verify
from specdec_lib.errors import SpecdecError


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


def prefill(target: CachedLM, prompt: list[int]) -> None:
    """Cache all prompt tokens but the last."""
    target.reset()
    if len(prompt) > 1:
        target.extend(prompt[:-1], 1)


def clip_draft(draft: Draft, k: int) -> Draft:
    """The draft cut to at most k tokens (and k + 1 hidden states); a tree to depth k."""
    if draft.parents is not None:
        from specdec_lib.core.tree import Tree, clip_tree

        t = clip_tree(Tree(draft.tokens, draft.parents), k)
        return draft if len(t.tokens) == len(draft.tokens) else Draft(t.tokens, parents=t.parents)
    if len(draft.tokens) <= k:
        return draft
    return Draft(
        draft.tokens[:k],
        None if draft.q is None else draft.q[:k],
        None if draft.target_hidden is None else draft.target_hidden[: k + 1],
    )


def verify_step(
    target: CachedLM,
    seq: list[int],
    draft: Draft,
    sampling: SamplingConfig,
    generator: torch.Generator,
    control: RepetitionControl = NO_CONTROL,
):
    """One target call on [seq[-1]] + draft (or only its LM head, when the drafter already ran
    the target's body on them); rolls the cache back; returns the Verdict. `control` processes
    row i of the logits against seq + the draft's first i tokens before the acceptance rule."""
    d = len(draft.tokens)
    if draft.parents is not None:  # a tree: one call, the longest path greedy agrees with
        from specdec_lib.core.tree import GREEDY_ONLY, Tree, verify_tree

        if not sampling.greedy:
            raise SpecdecError(GREEDY_ONLY)
        if control.active:
            raise SpecdecError(TREE_NO_CONTROL)

        accepted, nxt = verify_tree(target, seq, Tree(draft.tokens, draft.parents))
        return Verdict(len(accepted), nxt, tuple(accepted))
    if draft.target_hidden is not None:  # the drafter ran the target's body: the head is left
        logits = target.head(draft.target_hidden)  # [d + 1, V]
    else:
        logits = target.extend([seq[-1], *draft.tokens], d + 1)  # [d + 1, V]
    logits = control.process(logits, seq, draft.tokens)  # row i after seq + draft[:i]
    if sampling.greedy:
        verdict = greedy_verify(draft.tokens, greedy_ids(logits))
    else:
        p = logits_to_probs(logits, sampling)  # [d + 1, V]
        q = pad_vocab(draft.q, p.shape[-1]) if draft.q is not None else None
        verdict = speculative_verify(draft.tokens, q, p, generator)
    target.rollback(len(seq) + verdict.n_accepted)
    return verdict


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
    eos = set(eos_ids)
    stats = GenStats()
    seq = list(prompt)
    device = target.device
    device_sync(device)
    t0 = time.perf_counter()
    drafter.attach(target)
    drafter.process_with(control)
    drafter.begin(seq)
    prefill(target, seq)
    device_sync(device)
    stats.prefill_s = time.perf_counter() - t0
    stats.target_calls = 1 if len(seq) > 1 else 0
    while stats.new_tokens < max_new_tokens:
        k_eff = min(k, max_new_tokens - stats.new_tokens - 1)
        t1 = time.perf_counter()
        draft = drafter.propose(seq, k_eff, sampling, generator) if k_eff > 0 else Draft([])
        draft = clip_draft(draft, k_eff)  # the target's extra cached positions are cropped below
        device_sync(device)
        t2 = time.perf_counter()
        verdict = verify_step(target, seq, draft, sampling, generator, control)
        device_sync(device)
        t3 = time.perf_counter()
        stats.draft_s += t2 - t1
        stats.verify_s += t3 - t2
        stats.target_calls += 1
        d = draft.depth  # a tree counts its longest path
        stats.draft_calls += d > 0
        stats.proposed += d
        stats.accepted += verdict.n_accepted
        stats.accepted_lengths.append(verdict.n_accepted)
        stats.proposed_lengths.append(d)
        path = verdict.path if verdict.path is not None else draft.tokens[: verdict.n_accepted]
        emitted = [*path, verdict.next_token]
        for i, tok in enumerate(emitted):
            if tok in eos:
                emitted = emitted[: i + 1]
                stats.stopped_by = "eos"
                break
        seq.extend(emitted)
        stats.new_tokens += len(emitted)
        if stats.stopped_by == "eos":
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
