"""The built book read in headless Chromium: math typeset by the book's own MathJax (no CDN, no
network), no TeX source left in any page's text, every image loaded; on a phone's width nothing
makes a page scroll sideways and figures scale down to the screen.

One book is built per test session from synthetic results (tests/test_book.py's writer, plus an
executed notebook with a figure and a Colab badge); the browser test is skipped with its reason
where Chromium is absent (`apt-get install chromium`; .ci/run installs it). The same build also
shows the reference pages: downloads, glossary, bibliography, reconciliation, provenance.
"""

from __future__ import annotations

import base64
import io
import re
from pathlib import Path

import nbformat
import pytest
import yaml
from browser import raw_math, read_page, require_chromium, serve
from test_book import _build, write_synthetic

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def chromium_present() -> None:
    """Skips without Chromium (fails under SPECDEC_STRICT), before the book is built."""
    require_chromium()


needs_chromium = pytest.mark.usefixtures("chromium_present")


def _png() -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 2.5))  # 800 px: wider than a phone
    ax.plot([0, 1], [0, 1])
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def _pages() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    found = [toc["root"]]

    def walk(node) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("file"), str):
                found.append(node["file"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(toc.get("parts", []))
    return [f"{p.removesuffix('.md').removesuffix('.ipynb')}.html" for p in dict.fromkeys(found)]


@pytest.fixture(scope="session")
def book_html(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("browser")
    results = tmp / "results"
    write_synthetic(results, "synthetic")
    nb_path = results / "synthetic" / "notebooks" / "05_k_sweep.ipynb"
    nb = nbformat.read(nb_path, as_version=4)
    nb.cells[0].source = (
        "[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]"
        "(https://colab.research.google.com/github/x/y/blob/main/n.ipynb)\n\n" + nb.cells[0].source
    )
    fig = nbformat.v4.new_code_cell("show()")
    fig.outputs = [nbformat.v4.new_output("display_data", data={"image/png": _png()})]
    nb.cells.append(fig)
    nbformat.write(nb, nb_path)
    proc = _build(tmp, "synthetic", results)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return tmp / "book" / "_build" / "html"


def test_the_book_serves_mathjax_itself(book_html):
    page = (book_html / "book" / "math.html").read_text(encoding="utf-8")
    srcs = re.findall(r'<script[^>]*src="([^"]*(?:mathjax|tex-mml)[^"]*)"', page, re.I)
    assert srcs and all(not s.startswith(("http:", "https:", "//")) for s in srcs), srcs
    assert (book_html / "_static" / "mathjax" / "tex-mml-chtml.js").is_file()
    fonts = list((book_html / "_static" / "mathjax" / "output" / "chtml" / "fonts").rglob("*.woff"))
    assert fonts


@needs_chromium
def test_every_page_renders_its_math_and_images(book_html):
    pages = _pages()
    assert "book/math.html" in pages and "book/experiments/05_k_sweep.html" in pages
    problems = []
    with serve(book_html) as base:
        for page in pages:
            r = read_page(base, page)
            if "error" in r:
                problems.append(f"{page}: {r['error']}")
                continue
            if raw := raw_math(r["text"]):
                problems.append(f"{page}: TeX source in the text: {raw[:3]}")
            if r["broken"]:
                problems.append(f"{page}: images that did not load: {r['broken']}")
            if r["mjx_errors"]:
                problems.append(f"{page}: {r['mjx_errors']} MathJax errors")
            if page == "book/math.html":
                math = r
    assert not problems, "\n".join(problems)
    assert math["mathjax"] == "typeset" and math["math"] >= 50, math["math"]


PHONE = 390  # CSS pixels: a phone held upright
SLACK = 2  # px of rounding


@needs_chromium
def test_pages_fit_a_phone_screen(book_html):
    """At 390 px no page is wider than the screen (a wide table, code or equation scrolls in its
    own box, a long word wraps) and every image fits it; images wider than a phone by nature
    are among them, so the scaling is really tested."""
    problems, scaled = [], 0
    with serve(book_html) as base:
        for page in _pages():
            r = read_page(base, page, width=PHONE)
            if "error" in r:
                problems.append(f"{page}: {r['error']}")
                continue
            lay = r["layout"]
            assert PHONE - 20 <= lay["viewport"] <= PHONE, lay  # the page really was phone-wide
            if lay["scroll"] > lay["viewport"] + SLACK:
                wide, screen = lay["scroll"], lay["viewport"]
                problems.append(f"{page}: {wide} px wide in a {screen} px screen: {lay['wide']}")
            for im in r["shown"]:
                if im["right"] > lay["viewport"] + SLACK or im["width"] > lay["viewport"]:
                    problems.append(f"{page}: an image wider than the screen: {im}")
                scaled += im["natural"] > lay["viewport"] >= im["width"]
    assert not problems, "\n".join(problems)
    assert scaled, "no image wider than a phone was shown scaled down"


def _text(book_html: Path, page: str) -> str:
    return re.sub(r"<[^>]+>", " ", (book_html / f"{page}.html").read_text(encoding="utf-8"))


def test_reference_pages(book_html):
    from datetime import datetime, timezone

    downloads = (book_html / "book" / "downloads.html").read_text(encoding="utf-8")
    links = re.findall(r'href="(\.\./_downloads/[^"]+)"', downloads)
    names = {Path(h).name for h in links}
    assert {"config.json", "env.json", "summary.json", "per_prompt.csv"} <= names
    assert all((book_html / "book" / h).is_file() for h in links)
    glossary = _text(book_html, "book/glossary")
    for term in ("anchor", "teacher-forced agreement", "paired baseline", "profile", "TVD"):
        assert term in glossary, term
    assert "self:18:16384" in glossary
    refs = (book_html / "book" / "references.html").read_text(encoding="utf-8")
    assert "arxiv.org/abs/2211.17192" in refs and "Leviathan" in refs
    assert "leviathan2023" not in _text(book_html, "book/intro")  # the cite role resolved
    recon = _text(book_html, "book/reconciliation")
    assert "transformer_draft" in recon and "context_sweep" in recon and "k_sweep" in recon
    assert "95% intervals" in recon
    repro = _text(book_html, "book/reproducibility")
    assert "This book was built at commit" in repro and "jupyter-book" in repro
    assert "numpy" in repro and "Traceback" not in repro and "Markdown object" not in repro
    year = str(datetime.now(timezone.utc).year)
    assert f"Copyright {year}" in _text(book_html, "book/intro").replace("\n", " ")
