"""How the book prints numbers: fixed decimals, percentages, intervals with their n, Markdown
tables and admonitions. Knows nothing about experiments beyond the catalog."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from specdec_lib.results.catalog import EXPERIMENTS, NOTEBOOKS
from specdec_lib.results.read import Profile


def as_float(x: Any) -> float:
    """x as a float, NaN when it is not a number."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return math.nan
    return v


def finite(x: Any) -> bool:
    """Whether x is a finite number."""
    return math.isfinite(as_float(x))


def _r(x: float, nd: int) -> str:
    """Fixed decimals without a negative zero."""
    return f"{round(x, nd) + 0.0:.{nd}f}"


def num(x: Any, nd: int = 2, suffix: str = "") -> str:
    """A number to nd decimals with a suffix: 1.234 -> '1.23x'; 'n/a' when not finite."""
    return f"{_r(as_float(x), nd)}{suffix}" if finite(x) else "n/a"


def pct(x: Any, nd: int = 2) -> str:
    """A fraction as a percentage: 0.8945 -> '89.45%'."""
    return f"{_r(100 * as_float(x), nd)}%" if finite(x) else "n/a"


def central(d: Any) -> float:
    """The point estimate of a {value|median, ci_low, ci_high} dict (or a bare number)."""
    if isinstance(d, dict):
        return as_float(d.get("value", d.get("median")))
    return as_float(d)


def interval_n(d: Any) -> int | None:
    """The n an interval dict rests on ("n", else the "n_prompts" written beside it)."""
    if not isinstance(d, dict):
        return None
    n = d.get("n", d.get("n_prompts"))
    return int(n) if finite(n) else None


def ci(d: Any, nd: int = 2, scale: float = 1.0, suffix: str = "", n: Any = None) -> str:
    """'1.23 [1.10, 1.35], n=20' from a {value|median, ci_low, ci_high[, n]} dict: the n beside
    the interval is the dict's own, else the n given (e.g. the arm's prompts, for result files
    written before intervals carried their n)."""
    if not isinstance(d, dict):
        return num(as_float(d) * scale, nd, suffix)
    v, lo, hi = (central(d), as_float(d.get("ci_low")), as_float(d.get("ci_high")))
    if not finite(v):
        return "n/a"
    if not (finite(lo) and finite(hi)):
        return num(v * scale, nd, suffix)
    own = interval_n(d)
    n = own if own is not None else (int(as_float(n)) if finite(n) else None)
    tail = f", n={n}" if n is not None else ""
    return f"{_r(v * scale, nd)}{suffix} [{_r(lo * scale, nd)}, {_r(hi * scale, nd)}]{tail}"


def ci_pct(d: Any, nd: int = 1, n: Any = None) -> str:
    """ci() of a fraction shown as a percentage: '89.5% [88.1, 90.7]'."""
    return ci(d, nd, 100.0, "%", n)


def md_table(table: pd.DataFrame | Sequence[dict[str, Any]], missing: str = "n/a") -> str:
    """A DataFrame (or rows as dicts) as a Markdown pipe table: no index column, every cell
    filled (`missing` where a value is absent or not finite); cells as given, so pre-format
    numbers as strings. No rows: the empty string."""
    df = table if isinstance(table, pd.DataFrame) else pd.DataFrame(list(table))
    if not len(df.columns):
        return ""

    def cell(v: Any) -> str:
        if v is None or (isinstance(v, float) and not math.isfinite(v)):
            return missing
        return str(v).replace("|", "\\|").replace("\n", " ")

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
    damaged = [f"`{e}` ({profile.damaged[e]})" for e in lacking if e in profile.damaged]
    return admonition(
        f"The profile `{profile.name}` has no results for "
        f"{', '.join(f'`{e}`' for e in lacking)} (notebook{'s' if len(nbs) > 1 else ''} "
        f"{', '.join(f'`{n}`' for n in nbs)}), so this part is left out"
        + (f"; DAMAGED, not shown: {', '.join(damaged)}" if damaged else "")
        + f". Run `make evaluate PROFILE={profile.name}` and rebuild the book.",
        "warning" if damaged else "note",
    )


def split_common(df: pd.DataFrame | None, key: str = "experiment") -> tuple[dict, pd.DataFrame]:
    """(columns whose value is the same in every row -> that value, the table of the others)."""
    if df is None or df.empty:
        return {}, pd.DataFrame()
    same = [c for c in df.columns if c != key and df[c].nunique(dropna=False) == 1]
    return {c: df[c].iloc[0] for c in same}, df[[c for c in df.columns if c not in same]]


def common_markdown(common: dict) -> str:
    """A Markdown bullet list of key: `value` pairs."""
    return "\n".join(f"- **{k}**: `{v}`" for k, v in common.items())
