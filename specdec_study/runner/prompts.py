"""The evaluation prompts of a study: the eval split of WikiText-2 (the articles the bigram and the
distilled draft were not fitted on) cut into prompts by `data.make_prompts`, seeded by the
profile, so every experiment with the same context and count sees the same prompts.

Knows nothing about models beyond their tokenizer, or about what the prompts are run through.
"""

from __future__ import annotations

from specdec_lib.data import Article, Prompt, load_wikitext, make_prompts, split_articles
from specdec_lib.models import LoadedModel
from specdec_study.runner.session import SPLIT_SEED, Session

_EVAL: dict[str, list[Article]] = {}  # data source -> its eval articles, split once per process
READ: dict[str, str] = {}  # data source -> what it read (`Corpus.source`), for env.json's inputs


def eval_articles(study: Session) -> list[Article]:
    """The eval half of the profile's data source (`data.split_articles`, seed SPLIT_SEED)."""
    src = study.profile.get("data_source", "auto")
    if src not in _EVAL:
        corpus = load_wikitext(src)
        READ[src] = corpus.source
        _EVAL[src] = split_articles(corpus, seed=SPLIT_SEED)[1]
    return _EVAL[src]


def prompts_for(
    study: Session,
    loaded: LoadedModel,
    n: int,
    context: int,
    *,
    anchor_min: int | None = None,
    continuation_tokens: int = 0,
) -> list[Prompt]:
    """n prompts of BOS + `context` eval tokens, at anchors seeded by the profile that do not
    depend on the context when anchor_min is given (`data.make_prompts`)."""
    return make_prompts(
        loaded.tokenizer,
        eval_articles(study),
        n,
        context,
        int(study.profile.get("seed", 0)),
        anchor_min=anchor_min,
        continuation_tokens=continuation_tokens,
    )
