"""Sphinx glue for the specdec book: Colab launch buttons that open files which exist.

sphinx-book-theme builds a Colab link from the repository URL and the page's own path. The
experiment pages are staged copies (book/experiments/NN_name.ipynb, gitignored), so their link is
pointed at the source notebook in the repository (notebooks/NN_name.ipynb, whose first cell sets
itself up in Colab). The chapter pages are MyST Markdown, which Colab cannot open, so their
launch group is dropped (the page's download menu still offers the executed .ipynb).

Also adds book/_static/specdec.css (compact tables).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

STAGED = "book/experiments/"


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


def _static(app) -> None:
    app.config.html_static_path.append(str(Path(__file__).resolve().parents[1] / "_static"))


def setup(app):
    app.connect("builder-inited", _static)
    app.add_css_file("specdec.css")
    # after sphinx-book-theme's add_launch_buttons (501), before the header is rendered
    app.connect("html-page-context", _retarget, priority=502)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
