"""Drafters behind one interface, and `build_drafter` to make one from a spec string.

Specs: `none` (autoregressive baseline), `bigram`, `ngram`, `ngram+bigram` (lookup topped up by the
bigram), `self` (a self-draft of the target with its own cache; `self:L` or `self:L:KEEP` for the
first L layers and a head pruned to the KEEP most frequent ids), `shared` / `shared:KEEP` (the
target's own body on its own cache with a pruned head: `drafters.shared`), and `model:ID_OR_PATH`
(any causal LM sharing the target's tokenizer), `tree` / `tree:NODES[:BRANCH]` (every earlier
match of the suffix, the fit split's most frequent continuations of it and the bigram's BRANCH
top successors as one tree of at most NODES nodes, verified in one call, greedy only:
`drafters.tree`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from specdec_lib.drafters.base import Draft, Drafter, NoDrafter
from specdec_lib.drafters.bigram import BigramDrafter
from specdec_lib.drafters.model import ModelDrafter
from specdec_lib.drafters.ngram import NgramDrafter
from specdec_lib.drafters.self_draft import SelfDrafter, frequent_ids
from specdec_lib.drafters.shared import SharedBodyDrafter
from specdec_lib.drafters.tree import TreeDrafter
from specdec_lib.errors import SpecdecError

if TYPE_CHECKING:
    from specdec_lib.models import LoadedModel

__all__ = [
    "Draft",
    "Drafter",
    "NoDrafter",
    "BigramDrafter",
    "NgramDrafter",
    "ModelDrafter",
    "SelfDrafter",
    "SharedBodyDrafter",
    "TreeDrafter",
    "build_drafter",
    "check_drafter_spec",
]

SIMPLE = ("none", "bigram", "ngram", "ngram+bigram")
ALLOWED = (
    "none, bigram, ngram, ngram+bigram, self, self:LAYERS[:KEEP], shared, shared:KEEP, "
    "tree, tree:NODES[:BRANCH] or model:ID_OR_PATH"
)

# The self-draft measured best on the embedded Gemma 3 270M: all 18 layers with the LM head pruned
# to the 16,384 most frequent ids of the fit split. Measured in float32 on the 2-core AVX2 CPU,
# 4 WikiText-2 prompts (context 100, 32 new tokens), K = 2 / 4: acceptance 0.95 / 0.80 at
# 1.06x / 1.08x the baseline's speed; early exits agree far less (12 layers: 0.19 / 0.12, 0.65x;
# 9 layers: 0.02, 0.5x), so cutting layers costs more acceptance than it saves time. The body
# (about 70 ms a token here) dominates what the pruned head leaves (a few ms).
SELF_LAYERS = 18
SELF_KEEP = 16384
TREE_NODES = 16  # tree drafter: nodes per verification
TREE_BRANCH = 2  # tree drafter: bigram successors of the last token


def check_drafter_spec(spec: str) -> tuple[str, list[str]]:
    """Split and validate a spec without loading anything: (kind, arguments)."""
    if not isinstance(spec, str) or not spec.strip():
        raise SpecdecError(f"unknown drafter {spec!r}; allowed: {ALLOWED}")
    kind, _, rest = spec.partition(":")
    if kind in SIMPLE and not rest:
        return kind, []
    if kind == "model" and rest:
        return kind, [rest]
    if kind in ("self", "shared", "tree"):
        args = rest.split(":") if rest else []
        if len(args) <= (1 if kind == "shared" else 2) and all(
            a.isascii() and a.isdigit() and int(a) > 0 for a in args
        ):
            return kind, args
    raise SpecdecError(f"unknown drafter {spec!r}; allowed: {ALLOWED}")


def build_drafter(
    spec: str,
    target: LoadedModel,
    *,
    fit_ids: Callable[[], list[int]],
    dtype: str = "auto",
    device: str = "auto",
    use_cache: bool = True,
) -> Drafter:
    """A drafter for this target; fit_ids() gives the fit split's ids (bigram, pruned head)."""
    kind, args = check_drafter_spec(spec)
    if kind == "none":
        return NoDrafter()
    if kind == "bigram":
        return BigramDrafter.fit(fit_ids(), target.vocab_size)
    if kind == "ngram":
        return NgramDrafter()
    if kind == "ngram+bigram":
        return NgramDrafter(fallback=BigramDrafter.fit(fit_ids(), target.vocab_size))
    if kind == "self":
        layers = int(args[0]) if args else SELF_LAYERS
        keep = int(args[1]) if len(args) > 1 else SELF_KEEP
        keep_ids = (
            frequent_ids(fit_ids(), target.vocab_size, keep) if keep < target.vocab_size else None
        )
        return SelfDrafter(
            target.model,
            n_layers=layers,
            vocab_size=target.vocab_size,
            keep_ids=keep_ids,
            use_cache=use_cache,
        )
    if kind == "shared":
        keep = min(int(args[0]) if args else SELF_KEEP, target.vocab_size)
        return SharedBodyDrafter(
            frequent_ids(fit_ids(), target.vocab_size, keep), target.vocab_size
        )
    if kind == "tree":
        nodes = int(args[0]) if args else TREE_NODES
        branch = int(args[1]) if len(args) > 1 else TREE_BRANCH
        return TreeDrafter.fit(fit_ids(), target.vocab_size, branch, corpus=True, max_nodes=nodes)
    from specdec_lib.models import load_model, shared_vocab_size

    draft = load_model(args[0], dtype=dtype, device=device)
    return ModelDrafter(
        draft.model,
        vocab_size=shared_vocab_size(target, draft),
        use_cache=use_cache,
        tokenizer=draft.tokenizer,
    )
