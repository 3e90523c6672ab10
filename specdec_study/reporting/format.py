"""How the book prints Markdown: tables and admonitions; its numbers (fixed decimals,
percentages, intervals with their n) are `reporting.number_format`'s, re-exported here. And how
text read from a result file is placed into Markdown as literal text (`md_text` in prose,
captions and headings; `md_code` in a code span; `md_cell` in a table cell; `download_role` for
a file link), never as MyST markup (a directive, a role, raw HTML or a substitution would read
files, run scripts or run templates at build time). Knows nothing about experiments beyond the
catalog, and nothing about which strings came from a result file: the caller says so by
calling these."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

import pandas as pd

from specdec_study.reporting.number_format import (  # noqa: F401  (re-exported)
    as_float,
    central,
    ci,
    ci_pct,
    finite,
    interval_n,
    num,
    pct,
)
from specdec_study.results.catalog import EXPERIMENTS, NOTEBOOKS
from specdec_study.results.read import Profile
from specdec_study.results.schema import SAFE_NAME

# Characters with a meaning inside a line of MyST Markdown or HTML (escapes, code, emphasis,
# roles and substitutions, links and images, raw HTML and autolinks, math, strikethrough, table
# cells), and those that start a block at the start of a line (headings, lists, quotes, fences,
# colon fences, setext underlines): md_text writes each as a numeric character reference, which
# the parser turns into that character as text and never reads as markup. An `_` inside a word
# (which CommonMark never reads as emphasis) and `&` other than a named entity's stay as they
# are; a numeric reference already in the text is kept (it is text too): md_text is idempotent.
_SPECIAL = frozenset("\\`*_{}[]<$~|&")
_KEPT = re.compile(r"&#[0-9]{1,7};|(?<=[A-Za-z0-9])_(?=[A-Za-z0-9])|&(?![A-Za-z][A-Za-z0-9]*;)")
_LEADING = re.compile(r"^(\s*)([#+\-=:>!]|\d+[.)])")
_LINE_BREAK = re.compile(r"[\r\n\v\f\x1c-\x1e\x85\u2028\u2029]+")
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")
# markup the book's own code writes into table cells: a code span, a {doc} link to the page of a
# notebook of the study (the only pages a cell links; any other is text)
_CELL_MARKUP = re.compile(
    r"(`+)(.+?)(?<!`)\1(?!`)|\{doc\}`([0-9]{2}_[a-z0-9_]+) <experiments/([0-9]{2}_[a-z0-9_]+)>`"
)


def one_line(s: Any) -> str:
    """str(s) on one line: line breaks as spaces, other control characters dropped."""
    return _CONTROL.sub("", _LINE_BREAK.sub(" ", str(s)))


def md_text(s: Any) -> str:
    """s as literal text in MyST Markdown (prose, a caption, a heading, a table cell): on one
    line, each character with a meaning in Markdown, MyST or HTML written as a character
    reference, so `{download}`, a fence, `<script>` or `{{ x }}` in s shows as those characters;
    md_text(md_text(s)) == md_text(s)."""
    line = one_line(s)
    text = "".join(
        f"&#{ord(c)};" if c in _SPECIAL and not _KEPT.match(line, i) else c
        for i, c in enumerate(line)
    )
    return _LEADING.sub(lambda m: m.group(1) + "".join(f"&#{ord(c)};" for c in m.group(2)), text)


def md_code(s: Any) -> str:
    """s as an inline code span: on one line, between backtick fences longer than any run of
    backticks in s (padded with a space where s starts or ends with one), so nothing in s ends
    the span early; the empty string for an empty s."""
    text = one_line(s)
    if not text:
        return ""
    fence = "`" * (max((len(r) for r in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text[0] in "` " or text[-1] in "` " else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def md_cell(v: Any) -> str:
    """A table cell as given, with only the book's own cell markup kept: each code span
    re-fenced by md_code (a backtick in a value cannot end it early), a `{doc}` link to the page
    of a notebook of the study kept; everything else is literal text (md_text)."""
    s, out, at = one_line(v), [], 0
    for m in _CELL_MARKUP.finditer(s):
        out.append(md_text(s[at : m.start()]))
        if m.group(1):
            out.append(md_code(m.group(2)))
        elif m.group(4) in NOTEBOOKS:
            out.append(f"{{doc}}`{m.group(3)} <experiments/{m.group(4)}>`")
        else:
            out.append(md_text(m.group(0)))
        at = m.end()
    out.append(md_text(s[at:]))
    return "".join(out).replace("|", "\\|")


def download_role(name: str, path: str) -> str:
    """A `{download}` link to a result file at `path` (relative, '/'-separated), showing `name`;
    md_text(name) without a link when the name or a folder of the path is outside the result
    file grammar (SAFE_NAME), so no text from a result folder can point the role elsewhere."""
    parts = path.split("/")
    if not SAFE_NAME.fullmatch(name) or not all(SAFE_NAME.fullmatch(p) for p in parts):
        return md_text(name)
    return f"{{download}}`{name} <{path}>`"


def md_table(table: pd.DataFrame | Sequence[dict[str, Any]], missing: str = "n/a") -> str:
    """A DataFrame (or rows as dicts) as a Markdown pipe table: no index column, every cell
    filled (`missing` where a value is absent or not finite); cells as given (md_cell: literal
    text but for the book's code spans and page links), so pre-format numbers as strings. No
    rows: the empty string."""
    df = table if isinstance(table, pd.DataFrame) else pd.DataFrame(list(table))
    if not len(df.columns):
        return ""

    def cell(v: Any) -> str:
        if v is None or (isinstance(v, float) and not math.isfinite(v)):
            return missing
        return md_cell(v)

    head = "| " + " | ".join(cell(c) for c in df.columns) + " |"
    rule = "|" + "|".join("---" for _ in df.columns) + "|"
    body = ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join([head, rule, *body])


def admonition(text: str, kind: str = "note", title: str | None = None) -> str:
    """text in a MyST admonition of the given kind, with a title when given."""
    if title:
        return f":::{{admonition}} {title}\n:class: {kind}\n{text}\n:::\n"
    return f":::{{{kind}}}\n{text}\n:::\n"


def missing_note(profile: Profile, *experiments: str) -> str:
    """Markdown saying which experiments this part needs and the profile lacks."""
    lacking = profile.missing(*experiments) if experiments else list(EXPERIMENTS)
    nbs = sorted({nb for nb, names in NOTEBOOKS.items() if set(names) & set(lacking)})
    damaged = [
        f"{md_code(e)} ({md_text(profile.damaged[e])})" for e in lacking if e in profile.damaged
    ]
    return admonition(
        f"The profile {md_code(profile.name)} has no results for "
        f"{', '.join(md_code(e) for e in lacking)} (notebook{'s' if len(nbs) > 1 else ''} "
        f"{', '.join(f'`{n}`' for n in nbs)}), so this part is left out"
        + (f"; DAMAGED, not shown: {', '.join(damaged)}" if damaged else "")
        + f". Run {md_code(f'make evaluate PROFILE={profile.name}')} and rebuild the book.",
        "warning" if damaged else "note",
    )


def split_common(df: pd.DataFrame | None, key: str = "experiment") -> tuple[dict, pd.DataFrame]:
    """(columns whose value is the same in every row -> that value, the table of the others)."""
    if df is None or df.empty:
        return {}, pd.DataFrame()
    same = [c for c in df.columns if c != key and df[c].nunique(dropna=False) == 1]
    return {c: df[c].iloc[0] for c in same}, df[[c for c in df.columns if c not in same]]


def common_markdown(common: dict) -> str:
    """A Markdown bullet list of key: `value` pairs (both read from result files: literal)."""
    return "\n".join(f"- **{md_text(k)}**: {md_code(v)}" for k, v in common.items())
