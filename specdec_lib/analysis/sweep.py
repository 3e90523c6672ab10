"""The context sweep's summary (04): per context the arms' summaries, a flat table with the
paired speedup against the same context's baseline beside the earlier study's speedup (one
reference-context baseline over every row), the baseline's growth with context, and headlines.

Torch-free; knows nothing about how the rows were measured or where they are written.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from specdec_lib.analysis import stats
from specdec_lib.analysis.summary import point, summarize
from specdec_lib.results.catalog import BASELINE


def sweep_summary(rows: list[dict[str, Any]], cfg: dict[str, Any]) -> dict[str, Any]:
    contexts = cfg["contexts"]
    ref = cfg["reference_context"] if cfg["reference_context"] in contexts else contexts[0]
    by_context = {}
    for c in contexts:
        by_context[str(c)] = {"arms": summarize([r for r in rows if r["context"] == c])}

    def walls(c: int, m: str) -> np.ndarray:
        rs = sorted(
            (r for r in rows if r["context"] == c and r["method"] == m), key=lambda r: r["prompt"]
        )
        return np.array([r["wall_s"] for r in rs])

    ref_wall = walls(ref, BASELINE)
    table = []
    for c in contexts:
        arms = by_context[str(c)]["arms"]
        for m, s in arms.items():
            sp = s.get("speedup") or {}
            acc = s.get("acceptance_rate") or {}
            w = walls(c, m)
            n = min(len(w), len(ref_wall))  # a context with fewer prompts has the first ones
            es = stats.paired_speedup(ref_wall[:n], w[:n])
            table.append(
                {
                    "context": c,
                    "method": m,
                    "draft": s["draft"],
                    "k": s["k"],
                    "n_prompts": s["n_prompts"],
                    "use_cache": cfg["use_cache"],
                    "total_wall_s": s["total_wall_s"],
                    "baseline_total_wall_s": arms[BASELINE]["total_wall_s"],
                    "tokens_per_s": s["tokens_per_s"]["median"],
                    "tokens_per_s_ci_low": s["tokens_per_s"]["ci_low"],
                    "tokens_per_s_ci_high": s["tokens_per_s"]["ci_high"],
                    "speedup": sp.get("value"),
                    "speedup_ci_low": sp.get("ci_low"),
                    "speedup_ci_high": sp.get("ci_high"),
                    "earlier_style_speedup": es.value,
                    "earlier_style_speedup_ci_low": es.low,
                    "earlier_style_speedup_ci_high": es.high,
                    "earlier_style_speedup_ci_method": es.method,
                    "acceptance_rate": acc.get("value"),
                    "acceptance_rate_ci_low": acc.get("ci_low"),
                    "acceptance_rate_ci_high": acc.get("ci_high"),
                    "mean_accepted_length": point(s.get("mean_accepted_length")),
                }
            )
    base = [t for t in table if t["method"] == BASELINE]
    methods = [m for m in cfg["arms"] if m != BASELINE]
    return {
        "contexts": contexts,
        "use_cache": cfg["use_cache"],
        "by_context": by_context,
        "table": table,
        "earlier_style": {
            "reference_context": ref,
            "reference_total_wall_s": float(ref_wall.sum()),
        },
        "baseline_growth": {
            "context": [t["context"] for t in base],
            "total_wall_s": [t["total_wall_s"] for t in base],
            "s_per_token": [
                by_context[str(t["context"])]["arms"][BASELINE]["total_wall_s"]
                / max(by_context[str(t["context"])]["arms"][BASELINE]["new_tokens"], 1)
                for t in base
            ],
        },
        "headline": {
            "speedup_at": {
                m: {str(t["context"]): t["speedup"] for t in table if t["method"] == m}
                for m in methods
            },
            "earlier_style_speedup_at": {
                m: {
                    str(t["context"]): t["earlier_style_speedup"] for t in table if t["method"] == m
                }
                for m in [BASELINE, *methods]
            },
        },
    }
