"""An adaptive draft length around any drafter: grow K after full acceptance, shrink it after an
early rejection.

The schedule only changes how many tokens are proposed; every draft still goes through the same
verifier, so the output is exactly what the verifier would emit for any draft (lossless: greedy
output equals greedy decoding, and sampled tokens follow the target's distribution). K starts at
`k_start` for every sequence and stays in [k_min, k_max]; the decode loop's own K caps it too.
Knows nothing about models or the verifier.
"""

from __future__ import annotations

from typing import Any

from specdec_lib.core.draft import Draft, Drafter
from specdec_lib.drafters.base import Wrapping
from specdec_lib.drafters.registry import DraftContext, build_nested
from specdec_lib.errors import SpecdecError


class AdaptiveDrafter(Wrapping):
    """Any drafter under the adaptive-K schedule."""

    name = "adaptive"

    def __init__(self, inner: Drafter, *, k_start: int = 4, k_min: int = 1, k_max: int = 8):
        if not 1 <= k_min <= k_start <= k_max:
            raise SpecdecError(
                f"adaptive K needs 1 <= k_min <= k_start <= k_max, got {k_min}, {k_start}, {k_max}"
            )
        self.inner = inner
        self.k_start, self.k_min, self.k_max = k_start, k_min, k_max
        self.k = k_start
        self.trace: list[int] = []  # the K in force at each proposal of the current sequence

    def wrapped(self) -> Drafter:
        """The inner drafter whose proposals the schedule cuts to K."""
        return self.inner

    def begin(self, prompt: list[int]) -> None:
        """K back to k_start and an empty trace for the new sequence."""
        self.k = self.k_start
        self.trace = []
        super().begin(prompt)

    def propose(self, seq, k, sampling, generator) -> Draft:
        """The inner drafter's proposal of at most the K in force, recorded in `trace`."""
        k_now = min(k, self.k)
        self.trace.append(k_now)
        return self.inner.propose(seq, k_now, sampling, generator)

    def observe(self, seq: list[int], n_proposed: int, n_accepted: int) -> None:
        """K + 1 after a whole draft of K accepted, K - 1 when under half was accepted."""
        if n_proposed:
            if n_accepted == n_proposed and n_proposed >= self.k:
                self.k = min(self.k + 1, self.k_max)  # the whole draft was taken: try longer
            elif 2 * n_accepted < n_proposed:
                self.k = max(self.k - 1, self.k_min)  # rejected in its first half: shorter
        super().observe(seq, n_proposed, n_accepted)

    def predictor(self):
        """The inner drafter's: the schedule changes how many tokens, not which."""
        return self.inner.predictor()

    def unwrapped(self) -> Drafter:
        """The inner drafter's own (its guesses are the ones proposed)."""
        return self.inner.unwrapped()


def build(args: tuple[Any, ...], ctx: DraftContext) -> AdaptiveDrafter:
    """`adaptive[:KSTART:KMAX]:SPEC`: without KSTART:KMAX, K starts at ctx.k_start capped by the
    run's K, which is also the cap."""
    k_start, k_max, inner = args
    k_max = k_max if k_max is not None else ctx.k
    k_start = k_start if k_start is not None else min(ctx.k_start, k_max)
    return AdaptiveDrafter(
        build_nested(inner, ctx), k_start=k_start, k_min=min(ctx.k_min, k_start), k_max=k_max
    )
