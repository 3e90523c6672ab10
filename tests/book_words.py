"""Words a reader meets in a built page: the text of its main article (the Jupyter Book theme's
`<article class="bd-article">`, or one with role="main"), without scripts, styles, math (an
equation is not prose), the permalink marks of headings or the hidden parts of folded cells.
A word is a run of letters or digits, joined by an apostrophe, hyphen or point (`don't`,
`bfloat16`, `2.33x` are one word each).

`reader_pages(toc)` lists the chapters a reader reads (the toc's root and files, except the
executed notebooks that book/build.py stages under book/experiments/); `article_words(html)`
counts one page. Knows nothing about results.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

from browser import toc_pages

WORD = re.compile(r"\w+(?:['’.\-]\w+)*")
SKIP_TAGS = {"script", "style", "noscript", "template"}
SKIP_CLASSES = {"math", "headerlink", "MathJax", "toggle-details__summary"}
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}  # fmt: skip
NOTEBOOKS = "book/experiments/"


class _Article(HTMLParser):
    """Collects the text inside the main article, outside skipped elements."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.depth = 0  # open elements inside the article (0: outside it)
        self.skip_at: int | None = None  # depth where a skipped element opened
        self.parts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in VOID:
            return
        a = dict(attrs)
        if self.depth == 0:
            if tag == "article" and (
                a.get("role") == "main" or "bd-article" in (a.get("class") or "").split()
            ):
                self.depth = 1
            return
        self.depth += 1
        classes = set((a.get("class") or "").split())
        if self.skip_at is None and (tag in SKIP_TAGS or classes & SKIP_CLASSES):
            self.skip_at = self.depth

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID or self.depth == 0:
            return
        if self.skip_at == self.depth:
            self.skip_at = None
        self.depth -= 1

    def handle_data(self, data: str) -> None:
        if self.depth and self.skip_at is None:
            self.parts.append(data)


def article_text(html: str) -> str:
    """The main article's reader-facing text ('' when the page has no main article)."""
    p = _Article()
    p.feed(html)
    p.close()
    return " ".join(" ".join(p.parts).split())


def article_words(html: str) -> int:
    """The number of words in the main article's text."""
    return len(WORD.findall(article_text(html)))


def reader_pages(toc_path: Path) -> list[str]:
    """The toc's root and files, in order, without the executed notebooks (paths without
    suffix, as the built site names them: `book/intro` -> `book/intro.html`)."""
    pages = [p.removesuffix(".html") for p in toc_pages(toc_path)]  # the browser test's walk
    return [p for p in pages if not p.startswith(NOTEBOOKS)]
