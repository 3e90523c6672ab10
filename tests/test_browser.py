"""The built book read in headless Chromium: math typeset by the book's own MathJax (no CDN, no
network), no TeX source left in any page's text, every image loaded; at a desktop's 1280 px and a
phone's 390 px no page is wider than the screen, nothing is cut off, no table hides a column at
1280 px and a wide one scrolls in its own box at 390 px, every image fits the screen, says what
it shows in its alt text (never a file path) and shows its smallest text at a readable size
(`browser.layout_problems`).

One book is built per test session from synthetic results (tests/test_book.py's writer, plus an
executed notebook showing a result directory's figure under its caption, as the notebooks do, and
a Colab badge), and read by one Chromium at both widths; the browser tests are skipped with
their reason where Chromium is absent (`apt-get install chromium`; .ci/run installs it). The same
build also shows the reference pages: downloads, glossary, bibliography, reconciliation,
provenance. `python tests/browser.py --check _build/html` runs the same checks on a real build.
"""

from __future__ import annotations

import base64
import re
from pathlib import Path

import nbformat
import pytest
from browser import (
    DESKTOP,
    FONT_PX_KEY,
    PHONE,
    layout_problems,
    raw_math,
    read_pages,
    require_chromium,
    serve,
    toc_pages,
)
from test_book import _build, write_synthetic

ROOT = Path(__file__).resolve().parents[1]
FIGURE_FILE = "measured_vs_predicted.png"  # a figure 05_k_sweep's experiment declares


@pytest.fixture
def chromium_present() -> None:
    """Skips without Chromium (fails under SPECDEC_STRICT), before the book is built."""
    require_chromium()


needs_chromium = pytest.mark.usefixtures("chromium_present")


def _png() -> str:
    """A figure as the study draws one (its smallest text recorded), wider than a phone."""
    from specdec_study.reporting.figures import new_figure
    from specdec_study.reporting.figures.style import png_bytes

    fig, (ax,) = new_figure(1, height=2.5)
    ax.plot([0, 1], [0, 1])
    ax.set(xlabel="K", ylabel="speedup")
    return base64.b64encode(png_bytes(fig)).decode()


def _pages() -> list[str]:
    return toc_pages(ROOT / "_toc.yml")


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
    fig = nbformat.v4.new_code_cell("study.display_result(study_run, 'k_sweep')")
    caption = f"*Figure 1 (`{FIGURE_FILE}`).* Measured against predicted speedup."
    fig.outputs = [
        nbformat.v4.new_output("display_data", data={"image/png": _png()}),
        nbformat.v4.new_output("display_data", data={"text/markdown": caption}),
    ]
    nb.cells.append(fig)
    nbformat.write(nb, nb_path)
    proc = _build(tmp, "synthetic", results)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return tmp / "book" / "_build" / "html"


@pytest.fixture(scope="session")
def views(book_html) -> dict[tuple[str, int], dict]:
    """(page, width) -> what Chromium showed: every page at 1280 and 390 px, one browser."""
    require_chromium()
    with serve(book_html) as base:
        found = read_pages(base, _pages(), (DESKTOP, PHONE))
    return {(r["page"].lstrip("/"), r["width"]): r for r in found}


def test_the_book_serves_mathjax_itself(book_html):
    page = (book_html / "book" / "math.html").read_text(encoding="utf-8")
    srcs = re.findall(r'<script[^>]*src="([^"]*(?:mathjax|tex-mml)[^"]*)"', page, re.I)
    assert srcs and all(not s.startswith(("http:", "https:", "//")) for s in srcs), srcs
    assert (book_html / "_static" / "mathjax" / "tex-mml-chtml.js").is_file()
    fonts = list((book_html / "_static" / "mathjax" / "output" / "chtml" / "fonts").rglob("*.woff"))
    assert fonts


@needs_chromium
def test_every_page_renders_its_math_and_images(views):
    pages = _pages()
    assert "book/math.html" in pages and "book/experiments/05_k_sweep.html" in pages
    problems = []
    for page in pages:
        r = views[(page, DESKTOP)]
        if "error" in r:
            problems.append(f"{page}: {r['error']}")
            continue
        if raw := raw_math(r["text"]):
            problems.append(f"{page}: TeX source in the text: {raw[:3]}")
        if r["broken"]:
            problems.append(f"{page}: images that did not load: {r['broken']}")
        if r["mjx_errors"]:
            problems.append(f"{page}: {r['mjx_errors']} MathJax errors")
    assert not problems, "\n".join(problems)
    math = views[("book/math.html", DESKTOP)]
    assert math["mathjax"] == "typeset" and math["math"] >= 50, math["math"]


@needs_chromium
def test_every_page_fits_and_shows_readable_described_figures_at_both_widths(book_html, views):
    """Nothing in `layout_problems` on any page at 1280 or 390 px; the widths were really
    applied, figures wider than a phone were shown scaled down (so the text-size rule was
    exercised), and the notebook's figure got the alt text its declaration gives."""
    problems = [p for r in views.values() for p in layout_problems(r, book_html)]
    assert not problems, "\n".join(problems)
    for (page, width), r in views.items():
        assert width - 20 <= r["layout"]["viewport"] <= width, (page, r["layout"])
    phone = [im for (_, w), r in views.items() if w == PHONE for im in r["shown"]]
    assert any(im["natural"] > im["width"] for im in phone), "no image was shown scaled down"
    chapter = [
        im for p in ("results", "paradox") for im in views[(f"book/{p}.html", DESKTOP)]["shown"]
    ]
    assert chapter, "the chapters showed no figure"
    notebook = views[("book/experiments/05_k_sweep.html", DESKTOP)]["shown"]
    alts = [im["alt"] for im in notebook]
    assert any(a.startswith("Figure 1: ") and "speedup" in a for a in alts), alts


def _report(width: int, **layout) -> dict:
    base = {"viewport": width - 15, "scroll": width - 15, "wide": [], "cut": [], "tables": []}
    return {"page": "p.html", "width": width, "layout": {**base, **layout}, "shown": []}


def _image(tmp_path: Path, font_px: float | None, natural: int = 600) -> Path:
    from PIL import Image
    from PIL.PngImagePlugin import PngInfo

    info = PngInfo()
    if font_px is not None:
        info.add_text(FONT_PX_KEY, str(font_px))
    Image.new("RGB", (natural, 100), "white").save(tmp_path / "f.png", pnginfo=info)
    return tmp_path / "f.png"


def test_layout_problems_flags_what_stops_a_reader(tmp_path):
    """The checks can fail: a page wider than the screen, content cut off, a hidden table
    column at a desktop width (but not a scrolling one on a phone), alt text that is a path or
    empty, and figure text too small where it is shown."""
    assert layout_problems(_report(1280), tmp_path) == []
    assert layout_problems(_report(390, scroll=500, wide=["div right=500"]), tmp_path)
    cut = {"what": "span", "width": 400, "box": "span.math", "room": 300, "text": "x"}
    assert layout_problems(_report(390, cut=[cut]), tmp_path)
    table = {"out": True, "width": 900, "room": 660, "overflow": "auto", "box": "div",
             "text": "a b"}  # fmt: skip
    assert layout_problems(_report(1280, tables=[table]), tmp_path)
    assert layout_problems(_report(390, tables=[table]), tmp_path) == []
    assert layout_problems(_report(390, tables=[{**table, "overflow": "hidden"}]), tmp_path)

    def shown(alt: str, font_px: float | None, width: int) -> list[str]:
        _image(tmp_path, font_px)
        r = _report(1280 if width > 400 else 390)
        r["shown"] = [{"src": "f.png", "path": "/f.png", "alt": alt, "natural": 600,
                       "width": width, "right": width}]  # fmt: skip
        return layout_problems(r, tmp_path)

    assert shown("Figure 1: speedup against K", 19.3, 600) == []
    assert shown("../../_images/f.png", 19.3, 600)
    assert shown("", 19.3, 600)
    assert shown("Figure 1: speedup against K", 10.0, 600)  # 10 px at natural size
    assert shown("Figure 1: speedup against K", 19.3, 327) == []  # 10.5 px on a phone
    assert shown("Figure 1: speedup against K", 14.0, 327)  # 7.6 px on a phone
    assert shown("Figure 1: speedup against K", None, 600)  # no recorded size


def _text(book_html: Path, page: str) -> str:
    return re.sub(r"<[^>]+>", " ", (book_html / f"{page}.html").read_text(encoding="utf-8"))


def test_reference_pages(book_html):
    from datetime import datetime, timezone

    # the result files are listed on Reproducibility (the Downloads page merged into it)
    downloads = (book_html / "book" / "reproducibility.html").read_text(encoding="utf-8")
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
    # the reconciliation of one setup across experiments is a section of Results now
    recon = _text(book_html, "book/results")
    assert "reconcile.py" in recon and "95% interval" in recon
    repro = _text(book_html, "book/reproducibility")
    assert "This book was built at commit" in repro and "jupyter-book" in repro
    assert "numpy" in repro and "Traceback" not in repro and "Markdown object" not in repro
    year = str(datetime.now(timezone.utc).year)
    assert f"Copyright {year}" in _text(book_html, "book/intro").replace("\n", " ")
