"""Speedup by repetition (issue 23): every (group, prompt) placed in a third of the repetition of
our baseline's continuation (share of repeated 4-grams, cut at its 1/3 and 2/3 quantiles over all
groups), and per third our best's and HF's best speedup over our baseline, with paired intervals
and n. A copy drafter's gain on a looping continuation measures the loop; the low third shows
what is left where the text does not loop. Knows nothing about how rows are measured."""

from __future__ import annotations

from typing import Any, TextIO

import numpy as np

from specdec_study.analysis import stats
from specdec_study.results.declare import BASELINE

THIRDS = ("low", "middle", "high")


def _units(groups: dict[str, dict[str, Any]], rows: dict[str, list[dict]]) -> list[dict]:
    """One unit per (group, prompt) with a best of ours and of HF's: the baseline's repetition
    and the three arms' wall times."""
    units = []
    for gname, g in groups.items():
        ours, hf = g.get("best_ours"), g.get("best_hf")
        if not ours or not hf:
            continue
        by = {(r["method"], r["prompt"]): r for r in rows[gname]}
        for (method, prompt), r in by.items():
            if method != BASELINE or (ours, prompt) not in by or (hf, prompt) not in by:
                continue
            units.append(
                {
                    "group": gname,
                    "rep4": float(r["repetition_4gram"]),
                    "base": float(r["wall_s"]),
                    "ours": float(by[(ours, prompt)]["wall_s"]),
                    "hf": float(by[(hf, prompt)]["wall_s"]),
                }
            )
    return units


def repetition_strata(
    groups: dict[str, dict[str, Any]], rows: dict[str, list[dict]]
) -> dict[str, Any]:
    """{"cuts": [q1, q2], "thirds": {low|middle|high: {n, rep4 range, groups, speedups}}}."""
    units = _units(groups, rows)
    if not units:
        return {"cuts": None, "thirds": {}}
    reps = np.array([u["rep4"] for u in units])
    q1, q2 = (float(x) for x in np.quantile(reps, [1 / 3, 2 / 3]))
    third = np.where(reps <= q1, 0, np.where(reps <= q2, 1, 2))
    out: dict[str, Any] = {"cuts": [q1, q2], "thirds": {}}
    for t, name in enumerate(THIRDS):
        us = [u for u, i in zip(units, third, strict=True) if i == t]
        if not us:
            continue
        walls = {k: np.array([u[k] for u in us]) for k in ("base", "ours", "hf")}
        out["thirds"][name] = {
            "n": len(us),
            "rep4_min": min(u["rep4"] for u in us),
            "rep4_max": max(u["rep4"] for u in us),
            "groups": sorted({u["group"] for u in us}),
            "ours_vs_baseline": stats.paired_speedup(walls["base"], walls["ours"]).as_dict(),
            "hf_vs_baseline": stats.paired_speedup(walls["base"], walls["hf"]).as_dict(),
            "ours_vs_hf": stats.paired_speedup(walls["hf"], walls["ours"]).as_dict(),
        }
    return out


def _ci(d: dict[str, Any]) -> str:
    return f"{d['value']:.2f}x [{d['ci_low']:.2f},{d['ci_high']:.2f}]"


def print_strata(strata: dict[str, Any], out: TextIO) -> None:
    """One line per repetition third: its range, n, and the three paired speedups."""
    if not strata["thirds"]:
        return
    print("", file=out)
    print(
        "  speedup by repetition of our baseline's continuation (thirds over every group's "
        "prompts; best of ours / HF's best per group):",
        file=out,
    )
    for name, t in strata["thirds"].items():
        print(
            f"  {name:<6} rep4 {t['rep4_min']:.2f}-{t['rep4_max']:.2f} n={t['n']:<3} "
            f"ours x base {_ci(t['ours_vs_baseline'])}  HF x base {_ci(t['hf_vs_baseline'])}  "
            f"ours x HF {_ci(t['ours_vs_hf'])}",
            file=out,
        )
    out.flush()
