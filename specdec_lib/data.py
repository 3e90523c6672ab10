"""WikiText-2 articles, a fit/eval split of them, and reproducible prompts cut from them.

`load_wikitext` reads WikiText-2 (raw) from the `datasets` hub copy when it is reachable, else
from the bundled test split, and splits either into the same articles. `make_prompts` cuts
prompts of BOS + N article tokens ending at seeded anchor positions that do not depend on N, so
a context-length sweep with one seed and one `anchor_min` sees the same documents and anchors.

Knows nothing about models: it takes any tokenizer-like object with
`encode(text, add_special_tokens=False)` and `bos_token_id`, loads no weights and never decodes.
It does not know what the prompts are for (no continuation text is returned, only room for it).
"""

import os
import random
import re
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit

from specdec_lib import ROOT
from specdec_lib.errors import SpecdecError

BUNDLED_PATH = ROOT / "data" / "wikitext-2-raw" / "wiki.test.raw"
BUNDLED_SPLIT = "test"
HUB_DATASET = "Salesforce/wikitext"
HUB_CONFIG = "wikitext-2-raw-v1"
SOURCES = ("auto", "bundled", "datasets")
SPLITS = ("train", "validation", "test")

MAX_PROMPTS_PER_ARTICLE = 4
_ANCHOR_TRIES = 64  # random draws per wanted anchor before an article counts as full

_TITLE = re.compile(r"^ = [^=].* = $")  # " = Title = " (sections are " = = Section = = ")
_TRUTHY = {"1", "true", "yes", "on"}


class Tokenizer(Protocol):
    """The slice of a Hugging Face tokenizer this module uses."""

    bos_token_id: int | None

    def encode(self, text: str, add_special_tokens: bool = ...) -> list[int]:
        """Token ids of text, with the tokenizer's special tokens when add_special_tokens."""


@dataclass(frozen=True)
class Article:
    """One Wikipedia article: its title and its body lines joined by newlines."""

    title: str
    text: str


@dataclass(frozen=True)
class Corpus:
    """The articles of one split, and where they came from."""

    articles: tuple[Article, ...]
    source: str  # "bundled:data/wikitext-2-raw/wiki.test.raw" or "datasets:Salesforce/wikitext/..."
    split: str


@dataclass(frozen=True)
class Prompt:
    """BOS + the `context_tokens` article tokens before `anchor` in article number `article`."""

    ids: tuple[int, ...]
    article: int  # index into the articles passed to make_prompts
    anchor: int  # token position in the article where the prompt ends (exclusive)
    context_tokens: int


# ----------------------------------------------------------------------------
# loading


def load_wikitext(source: str = "auto", split: str = "test") -> Corpus:
    """WikiText-2 raw as articles: "datasets" (hub), "bundled" (test only) or "auto" (either)."""
    if source not in SOURCES:
        raise SpecdecError(f"unknown data source {source!r}; use one of {', '.join(SOURCES)}")
    if split not in SPLITS:
        raise SpecdecError(f"unknown split {split!r}; use one of {', '.join(SPLITS)}")
    if source == "bundled":
        return _load_bundled(split)
    if source == "datasets":
        return _load_datasets(split)
    if split == BUNDLED_SPLIT and (hub_offline() or not hub_reachable()):
        return _load_bundled(split)
    try:
        return _load_datasets(split)
    except SpecdecError:
        if split != BUNDLED_SPLIT:
            raise
        return _load_bundled(split)


def hub_offline() -> bool:
    """Whether HF_HUB_OFFLINE or HF_DATASETS_OFFLINE asks for no network."""
    names = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
    return any(os.environ.get(name, "").strip().lower() in _TRUTHY for name in names)


def hub_reachable(timeout_s: float = 2.0) -> bool:
    """Whether a TCP connection to the Hugging Face hub opens within `timeout_s` seconds."""
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    host = urlsplit(endpoint).hostname or "huggingface.co"
    try:
        with socket.create_connection((host, 443), timeout=timeout_s):
            return True
    except OSError:
        return False


def _load_bundled(split: str) -> Corpus:
    if split != BUNDLED_SPLIT:
        raise SpecdecError(
            f"split {split!r} is not bundled (only 'test' is); use source 'datasets' where the "
            "hub is reachable"
        )
    if not BUNDLED_PATH.is_file():
        raise SpecdecError(f"bundled WikiText-2 is missing at {BUNDLED_PATH}; restore it from git")
    text = BUNDLED_PATH.read_bytes().decode("utf-8")
    relative = BUNDLED_PATH.relative_to(ROOT).as_posix()
    return Corpus(split_into_articles(text.split("\n")), f"bundled:{relative}", split)


def _load_datasets(split: str) -> Corpus:
    """The hub copy through `datasets` (its cache when offline); any failure is a SpecdecError."""
    try:
        import datasets

        rows = datasets.load_dataset(HUB_DATASET, HUB_CONFIG, split=split)["text"]
    except Exception as exc:  # noqa: BLE001 - network, cache and hub errors all mean "not available"
        raise SpecdecError(
            f"could not load {HUB_DATASET}/{HUB_CONFIG} split {split!r} with datasets "
            f"({type(exc).__name__}); use source 'bundled' for the test split"
        ) from None
    return Corpus(split_into_articles(rows), f"datasets:{HUB_DATASET}/{HUB_CONFIG}", split)


def split_into_articles(lines: Sequence[str]) -> tuple[Article, ...]:
    """Group WikiText lines into articles: ` = Title = ` starts one; blank lines are dropped."""
    articles: list[Article] = []
    title: str | None = None
    body: list[str] = []
    for raw in lines:
        line = raw.rstrip("\r\n")
        if _TITLE.match(line):
            if title is not None:
                articles.append(Article(title, "\n".join(body)))
            title, body = line[3:-3].strip(), []
        elif title is not None and line.strip():
            body.append(line)
    if title is not None:
        articles.append(Article(title, "\n".join(body)))
    return tuple(articles)


def split_articles(
    corpus: Corpus, fit_fraction: float = 0.5, seed: int = 0
) -> tuple[list[Article], list[Article]]:
    """(fit, eval): disjoint article lists shuffled by `seed`; `fit_fraction` of them to fit."""
    if not 0.0 < fit_fraction < 1.0:
        raise SpecdecError(f"fit_fraction must be strictly between 0 and 1, got {fit_fraction}")
    if len(corpus.articles) < 2:
        raise SpecdecError(
            f"need at least 2 articles to split, the corpus has {len(corpus.articles)}"
        )
    order = list(range(len(corpus.articles)))
    random.Random(seed).shuffle(order)
    n_fit = min(max(round(fit_fraction * len(order)), 1), len(order) - 1)
    fit = [corpus.articles[i] for i in order[:n_fit]]
    held_out = [corpus.articles[i] for i in order[n_fit:]]
    return fit, held_out


# ----------------------------------------------------------------------------
# tokens and prompts


def article_token_ids(tokenizer: Tokenizer, articles: Sequence[Article]) -> list[list[int]]:
    """Each article's token ids (no special tokens); a repeated article is encoded once."""
    cache: dict[str, list[int]] = {}
    for article in articles:
        if article.text not in cache:
            cache[article.text] = list(tokenizer.encode(article.text, add_special_tokens=False))
    return [cache[article.text] for article in articles]


def fit_token_ids(tokenizer: Tokenizer, articles: Sequence[Article]) -> list[int]:
    """All the articles' tokens, concatenated in order (e.g. to fit a bigram model)."""
    return [token for ids in article_token_ids(tokenizer, articles) for token in ids]


def make_prompts(
    tokenizer: Tokenizer,
    articles: Sequence[Article],
    n_prompts: int,
    context_tokens: int,
    seed: int = 0,
    anchor_min: int | None = None,
    continuation_tokens: int = 0,
) -> list[Prompt]:
    """`n_prompts` prompts of BOS + `context_tokens` tokens, round robin over shuffled articles.

    Anchors depend on (seed, anchor_min, continuation_tokens, articles) and not on
    `context_tokens`, so prompts that share those share their articles and anchors.
    """
    anchor_min = context_tokens if anchor_min is None else anchor_min
    _check_prompt_request(tokenizer, n_prompts, context_tokens, anchor_min, continuation_tokens)
    tokens = article_token_ids(tokenizer, articles)
    placements = _place_anchors(tokens, n_prompts, anchor_min, continuation_tokens, seed)
    bos = int(tokenizer.bos_token_id)
    return [
        Prompt(
            ids=(bos, *tokens[article][anchor - context_tokens : anchor]),
            article=article,
            anchor=anchor,
            context_tokens=context_tokens,
        )
        for article, anchor in placements
    ]


def _check_prompt_request(
    tokenizer: Tokenizer, n_prompts: int, context_tokens: int, anchor_min: int, continuation: int
) -> None:
    if n_prompts < 1:
        raise SpecdecError(f"n_prompts must be at least 1, got {n_prompts}")
    if context_tokens < 1:
        raise SpecdecError(f"context_tokens must be at least 1, got {context_tokens}")
    if anchor_min < context_tokens:
        raise SpecdecError(
            f"anchor_min ({anchor_min}) must be at least context_tokens ({context_tokens}); "
            "for a context sweep pass the largest context length as anchor_min"
        )
    if continuation < 0:
        raise SpecdecError(f"continuation_tokens must be at least 0, got {continuation}")
    if getattr(tokenizer, "bos_token_id", None) is None:
        raise SpecdecError("the tokenizer has no bos_token_id; prompts start with BOS")


def _place_anchors(
    tokens: Sequence[Sequence[int]], n_prompts: int, anchor_min: int, continuation: int, seed: int
) -> list[tuple[int, int]]:
    """(article, anchor) pairs: round robin over seed-shuffled articles long enough to hold one."""
    eligible = [i for i, ids in enumerate(tokens) if len(ids) - continuation >= anchor_min]
    random.Random(seed).shuffle(eligible)
    rounds = -(-n_prompts // max(len(eligible), 1))  # ceil
    if not eligible or rounds > MAX_PROMPTS_PER_ARTICLE:
        _raise_not_enough(n_prompts, len(eligible), anchor_min, continuation)
    anchors = {
        i: _article_anchors(
            len(tokens[i]), anchor_min, continuation, seed, i, MAX_PROMPTS_PER_ARTICLE
        )
        for i in eligible
    }
    placements: list[tuple[int, int]] = []
    for round_index in range(MAX_PROMPTS_PER_ARTICLE):
        for article in eligible:
            if round_index < len(anchors[article]) and len(placements) < n_prompts:
                placements.append((article, anchors[article][round_index]))
    if len(placements) < n_prompts:
        _raise_not_enough(n_prompts, len(eligible), anchor_min, continuation)
    return placements


def _article_anchors(
    length: int, anchor_min: int, continuation: int, seed: int, article: int, wanted: int
) -> list[int]:
    """Up to `wanted` seeded anchors in one article.

    Their windows (anchor_min + continuation tokens each) do not overlap.
    """
    rng = random.Random(f"specdec-anchors/{seed}/{article}")
    low, high = anchor_min, length - continuation
    gap = max(anchor_min + continuation, 1)
    chosen: list[int] = []
    for _ in range(wanted * _ANCHOR_TRIES):
        if len(chosen) == wanted:
            break
        candidate = rng.randint(low, high)
        if all(abs(candidate - other) >= gap for other in chosen):
            chosen.append(candidate)
    return chosen


def _raise_not_enough(n_prompts: int, n_eligible: int, anchor_min: int, continuation: int) -> None:
    raise SpecdecError(
        f"not enough text for {n_prompts} prompts: {n_eligible} articles hold at least "
        f"anchor_min + continuation_tokens = {anchor_min + continuation} tokens, and each gives at "
        f"most {MAX_PROMPTS_PER_ARTICLE} non-overlapping prompts; ask for fewer or shorter prompts"
    )
