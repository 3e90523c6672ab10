"""Text read from a result file is data: a profile whose result files carry MyST and HTML
payloads (directives that read files, raw HTML, roles, substitutions, event attributes,
backticks) in every field the book prints builds into a site that holds none of their effects:
no planted secret, no planted file's contents, no script, no event attribute. Also the escaping
helpers of reporting.format, one by one, against markdown-it as MyST parses it."""

from __future__ import annotations

import html.parser
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FAKE_SECRETS, files_containing
from test_book import write_synthetic

from specdec_study.reporting.format import download_role, md_cell, md_code, md_table, md_text
from specdec_study.results.schema import result_problem

ROOT = Path(__file__).resolve().parents[1]
PLANTED = "planted-file-contents-5f3a9c"  # the contents of a local file a payload points at
MARK = "alert(38)"  # what each planted script or event handler would run


def payload(target_file: Path, book_dir: Path) -> str:
    """Every kind of markup the issue found reaching the book, in one string: a literalinclude
    of a local file and of /proc/self/environ (the building process's secrets), a raw HTML
    script, a {download} role, an image with an event attribute, backticks that would end a
    code span, a substitution and a colon fence."""
    rel = os.path.relpath(target_file, book_dir)
    environ = os.path.relpath("/proc/self/environ", book_dir)
    return (
        f"AMD EPYC`` ` \n\n```{{literalinclude}} {rel}\n```\n\n"
        f"```{{literalinclude}} {environ}\n```\n\n"
        f"```{{raw}} html\n<script>{MARK}</script>\n```\n\n"
        f":::{{raw}} html\n<script>{MARK}</script>\n:::\n\n"
        f"{{download}}`stolen <{rel}>` `x` <img src=x onerror={MARK}> {{{{ env }}}} "
        f"<script>{MARK}</script>` {{raw-html}}`<b onmouseover={MARK}>`"
    )


def _edit_json(path: Path, edit) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    edit(data)
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")


def plant(profile_dir: Path, text: str, *, names: bool = True) -> None:
    """Put `text` in every field of the profile's result files that the book prints: env.json's
    machine and versions, config.json's target and data source, a headline key, and (names)
    the names of extra result files beside per_prompt.csv."""
    for d in sorted(p for p in profile_dir.iterdir() if (p / "summary.json").is_file()):

        def env(e: dict, gpu: bool = d.name in ("bigram", "sampling")) -> None:
            for key in ("cpu_model", "torch", "transformers", "python", "platform", "processor"):
                e[key] = text
            e["gpu"] = text if gpu else None

        def config(c: dict) -> None:
            c["target"] = text
            c["data_source"] = text

        def headline(s: dict) -> None:
            s["headline"][text] = 1.0

        _edit_json(d / "env.json", env)
        _edit_json(d / "config.json", config)
        kept = (d / "summary.json").read_text(encoding="utf-8")
        _edit_json(d / "summary.json", headline)
        if result_problem(d, study=True) is not None:  # a headline of declared keys only
            (d / "summary.json").write_text(kept, encoding="utf-8")
        assert result_problem(d, study=True) is None, result_problem(d, study=True)
        if names:
            (d / "pay`load <x>.csv").write_text("prompt\n1\n", encoding="utf-8")
            (d / f"<img src=x onerror={MARK}>.json").write_text("{}", encoding="utf-8")


class _Tags(html.parser.HTMLParser):
    """The script elements and event attributes of an HTML page that a payload planted."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs) -> None:
        self._in_script = tag == "script"
        for name, value in attrs:
            if name.startswith("on") and MARK in (value or ""):
                self.found.append(f"<{tag} {name}=...>")

    def handle_data(self, data) -> None:
        if self._in_script and MARK in data:
            self.found.append("<script> with the payload")

    def handle_endtag(self, tag) -> None:
        self._in_script = False


def live_markup(site: Path) -> list[str]:
    """'page: what' for each planted script or event attribute that a built page would run."""
    out = []
    for page in sorted(site.rglob("*.html")):
        parser = _Tags()
        parser.feed(page.read_text(encoding="utf-8", errors="replace"))
        out += [f"{page.relative_to(site)}: {f}" for f in parser.found]
    return out


# --------------------------------------------------------------------------------------------
# the escaping helpers, parsed as the book parses them (fast)


def _parser():
    """myst-parser's markdown-it with the book's extensions (_config.yml), rendering HTML."""
    from markdown_it.renderer import RendererHTML
    from myst_parser.config.main import MdParserConfig
    from myst_parser.parsers.mdit import create_md_parser

    config = MdParserConfig(
        enable_extensions={"colon_fence", "dollarmath", "amsmath", "deflist", "substitution"}
    )
    return create_md_parser(config, RendererHTML)


def _myst_html(markdown: str) -> str:
    """markdown rendered to HTML by the book's markdown parser (roles and directives as
    markdown-it's own tokens: what matters here is that there are none)."""
    return _parser().render(markdown)


def _tokens(markdown: str) -> list[str]:
    """The kinds of markdown-it tokens (block and inline) that markdown parses into."""
    kinds = []
    for t in _parser().parse(markdown):
        kinds.append(t.type)
        kinds += [c.type for c in t.children or []]
    return kinds


MARKUP = {"fence", "colon_fence", "myst_role", "html_inline", "html_block", "math_inline",
          "substitution_inline", "substitution_block", "link_open", "image", "em_open",
          "strong_open", "heading_open", "bullet_list_open", "ordered_list_open",
          "blockquote_open", "myst_directive", "math_block", "s_open"}  # fmt: skip


@pytest.mark.parametrize("where", ["start", "middle"])
def test_md_text_is_one_paragraph_of_text_whatever_it_holds(tmp_path, where):
    text = payload(tmp_path / "secret", tmp_path) + " *em* _u_ $x$ [a](b) ![i](j) ~~s~~ &amp;"
    for s in (text, "# heading", "- item", "1. item", "> quote", ":::{note}", "---", "+ x"):
        md = md_text(s) if where == "start" else f"Before {md_text(s)} after."
        kinds = set(_tokens(md))
        assert not kinds & MARKUP, (s, kinds & MARKUP)
        assert kinds <= {"paragraph_open", "inline", "text", "paragraph_close", "softbreak"}
    assert "onerror=" not in _myst_html(md_text(text)).replace("onerror=alert", "")  # as text


def test_md_text_shows_the_value_itself():
    s = "AMD EPYC 7B13 (x86_64) <b>&amp; `torch 2.5.1+cu121` {x} $5 | a_b *c*"
    html = _myst_html(md_text(s))
    import html as h

    assert h.unescape(html.strip().removeprefix("<p>").removesuffix("</p>")) == s


@pytest.mark.parametrize(
    "s", ["a`b", "``", "`lead", "trail`", "x ```{raw} html\n<script>", "plain"]
)
def test_md_code_is_one_code_span_whatever_backticks_it_holds(s):
    kinds = _tokens(f"before {md_code(s)} after")
    assert kinds.count("code_inline") == 1 and not set(kinds) & MARKUP
    import html as h

    html = _myst_html(f"{md_code(s)}")
    inner = html.split("<code>", 1)[1].split("</code>", 1)[0]
    assert h.unescape(inner).strip() == s.replace("\n", " ").strip()


def test_md_cell_keeps_the_books_code_spans_and_page_links_and_nothing_else():
    cell = "`ctx` -> {doc}`01_baseline <experiments/01_baseline>` and `a`b` <img src=x>"
    md = md_table([{"a": cell, "b": "{download}`x <../../secret>`"}])
    kinds = _tokens(md)
    assert "table_open" in kinds and kinds.count("myst_role") == 1  # the {doc} link only
    assert "html_inline" not in kinds and kinds.count("code_inline") >= 2
    assert "myst_role" not in _tokens(md_cell("{doc}`99_x <experiments/99_x>`"))  # no such page
    assert "myst_role" not in _tokens(md_cell("{doc}`intro <../../etc/passwd>`"))
    assert "|" not in md_cell("x | y") and "\\|" in md_cell("`x | y`")


def test_download_role_links_only_result_file_names():
    assert download_role("per_prompt.csv", "experiments/files/baseline/per_prompt.csv").startswith(
        "{download}`"
    )
    for bad in ("a`b.csv", "x <../../etc/passwd>.csv", ".hidden.csv", "a b.csv"):
        md = download_role(bad, f"experiments/files/baseline/{bad}")
        assert "myst_role" not in _tokens(md)
    assert "myst_role" not in _tokens(download_role("ok.csv", "experiments/../../../etc/passwd"))


# --------------------------------------------------------------------------------------------
# the book built from planted result files


def _build(tmp_path: Path, profile: str, results: Path) -> subprocess.CompletedProcess:
    work = tmp_path / "book"
    env = {**os.environ, **FAKE_SECRETS, "WANDB_MODE": "disabled"}
    return subprocess.run(
        [sys.executable, str(ROOT / "book" / "build.py"), "--profile", profile, "--results",
         str(results), "--workdir", str(work)],
        capture_output=True, text=True, timeout=900, cwd=ROOT, env=env,
    )  # fmt: skip


def test_book_built_from_planted_result_files_holds_no_payload_effect(tmp_path):
    """Every payload of issue 38 in every printed field: the build succeeds (-W), and the site
    holds neither a fake secret of the building process, nor the planted file's contents, nor a
    planted script or event attribute."""
    secret = tmp_path / "secret.txt"
    secret.write_text(PLANTED + "\n", encoding="utf-8")
    results = tmp_path / "results"
    profile_dir = write_synthetic(results, "planted", only={"baseline", "bigram", "k_sweep"})
    plant(profile_dir, payload(secret, tmp_path / "book" / "book"))
    proc = _build(tmp_path, "planted", results)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    site = tmp_path / "book" / "_build" / "html"
    needles = [*FAKE_SECRETS.values(), PLANTED]
    assert files_containing(site, needles) == []
    assert live_markup(site) == []
    assert not list(site.rglob("_downloads/*/secret*"))
    assert "AMD EPYC" in (site / "book" / "reproducibility.html").read_text(encoding="utf-8")
