"""A tree of cheap candidates, verified in one target call (`tree.verify_tree`): every earlier
match of the current suffix and the corpus bigram's top next tokens, merged into a trie.

Candidates, best first: for n = max_ngram down to min_ngram, each earlier occurrence of the last
n tokens (most recent first, up to `max_matches` distinct continuations in all) proposes what
followed it, up to K tokens (an overlapping copy, as in `NgramDrafter`); then each of the
bigram's `branch` most frequent successors of the last token, chained by the bigram's top choice
to `k_fallback` tokens. With a `corpus` index (`CorpusIndex` over the fit split) the
`corpus_matches` most frequent continuations of the last 3 tokens there join the matches, after
the sequence's own. With a `fallback` drafter (the shared-body drafter, say) a step with no
match proposes the fallback's chain of `k_fallback` tokens instead. Shared prefixes are merged;
the trie stops at `max_nodes` nodes and at depth K. A single chain drafter must bet on one
match; the tree verifies all of them for about the cost of the widest call, and greedy keeps
the longest path it agrees with (lossless).

Greedy only: at T > 0 it refuses (SpecdecError). Knows nothing about models.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from specdec_lib.core.draft import Draft, Drafter
from specdec_lib.core.token_tree import GREEDY_ONLY, build_tree
from specdec_lib.drafters.base import Wrapping
from specdec_lib.drafters.bigram import top_successors
from specdec_lib.drafters.ngram import copy_from, match_starts
from specdec_lib.drafters.registry import TREE_BRANCH, DraftContext
from specdec_lib.errors import SpecdecError


class CorpusIndex:
    """Every n-gram of a token corpus (the fit split), sorted, for the continuations that
    followed a given n-gram there: a suffix index cut at n tokens."""

    def __init__(self, token_ids: Sequence[int], vocab_size: int, n: int = 3, max_hits: int = 256):
        ids = np.asarray(token_ids, dtype=np.int64)
        if vocab_size**n >= 2**62:
            raise SpecdecError(f"a {n}-gram key of a {vocab_size}-token vocabulary overflows")
        self.ids, self.vocab, self.n, self.max_hits = ids, vocab_size, n, max_hits
        m = max(ids.size - n, 0)  # n-grams followed by at least one token
        keys = np.zeros(m, dtype=np.int64)
        for i in range(n):
            keys = keys * vocab_size + ids[i : i + m]
        order = np.argsort(keys, kind="stable")
        self.keys, self.next_pos = keys[order], order + n  # position after each n-gram

    def continuations(self, suffix: Sequence[int], k: int, m: int) -> list[list[int]]:
        """The m most frequent k-token continuations of suffix[-n:] in the corpus (ties: the
        earliest occurrence), each cut where the corpus ends."""
        if len(suffix) < self.n or k < 1 or m < 1:
            return []
        key = 0
        for t in suffix[-self.n :]:
            if not 0 <= t < self.vocab:
                return []
            key = key * self.vocab + int(t)
        lo, hi = np.searchsorted(self.keys, [key, key + 1])
        counts: dict[tuple[int, ...], int] = {}
        for pos in self.next_pos[lo : min(hi, lo + self.max_hits)]:
            cont = tuple(int(x) for x in self.ids[pos : pos + k])
            if cont:
                counts[cont] = counts.get(cont, 0) + 1
        ranked = sorted(counts, key=lambda c: -counts[c])  # stable: earliest first on ties
        return [list(c) for c in ranked[:m]]


class TreeDrafter(Wrapping):
    """A tree of earlier matches and bigram chains, verified in one call (greedy only)."""

    name = "tree"

    def __init__(
        self,
        successors: np.ndarray | None = None,  # [V, branch] from `top_successors`
        *,
        max_nodes: int = 16,
        max_matches: int = 4,
        max_ngram: int = 3,
        min_ngram: int = 1,
        k_fallback: int = 2,
        fallback: Drafter | None = None,
        corpus: CorpusIndex | None = None,
        corpus_matches: int = 2,
    ):
        if max_nodes < 1 or max_matches < 1 or not 1 <= min_ngram <= max_ngram:
            raise SpecdecError(
                "a tree needs max_nodes >= 1, max_matches >= 1 and 1 <= min_ngram <= max_ngram"
            )
        self.successors = successors
        self.max_nodes, self.max_matches = max_nodes, max_matches
        self.max_ngram, self.min_ngram, self.k_fallback = max_ngram, min_ngram, k_fallback
        self.fallback = fallback
        self.corpus, self.corpus_matches = corpus, corpus_matches

    def wrapped(self) -> Drafter | None:
        """The fallback drafter (None: none)."""
        return self.fallback

    @classmethod
    def fit(
        cls,
        token_ids: Sequence[int],
        vocab_size: int,
        branch: int = 2,
        corpus: bool = False,
        **kw,
    ) -> TreeDrafter:
        """Bigram successors (and, with `corpus`, a trigram index) from the fit data."""
        succ = top_successors(token_ids, vocab_size, branch) if branch else None
        index = CorpusIndex(token_ids, vocab_size) if corpus else None
        return cls(succ, corpus=index, **kw)

    def matches(self, seq: list[int], k: int) -> list[list[int]]:
        """What followed each earlier occurrence of the current suffix (longest n first, most
        recent first), up to k tokens each, distinct, at most max_matches."""
        arr = np.asarray(seq, dtype=np.int64)
        chains: list[list[int]] = []
        seen: set[tuple[int, ...]] = set()
        for n in range(self.max_ngram, self.min_ngram - 1, -1):
            for j in match_starts(arr, n)[::-1][: self.max_matches]:  # most recent first
                chain = copy_from(seq, int(j) + n, k)  # may run into itself: a loop
                if tuple(chain) not in seen:
                    seen.add(tuple(chain))
                    chains.append(chain)
                if len(chains) >= self.max_matches:
                    return chains
        return chains

    def bigram_chains(self, last: int, k: int) -> list[list[int]]:
        """One chain per bigram successor of last, each continued by top successors."""
        if self.successors is None or not 0 <= last < self.successors.shape[0]:
            return []
        depth = min(k, self.k_fallback)
        chains = []
        for t in self.successors[last]:
            if t < 0 or depth < 1:
                continue
            chain = [int(t)]
            while len(chain) < depth and (nxt := int(self.successors[chain[-1], 0])) >= 0:
                chain.append(nxt)
            chains.append(chain)
        return chains

    def propose(self, seq, k, sampling, generator) -> Draft:
        """A tree of the copied and bigram chains (greedy only); no match: the fallback's."""
        if not sampling.greedy:
            raise SpecdecError(GREEDY_ONLY)
        if k < 1:
            return Draft([])
        matches = self.matches(seq, k)
        if self.corpus is not None:
            matches += self.corpus.continuations(seq, k, self.corpus_matches)
        if not matches and self.fallback is not None:  # nothing to copy: the fallback's chain
            return self.fallback.propose(seq, min(k, self.k_fallback), sampling, generator)
        chains = matches + self.bigram_chains(seq[-1], k)
        tree = build_tree(chains, self.max_nodes)
        return Draft(tree.tokens, parents=tree.parents) if tree.tokens else Draft([])


def build(args: tuple[int, int], ctx: DraftContext) -> TreeDrafter:
    """`tree[:NODES[:BRANCH]]`: earlier matches and BRANCH bigram successors, NODES nodes."""
    nodes, branch = args
    return TreeDrafter.fit(
        ctx.fit_ids(), ctx.target.vocab_size, branch, corpus=True, max_nodes=nodes
    )


def _tree_fb(args: tuple[int, int], ctx: DraftContext, fb: Drafter | None) -> TreeDrafter:
    nodes, k_fb = args
    return TreeDrafter.fit(
        ctx.fit_ids(),
        ctx.target.vocab_size,
        TREE_BRANCH,
        corpus=True,
        max_nodes=nodes,
        k_fallback=k_fb,
        fallback=fb,
    )


def build_shared(args: tuple[int, int], ctx: DraftContext) -> TreeDrafter:
    """`tree+shared[:NODES[:KFB]]`: NODES nodes, else KFB tokens of the shared-body chain."""
    from specdec_lib.drafters.shared import shared_fallback

    return _tree_fb(args, ctx, shared_fallback(ctx))


def build_bigram(args: tuple[int, int], ctx: DraftContext) -> TreeDrafter:
    """`tree+bigram[:NODES[:KFB]]`: the bigram successors in its tree and no chain."""
    return _tree_fb(args, ctx, None)
