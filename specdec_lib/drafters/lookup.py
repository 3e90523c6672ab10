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

from specdec_lib.drafters.base import Draft, Drafter, Wrapping
from specdec_lib.drafters.ngram import NgramDrafter
from specdec_lib.drafters.registry import DraftContext, ints, register
from specdec_lib.errors import SpecdecError


class LookupDrafter(Wrapping):
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
        return self.fallback

    def propose(self, seq, k, sampling, generator) -> Draft:
        tokens = self.lookup.lookup(seq, k)
        if tokens or self.fallback is None or self.k_fallback == 0:
            return Draft(tokens)
        extra = self.fallback.propose(seq, min(k, self.k_fallback), sampling, generator)
        if extra.target_hidden is not None:  # it ran the target's body: its draft stays whole
            return extra
        if extra.q is not None:
            raise SpecdecError("a lookup fallback must be deterministic (a point-mass drafter)")
        return Draft(list(extra.tokens)[: min(k, self.k_fallback)])


def _lookup_args(rest: str) -> tuple[int, int]:
    """KFB (fallback tokens, 2 by default) and MIN (shortest n-gram, 1; at most 3)."""
    args = ints(rest, 2, minimum=0)
    k_fb = args[0] if args else 2
    min_ngram = max(1, min(args[1], 3)) if len(args) > 1 else 1
    return k_fb, min_ngram


def _fallback_of(name: str, ctx: DraftContext) -> Drafter | None:
    from specdec_lib.drafters.bigram import BigramDrafter
    from specdec_lib.drafters.shared import shared_fallback

    if name == "lookup+bigram":
        return BigramDrafter.fit(ctx.fit_ids(), ctx.target.vocab_size)
    if name == "lookup+shared":
        return shared_fallback(ctx)
    return None


for _name in ("lookup", "lookup+bigram", "lookup+shared"):

    def _lookup(args, ctx: DraftContext, _name: str = _name) -> LookupDrafter:
        k_fb, min_ngram = args
        return LookupDrafter(_fallback_of(_name, ctx), k_fallback=k_fb, min_ngram=min_ngram)

    register(_name, forms=(f"{_name}[:KFB[:MIN]]",), parse=_lookup_args)(_lookup)
