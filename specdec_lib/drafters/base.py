"""The drafter interface: propose up to K tokens, then observe how many were accepted.

Shaped like transformers' `CandidateGenerator` (`get_candidates` / `update_candidate_strategy`):
`propose` returns the tokens and, for drafters that sample, q: the exact distribution each token
was drawn from (processed with the same temperature/top-k/top-p as the target). Deterministic
drafters return `q=None`, a point mass. `observe` is called after every verification with the
accepted count and the sequence as it now stands, which is where an adaptive drafter adjusts
itself, and where a drafter that needs the target's state (hidden states, Medusa-style heads)
would receive it.

Knows nothing about the verifier or the target model.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import torch

from specdec_lib.config import SamplingConfig


@dataclass
class Draft:
    tokens: list[int]  # d <= K proposed ids
    q: torch.Tensor | None = None  # [d, V] draft distribution per position; None: point mass


class Drafter(ABC):
    name: str = "drafter"

    def begin(self, prompt: list[int]) -> None:  # noqa: B027 - optional hook
        """A new sequence starts with these ids."""

    @abstractmethod
    def propose(
        self, seq: list[int], k: int, sampling: SamplingConfig, generator: torch.Generator
    ) -> Draft:
        """Up to k ids that might follow seq (fewer, even none, when the drafter has no guess)."""

    def observe(self, seq: list[int], n_proposed: int, n_accepted: int) -> None:  # noqa: B027
        """Feedback after a verification; seq already includes the emitted tokens."""


class NoDrafter(Drafter):
    """Proposes nothing: the speculative loop becomes the autoregressive baseline."""

    name = "none"

    def propose(self, seq, k, sampling, generator) -> Draft:
        return Draft([])
