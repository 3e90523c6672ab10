"""The embedded Gemma 3 270M in float32 against an independent reference: Hugging Face
`generate(do_sample=False)`, which shares none of our cache, decode loop or verification. Our
greedy speculative decoding (an n-gram draft, the model's own first layers, and the latter with a
wrong token forced into every draft) must reproduce its tokens exactly.

Planted bug it catches (one that our own `none` generator shares, since both run through the
same cache): `CachedLM.call_logits` dropping the first vocabulary column
(`out.logits[0, -n:, 1:]`), so every argmax names the id before the right one."""

from __future__ import annotations

import pytest
import torch
from conftest import WrongAt, embedded_model, wikitext_prompts_for

pytestmark = pytest.mark.slow

NEW_TOKENS = 16


@pytest.fixture(scope="module")
def embedded():
    return embedded_model("float32")


@pytest.fixture(scope="module")
def reference(embedded) -> list[tuple[list[int], list[int]]]:
    """(prompt ids, Hugging Face's greedy continuation) for three WikiText prompts."""
    model = embedded.model
    cases = []
    for p in wikitext_prompts_for(embedded.tokenizer, 3):
        ids = torch.tensor([list(p.ids)], dtype=torch.long)
        with torch.inference_mode():
            out = model.generate(
                ids,
                attention_mask=torch.ones_like(ids),
                do_sample=False,
                num_beams=1,
                max_new_tokens=NEW_TOKENS,
                top_k=None,
                top_p=None,
            )
        cases.append((list(p.ids), out[0, ids.shape[1] :].tolist()))
    return cases


@pytest.mark.parametrize(("draft", "wrong_at"), [("ngram", None), ("self", None), ("self", 1)])
def test_greedy_speculation_equals_hugging_face_greedy(embedded, reference, draft, wrong_at):
    from specdec_lib.config import SamplingConfig, SpecConfig
    from specdec_lib.generate import Generator

    spec = Generator.from_loaded(embedded, draft, data_source="bundled")
    if wrong_at is not None:
        spec = Generator.from_loaded(embedded, WrongAt(spec.drafter, wrong_at))
    accepted = proposed = 0
    for ids, want in reference:
        got = spec.generate_ids(ids, SpecConfig(4, NEW_TOKENS), SamplingConfig())
        assert got.tokens == want, (draft, wrong_at)
        accepted, proposed = accepted + got.stats.accepted, proposed + got.stats.proposed
    assert proposed > 0  # the drafter really drafted
    if wrong_at is not None:
        assert accepted < proposed  # and rejections really happened
