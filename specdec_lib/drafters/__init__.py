"""Drafters behind one interface; `registry` holds the one spec grammar (`registry.parse`,
`registry.build`, presets such as `best`), and `build_drafter` is its thin wrapper.

Specs (see `registry.valid_forms()`): `none` (autoregressive baseline), `bigram`,
`ngram[:MAX[+bigram]]`, `ngram+bigram`, `lookup[+bigram|+shared][:KFB[:MIN]]` (prompt lookup with
a short fallback), `self[:LAYERS[:KEEP]]` (a self-draft of the target with its own cache and a
pruned head), `shared[:KEEP]` (the target's own body on its own cache with a pruned head),
`model:ID_OR_PATH` (any causal LM sharing the target's tokenizer), `adaptive[:KSTART:KMAX]:SPEC`,
`tree[:NODES[:BRANCH]]` / `tree+shared` / `tree+bigram` (tree verification, greedy only:
`drafters.tree`); drafts that compute apart from the target: `exit:LAYERS` (early exit, full
head), `int8` (an int8 copy of the target) and `distilled[:PATH]` (a few layers distilled from
the target on the fit split: `drafters.distilled`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from specdec_lib.drafters.adaptive import AdaptiveDrafter
from specdec_lib.drafters.base import Draft, Drafter, NoDrafter
from specdec_lib.drafters.bigram import BigramDrafter
from specdec_lib.drafters.distilled import DistilledDrafter
from specdec_lib.drafters.lookup import LookupDrafter
from specdec_lib.drafters.model import ModelDrafter
from specdec_lib.drafters.ngram import NgramDrafter
from specdec_lib.drafters.quantized import Int8Drafter
from specdec_lib.drafters.registry import DraftContext, build, parse
from specdec_lib.drafters.self_draft import SELF_KEEP, SELF_LAYERS, SelfDrafter, frequent_ids
from specdec_lib.drafters.shared import SharedBodyDrafter
from specdec_lib.drafters.tree import TreeDrafter

if TYPE_CHECKING:
    from specdec_lib.models import LoadedModel

__all__ = [
    "Draft",
    "Drafter",
    "NoDrafter",
    "AdaptiveDrafter",
    "BigramDrafter",
    "DistilledDrafter",
    "Int8Drafter",
    "LookupDrafter",
    "NgramDrafter",
    "ModelDrafter",
    "SelfDrafter",
    "SharedBodyDrafter",
    "TreeDrafter",
    "SELF_KEEP",
    "SELF_LAYERS",
    "frequent_ids",
    "build_drafter",
    "check_drafter_spec",
]


def check_drafter_spec(spec: str) -> tuple[str, list]:
    """Validate a spec without loading anything: (registry name, parsed arguments)."""
    parsed = parse(spec)
    return parsed.name, list(parsed.args)


def build_drafter(
    spec: str,
    target: LoadedModel,
    *,
    fit_ids: Callable[[], list[int]],
    dtype: str = "auto",
    device: str = "auto",
    use_cache: bool = True,
    k: int = 4,
) -> Drafter:
    """A drafter for this target (`registry.build`); fit_ids() gives the fit split's ids."""
    ctx = DraftContext(target, fit_ids, dtype=dtype, device=device, use_cache=use_cache, k=k)
    return build(spec, ctx)
