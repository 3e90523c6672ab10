"""How the book prints a number: fixed decimals, percentages, intervals with their n (`num`,
`pct`, `ci`, `ci_pct`, as the chapters write them), and the readings' own forms (`fmt`,
`interval`, `interval_of`: ratios with an x, shares as %, a dash where a number is missing).
Pure functions of numbers and the dicts a summary holds; imports no catalog, so an experiment
module's reading (`Experiment.headline`, `Experiment.showed`) can use them
(`reporting.format` re-exports them with the Markdown helpers)."""

from __future__ import annotations

import math
from typing import Any

DASH = "–"  # a reading's cell or number that is missing


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


def is_number(x: Any) -> bool:
    """Whether x is a finite int or float (not a bool, not a string): what a reading prints as
    a number."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def fmt(x: Any, kind: str = "") -> str:
    """One number as the book prints it: ratios 2 decimals and x, shares as %, never 'nan'."""
    if isinstance(x, bool):
        return "yes" if x else "no"
    if not is_number(x):
        return DASH if x is None or isinstance(x, float) else str(x)
    if kind == "x":
        return f"{x:.2f}x"
    if kind == "%":
        return f"{100 * x:.1f}%"
    if kind == "s":
        return f"{x:.2f}" if abs(x) < 100 else f"{x:.0f}"
    if kind == "n":
        return f"{x:g}"
    if kind == "t":
        return f"{x:.1f}"
    return f"{x:.2f}" if isinstance(x, float) else str(x)


def interval(point: Any, lo: Any, hi: Any, kind: str = "", n: Any = None) -> str:
    """'1.06x [0.89x, 1.21x], n=20'; just the point when the interval is missing."""
    if not is_number(point):
        return DASH
    if is_number(lo) and is_number(hi):
        tail = f", n={int(n)}" if is_number(n) else ""
        return f"{fmt(point, kind)} [{fmt(lo, kind)}, {fmt(hi, kind)}]{tail}"
    return fmt(point, kind)


def interval_of(d: Any, kind: str) -> str:
    """`interval` of a summary's {value|median|mean, ci_low, ci_high, n} dict; `fmt` of a bare
    value."""
    if isinstance(d, dict):
        return interval(d.get("value", d.get("median", d.get("mean"))), d.get("ci_low"),
                        d.get("ci_high"), kind, d.get("n"))  # fmt: skip
    return fmt(d, kind)
