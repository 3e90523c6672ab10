"""The recipes in CONTRIBUTING.md, followed step by step with toy material: each says how to add
one thing and that it takes the files it names, no more."""

from __future__ import annotations

import sys

import pytest
import torch
from conftest import VOCAB, random_prompt, stepwise_greedy

from specdec_lib.core.cache import CachedLM
from specdec_lib.core.decode import speculative_decode
from specdec_lib.drafters import registry
from specdec_lib.drafters.adaptive import AdaptiveDrafter
from specdec_lib.errors import SpecdecError
from specdec_lib.models import LoadedModel

# Step 1 of "Add a drafter in one file": the module, with its drafter class and its builder.
TOY_DRAFTER = '''"""A toy drafter: guesses that the last token repeats."""

from __future__ import annotations

from specdec_lib.core.draft import Draft, Drafter
from specdec_lib.drafters.registry import DraftContext


class RepeatDrafter(Drafter):
    """Proposes the last token `n` times (fewer when K is smaller)."""

    name = "repeat"

    def __init__(self, n: int):
        self.n = n

    def propose(self, seq, k, sampling, generator) -> Draft:
        return Draft([seq[-1]] * min(k, self.n))


def build(args: tuple[int], ctx: DraftContext) -> RepeatDrafter:
    """`repeat[:N]`: the last token N times."""
    return RepeatDrafter(args[0])
'''


def _repeat_args(rest: str) -> tuple[int, ...]:
    return registry.ints(rest, 1) or (2,)


def test_drafter_recipe_adds_a_drafter_in_one_file(tmp_path, monkeypatch, target64):
    (tmp_path / "toy_repeat.py").write_text(TOY_DRAFTER)  # step 1: the module
    monkeypatch.syspath_prepend(tmp_path)
    monkeypatch.delitem(sys.modules, "toy_repeat", raising=False)
    entry = registry.Entry("repeat", ("repeat[:N]",), _repeat_args, "toy_repeat:build")
    monkeypatch.setitem(registry.REGISTRY, "repeat", entry)  # step 2: its entry in the table

    # the grammar knows it (errors list it, adaptive wraps it) without importing its module
    assert registry.parse("repeat").args == (2,) and registry.parse("repeat:3").args == (3,)
    assert "repeat[:N]" in registry.valid_forms()
    assert registry.parse("adaptive:repeat:3").args == (None, None, "repeat:3")
    with pytest.raises(SpecdecError, match=r"'repeat:x'.*repeat\[:N\]"):
        registry.parse("repeat:x")
    assert "toy_repeat" not in sys.modules

    # it builds for a target and decodes losslessly: the same tokens as greedy decoding
    loaded = LoadedModel(target64, None, "tiny", torch.float64, torch.device("cpu"), VOCAB)
    ctx = registry.DraftContext(loaded, lambda: [], k=4)
    drafter = registry.build("repeat:3", ctx)
    assert type(drafter).__name__ == "RepeatDrafter" and drafter.n == 3
    assert isinstance(registry.build("adaptive:repeat", ctx), AdaptiveDrafter)
    prompt = random_prompt(5, 8)
    out = speculative_decode(CachedLM(target64), drafter, prompt, k=4, max_new_tokens=12)
    assert out.tokens == stepwise_greedy(target64, prompt, 12)
    assert out.stats.proposed > 0
