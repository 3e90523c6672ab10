"""A gate around any drafter: stop drafting while recent drafts are not being accepted, and try
again after a back-off.

A rejected draft is not free: its verification scores K + 1 positions instead of one. Where the
wrapped drafter is nearly always wrong (n-gram lookup under a repetition penalty, which forbids
the repeats it copies) every draft makes the step dearer and buys nothing. The rule:

- the gate keeps the accepted counts of the last `window` verifications that carried a draft (a
  draft the wrapped drafter left empty is not counted: it cost a plain step);
- once `window` are in and together they accepted fewer than `min_accepted` tokens, the gate
  proposes nothing for the next `backoff` steps (the decode loop then runs plain target steps);
- after them it lets one proposal through: its verification joins the window (the oldest leaves)
  and the rule is applied again, so one probe that is accepted reopens the gate and one that is
  not closes it for another `backoff` steps.

Every sequence starts with an empty window and the gate open. The gate only decides whether a
step drafts, never what is drafted, and every draft still goes through the same verifier, so the
output is what the verifier emits for any draft: greedy output equals greedy decoding (and the
wrapped drafter's greedy output), and sampled tokens follow the target's distribution.

Knows nothing about models or the verifier.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from specdec_lib.core.draft import Draft, Drafter
from specdec_lib.drafters.base import Wrapping
from specdec_lib.drafters.registry import (
    GATE_BACKOFF,
    GATE_MIN_ACCEPTED,
    GATE_WINDOW,
    DraftContext,
    build_nested,
)
from specdec_lib.errors import SpecdecError


class GateDrafter(Wrapping):
    """Any drafter, silenced for `backoff` steps whenever its last `window` verified drafts
    accepted fewer than `min_accepted` tokens in all."""

    name = "gate"

    def __init__(
        self,
        inner: Drafter,
        *,
        window: int = GATE_WINDOW,
        min_accepted: int = GATE_MIN_ACCEPTED,
        backoff: int = GATE_BACKOFF,
    ):
        if window < 1 or min_accepted < 0 or backoff < 1:
            raise SpecdecError(
                f"the gate needs window >= 1, min_accepted >= 0 and backoff >= 1, got {window}, "
                f"{min_accepted}, {backoff}"
            )
        self.inner = inner
        self.window, self.min_accepted, self.backoff = window, min_accepted, backoff
        self.recent: deque[int] = deque(maxlen=window)  # accepted per verified draft, newest last
        self.closed_for = 0  # steps left without a draft
        self.held = 0  # steps of the current sequence the gate kept from drafting

    def wrapped(self) -> Drafter:
        """The drafter whose proposals the gate lets through or holds back."""
        return self.inner

    def begin(self, prompt: list[int]) -> None:
        """An empty window and an open gate for the new sequence."""
        self.recent.clear()
        self.closed_for = 0
        self.held = 0
        super().begin(prompt)

    def propose(self, seq, k, sampling, generator) -> Draft:
        """Nothing while the gate is closed; otherwise the wrapped drafter's proposal."""
        if self.closed_for > 0:
            self.closed_for -= 1
            self.held += 1
            return Draft([])
        return self.inner.propose(seq, k, sampling, generator)

    def observe(self, seq: list[int], n_proposed: int, n_accepted: int) -> None:
        """A verified draft joins the window; a full window that accepted too little closes the
        gate for `backoff` steps."""
        if n_proposed:
            self.recent.append(n_accepted)
            if len(self.recent) == self.window and sum(self.recent) < self.min_accepted:
                self.closed_for = self.backoff
        super().observe(seq, n_proposed, n_accepted)

    def predictor(self):
        """The wrapped drafter's: the gate changes which steps draft, not what."""
        return self.inner.predictor()

    def unwrapped(self) -> Drafter:
        """The wrapped drafter's own (its guesses are the ones proposed)."""
        return self.inner.unwrapped()

    def with_cache(self, use_cache: bool) -> Drafter:
        """The same gate around the wrapped drafter with its cache on or off (itself when that
        changes nothing)."""
        inner = self.inner.with_cache(use_cache)
        if inner is self.inner:
            return self
        return GateDrafter(
            inner, window=self.window, min_accepted=self.min_accepted, backoff=self.backoff
        )


def build(args: tuple[Any, ...], ctx: DraftContext) -> GateDrafter:
    """`gate[:WINDOW:MIN:BACKOFF]:SPEC`: SPEC behind the gate (defaults in `registry`)."""
    window, min_accepted, backoff, inner = args
    return GateDrafter(
        build_nested(inner, ctx), window=window, min_accepted=min_accepted, backoff=backoff
    )
