"""What the decode loop needs of a drafter: a `Draft` and the `Drafter` interface it calls.

Shaped like transformers' `CandidateGenerator` (`get_candidates` / `update_candidate_strategy`):
`propose` returns the tokens and, for drafters that sample, q: the exact distribution each token
was drawn from (processed with the same temperature/top-k/top-p as the target). Deterministic
drafters return `q=None`, a point mass. `observe` is called after every verification with the
accepted count and the sequence as it now stands, which is where an adaptive drafter adjusts
itself. `attach` hands a drafter the target itself: the shared-body drafter runs the target's
own layers on the target's own cache and returns their hidden states with the draft
(`Draft.target_hidden`), so that verification only applies the LM head. `NoDrafter` proposes
nothing, which turns the speculative loop into the autoregressive baseline.

The interface lives here, in core, so that the decode loop depends on no drafter; the drafters
(`specdec_lib.drafters`) implement it. Knows nothing about the verifier, the target model or any
particular drafter.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from specdec_lib.config import SamplingConfig

if TYPE_CHECKING:
    import torch

    from specdec_lib.core.cache import CachedLM
    from specdec_lib.core.processors import RepetitionControl


@dataclass
class Draft:
    """One proposal: up to K tokens (a chain, or a tree), with how the drafter got them."""

    tokens: list[int]  # d <= K proposed ids
    q: torch.Tensor | None = None  # [d, V] draft distribution per position; None: point mass
    # [d + 1, H]: the target's own last hidden states for [seq[-1], d_1..d_d], when the drafter
    # ran them through the target's body (whose cache then holds them): the verifier only
    # applies the LM head. None: the verifier runs the target on them.
    target_hidden: torch.Tensor | None = None
    # a tree of candidates instead of one chain: the parent of each token (-1: a child of
    # seq[-1]; parents first), verified in one call by `tree.verify_tree` (greedy only)
    parents: list[int] | None = None

    @property
    def depth(self) -> int:
        """Tokens on the longest path: len(tokens) for a chain."""
        if self.parents is None:
            return len(self.tokens)
        from specdec_lib.core.token_tree import Tree

        return Tree(self.tokens, self.parents).depth


class Drafter(ABC):
    """Proposes tokens for the target to verify, and hears how many were accepted."""

    name: str = "drafter"

    def attach(self, target: CachedLM) -> None:  # noqa: B027 - optional hook
        """The target that will verify this drafter's proposals, before each sequence. A drafter
        that runs the target's own layers keeps it; the others ignore it."""

    def process_with(self, control: RepetitionControl) -> None:  # noqa: B027 - optional hook
        """The repetition control the verifier applies to the target's logits, before each
        sequence. A drafter that computes logits applies it to its own, so that its guesses follow
        the processed target; the others ignore it (their drafts are still checked against it)."""

    def begin(self, prompt: list[int]) -> None:  # noqa: B027 - optional hook
        """A new sequence starts with these ids."""

    @abstractmethod
    def propose(
        self, seq: list[int], k: int, sampling: SamplingConfig, generator: torch.Generator
    ) -> Draft:
        """Up to k ids that might follow seq (fewer, even none, when the drafter has no guess)."""

    def observe(self, seq: list[int], n_proposed: int, n_accepted: int) -> None:  # noqa: B027
        """Feedback after a verification; seq already includes the emitted tokens."""

    def predictor(self) -> Callable[[list[int]], list[int]] | None:
        """Teacher-forced greedy guesses: predict(ids)[j] is the drafter's first greedy token
        after ids[: j + 1] (-1: no guess). None where the drafter cannot say without decoding."""
        return None

    def unwrapped(self) -> Drafter:
        """The drafter whose guesses these are: itself, or for a wrapper that only schedules
        them (adaptive K) the wrapped drafter's."""
        return self

    def with_cache(self, use_cache: bool) -> Drafter:
        """This drafter with its own KV cache on or off, sharing its weights; a drafter without
        a cache of its own returns itself."""
        return self


class NoDrafter(Drafter):
    """Proposes nothing: the speculative loop becomes the autoregressive baseline."""

    name = "none"

    def propose(self, seq, k, sampling, generator) -> Draft:
        """Nothing: the target emits one token per call."""
        return Draft([])
