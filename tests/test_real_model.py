"""The embedded Gemma 3 270M in float32: greedy speculation is token-identical to the baseline."""

from __future__ import annotations

import pytest
from conftest import assert_same_greedy_tokens, embedded_model, greedy_cases, wikitext_prompts_for

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def embedded():
    return embedded_model("float32")


@pytest.fixture(scope="module")
def wikitext_prompts(embedded):
    return wikitext_prompts_for(embedded.tokenizer, 2)


@pytest.mark.parametrize("draft", ["bigram", "ngram", "self"])
def test_greedy_speculation_equals_baseline_on_wikitext(embedded, wikitext_prompts, draft):
    from specdec_lib.generate import Generator

    base = Generator.from_loaded(embedded, "none", data_source="bundled")
    spec = Generator.from_loaded(embedded, draft, data_source="bundled")
    assert_same_greedy_tokens(spec, greedy_cases(base, wikitext_prompts, 16), 16)


def test_cli_generate_json_on_embedded(capsys):
    import json

    from specdec_study.cli import main

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
