"""The evaluation prompts of a study: the eval split of WikiText-2 (the articles the bigram and the
distilled draft were not fitted on) cut into prompts by `data.make_prompts`, seeded by the
profile, so every experiment with the same context and count sees the same prompts.

Knows nothing about models beyond their tokenizer, or about what the prompts are run through.
"""

from __future__ import annotations

from typing import Any

from specdec_lib.runner.context import SPLIT_SEED, Study

_CORPUS: dict[str, Any] = {}


def eval_articles(S: Study):
    from specdec_lib.data import load_wikitext, split_articles

    src = S.profile.get("data_source", "auto")
    if src not in _CORPUS:
        _CORPUS[src] = split_articles(load_wikitext(src), seed=SPLIT_SEED)[1]
    return _CORPUS[src]


def prompts_for(
    S: Study,
    loaded,
    n: int,
    context: int,
    *,
    anchor_min: int | None = None,
    continuation_tokens: int = 0,
):
    from specdec_lib.data import make_prompts

    return make_prompts(
        loaded.tokenizer,
        eval_articles(S),
        n,
        context,
        int(S.profile.get("seed", 0)),
        anchor_min=anchor_min,
        continuation_tokens=continuation_tokens,
    )
