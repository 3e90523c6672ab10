"""Tree verification: score a tree of draft candidates in one target call and keep the longest
root path that greedy decoding agrees with (SpecInfer, Medusa, EAGLE-2 verify token trees).

A tree is its nodes' tokens and each node's parent (-1: the root, which is `seq[-1]`, the one
token of the sequence the cache does not hold yet); parents come before their children. The call
feeds [root, node_1..node_N] as N + 1 rows after the L cached tokens: row r sits at position
L + depth(r) and attends to every cached key (within the sliding window on sliding-window
layers: Gemma 3's local layers) and to its own ancestors and itself, through an explicit mask
per layer type. Row r's logits are then those of the sequence seq + (path to r), so the greedy
walk (from the root, follow the child whose token is the row's argmax) emits exactly what
step-by-step greedy decoding emits, and the target's argmax after the last accepted node is the
correction or bonus. The keys and values of the accepted path are then moved next to the cache
and the rest cropped (`CachedLM.keep`, the primitive a chain's rollback uses too): the cache holds
exactly seq + the accepted tokens, as after a chain verification.

The decode loop's two tree branches live here too: `clip_tree_draft` (a tree cut to depth K) and
`verify_tree_draft` (the tree's Verdict, refusing sampling and a repetition control), so that the
loop and its chain verifier (`core/decode.py`) read as if every draft were a chain.

Greedy only: at T > 0 a tree needs multi-draft rejection sampling (SpecInfer), which this module
does not do; it refuses with a SpecdecError. On the CPU the tree call runs the fast view's linear
layers with the stock masked SDPA attention (the batch-invariant attention only knows causal
rows), so in bfloat16 a tree row can round differently from the same position scored alone;
in float32/float64 the logits agree to rounding.

Knows nothing about drafters' heuristics or the decode loop's statistics.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import torch

from specdec_lib.core import fastpath
from specdec_lib.core.processors import TREE_NO_CONTROL
from specdec_lib.core.sampling import greedy_ids
from specdec_lib.core.verify import Verdict
from specdec_lib.errors import SpecdecError

if TYPE_CHECKING:
    from specdec_lib.config import SamplingConfig
    from specdec_lib.core.cache import CachedLM
    from specdec_lib.core.draft import Draft  # draft.py imports this module (Draft.depth)
    from specdec_lib.core.processors import RepetitionControl

GREEDY_ONLY = (
    "tree verification is greedy only (temperature 0): use --temperature 0 or a chain drafter"
)


@dataclass(frozen=True)
class Tree:
    """A draft tree: N node tokens and each node's parent, parents before children."""

    tokens: list[int]  # N node tokens
    parents: list[int]  # N parent indices into tokens, -1 for a child of the root

    def __post_init__(self) -> None:
        if len(self.tokens) != len(self.parents):
            raise SpecdecError("a draft tree needs one parent per token")
        for i, p in enumerate(self.parents):
            if not -1 <= p < i:
                raise SpecdecError(f"tree node {i} has parent {p}: parents must come first")

    @property
    def depths(self) -> list[int]:
        """Depth of each node (a child of the root has depth 1)."""
        d: list[int] = []
        for p in self.parents:
            d.append(1 if p < 0 else d[p] + 1)
        return d

    @property
    def depth(self) -> int:
        """The depth of the deepest node (0 for an empty tree)."""
        return max(self.depths, default=0)

    def paths(self) -> list[list[int]]:
        """Every root-to-leaf token path."""
        children = {p for p in self.parents}
        out = []
        for i in range(len(self.tokens)):
            if i not in children:
                path, j = [], i
                while j >= 0:
                    path.append(self.tokens[j])
                    j = self.parents[j]
                out.append(path[::-1])
        return out


def build_tree(chains: list[list[int]], max_nodes: int) -> Tree:
    """Merge candidate chains (best first) into a trie of at most max_nodes nodes."""
    tokens: list[int] = []
    parents: list[int] = []
    children: dict[tuple[int, int], int] = {}  # (parent, token) -> node
    for chain in chains:
        parent = -1
        for tok in chain:
            node = children.get((parent, tok))
            if node is None:
                if len(tokens) >= max_nodes:
                    break
                node = len(tokens)
                tokens.append(int(tok))
                parents.append(parent)
                children[(parent, tok)] = node
            parent = node
    return Tree(tokens, parents)


def clip_tree(tree: Tree, k: int) -> Tree:
    """The nodes of depth <= k (a node's parent is shallower, so it is kept before it)."""
    depths = tree.depths
    keep = [i for i, d in enumerate(depths) if d <= k]
    if len(keep) == len(tree.tokens):
        return tree
    new = {old: i for i, old in enumerate(keep)}
    return Tree(
        [tree.tokens[i] for i in keep],
        [-1 if tree.parents[i] < 0 else new[tree.parents[i]] for i in keep],
    )


def _layer_types(model: torch.nn.Module) -> list[str]:
    cfg = model.config
    cfg = cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg
    types = getattr(cfg, "layer_types", None) or ["full_attention"]
    return sorted(set(types))


def tree_masks(
    model: torch.nn.Module, cached: int, tree: Tree, device: torch.device, dtype: torch.dtype
) -> dict[str, torch.Tensor]:
    """{layer type: [1, 1, N + 1, cached + N + 1] mask}: row r sees the cached keys (within the
    sliding window on sliding layers) and its ancestors and itself. Bool for SDPA, additive
    (0 / dtype min) for other attention implementations."""
    n = len(tree.tokens) + 1
    anc = torch.zeros(n, n, dtype=torch.bool)  # row r sees tree row j
    pos = [0] * n  # depth of each row (root 0)
    for r in range(n):
        anc[r, r] = True
        if r:
            p = tree.parents[r - 1] + 1  # row of the parent (root is row 0)
            anc[r] |= anc[p]
            pos[r] = pos[p] + 1
    qpos = torch.tensor(pos)[:, None] + cached  # [n, 1]
    kpos = torch.cat([torch.arange(cached), torch.tensor(pos) + cached])[None, :]  # [1, L + n]
    full = torch.cat([torch.ones(n, cached, dtype=torch.bool), anc], dim=1)  # [n, L + n]
    cfg = model.config
    cfg = cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg
    window = getattr(cfg, "sliding_window", None)
    impl = getattr(cfg, "_attn_implementation", "sdpa")
    out = {}
    for kind in _layer_types(model):
        m = full
        if kind == "sliding_attention" and window:
            m = full & ((qpos - kpos) < window)
        m = m[None, None].to(device)
        if impl != "sdpa":
            m = torch.zeros(m.shape, dtype=dtype, device=device).masked_fill(
                ~m, torch.finfo(dtype).min
            )
        out[kind] = m
    return out


def _runner(lm: CachedLM) -> torch.nn.Module:
    """The module the tree call runs: the fast view's linear layers with the stock attention,
    which honours an explicit mask (the batch-invariant attention knows causal rows only)."""
    if not lm.fast:
        return lm.model
    runner = getattr(lm, "_tree_runner", None)
    if runner is None:
        # plain packed products over the call's rows: tree rows are not consecutive positions,
        # so the fixed-slot invariant products do not apply (lossless up to rounding in bf16)
        runner = fastpath.fast_view(lm.model, lm.packed, invariant=False, attention=False)
        lm._tree_runner = runner
    return runner


@torch.inference_mode()
def score_tree(lm: CachedLM, root: int, tree: Tree) -> torch.Tensor:
    """Append [root, *tree.tokens] to lm's cache (tree positions, tree mask); their logits:
    [N + 1, V]. The cache then holds all N + 1 rows: `CachedLM.keep` keeps a path."""
    if not lm.use_cache:
        raise SpecdecError("tree verification needs the KV cache (use_cache=True)")
    if lm.cache is None:
        lm.reset()
    cached = len(lm.tokens)
    n = len(tree.tokens) + 1
    ids = torch.tensor([[root, *tree.tokens]], dtype=torch.long, device=lm.device)  # [1, n]
    depths = [0, *tree.depths]
    position_ids = torch.tensor([depths], dtype=torch.long, device=lm.device) + cached
    masks = tree_masks(lm.model, cached, tree, lm.device, lm.dtype)
    out = _runner(lm)(
        input_ids=ids,
        position_ids=position_ids,
        attention_mask=masks,
        cache=lm.cache,
        use_cache=True,
        logits_to_keep=n,
    )
    lm.tokens.extend([root, *tree.tokens])
    return lm.call_logits(out, n)  # [n, V]


def greedy_walk(tree: Tree, argmax: list[int]) -> tuple[list[int], list[int], int]:
    """From the root, follow the child whose token is its row's argmax: (accepted tokens, their
    rows, the target's token after them). argmax: one id per row, root first."""
    children: dict[tuple[int, int], int] = {}
    for i, (tok, p) in enumerate(zip(tree.tokens, tree.parents, strict=True)):
        children.setdefault((p + 1, tok), i + 1)  # (parent row, token) -> row
    row, accepted, rows = 0, [], []
    while (child := children.get((row, argmax[row]))) is not None:
        accepted.append(argmax[row])
        rows.append(child)
        row = child
    return accepted, rows, argmax[row]


def verify_tree(lm: CachedLM, seq: list[int], tree: Tree) -> tuple[list[int], int]:
    """One target call on the tree after seq (whose cache holds all of seq but its last token);
    returns (accepted tokens, next token) and leaves the cache holding seq + accepted."""
    start = len(seq) - 1
    if len(lm.tokens) != start:
        raise SpecdecError("the target's cache does not hold the sequence but its last token")
    logits = score_tree(lm, seq[-1], tree)  # [N + 1, V]
    accepted, rows, nxt = greedy_walk(tree, greedy_ids(logits))
    lm.keep(start, [0, *rows])  # the root and the accepted path, next to the prefix
    return accepted, nxt


def clip_tree_draft(draft: Draft, k: int) -> Draft:
    """A tree draft cut to depth k: itself when no node lies deeper."""
    t = clip_tree(Tree(draft.tokens, draft.parents), k)
    if len(t.tokens) == len(draft.tokens):
        return draft
    return replace(draft, tokens=t.tokens, parents=t.parents, q=None, target_hidden=None)


def verify_tree_draft(
    lm: CachedLM, seq: list[int], draft: Draft, sampling: SamplingConfig, control: RepetitionControl
) -> Verdict:
    """A tree draft's Verdict: the longest path greedy decoding agrees with (`Verdict.path`), the
    cache then holding seq + that path. Refuses sampling and an active repetition control."""
    if not sampling.greedy:
        raise SpecdecError(GREEDY_ONLY)
    if control.active:
        raise SpecdecError(TREE_NO_CONTROL)
    accepted, nxt = verify_tree(lm, seq, Tree(draft.tokens, draft.parents))
    return Verdict(len(accepted), nxt, tuple(accepted))
