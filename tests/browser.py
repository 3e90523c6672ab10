"""Read a built book in headless Chromium, as a reader would: no new dependency.

The book's html folder is served on 127.0.0.1 by a thread of this process; a small harness page
(written into that folder) opens one page in a same-origin iframe (1200 px wide, or `width`: a
phone's 390, say), waits for MathJax to finish typesetting and for every image to load or fail,
and writes what it found as JSON into its own DOM, which `chromium --headless --dump-dom` prints:
the text, the math, the images (with their natural and shown widths) and the layout (the
page's scroll width against its viewport, and the elements that stick out, outside any box that
scrolls or clips them). Knows nothing about the book's content.

    python tests/browser.py HTML_DIR PAGE [PAGE...] [--width 390]   # one JSON report per page
    python tests/browser.py HTML_DIR PAGE --shot OUT.png [--width 412]   # a screenshot
    python tests/browser.py --check HTML_DIR [PAGE...]   # every _toc.yml page at 1280 and 390 px:
                                                         # one line per problem, exit 1 if any
"""

from __future__ import annotations

import functools
import html
import json
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote

HARNESS = "_specdec_browser_check.html"
HARNESS_HTML = r"""<!doctype html><html><body><pre id="result">pending</pre>
<iframe id="page" style="width:1200px;height:900px"></iframe>
<script>
const params = new URLSearchParams(location.search);
const pages = params.get("pages").split(",");
const widths = (params.get("widths") || "1200").split(",");
const frame = document.getElementById("page");
const out = document.getElementById("result");
function sleep(ms) { return new Promise(r => setTimeout(r, ms)); }
function contained(w, e) {  // clipped or scrolled by an ancestor, or fixed: no page overflow
  if (w.getComputedStyle(e).position === "fixed") return true;
  for (let a = e.parentElement; a && a.tagName !== "BODY"; a = a.parentElement) {
    const s = w.getComputedStyle(a);
    if (s.overflowX !== "visible" || s.position === "fixed") return true;
  }
  return false;
}
function describe(e) {
  return e.tagName.toLowerCase() + (typeof e.className === "string" && e.className.trim() ?
    "." + e.className.trim().split(/\s+/).slice(0, 3).join(".") : "");
}
function box(w, e) {  // the nearest ancestor that scrolls or clips e sideways, or null
  for (let a = e.parentElement; a && a.tagName !== "BODY"; a = a.parentElement) {
    if (w.getComputedStyle(a).overflowX !== "visible") return a;
  }
  return null;
}
function sticksOut(w, e, vw) {  // how e sits in its box: wider than it, and whether that scrolls
  const r = e.getBoundingClientRect(), b = box(w, e);
  const br = b ? b.getBoundingClientRect() : {left: 0, right: vw};
  return {what: describe(e), text: (e.innerText || "").trim().slice(0, 60),
    width: Math.round(r.width), room: Math.round(br.right - br.left),
    overflow: b ? w.getComputedStyle(b).overflowX : "visible", box: b ? describe(b) : "page",
    out: r.right > br.right + 2 || r.left < br.left - 2};
}
function layout(w, d) {
  const vw = d.documentElement.clientWidth;
  const all = Array.from(d.body.querySelectorAll("*"));
  const wide = all.filter(e => {
    const r = e.getBoundingClientRect();
    return r.width > 0 && r.right > vw + 2 && !contained(w, e);
  }).slice(0, 8).map(e => describe(e) + " right=" + Math.round(e.getBoundingClientRect().right));
  // content cut off: wider than an ancestor that clips it (overflow hidden or clip), in the
  // article (the theme's off-canvas drawers are clipped on purpose)
  const cut = Array.from(d.querySelectorAll(".bd-article *")).filter(e => {
    // MathJax's copy for screen readers is clipped to nothing on purpose
    if (e.getBoundingClientRect().width === 0 || e.closest("mjx-assistive-mml")) return false;
    const s = sticksOut(w, e, vw);
    return s.out && (s.overflow === "hidden" || s.overflow === "clip");
  }).slice(0, 8).map(e => sticksOut(w, e, vw));
  const tables = Array.from(d.querySelectorAll(".bd-article table")).map(e => sticksOut(w, e, vw));
  const math = Array.from(d.querySelectorAll(".bd-article mjx-container"))
    .map(e => sticksOut(w, e, vw)).filter(s => s.out);
  return {viewport: vw, inner: w.innerWidth, scroll: d.scrollingElement.scrollWidth, wide: wide,
    cut: cut, tables: tables, math: math};
}
async function check(page, width) {
  const w = frame.contentWindow, d = frame.contentDocument;
  let mathjax = "absent";
  if (w.MathJax && w.MathJax.startup && w.MathJax.startup.promise) {
    await w.MathJax.startup.promise; mathjax = "typeset";
  }
  const imgs = Array.from(d.images);
  for (let i = 0; i < 100 && imgs.some(im => !im.complete); i++) await sleep(50);
  const body = d.body.cloneNode(true);
  body.querySelectorAll("script, style, pre, code, mjx-container, textarea")
    .forEach(e => e.remove());
  return {
    page: page, width: Number(width), title: d.title, mathjax: mathjax,
    mathjax_src: Array.from(d.scripts).map(s => s.src).filter(s => /mathjax|tex-mml/i.test(s)),
    math: d.querySelectorAll("mjx-container").length,
    mjx_errors: d.querySelectorAll("mjx-merror").length,
    images: imgs.length,
    broken: imgs.filter(im => !(im.complete && im.naturalWidth > 0)).map(im => im.src),
    shown: imgs.filter(im => im.getBoundingClientRect().width > 0).map(im => ({
      src: im.src.split("/").pop().slice(0, 60), path: new URL(im.src).pathname,
      alt: im.getAttribute("alt"), natural: im.naturalWidth,
      width: Math.round(im.getBoundingClientRect().width),
      right: Math.round(im.getBoundingClientRect().right)})),
    layout: layout(w, d),
    text: body.innerText,
  };
}
function load(page) {
  return new Promise(resolve => { frame.onload = resolve; frame.src = page; });
}
async function run() {  // every page at every width, in this one browser
  const found = [];
  for (const width of widths) {
    frame.style.width = width + "px";
    for (const page of pages) {
      await load(page);
      found.push(await check(page, width).catch(e => ({page: page, width: Number(width),
                                                         error: String(e)})));
    }
  }
  out.textContent = JSON.stringify(found);
}
run();
</script></body></html>
"""


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        if path := shutil.which(name):
            return path
    return None


def require_chromium() -> str:
    """Chromium's path; skips the test without one (fails under SPECDEC_STRICT). For tests only:
    conftest (torch and all) is imported here, not when this file runs as a script."""
    from conftest import skip_or_fail

    exe = chromium()
    if exe is None:
        skip_or_fail("no Chromium on PATH (apt-get install chromium; .ci/run does)")
    return exe


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # the test's output stays readable
        pass


@contextmanager
def serve(root: Path):
    """Serve root on 127.0.0.1 (a free port) for the duration; yields the base URL."""
    (root / HARNESS).write_text(HARNESS_HTML, encoding="utf-8")
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _chrome(args: list[str], timeout: float = 120) -> str:
    exe = chromium()
    if exe is None:
        raise RuntimeError("no chromium on PATH")
    with tempfile.TemporaryDirectory() as profile:
        proc = subprocess.run(
            [
                exe,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                f"--user-data-dir={profile}",
                *args,
            ],  # fmt: skip
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    return proc.stdout


def read_pages(
    base: str, pages: list[str], widths: tuple[int, ...] = (1200,), budget_ms: int = 30000
) -> list[dict]:
    """What a reader's browser shows on each page (a path like 'book/math.html') in a viewport
    of each width in CSS pixels: one Chromium for them all, one report per (width, page)."""
    query = "pages=" + ",".join(quote(f"/{p}") for p in pages)
    query += "&widths=" + ",".join(str(w) for w in widths)
    loads = len(pages) * len(widths)
    dom = _chrome([f"--virtual-time-budget={budget_ms * loads}", "--dump-dom",
                   f"{base}/{HARNESS}?{query}"], timeout=120 + 30 * loads)  # fmt: skip
    m = re.search(r'<pre id="result">(.*?)</pre>', dom, re.S)
    failed = [{"page": p, "width": w} for w in widths for p in pages]
    if not m:
        return [{**f, "error": "no result in the dumped DOM"} for f in failed]
    try:
        return json.loads(html.unescape(m.group(1)))
    except json.JSONDecodeError:
        return [{**f, "error": f"harness did not finish: {m.group(1)[:200]}"} for f in failed]


def read_page(base: str, page: str, budget_ms: int = 30000, width: int | None = None) -> dict:
    """What a reader's browser shows on one page, in a viewport `width` CSS pixels wide (None:
    1200)."""
    return read_pages(base, [page], (width or 1200,), budget_ms)[0]


def screenshot(base: str, page: str, out: Path, width: int = 1280, height: int = 2400) -> None:
    _chrome([f"--window-size={width},{height}", "--virtual-time-budget=20000",
             "--hide-scrollbars", f"--screenshot={out}", f"{base}/{page}"])  # fmt: skip


DESKTOP, PHONE = 1280, 390  # CSS pixels: a laptop's window, a phone held upright
SLACK = 2  # px of rounding
# the smallest text of a figure, as the page shows it: 12 px (9 pt) at a desktop width, 9 px on
# a phone (the column is 327 px there: a figure MAX_WIDTH wide is shown at 0.55 of its size)
READABLE_PX = {DESKTOP: 12.0, PHONE: 9.0}
FONT_PX_KEY = "specdec-min-font-px"  # what specdec_study.reporting.figures.style records in a PNG
SCROLLS = ("auto", "scroll")
PATH_LIKE = re.compile(r"(^|/)[\w.-]+\.(png|jpe?g|gif|svg|webp)$|^\.{0,2}/|^_images/", re.I)


def readable_px(width: int) -> float:
    """The smallest text a figure may show in a viewport this wide."""
    return READABLE_PX[DESKTOP] if width >= 960 else READABLE_PX[PHONE]


def font_px(png: Path) -> float | None:
    """The smallest text size (image pixels) a PNG records, or None."""
    from PIL import Image

    try:
        with Image.open(png) as im:
            v = im.info.get(FONT_PX_KEY)
    except OSError:
        return None
    return float(v) if v is not None else None


def layout_problems(r: dict, root: Path) -> list[str]:
    """What stops a reader of one page at one width, from a `read_pages` report: the page wider
    than the screen; content cut off by a box that clips it; at a desktop width a table wider
    than its box (a hidden column), on a phone one that does not scroll in its own box; an image
    wider than the screen, whose alt text is empty or a file path, or whose smallest text
    (recorded in the PNG by specdec_study.reporting.figures.style) renders too small."""
    page, width = r.get("page"), r.get("width")
    if "error" in r:
        return [f"{page} at {width}: {r['error']}"]
    lay, out = r["layout"], []
    at = f"{page} at {width} px"
    if lay["scroll"] > lay["viewport"] + SLACK:
        out.append(f"{at}: {lay['scroll']} px wide in a {lay['viewport']} px screen: "
                   f"{lay['wide']}")  # fmt: skip
    for c in lay.get("cut", []):
        out.append(f"{at}: {c['what']} ({c['width']} px) cut off by {c['box']} ({c['room']} px)"
                   f": {c['text'][:40]!r}")  # fmt: skip
    for t in lay.get("tables", []):
        if t["out"] and (width >= 960 or t["overflow"] not in SCROLLS):
            head = " ".join(t["text"].split())[:50]
            out.append(f"{at}: a table {t['width']} px wide in {t['room']} px ({t['box']}, "
                       f"overflow {t['overflow']}): {head!r}")  # fmt: skip
    for im in r.get("shown", []):
        name = f"{at}: image {im['src'][:16]}"
        if im["right"] > lay["viewport"] + SLACK or im["width"] > lay["viewport"]:
            out.append(f"{name} wider than the screen: {im}")
        alt = (im.get("alt") or "").strip()
        if not alt or PATH_LIKE.search(alt):
            out.append(f"{name}: alt text {alt!r} does not say what it shows")
        png = root / im["path"].lstrip("/")
        if png.suffix.lower() == ".png":
            px = font_px(png)
            if px is None:
                out.append(f"{name}: records no text size (not drawn by reporting.figures)")
            elif px * im["width"] / max(im["natural"], 1) < readable_px(width) - 0.05:
                shown = px * im["width"] / max(im["natural"], 1)
                out.append(f"{name}: smallest text {shown:.1f} px, under "
                           f"{readable_px(width):.0f} px ({im['natural']} px shown at "
                           f"{im['width']})")  # fmt: skip
    return out


def toc_pages(toc: Path) -> list[str]:
    """Every page of a jupyter-book `_toc.yml`, as its built HTML path."""
    import yaml

    data = yaml.safe_load(toc.read_text(encoding="utf-8"))
    found = [data["root"]]

    def walk(node) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("file"), str):
                found.append(node["file"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(data.get("parts", []))
    return [f"{p.removesuffix('.md').removesuffix('.ipynb')}.html" for p in dict.fromkeys(found)]


RAW_MATH = re.compile(r"\\\(|\\\)|\\\[|\\\]|\\begin\{|\$\$")


def raw_math(text: str) -> list[str]:
    """Snippets of TeX source left in a page's rendered text."""
    return [text[max(m.start() - 30, 0) : m.end() + 30] for m in RAW_MATH.finditer(text)]


def main(argv: list[str]) -> int:
    if argv and argv[0] == "--check":  # every page of the book at both widths
        root = Path(argv[1])
        pages = argv[2:] or toc_pages(Path(__file__).resolve().parents[1] / "_toc.yml")
        with serve(root) as base:
            found = read_pages(base, pages, (DESKTOP, PHONE))
        problems = [p for r in found for p in layout_problems(r, root)]
        print("\n".join(problems) or f"{len(found)} page views, no problem")
        return 1 if problems else 0
    root, pages = Path(argv[0]), argv[1:]
    shot = width = None
    if "--shot" in pages:
        i = pages.index("--shot")
        shot = Path(pages[i + 1])
        pages = pages[:i] + pages[i + 2 :]
    if "--width" in pages:
        i = pages.index("--width")
        width = int(pages[i + 1])
        pages = pages[:i] + pages[i + 2 :]
    with serve(root) as base:
        for page in pages:
            if shot:
                screenshot(base, page, shot, width=width or 1280)
                print(shot)
            else:
                r = read_page(base, page, width=width)
                r["raw_math"] = raw_math(r.pop("text", ""))
                print(json.dumps(r, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
