"""Tree verification: one call on a tree of candidates keeps the longest path greedy agrees with,
token-identical to uncached stepwise greedy decoding (forced rejections at every branch, the
right branch anywhere in the tree, trees deeper than the sliding window, EOS inside a branch,
max_new_tokens edges); after a rejected branch the cache holds exactly the accepted path; the
masks respect sliding-window layers; sampling is refused in one line."""

from __future__ import annotations

import pytest
import torch
from conftest import (
    VOCAB,
    WINDOW,
    OracleDrafter,
    greedy_continuation,
    next_logits,
    random_prompt,
    speculate,
    stepwise_greedy,
)

from specdec_lib.config import SamplingConfig
from specdec_lib.core.cache import CachedLM
from specdec_lib.core.decode import speculative_decode
from specdec_lib.core.draft import Draft
from specdec_lib.core.token_tree import Tree, build_tree, clip_tree, tree_masks, verify_tree
from specdec_lib.drafters.tree import CorpusIndex, TreeDrafter, top_successors
from specdec_lib.errors import SpecdecError

pytestmark = pytest.mark.usefixtures("single_thread")


def wrong(tok: int, shift: int = 1) -> int:
    return (tok + shift) % VOCAB


class OracleTree(OracleDrafter):
    """A tree around the target's greedy continuation: decoy branches first (so that the
    accepted nodes are not the first rows and must be moved), then the true chain of k tokens
    with a wrong sibling at every depth, the true chain made wrong at `wrong_at` if given."""

    name = "oracle_tree"

    def __init__(self, prompt: list[int], continuation: list[int], wrong_at: int | None = None):
        super().__init__(prompt, continuation, VOCAB, wrong_at)

    def propose(self, seq, k, sampling, generator) -> Draft:
        chain = super().propose(seq, k, sampling, generator).tokens  # wrong at wrong_at
        true = self.full[len(seq) : len(seq) + k]
        chains = [[wrong(true[0], 2), *true[1:]]]  # a decoy with the true tail
        for i in range(k):  # a wrong sibling at every depth, two tokens long
            chains.append([*chain[:i], wrong(chain[i], 3), wrong(chain[i], 4)])
        chains.append(chain)
        tree = build_tree([c[:k] for c in chains], 10_000)
        return Draft(tree.tokens, parents=tree.parents)


# ----------------------------------------------------------------------------- the tree


def test_build_tree_merges_shared_prefixes_and_stops_at_max_nodes():
    t = build_tree([[5, 6, 7], [5, 6, 8], [9], [5, 1]], 10)
    assert t.tokens == [5, 6, 7, 8, 9, 1] and t.parents == [-1, 0, 1, 1, -1, 0]
    assert t.depths == [1, 2, 3, 3, 1, 2] and t.depth == 3
    assert sorted(t.paths()) == [[5, 1], [5, 6, 7], [5, 6, 8], [9]]
    assert build_tree([[5, 6, 7], [9]], 2).tokens == [5, 6]
    c = clip_tree(t, 2)
    assert c.tokens == [5, 6, 9, 1] and c.parents == [-1, 0, -1, 0]
    with pytest.raises(SpecdecError):
        Tree([1, 2], [1, -1])  # a parent after its child


def test_tree_masks_see_ancestors_and_respect_the_sliding_window(target64):
    tree = Tree([10, 11, 12, 13, 14, 15], [-1, 0, 1, 2, 3, -1])  # a chain of 5 and a sibling
    cached = 7
    masks = tree_masks(target64, cached, tree, torch.device("cpu"), torch.float64)
    assert set(masks) == {"full_attention", "sliding_attention"}
    full, sliding = masks["full_attention"][0, 0], masks["sliding_attention"][0, 0]
    depth = [0, 1, 2, 3, 4, 5, 1]
    for r in range(7):
        for j in range(cached):
            assert full[r, j]
            assert bool(sliding[r, j]) == (cached + depth[r] - j < WINDOW)
    assert full[5, cached : cached + 6].all() and not full[5, cached + 6]  # its chain only
    assert full[6, cached + 0] and full[6, cached + 6] and not full[6, cached + 1]
    assert not sliding[5, cached + 0] and sliding[5, cached + 2]  # depth 5 vs 0 / 2, window 4


# ----------------------------------------------------------------------------- lossless


@pytest.mark.parametrize(
    ("k", "wrong_at"), [(1, 0), (1, None), (3, 1)] + [(6, j) for j in range(7)]
)
def test_tree_speculation_matches_stepwise_greedy_with_a_rejection_at_every_branch(
    k, wrong_at, target64
):
    """Trees deeper than the sliding window (k = 6 > 4), the true path behind decoys, rejected
    at each depth in turn (wrong_at = k: never)."""
    prompt, n = random_prompt(31, 9), 17
    ref = greedy_continuation(target64, prompt, n + k)
    gen = speculate(target64, OracleTree(prompt, ref, wrong_at), prompt, k, n)
    assert gen.tokens == ref[:n] == stepwise_greedy(target64, prompt, n)
    s = gen.stats
    expect = k if wrong_at is None else wrong_at
    assert s.accepted_lengths == [min(expect, d) for d in s.proposed_lengths]


def test_tree_speculation_in_float32_on_the_fast_path(target32):
    prompt, n, k = random_prompt(32, 12), 20, 5
    ref = greedy_continuation(target32, prompt, n + k)
    target = CachedLM(target32)
    gen = speculate(target, OracleTree(prompt, ref, 3), prompt, k, n)
    assert target.fast and gen.tokens == ref[:n]


# the accepted nodes [ref[0], ref[1]] behind a decoy and a rejected sibling (moved next to the
# prefix), or as the tree's first rows (kept in place, the rest cropped)
BRANCHES = {
    "moved": lambda r: [[wrong(r[0]), r[1]], [r[0], r[1], wrong(r[2]), r[3]], [r[0], r[1]]],
    "in_place": lambda r: [[r[0], r[1], wrong(r[2])], [wrong(r[0]), r[1]]],
}


@pytest.mark.parametrize(("name", "seed", "length"), [("moved", 33, 5), ("in_place", 36, 3)])
def test_cache_after_a_rejected_branch_holds_exactly_the_accepted_path(
    name, seed, length, target64
):
    """Past the sliding window: after compaction the cache is the sequence + accepted path,
    and the next logits equal one uncached forward's."""
    prompt = random_prompt(seed, length * WINDOW)
    ref = greedy_continuation(target64, prompt, 8)
    lm = CachedLM(target64)
    lm.reset()
    lm.extend(prompt[:-1], 1)
    tree = build_tree(BRANCHES[name](ref), 99)
    accepted, nxt = verify_tree(lm, prompt, tree)
    assert (accepted, nxt) == (ref[:2], ref[2])
    assert lm.tokens == prompt + ref[:2]
    assert lm.cache.get_seq_length() == len(prompt) + 2
    logits = lm.extend([ref[2]], 1)[0]
    torch.testing.assert_close(logits, next_logits(target64, prompt + ref[:3]), rtol=0, atol=1e-10)


def test_eos_inside_an_accepted_branch_stops_exactly_there(target64):
    prompt, k = random_prompt(34, 7), 5
    ref = greedy_continuation(target64, prompt, 40)
    m = next(i for i in range(k + 2, len(ref)) if i % (k + 1) < k - 1 and ref[i] not in ref[:i])
    gen = speculate(target64, OracleTree(prompt, ref), prompt, k, 40, eos_ids=[ref[m]])
    assert gen.tokens == stepwise_greedy(target64, prompt, 40, eos=ref[m]) == ref[: m + 1]
    assert gen.stats.stopped_by == "eos"


@pytest.mark.parametrize("k", [1, 4])
def test_max_new_tokens_edges_give_exact_lengths(k, target64):
    prompt = random_prompt(35, 4)
    ref = greedy_continuation(target64, prompt, 3 * (k + 1) + 2)
    for n in (0, 1, k, k + 1, 2 * (k + 1) + 1):
        gen = speculate(target64, OracleTree(prompt, ref), prompt, k, n)
        assert gen.tokens == ref[:n], (k, n)
        assert all(d <= max(n - 1, 0) for d in gen.stats.proposed_lengths)


def test_tree_drafter_is_lossless_and_proposes_real_trees(target64):
    fit = sum((greedy_continuation(target64, random_prompt(40 + i, 6), 20) for i in range(4)), [])
    drafter = TreeDrafter.fit(
        fit + random_prompt(9, 100), VOCAB, branch=2, corpus=True, max_nodes=12
    )
    branched = 0
    for i, k in enumerate([2, 4, 7]):
        prompt = random_prompt(50 + i, 10) * 2  # repeated: several earlier matches
        n = 24
        gen = speculate(target64, drafter, prompt, k, n)
        assert gen.tokens == greedy_continuation(target64, prompt, n)
        branched += gen.stats.proposed > 0
    seq = random_prompt(60, 10) * 3
    d = drafter.propose(seq, 4, SamplingConfig(), None)
    assert d.parents is not None and len(d.tokens) > d.depth  # branches, not one chain
    assert branched


def test_top_successors_ranks_by_count_then_id():
    table = top_successors([1, 2, 1, 3, 1, 3, 2, 1], 5, 2)
    assert table[1].tolist() == [3, 2] and table[2].tolist() == [1, -1]
    assert table[4].tolist() == [-1, -1]


def test_sampling_is_refused_in_one_line(target64):
    prompt = random_prompt(36, 6)
    drafter = TreeDrafter.fit(random_prompt(1, 50), VOCAB)
    with pytest.raises(SpecdecError, match="greedy only"):
        speculative_decode(
            CachedLM(target64),
            drafter,
            prompt,
            k=3,
            max_new_tokens=5,
            sampling=SamplingConfig(temperature=0.8),
        )


def test_corpus_index_ranks_the_continuations_of_the_last_trigram():
    corpus = [1, 2, 3, 9, 8, 0, 1, 2, 3, 7, 6, 0, 1, 2, 3, 9, 5, 4, 2, 3]
    index = CorpusIndex(corpus, 10, n=3)
    assert index.continuations([5, 1, 2, 3], 2, 3) == [[9, 8], [7, 6], [9, 5]]
    assert index.continuations([5, 1, 2, 3], 1, 3) == [[9], [7]]
    assert index.continuations([4, 2, 3], 2, 2) == []  # "4 2 3" is never followed
    assert index.continuations([2, 3], 2, 2) == []  # shorter than n
