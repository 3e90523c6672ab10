"""WikiText-2 loading, article splitting and prompt placement, with a whitespace tokenizer."""

from __future__ import annotations

from collections import Counter

import pytest

from specdec_lib import data
from specdec_lib.data import (
    MAX_PROMPTS_PER_ARTICLE,
    Article,
    Corpus,
    article_token_ids,
    fit_token_ids,
    load_wikitext,
    make_prompts,
    split_articles,
    split_into_articles,
)
from specdec_lib.errors import SpecdecError

BOS = 0


class WhitespaceTokenizer:
    """Splits on whitespace; each new word gets the next id (stable for one instance)."""

    bos_token_id = BOS

    def __init__(self) -> None:
        self.vocab: dict[str, int] = {}
        self.calls = 0

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        assert add_special_tokens is False
        self.calls += 1
        return [self.vocab.setdefault(word, len(self.vocab) + 1) for word in text.split()]


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return load_wikitext("bundled")


@pytest.fixture(scope="module")
def tokenizer() -> WhitespaceTokenizer:
    return WhitespaceTokenizer()


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> bool:
        raise AssertionError("a data test tried to reach the hub")

    monkeypatch.setattr(data, "hub_reachable", refuse)


def numbered_articles(lengths: list[int]) -> list[Article]:
    """Articles whose words are unique across articles, so token ids identify positions."""
    return [
        Article(f"a{i}", " ".join(f"w{i}_{j}" for j in range(n))) for i, n in enumerate(lengths)
    ]


# ----------------------------------------------------------------------------
# loading and splitting


def test_bundled_test_split_has_62_titled_articles(corpus: Corpus) -> None:
    assert len(corpus.articles) == 62
    assert corpus.source == "bundled:data/wikitext-2-raw/wiki.test.raw"
    assert corpus.split == "test"
    assert corpus.articles[0].title == "Robert Boulter"
    assert corpus.articles[0].text.startswith(" Robert Boulter is an English film")


def test_article_text_has_no_carriage_returns_or_title_line(corpus: Corpus) -> None:
    for article in corpus.articles:
        assert "\r" not in article.text
        assert f" = {article.title} = " not in article.text.split("\n")
    assert " = = Career = = " in corpus.articles[0].text.split("\n")


def test_datasets_style_rows_give_the_same_articles(corpus: Corpus) -> None:
    lines = data.BUNDLED_PATH.read_bytes().decode("utf-8").split("\r\n")
    rows = [""]  # the datasets copy: one row a line, ending in "\n", with blank rows between
    for line in lines:
        rows += [line + "\n", ""] if line else []
    assert split_into_articles(rows) == corpus.articles


def test_auto_goes_straight_to_bundled_when_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert load_wikitext("auto").source.startswith("bundled:")


def test_auto_falls_back_to_bundled_when_datasets_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(split: str) -> Corpus:
        raise SpecdecError("hub unreachable")

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    monkeypatch.setattr(data, "hub_reachable", lambda *a, **k: True)
    monkeypatch.setattr(data, "_load_datasets", fail)
    assert load_wikitext("auto").source.startswith("bundled:")
    with pytest.raises(SpecdecError, match="hub unreachable"):
        load_wikitext("auto", split="train")


@pytest.mark.parametrize(
    ("source", "split", "match"),
    [
        ("bundled", "train", "not bundled"),
        ("web", "test", "unknown data source"),
        ("auto", "dev", "split"),
    ],
)
def test_bad_source_or_split_is_a_specdec_error(source: str, split: str, match: str) -> None:
    with pytest.raises(SpecdecError, match=match):
        load_wikitext(source, split)


def test_split_articles_is_disjoint_complete_and_deterministic(corpus: Corpus) -> None:
    fit, held_out = split_articles(corpus, fit_fraction=0.5, seed=3)
    assert len(fit) == len(held_out) == 31
    assert {a.title for a in fit}.isdisjoint(a.title for a in held_out)
    assert sorted(a.title for a in fit + held_out) == sorted(a.title for a in corpus.articles)
    assert split_articles(corpus, 0.5, seed=3) == (fit, held_out)
    assert split_articles(corpus, 0.5, seed=4) != (fit, held_out)


@pytest.mark.parametrize("fraction", [0.0, 1.0, -0.5])
def test_split_articles_rejects_a_fraction_outside_0_1(corpus: Corpus, fraction: float) -> None:
    with pytest.raises(SpecdecError, match="fit_fraction"):
        split_articles(corpus, fit_fraction=fraction)


# ----------------------------------------------------------------------------
# tokens


def test_article_token_ids_encodes_each_distinct_text_once() -> None:
    tok = WhitespaceTokenizer()
    articles = numbered_articles([3, 4])
    ids = article_token_ids(tok, [articles[0], articles[1], articles[0]])
    assert tok.calls == 2
    assert ids[0] == ids[2] == [1, 2, 3]
    assert len(ids[1]) == 4


def test_fit_token_ids_concatenates_articles_in_order() -> None:
    tok = WhitespaceTokenizer()
    articles = numbered_articles([2, 3])
    assert fit_token_ids(tok, articles) == [1, 2, 3, 4, 5]


# ----------------------------------------------------------------------------
# prompts


def test_prompt_is_bos_then_the_context_before_the_anchor(
    corpus: Corpus, tokenizer: WhitespaceTokenizer
) -> None:
    tokens = article_token_ids(tokenizer, corpus.articles)
    for prompt in make_prompts(tokenizer, corpus.articles, 20, context_tokens=50):
        assert len(prompt.ids) == 51 and prompt.context_tokens == 50
        assert prompt.ids[0] == BOS
        assert list(prompt.ids[1:]) == tokens[prompt.article][prompt.anchor - 50 : prompt.anchor]


def test_same_seed_same_prompts(corpus: Corpus, tokenizer: WhitespaceTokenizer) -> None:
    first = make_prompts(tokenizer, corpus.articles, 30, context_tokens=64, seed=5)
    assert make_prompts(tokenizer, corpus.articles, 30, context_tokens=64, seed=5) == first
    other = make_prompts(tokenizer, corpus.articles, 30, context_tokens=64, seed=6)
    assert [(p.article, p.anchor) for p in other] != [(p.article, p.anchor) for p in first]


def test_context_sweep_prompts_share_anchors(
    corpus: Corpus, tokenizer: WhitespaceTokenizer
) -> None:
    sweep = {
        n: make_prompts(
            tokenizer, corpus.articles, 40, n, seed=1, anchor_min=512, continuation_tokens=64
        )
        for n in (16, 128, 512)
    }
    places = {n: [(p.article, p.anchor) for p in prompts] for n, prompts in sweep.items()}
    assert places[16] == places[128] == places[512]
    for short, long in zip(sweep[16], sweep[512], strict=True):
        assert long.ids[-16:] == short.ids[1:]  # only the visible prefix changes


def test_anchors_leave_room_for_anchor_min_and_continuation(
    corpus: Corpus, tokenizer: WhitespaceTokenizer
) -> None:
    tokens = article_token_ids(tokenizer, corpus.articles)
    prompts = make_prompts(
        tokenizer, corpus.articles, 60, 32, seed=2, anchor_min=300, continuation_tokens=200
    )
    for prompt in prompts:
        assert 300 <= prompt.anchor <= len(tokens[prompt.article]) - 200


def test_prompts_spread_over_articles_round_robin(
    corpus: Corpus, tokenizer: WhitespaceTokenizer
) -> None:
    few = make_prompts(tokenizer, corpus.articles, 25, context_tokens=64)
    assert len({p.article for p in few}) == 25
    many = make_prompts(tokenizer, corpus.articles, 150, context_tokens=64)
    assert max(Counter(p.article for p in many).values()) <= MAX_PROMPTS_PER_ARTICLE
    assert many[:25] == few  # more prompts only add rounds


def test_prompts_in_one_article_do_not_overlap() -> None:
    tok = WhitespaceTokenizer()
    articles = numbered_articles([5000, 5000])
    prompts = make_prompts(tok, articles, 8, 100, anchor_min=200, continuation_tokens=50)
    for article in (0, 1):
        anchors = sorted(p.anchor for p in prompts if p.article == article)
        assert len(anchors) == 4
        assert all(b - a >= 250 for a, b in zip(anchors[:-1], anchors[1:], strict=True))


def test_short_articles_are_skipped() -> None:
    tok = WhitespaceTokenizer()
    articles = numbered_articles([50, 5000, 109])
    prompts = make_prompts(tok, articles, 3, 100, continuation_tokens=10)
    assert {p.article for p in prompts} == {1}


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_prompts": 0, "context_tokens": 8}, "n_prompts"),
        ({"n_prompts": 4, "context_tokens": 0}, "context_tokens"),
        ({"n_prompts": 4, "context_tokens": 64, "anchor_min": 32}, "anchor_min"),
        ({"n_prompts": 4, "context_tokens": 8, "continuation_tokens": -1}, "continuation_tokens"),
        ({"n_prompts": 4, "context_tokens": 5000}, "not enough text"),
        ({"n_prompts": 9, "context_tokens": 8}, "not enough text"),
    ],
)
def test_impossible_prompt_requests_are_specdec_errors(kwargs: dict, match: str) -> None:
    articles = numbered_articles([400, 400])  # 2 articles x 4 prompts at most
    with pytest.raises(SpecdecError, match=match):
        make_prompts(WhitespaceTokenizer(), articles, **kwargs)


def test_a_tokenizer_without_bos_is_a_specdec_error() -> None:
    tok = WhitespaceTokenizer()
    tok.bos_token_id = None
    with pytest.raises(SpecdecError, match="bos_token_id"):
        make_prompts(tok, numbered_articles([400]), 1, 8)
