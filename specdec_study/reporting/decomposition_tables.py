"""The paradox chapter's decomposition (analysis.decomposition) from the files: the published
rows under both readings of acceptance beside ours, measured in the committed context sweeps
(cache on: the drafts and the baseline; cache off: the baseline, the only arm that sweep runs),
as a formatted table and as numbers for the chapter's glue. Writes no prose: the chapter does.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from specdec_study.analysis import decomposition as D
from specdec_study.reporting.earlier import earlier_study
from specdec_study.reporting.format import num
from specdec_study.results.declare import BASELINE
from specdec_study.results.read import Profile, sweep_contexts

C0, C1, REF = 10, 100, 20


def published_decompositions(c0: int = C0) -> list[D.Decomposition]:
    """The earlier study's transformer-draft rows c0 -> 100 under each reading."""
    e = earlier_study()
    return [D.published(e, r, c0, C1) for r in D.READINGS]


def measured_decompositions(p: Profile, c0: int = C0) -> list[D.Decomposition]:
    """Ours, c0 -> 100 against the context-20 baseline: every arm of the cached sweep (drafts
    first, then the baseline), then the uncached sweep's baseline. [] without a sweep."""
    out = []
    for exp, regime in (("context_sweep", "cache on"), ("context_sweep_nocache", "cache off")):
        res = p.get(exp)
        if res is None or not {c0, C1, REF} <= set(sweep_contexts(res)):
            continue
        arms = [a for a in (res.config.get("arms") or {}) if a != BASELINE] + [BASELINE]
        for arm in arms:
            d = D.measured(res.rows, arm, c0, C1, REF, f"{arm}, {regime}")
            if d is not None:
                out.append(d)
    return out


def decompositions(p: Profile, c0: int = C0) -> list[D.Decomposition]:
    """Published (both readings) then ours."""
    return published_decompositions(c0) + measured_decompositions(p, c0)


def decomposition_table(p: Profile, c0: int = C0) -> pd.DataFrame:
    """The decomposition as the chapter shows it: speedup, tokens per call and c at both
    contexts, the divisor's growth and each factor's share of the log change ('-' where a
    share means nothing: a change under 5% in the speedup)."""
    rows = []
    for d in decompositions(p, c0):
        s = d.shares()
        small = abs(d.total()) < 0.05
        rows.append(
            {
                "rows": d.source,
                f"speedup {d.c0} -> {d.c1}": f"{d.speedup[0]:.2f} -> {d.speedup[1]:.2f}",
                "tokens per call": f"{d.tokens_per_call[0]:.2f} -> {d.tokens_per_call[1]:.2f}",
                "c (Leviathan)": "-"
                if d.source.startswith(BASELINE)
                else f"{d.draft_cost[0]:.2f} -> {d.draft_cost[1]:.2f}",
                f"divisor {d.c1} / {REF}": "unknown"
                if d.divisor is None
                else num(d.divisor[1], 2, "x"),
                "share: tokens per call": "-" if small else num(100 * s["tokens per call"], 0, "%"),
                "share: cost of a call": "-" if small else num(100 * s["cost of a call"], 0, "%"),
                "share: divisor": "-"
                if small or d.divisor is None
                else num(100 * s["divisor"], 0, "%"),
            }
        )
    return pd.DataFrame(rows)


def decomposition_numbers(p: Profile) -> dict[str, Any]:
    """The numbers the chapter's text cites, keyed for glue: published c at 10 and 100 and the
    speedup acceptance alone predicts at 100 (from 20) under each reading (`pt_`, `ap_`), the
    tokens-per-call share of the fall, the divisor growth the published rows imply if a call's
    cost stayed constant, and ours: each arm's c and its divisor growth, cache on and off."""
    out: dict[str, Any] = {}
    for tag, d10, d20 in zip(
        ("pt", "ap"), published_decompositions(10), published_decompositions(20), strict=True
    ):
        out[f"{tag}_c10"], out[f"{tag}_c100"] = d10.draft_cost
        out[f"{tag}_only100"] = D.acceptance_only_speedup(d20)
        out[f"{tag}_share"] = 100 * d10.shares()["tokens per call"]
        out[f"{tag}_implied_div"] = D.implied_divisor_growth(d10)
    for d in measured_decompositions(p):
        arm, regime = d.source.split(", ")
        key = f"{arm}_{'on' if regime == 'cache on' else 'off'}"
        out[f"{key}_c10"], out[f"{key}_c100"] = d.draft_cost
        out[f"{key}_tpc10"], out[f"{key}_tpc100"] = d.tokens_per_call
        out[f"{key}_s10"], out[f"{key}_s100"] = d.speedup
        out[f"{key}_div"] = d.divisor[1] if d.divisor else float("nan")  # 100 / 20
        out[f"{key}_breakeven"] = (d.tokens_per_call[1] - 1) / d.k
    return out
