"""The embedded Gemma 3 270M in bfloat16 on the invariant fast path: greedy `ngram`, `shared`
and `self` speculation are token-identical to the bfloat16 baseline on WikiText prompts.
Skipped, with the reason printed, where oneDNN cannot pack bfloat16 (an AVX2-only CPU: the
fast path does not serve bfloat16 there)."""

from __future__ import annotations

import pytest
from conftest import assert_same_greedy_tokens, embedded_model, greedy_cases, wikitext_prompts_for

pytestmark = pytest.mark.slow

N_PROMPTS, NEW_TOKENS = 8, 64


@pytest.fixture(scope="module")
def embedded_bf16():
    import torch

    from specdec_lib.core.fastpath import packing_available

    if not packing_available(torch.bfloat16):
        reason = "oneDNN cannot pack bfloat16 on this CPU: no invariant bfloat16 path to test"
        print(reason)
        pytest.skip(reason)
    return embedded_model("bfloat16")


@pytest.fixture(scope="module")
def baseline(embedded_bf16):
    from specdec_lib.generate import Generator

    prompts = wikitext_prompts_for(embedded_bf16.tokenizer, N_PROMPTS)
    base = Generator.from_loaded(embedded_bf16, "none", data_source="bundled")
    assert base.lm.invariant and base.lm.packed
    return greedy_cases(base, prompts, NEW_TOKENS)


@pytest.mark.parametrize("draft", ["ngram", "shared", "self"])
def test_bfloat16_greedy_speculation_equals_the_bfloat16_baseline(embedded_bf16, baseline, draft):
    from specdec_lib.generate import Generator

    spec = Generator.from_loaded(embedded_bf16, draft, data_source="bundled")
    assert_same_greedy_tokens(spec, baseline, NEW_TOKENS)
