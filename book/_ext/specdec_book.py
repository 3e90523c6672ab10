"""Sphinx glue for the specdec book: Colab launch buttons that open files which exist.

sphinx-book-theme builds a Colab link from the repository URL and the page's own path. The
experiment pages are staged copies (book/experiments/NN_name.ipynb, gitignored), so their link is
pointed at the source notebook in the repository (notebooks/NN_name.ipynb, whose first cell sets
itself up in Colab). The chapter pages are MyST Markdown, which Colab cannot open, so their
launch group is dropped (the page's download menu still offers the executed .ipynb).

Gives the executed notebooks' figures alt text that says what each shows: a notebook displays a
result directory's PNG followed by its caption, "*Figure i (`file.png`).* ...", and the image
(which myst-nb would otherwise label with its own file path) gets "Figure i: " and the sentence
`specdec_study.reporting.figures.declared.alt_text` gives for that declared file.

Also sets the copyright year from the build date (not a year typed into _config.yml), adds
book/_static/specdec.css (compact tables), and serves MathJax 3 from the book itself:
the `mathjax` files of the PyPI package `django-static-mathjax` (requirements.txt) are copied
into `_static/mathjax/` and `mathjax_path` points there, so that math renders offline (a local
build, a mirror) and no page loads a script from a CDN. Without the package the build stops with
a one-line error saying what to install.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.errors import ExtensionError

STAGED = "book/experiments/"
MATHJAX_ENTRY = "tex-mml-chtml.js"  # what Sphinx loads by default, from a CDN
# the entry script and what it loads on demand (TeX extensions, CHTML fonts, menu, a11y);
# not the speech-rule engine or the SVG output, which the book never asks for
MATHJAX_PARTS = (MATHJAX_ENTRY, "input", "output/chtml", "output/chtml.js", "ui", "a11y",
                 "adaptors")  # fmt: skip


def _retarget(app, pagename: str, templatename: str, context: dict[str, Any], doctree) -> None:
    buttons = context.get("header_buttons")
    if not buttons:
        return
    groups = [b for b in buttons if b.get("label") == "launch-buttons"]
    if not groups:
        return
    if pagename.startswith(STAGED):
        source = "notebooks/" + pagename[len(STAGED) :] + ".ipynb"
        for group in groups:
            for button in group.get("buttons", []):
                if button.get("text") == "Colab":
                    head = button["url"].split("/blob/", 1)[0]
                    branch = app.config.html_theme_options.get("repository_branch") or "main"
                    button["url"] = f"{head}/blob/{branch}/{source}"
    else:
        for group in groups:
            buttons.remove(group)


def caption_after(image: nodes.image) -> str:
    """The text of the first paragraph after an image, in document order ('' if none)."""
    for para in image.findall(nodes.paragraph, include_self=False, siblings=True, ascend=True):
        return para.astext()
    return ""


def notebook_alt(image: nodes.image, experiments: list[str]) -> str | None:
    """'Figure i: what it shows' for a notebook image captioned as a declared figure, or None."""
    from specdec_study.reporting.figures import declared

    m = declared.CAPTION_RE.search(caption_after(image))
    if not m:
        return None
    said = declared.alt_text(m.group(2), experiments)
    return f"Figure {m.group(1)}: {said}" if said else None


def _figure_alt(app, doctree) -> None:
    docname = app.env.docname
    if not docname.startswith(STAGED):
        return
    from specdec_study.reporting.figures import declared

    experiments = declared.notebook_experiments(docname[len(STAGED) :])
    for image in doctree.findall(nodes.image):
        if not image.get("alt") and (alt := notebook_alt(image, experiments)):
            image["alt"] = alt


def mathjax_source() -> Path | None:
    """The es5/ folder of the packaged MathJax 3, or None when the package is not installed."""
    spec = importlib.util.find_spec("mathjax")
    for loc in (spec.submodule_search_locations or []) if spec else []:
        es5 = Path(loc) / "static" / "mathjax" / "es5"
        if (es5 / MATHJAX_ENTRY).is_file():
            return es5
    return None


def stage_mathjax(dest: Path) -> Path:
    """Copy the parts of MathJax the book uses to dest/mathjax; returns dest (a static path)."""
    src = mathjax_source()
    if src is None:
        raise ExtensionError(
            "MathJax is not installed: pip install -r requirements.txt "
            "(the book serves MathJax from the package django-static-mathjax, never a CDN)"
        )
    out = dest / "mathjax"
    if out.exists():
        shutil.rmtree(out)
    for part in MATHJAX_PARTS:
        s, d = src / part, out / part
        d.parent.mkdir(parents=True, exist_ok=True)
        if s.is_dir():
            shutil.copytree(s, d)
        elif s.is_file():
            shutil.copy2(s, d)
    return dest


def _static(app) -> None:
    app.config.html_static_path.append(str(Path(__file__).resolve().parents[1] / "_static"))
    if app.builder.format == "html":
        staged = stage_mathjax(Path(app.doctreedir).parent / "specdec_static")
        app.config.html_static_path.append(str(staged))


def build_year() -> int:
    """The build's year (SOURCE_DATE_EPOCH when set, for reproducible builds)."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    when = datetime.fromtimestamp(int(epoch), timezone.utc) if epoch else datetime.now(timezone.utc)
    return when.year


def _copyright(app, config) -> None:
    config.copyright = f"{build_year()}, {config.author}" if config.author else str(build_year())


def setup(app):
    app.connect("config-inited", _copyright)
    app.connect("builder-inited", _static)
    app.connect("doctree-read", _figure_alt)
    app.add_css_file("specdec.css")
    # after sphinx-book-theme's add_launch_buttons (501), before the header is rendered
    app.connect("html-page-context", _retarget, priority=502)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
