"""The printed output: one table line per group and arm, then the ceiling and the targets.
Knows nothing about how the numbers are measured."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, TextIO

# ----------------------------------------------------------------------------- printing


def _fmt(x: Any, spec: str = ".2f") -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    return format(x, spec)


COLUMNS = (
    ("group", 10),
    ("arm", 22),
    ("n", 3),
    ("tok/s", 6),
    ("95% CI", 13),
    ("x base", 6),
    ("95% CI", 11),
    ("x HFgr", 6),
    ("acc", 5),
    ("MAL", 5),
    ("c", 5),
    ("m/pred", 6),
    ("rep4", 5),
    ("ident", 5),
)


def _row_cells(gname: str, name: str, a: dict[str, Any]) -> list[str]:
    tps, sp = a["tokens_per_s"], a["speedup"]
    return [
        gname,
        name,
        str(tps.get("n", "-")),
        _fmt(tps["median"], ".1f"),
        f"[{_fmt(tps['ci_low'], '.1f')},{_fmt(tps['ci_high'], '.1f')}]",
        _fmt(sp["value"]),
        f"[{_fmt(sp['ci_low'])},{_fmt(sp['ci_high'])}]",
        _fmt(a.get("speedup_vs_hf_greedy", {}).get("value")),
        _fmt(a.get("acceptance_rate", {}).get("value")),
        _fmt(a.get("mean_accepted_length", {}).get("value")),
        _fmt(a.get("cost_ratio"), ".3f"),
        _fmt(a.get("measured_over_predicted")),
        _fmt(a["repetition_4gram"]["median"]),
        _fmt(a["identical_to_baseline"]),
    ]


def print_table(groups: dict[str, dict[str, Any]], out: TextIO) -> None:
    """One line per group and arm; x base: speedup over our baseline, x HFgr: over HF greedy,
    n: prompts behind every interval of the line, acc: acceptance, MAL: mean accepted length,
    c: Leviathan's cost ratio (a draft token timed apart, in baseline steps), m/pred: measured
    over predicted decode speedup, rep4: share of repeated 4-grams, ident: share identical to
    baseline."""

    def line(cells: Sequence[str]) -> str:
        widths = [w for _, w in COLUMNS]
        pairs = enumerate(zip(cells, widths, strict=True))
        return " ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in pairs)

    head = line([c for c, _ in COLUMNS])
    print(head, file=out)
    print("-" * len(head), file=out)
    for gname, g in groups.items():
        for name, a in g["arms"].items():
            print(line(_row_cells(gname, name, a)), file=out)
    out.flush()


def _print_summary(targets: dict[str, Any], out: TextIO, bound: dict[str, Any]) -> None:
    print("", file=out)
    if bound:
        cells = ", ".join(f"K={k} {c['ceiling']:.2f}x" for k, c in bound["by_k"].items())
        print(
            f"  ceiling (a perfect, free draft; n={bound['n_positions']} positions): {cells}",
            file=out,
        )
    for name, t in targets.items():
        mark = {True: "met", False: "MISSED", None: "n/a"}[t["met"]]
        sense = "<=" if name in ("self_draft_extra_memory", "prediction_agreement") else ">="
        print(
            f"  {name:<40} {_fmt(t['value'], '.3f'):>7} ({sense} {t['threshold']}) {mark}", file=out
        )
    out.flush()
