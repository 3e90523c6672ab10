"""05: the transformer draft at each K of the profile beside Leviathan et al.'s predicted speedup,
and an adaptive-K schedule, paired with the baseline on the same prompts.

Builds the config, arms and rows, and summarizes them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from specdec_lib.analysis.summary import point, summarize
from specdec_lib.results.catalog import BASELINE
from specdec_lib.results.store import ExperimentResult
from specdec_lib.runner.context import Study, base_config, load_target, make_arm
from specdec_lib.runner.execute import Run, execute, paired
from specdec_lib.runner.prompts import prompts_for


def run_k_sweep(S: Study) -> ExperimentResult:
    """05: the transformer draft at K = 1..8 beside Leviathan's predicted speedup, and an
    adaptive-K schedule."""
    e = S.exp("k_sweep")
    spec = S.profile["drafts"]["transformer"]
    ks = [int(k) for k in e["ks"]]
    ad = e.get("adaptive", {}) or {}
    k_max = int(ad.get("k_max", max(ks)))
    arms_cfg = {f"k{k}": spec for k in ks}
    arms_cfg["adaptive"] = f"adaptive:{spec}"
    cfg = {
        **base_config(S, "k_sweep"),
        "n_prompts": int(e["n_prompts"]),
        "context_tokens": int(e["context_tokens"]),
        "max_new_tokens": int(e["max_new_tokens"]),
        "ks": ks,
        "adaptive": {
            "k_start": int(ad.get("k_start", 4)),
            "k_min": int(ad.get("k_min", 1)),
            "k_max": k_max,
        },
        "arms": {BASELINE: "none", **arms_cfg},
    }

    def compute(on_row):
        from specdec_lib import plots
        from specdec_lib.analysis.theory import best_k, expected_speedup

        loaded = load_target(S)
        arms = [make_arm(S, loaded, BASELINE, "none", 1)]
        arms += [make_arm(S, loaded, f"k{k}", spec, k) for k in ks]
        arms.append(make_arm(S, loaded, "adaptive", f"adaptive:{spec}", k_max))
        prompts = prompts_for(S, loaded, cfg["n_prompts"], cfg["context_tokens"])
        rows = paired(
            arms,
            prompts,
            max_new_tokens=cfg["max_new_tokens"],
            warmup=cfg["warmup"],
            progress="k sweep",
            on_row=on_row,
        )
        sm = summarize(rows)
        table = []
        for k in ks:
            s = sm[f"k{k}"]
            sp = s.get("speedup") or {}
            table.append(
                {
                    "k": k,
                    "method": f"k{k}",
                    "speedup": sp.get("value"),
                    "speedup_ci_low": sp.get("ci_low"),
                    "speedup_ci_high": sp.get("ci_high"),
                    "predicted_speedup_leviathan": s.get("predicted_speedup_leviathan"),
                    "predicted_speedup_calibrated": s.get("predicted_speedup_calibrated"),
                    "acceptance_rate": point(s.get("acceptance_rate")),
                    "per_token_acceptance_iid": s.get("per_token_acceptance_iid"),
                    "cost_ratio": s.get("cost_ratio"),
                    "mean_accepted_length": point(s.get("mean_accepted_length")),
                }
            )
        # Leviathan's model with one a and one c for the pair, pooled over the fixed-K arms
        a_vals = [
            t["per_token_acceptance_iid"]
            for t in table
            if t["per_token_acceptance_iid"] is not None
        ]
        c_vals = [t["cost_ratio"] for t in table if t["cost_ratio"] is not None]
        a_pool = float(np.median(a_vals)) if a_vals else None
        c_pool = float(np.median(c_vals)) if c_vals else None
        for t in table:
            t["predicted_speedup_pooled"] = (
                expected_speedup(min(max(a_pool, 0.0), 1.0), t["k"], c_pool)
                if a_pool is not None and c_pool is not None
                else None
            )
        meas = [t for t in table if t["speedup"] is not None]
        best = max(meas, key=lambda t: t["speedup"]) if meas else None
        a_rows = [r for r in rows if r["method"] == "adaptive"]
        props = [int(x) for r in a_rows for x in str(r["proposed_lengths"]).split()]
        adaptive = {
            **cfg["adaptive"],
            "mean_k_used": float(np.mean([p for p in props if p > 0])) if props else None,
            "speedup": sm["adaptive"].get("speedup"),
            "acceptance_rate": sm["adaptive"].get("acceptance_rate"),
            "mean_accepted_length": sm["adaptive"].get("mean_accepted_length"),
        }
        headline = {
            "best_k_measured": best["k"] if best else None,
            "best_speedup_measured": best["speedup"] if best else None,
            "best_k_predicted": best_k(min(max(a_pool, 0.0), 1.0), c_pool, max(ks))
            if a_pool is not None and c_pool is not None
            else None,
            "pooled_per_token_acceptance": a_pool,
            "pooled_cost_ratio": c_pool,
            "adaptive_speedup": adaptive["speedup"],
        }
        summary = {"arms": sm, "ks": ks, "table": table, "adaptive": adaptive, "headline": headline}

        def figs(d: Path) -> None:
            plots.measured_vs_predicted(summary, d / "measured_vs_predicted.png")
            plots.position_acceptance(
                {k: v for k, v in sm.items() if k in ("k2", "k4", "k8", "adaptive")},
                d / "position_acceptance.png",
            )

        return Run(rows, summary, figs)

    return execute(S, "k_sweep", cfg, compute)
