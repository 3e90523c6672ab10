"""The book's word budget: the reader-facing chapters (every page of the toc but the executed
notebooks) hold at most `BUDGET` words together, page one at most `PAGE_ONE`, counted on the
built HTML of the embedded profile (tests/book_words.py: the main article's text, without math,
scripts or permalink marks).

The budget test reads the site `make book` leaves in _build/html when its build record
(`.specdec-build.json`, written by book/build.py) says it shows the committed embedded results;
otherwise it builds one into a temporary folder under SPECDEC_STRICT (CI, where `make test`
runs before any book is built) and skips with the reason elsewhere.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from book_words import article_text, article_words, reader_pages
from conftest import skip_or_fail, strict

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "_build" / "html"
BUDGET = 12_000  # the reader-facing chapters together
PAGE_ONE = 600  # the introduction: one screen of answer

PAGE = """<html><body><nav>menu words here</nav>
<article class="bd-article">
<h1>Title<a class="headerlink" href="#t">#</a></h1>
<p>Speculative decoding gives 2.33x [2.08, 2.79], n=10 on bfloat16; it doesn't loop.</p>
<script>var not_words = 1;</script><style>.a {}</style>
<p>Rate <span class="math notranslate nohighlight">\\(\\alpha = \\sum_j n_j\\)</span> here.<br></p>
<img src="x.png" alt="a figure">
<div class="math notranslate">\\[ S = \\frac{1}{2} \\]</div>
</article><footer>previous next</footer></body></html>"""


def test_the_counter_reads_only_the_article_s_prose():
    """Title (1) + the sentence (Speculative decoding gives 2.33x 2.08 2.79 n 10 on bfloat16 it
    doesn't loop: 13) + Rate here (2) = 16; the menu, footer, script, style, heading mark and
    both equations are not counted (planted: counting the whole page, or the math, gives more)."""
    assert article_words(PAGE) == 16
    text = article_text(PAGE)
    assert "menu" not in text and "not_words" not in text and "alpha" not in text
    assert "frac" not in text and "previous" not in text and "#" not in text


def test_a_page_without_a_main_article_has_no_words():
    assert article_words("<html><body><p>three words here</p></body></html>") == 0


def test_the_reader_pages_are_the_toc_without_the_executed_notebooks():
    pages = reader_pages(ROOT / "_toc.yml")
    assert pages[0] == "book/intro" and "book/math" in pages and "book/glossary" in pages
    assert not any(p.startswith("book/experiments/") for p in pages)
    assert "book/claims" not in pages  # the claims list is a command and a CSV, not a chapter


def _record(site: Path) -> dict:
    try:
        return json.loads((site / ".specdec-build.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


@pytest.fixture(scope="module")
def embedded_site(tmp_path_factory) -> Path:
    rec = _record(SITE)
    if rec.get("profile") == "embedded" and Path(rec.get("results", "")) == ROOT / "results":
        return SITE
    why = (
        f"no build of the committed embedded results at {SITE} (make book builds one; "
        f"found {rec or 'none'})"
    )
    if not strict():
        skip_or_fail(why)
    from test_book import _build

    tmp = tmp_path_factory.mktemp("words")
    proc = _build(tmp, "embedded", ROOT / "results")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return tmp / "book" / "_build" / "html"


def test_the_reader_facing_chapters_keep_to_the_word_budget(embedded_site):
    counts = {
        page: article_words((embedded_site / f"{page}.html").read_text(encoding="utf-8"))
        for page in reader_pages(ROOT / "_toc.yml")
    }
    assert all(n > 0 for n in counts.values()), counts  # every page was read
    assert counts["book/intro"] <= PAGE_ONE, counts
    assert sum(counts.values()) <= BUDGET, counts
