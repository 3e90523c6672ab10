"""Prompt lookup with a short fallback: a long draft when the sequence repeats, a short one when
it does not.

When the last tokens occur earlier in the sequence (longest n-gram first, most recent match, an
overlapping copy: see `NgramDrafter`) the copy is proposed at the full K. When nothing matches,
the fallback (the corpus bigram, say) proposes only `k_fallback` tokens: a chained bigram is
rarely right for its first token and far less often after that, so drafting it to K only makes
verification longer. Where verification costs little per extra position (the bench measures it)
the copy pays at large K and the fallback at 1-2 tokens. Lookup drafts are point masses; a
shared-body fallback (`drafters.shared`) is returned whole, with its q and the target's hidden
states. Knows nothing about models.
"""

from __future__ import annotations

from specdec_lib.core.draft import Draft, Drafter
from specdec_lib.drafters.base import Wrapping
from specdec_lib.drafters.ngram import NgramDrafter
from specdec_lib.drafters.registry import DraftContext
from specdec_lib.errors import SpecdecError


class LookupDrafter(Wrapping):
    """Prompt lookup (n-gram copy), with a short fallback where nothing matches."""

    name = "lookup"

    def __init__(
        self,
        fallback: Drafter | None = None,
        *,
        k_fallback: int = 2,
        max_ngram: int = 3,
        min_ngram: int = 1,
    ):
        if k_fallback < 0:
            raise SpecdecError(f"k_fallback must be >= 0, got {k_fallback}")
        self.lookup = NgramDrafter(max_ngram=max_ngram, min_ngram=min_ngram)
        self.fallback, self.k_fallback = fallback, k_fallback

    def wrapped(self) -> Drafter | None:
        """The fallback drafter (None: none)."""
        return self.fallback

    def propose(self, seq, k, sampling, generator) -> Draft:
        """The n-gram lookup's tokens; where it finds none, the fallback's first k_fallback."""
        tokens = self.lookup.lookup(seq, k)
        if tokens or self.fallback is None or self.k_fallback == 0:
            return Draft(tokens)
        extra = self.fallback.propose(seq, min(k, self.k_fallback), sampling, generator)
        if extra.target_hidden is not None:  # it ran the target's body: its draft stays whole
            return extra
        if extra.q is not None:
            raise SpecdecError("a lookup fallback must be deterministic (a point-mass drafter)")
        return Draft(list(extra.tokens)[: min(k, self.k_fallback)])


def _lookup(args: tuple[int, int], fallback: Drafter | None) -> LookupDrafter:
    k_fb, min_ngram = args
    return LookupDrafter(fallback, k_fallback=k_fb, min_ngram=min_ngram)


def build(args: tuple[int, int], ctx: DraftContext) -> LookupDrafter:
    """`lookup[:KFB[:MIN]]`: prompt lookup alone."""
    return _lookup(args, None)


def build_bigram(args: tuple[int, int], ctx: DraftContext) -> LookupDrafter:
    """`lookup+bigram[:KFB[:MIN]]`: KFB bigram tokens where lookup finds no match."""
    from specdec_lib.drafters.bigram import BigramDrafter

    return _lookup(args, BigramDrafter.fit(ctx.fit_ids(), ctx.target.vocab_size))


def build_shared(args: tuple[int, int], ctx: DraftContext) -> LookupDrafter:
    """`lookup+shared[:KFB[:MIN]]`: KFB shared-body tokens where lookup finds no match."""
    from specdec_lib.drafters.shared import shared_fallback

    return _lookup(args, shared_fallback(ctx))
