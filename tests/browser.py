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

HARNESS = "_specdec_browser_check.html"
HARNESS_HTML = r"""<!doctype html><html><body><pre id="result">pending</pre>
<iframe id="page" style="width:1200px;height:900px"></iframe>
<script>
const params = new URLSearchParams(location.search);
const page = params.get("page");
const frame = document.getElementById("page");
if (params.get("width")) frame.style.width = params.get("width") + "px";
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
function layout(w, d) {
  const vw = d.documentElement.clientWidth;
  const wide = Array.from(d.body.querySelectorAll("*")).filter(e => {
    const r = e.getBoundingClientRect();
    return r.width > 0 && r.right > vw + 2 && !contained(w, e);
  }).slice(0, 8).map(e => e.tagName.toLowerCase() +
    (typeof e.className === "string" && e.className.trim() ?
      "." + e.className.trim().split(/\s+/).join(".") : "") +
    " right=" + Math.round(e.getBoundingClientRect().right));
  return {viewport: vw, inner: w.innerWidth, scroll: d.scrollingElement.scrollWidth, wide: wide};
}
async function check() {
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
  out.textContent = JSON.stringify({
    page: page, title: d.title, mathjax: mathjax,
    mathjax_src: Array.from(d.scripts).map(s => s.src).filter(s => /mathjax|tex-mml/i.test(s)),
    math: d.querySelectorAll("mjx-container").length,
    mjx_errors: d.querySelectorAll("mjx-merror").length,
    images: imgs.length,
    broken: imgs.filter(im => !(im.complete && im.naturalWidth > 0)).map(im => im.src),
    shown: imgs.filter(im => im.getBoundingClientRect().width > 0).map(im => ({
      src: im.src.split("/").pop().slice(0, 60), natural: im.naturalWidth,
      width: Math.round(im.getBoundingClientRect().width),
      right: Math.round(im.getBoundingClientRect().right)})),
    layout: layout(w, d),
    text: body.innerText,
  });
}
frame.onload = () => check().catch(e => { out.textContent = JSON.stringify({error: String(e)}); });
frame.src = page;
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


def read_page(base: str, page: str, budget_ms: int = 30000, width: int | None = None) -> dict:
    """What a reader's browser shows on one page (page: a path like 'book/math.html'), in a
    viewport `width` CSS pixels wide (None: 1200)."""
    query = f"page=/{page}" + (f"&width={width}" if width else "")
    dom = _chrome([f"--virtual-time-budget={budget_ms}", "--dump-dom",
                   f"{base}/{HARNESS}?{query}"])  # fmt: skip
    m = re.search(r'<pre id="result">(.*?)</pre>', dom, re.S)
    if not m:
        return {"page": page, "error": "no result in the dumped DOM"}
    try:
        return json.loads(html.unescape(m.group(1)))
    except json.JSONDecodeError:
        return {"page": page, "error": f"harness did not finish: {m.group(1)[:200]}"}


def screenshot(base: str, page: str, out: Path, width: int = 1280, height: int = 2400) -> None:
    _chrome([f"--window-size={width},{height}", "--virtual-time-budget=20000",
             "--hide-scrollbars", f"--screenshot={out}", f"{base}/{page}"])  # fmt: skip


RAW_MATH = re.compile(r"\\\(|\\\)|\\\[|\\\]|\\begin\{|\$\$")


def raw_math(text: str) -> list[str]:
    """Snippets of TeX source left in a page's rendered text."""
    return [text[max(m.start() - 30, 0) : m.end() + 30] for m in RAW_MATH.finditer(text)]


def main(argv: list[str]) -> int:
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
