"""The embedded Gemma 3 270M in bfloat16 on the invariant fast path: greedy `ngram`, `shared`
and `self` speculation are token-identical to the bfloat16 baseline on WikiText prompts.
Skipped, with the reason printed, where oneDNN cannot pack bfloat16 (an AVX2-only CPU: the
fast path does not serve bfloat16 there)."""

from __future__ import annotations

import pytest

from specdec_lib.config import SamplingConfig, SpecConfig

pytestmark = pytest.mark.slow

N_PROMPTS, NEW_TOKENS = 8, 64


@pytest.fixture(scope="module")
def embedded_bf16():
    import torch

    from specdec_lib import models
    from specdec_lib.core.fastpath import packing_available

    if not packing_available(torch.bfloat16):
        reason = "oneDNN cannot pack bfloat16 on this CPU: no invariant bfloat16 path to test"
        print(reason)
        pytest.skip(reason)
    if not models.embedded_available():
        pytest.skip("the embedded model package is not installed")
    return models.load_model("embedded", dtype="bfloat16", device="cpu")


@pytest.fixture(scope="module")
def baseline(embedded_bf16):
    from specdec_lib.data import load_wikitext, make_prompts, split_articles
    from specdec_lib.generate import Generator

    _, eval_articles = split_articles(load_wikitext("bundled"), seed=0)
    prompts = make_prompts(embedded_bf16.tokenizer, eval_articles, N_PROMPTS, 20, seed=0)
    base = Generator.from_loaded(embedded_bf16, "none", data_source="bundled")
    assert base.lm.invariant and base.lm.packed
    cfg = SpecConfig(4, NEW_TOKENS)
    return [
        (list(p.ids), base.generate_ids(list(p.ids), cfg, SamplingConfig()).tokens) for p in prompts
    ]


@pytest.mark.parametrize("draft", ["ngram", "shared", "self"])
def test_bfloat16_greedy_speculation_equals_the_bfloat16_baseline(embedded_bf16, baseline, draft):
    from specdec_lib.generate import Generator

    spec = Generator.from_loaded(embedded_bf16, draft, data_source="bundled")
    cfg = SpecConfig(4, NEW_TOKENS)
    proposed = 0
    for ids, want in baseline:
        got = spec.generate_ids(ids, cfg, SamplingConfig())
        assert got.tokens == want
        assert len(got.tokens) == NEW_TOKENS or got.stats.stopped_by == "eos"
        proposed += got.stats.proposed
    assert proposed > 0  # the drafter really drafted
