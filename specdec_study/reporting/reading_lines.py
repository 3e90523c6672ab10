"""The lines of a reading (`Experiment.headline`, `Experiment.showed`) that more than one
experiment prints: per method, the first and last cell of a sweep's table (its headline), and
whether their intervals overlap (what it showed). Imports no catalog, so an experiment module
can declare them (`reporting.readings` joins the lines)."""

from __future__ import annotations

from specdec_study.reporting.number_format import fmt, interval
from specdec_study.reporting.number_format import is_number as _finite


def headline_table(summary: dict, key: str, cell: str, unit: str) -> list[str]:
    """Per non-baseline method: the first and last cell of a table (e.g. context 10 and 500)."""
    by: dict[str, list[dict]] = {}
    for t in summary.get("table", []):
        if t.get("method", t.get("draft")) != "baseline":
            by.setdefault(t.get("method", t.get("draft")), []).append(t)
    out = []
    for m, ts in by.items():
        ts = [t for t in ts if _finite(t.get(key))]
        if not ts:
            continue
        a, b = ts[0], ts[-1]
        own = f"{key}_ci_low" in a
        lo, hi = (f"{key}_ci_low", f"{key}_ci_high") if own else ("ci_low", "ci_high")
        kind = "%" if key in ("agreement", "acceptance_rate") else "x"
        out.append(
            f"`{m}`: {unit} {interval(a[key], a.get(lo), a.get(hi), kind)} at {cell} "
            f"{a.get(cell)}, {interval(b[key], b.get(lo), b.get(hi), kind)} at {cell} "
            f"{b.get(cell)}" + (f" (n = {a['n_prompts']})" if a.get("n_prompts") else "")
        )
    return out


def shown_table(summary: dict, key: str, cell: str) -> list[str]:
    """Per method, the first and last cell and whether their intervals overlap."""
    by: dict[str, list[dict]] = {}
    for t in summary.get("table", []):
        m = t.get("method", t.get("draft"))
        if m != "baseline" and _finite(t.get(key)):
            by.setdefault(m, []).append(t)
    out = []
    kind = "%" if key in ("agreement", "acceptance_rate") else "x"
    for m, ts in by.items():
        a, b = ts[0], ts[-1]
        if a is b:
            continue
        own = f"{key}_ci_low" in a
        lo, hi = (f"{key}_ci_low", f"{key}_ci_high") if own else ("ci_low", "ci_high")
        apart = all(_finite(x.get(y)) for x in (a, b) for y in (lo, hi)) and (
            a[lo] > b[hi] or b[lo] > a[hi]
        )
        move = "fell" if b[key] < a[key] else "rose"
        out.append(
            f"`{m}`'s {key.replace('_', ' ')} {move} from {fmt(a[key], kind)} at {cell} "
            f"{a.get(cell)} to {fmt(b[key], kind)} at {cell} {b.get(cell)} "
            + ("(the two intervals do not overlap)" if apart else "(the two intervals overlap)")
            + _n_of(a))  # fmt: skip
    return out


def _n_of(row: dict) -> str:
    """', n = 12 prompts' (or documents) for a table row; empty when the row has no count."""
    for key, unit in (("n_prompts", "prompts"), ("n_documents", "documents")):
        if row.get(key):
            return f", n = {row[key]} {unit}"
    return ""
