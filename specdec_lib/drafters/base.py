"""What drafters share beyond the interface: `Wrapping`, and the `none` entry's builder.

The interface itself (`Draft`, `Drafter`, `NoDrafter`) is the decode loop's and lives in
`specdec_lib.core.draft`; drafters import it from there. A drafter built around another one (a
fallback, an adaptive schedule's inner drafter) is a `Wrapping` drafter: the hooks reach the one
it wraps.

Knows nothing about the verifier or the target model.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import TYPE_CHECKING, Any

from specdec_lib.core.draft import Drafter, NoDrafter

if TYPE_CHECKING:
    from specdec_lib.core.cache import CachedLM
    from specdec_lib.core.processors import RepetitionControl
    from specdec_lib.drafters.registry import DraftContext


class Wrapping(Drafter):
    """A drafter that hands some or all of its proposals to another one, `wrapped()` (a
    fallback, an inner drafter; None: none). attach, process_with, begin and observe reach the
    wrapped drafter too, so that one which keeps state (the shared-body drafter's target, a
    schedule) sees every sequence and every verification; a subclass that extends a hook calls
    super()."""

    @abstractmethod
    def wrapped(self) -> Drafter | None:
        """The drafter this one hands proposals to (None: none)."""

    def attach(self, target: CachedLM) -> None:
        """Attach the wrapped drafter to the target too."""
        if (w := self.wrapped()) is not None:
            w.attach(target)

    def process_with(self, control: RepetitionControl) -> None:
        """Hand the wrapped drafter the repetition control too."""
        if (w := self.wrapped()) is not None:
            w.process_with(control)

    def begin(self, prompt: list[int]) -> None:
        """Start the wrapped drafter's sequence too."""
        if (w := self.wrapped()) is not None:
            w.begin(prompt)

    def observe(self, seq: list[int], n_proposed: int, n_accepted: int) -> None:
        """Pass the verification's feedback on to the wrapped drafter."""
        if (w := self.wrapped()) is not None:
            w.observe(seq, n_proposed, n_accepted)


def build_none(args: tuple[Any, ...], ctx: DraftContext) -> NoDrafter:
    """`none`: no drafter, the autoregressive baseline."""
    return NoDrafter()
