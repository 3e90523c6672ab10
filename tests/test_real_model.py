"""The embedded Gemma 3 270M in float32: greedy speculation is token-identical to the baseline."""

from __future__ import annotations

import pytest

from specdec_lib.config import SamplingConfig, SpecConfig

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def embedded():
    from specdec_lib import models

    if not models.embedded_available():
        pytest.skip("the embedded model package is not installed")
    return models.load_model("embedded", dtype="float32", device="cpu")


@pytest.fixture(scope="module")
def wikitext_prompts(embedded):
    from specdec_lib.data import load_wikitext, make_prompts, split_articles

    _, eval_articles = split_articles(load_wikitext("bundled"), seed=0)
    return make_prompts(embedded.tokenizer, eval_articles, 2, 20, seed=0)


@pytest.mark.parametrize("draft", ["bigram", "ngram", "self"])
def test_greedy_speculation_equals_baseline_on_wikitext(embedded, wikitext_prompts, draft):
    from specdec_lib.generate import Generator

    base = Generator.from_loaded(embedded, "none", data_source="bundled")
    spec = Generator.from_loaded(embedded, draft, data_source="bundled")
    cfg, greedy = SpecConfig(4, 16), SamplingConfig()
    proposed = 0
    for p in wikitext_prompts:
        want = base.generate_ids(list(p.ids), cfg, greedy)
        got = spec.generate_ids(list(p.ids), cfg, greedy)
        assert got.tokens == want.tokens
        assert len(got.tokens) == 16 or got.stats.stopped_by == "eos"
        proposed += got.stats.proposed
    assert proposed > 0  # the drafter really drafted


def test_cli_generate_json_on_embedded(capsys):
    import json

    from specdec_lib.cli import main

    code = main(
        [
            "generate",
            "--target",
            "embedded",
            "--draft",
            "ngram",
            "--max-new-tokens",
            "8",
            "--dtype",
            "float32",
            "--prompt",
            "The castle was built in",
            "--json",
        ]
    )
    assert code == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert len(out["token_ids"]) == 8 and isinstance(out["text"], str)
    assert set(out["stats"]) >= {
        "new_tokens",
        "target_calls",
        "proposed",
        "accepted",
        "acceptance_rate",
        "mean_accepted_length",
        "wall_s",
    }
