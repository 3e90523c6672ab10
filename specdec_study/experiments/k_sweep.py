"""05: the transformer draft at each K of the profile beside Leviathan et al.'s predicted speedup,
and an adaptive-K schedule, paired with the baseline on the same prompts.

The whole experiment: its notebook, its declaration, the shapes of its config.json and
summary.json, its config and run (given a `runner.lab.Lab`), its summary (per fixed K the
measured speedup beside the prediction per arm, calibrated, and pooled: one acceptance a and one
cost ratio c for the pair, the medians over the fixed-K arms; the best K measured and
predicted; the adaptive-K arm) and its figures. Imports no runner and no torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np

from specdec_study.analysis.summary import (
    ArmSummary,
    Num,
    PointCI,
    SpeedupColumns,
    point,
    summarize,
)
from specdec_study.analysis.theory import best_k, expected_speedup
from specdec_study.reporting.figures import arms as arm_figures
from specdec_study.reporting.number_format import fmt, interval, interval_of, is_number
from specdec_study.results.declare import (
    BASELINE,
    Experiment,
    Figure,
    Notebook,
    SingleContextConfig,
    StudySummary,
)

if TYPE_CHECKING:
    from specdec_study.results.store import ExperimentResult
    from specdec_study.runner.execute import Progress, Run
    from specdec_study.runner.lab import Lab

ADAPTIVE_ARMS = ("k2", "k4", "k8", "adaptive")  # the arms of the acceptance-per-position figure


# --------------------------------------------------------------------------- shapes


class KRow(SpeedupColumns):
    """One fixed K's row of the table (`k_row`, and the pooled prediction)."""

    k: int
    method: str
    predicted_speedup_leviathan: Num
    predicted_speedup_calibrated: Num
    predicted_speedup_pooled: Num
    acceptance_rate: Num
    per_token_acceptance_iid: Num
    cost_ratio: Num
    mean_accepted_length: Num


class AdaptiveSummary(TypedDict):
    """The adaptive arm: its schedule (the config's `adaptive`) and what it did."""

    k_start: int
    k_min: int
    k_max: int
    mean_k_used: Num
    speedup: PointCI | None
    acceptance_rate: PointCI | None
    mean_accepted_length: PointCI | None


class KSweepHeadline(TypedDict):
    """The best K measured and predicted, the pooled a and c, the adaptive arm's speedup."""

    best_k_measured: int | None
    best_speedup_measured: Num
    best_k_predicted: int | None
    pooled_per_token_acceptance: Num
    pooled_cost_ratio: Num
    adaptive_speedup: PointCI | None


class KSweepSummary(StudySummary):
    """05's summary.json (`k_sweep_summary`)."""

    arms: dict[str, ArmSummary]
    ks: list[int]
    table: list[KRow]
    adaptive: AdaptiveSummary
    headline: KSweepHeadline


class AdaptiveKConfig(TypedDict):
    """05's adaptive-K schedule's bounds."""

    k_start: int
    k_min: int
    k_max: int


class KSweepConfig(SingleContextConfig):
    """05's config: the transformer draft at each K and the adaptive schedule."""

    ks: list[int]
    adaptive: AdaptiveKConfig


# --------------------------------------------------------------------------- config and run


def config(lab: Lab) -> dict[str, Any]:
    """05's config: the transformer draft at each K and the adaptive schedule's bounds."""
    e = lab.section()
    spec = lab.profile["drafts"]["transformer"]
    ks = [int(k) for k in e["ks"]]
    ad = e.get("adaptive", {}) or {}
    arms_cfg = {f"k{k}": spec for k in ks}
    arms_cfg["adaptive"] = f"adaptive:{spec}"
    return {
        **lab.base_config(),
        "n_prompts": int(e["n_prompts"]),
        "context_tokens": int(e["context_tokens"]),
        "max_new_tokens": int(e["max_new_tokens"]),
        "ks": ks,
        "adaptive": {
            "k_start": int(ad.get("k_start", 4)),
            "k_min": int(ad.get("k_min", 1)),
            "k_max": int(ad.get("k_max", max(ks))),
        },
        "arms": {BASELINE: "none", **arms_cfg},
    }


def run(lab: Lab) -> ExperimentResult:
    """05: the transformer draft at K = 1..8 beside Leviathan's predicted speedup, and an
    adaptive-K schedule."""
    cfg = config(lab)
    return lab.execute(cfg, lambda on_row: _measure(lab, cfg, on_row))


def _measure(lab: Lab, cfg: dict[str, Any], on_row: Progress) -> Run:
    loaded = lab.load_target()
    spec = lab.profile["drafts"]["transformer"]
    arms = [lab.arm(loaded, BASELINE, "none", 1)]
    arms += [lab.arm(loaded, f"k{k}", spec, k) for k in cfg["ks"]]
    arms.append(lab.arm(loaded, "adaptive", f"adaptive:{spec}", cfg["adaptive"]["k_max"]))
    prompts = lab.prompts(loaded, cfg["n_prompts"], cfg["context_tokens"])
    rows = lab.paired(arms, prompts, cfg, progress="k sweep", on_row=on_row)
    return lab.result(rows, k_sweep_summary(rows, summarize(rows), cfg))


# --------------------------------------------------------------------------- summary


def k_row(k: int, s: dict[str, Any]) -> dict[str, Any]:
    """The table row of the arm `k{k}` from its summary s."""
    sp = s.get("speedup") or {}
    return {
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


def pooled(table: list[dict[str, Any]]) -> tuple[float | None, float | None]:
    """(a, c): the medians of the fixed-K arms' per-token acceptance and cost ratio."""
    a_vals = [
        t["per_token_acceptance_iid"] for t in table if t["per_token_acceptance_iid"] is not None
    ]
    c_vals = [t["cost_ratio"] for t in table if t["cost_ratio"] is not None]
    a_pool = float(np.median(a_vals)) if a_vals else None
    c_pool = float(np.median(c_vals)) if c_vals else None
    return a_pool, c_pool


def adaptive_summary(
    rows: list[dict[str, Any]], arms: dict[str, Any], schedule: dict[str, Any]
) -> dict[str, Any]:
    """The adaptive arm: its schedule, the mean K it proposed (empty proposals left out), its
    speedup, acceptance and accepted length."""
    props = [x for r in rows if r["method"] == "adaptive" for x in r["proposed_lengths"]]
    s = arms["adaptive"]
    return {
        **schedule,
        "mean_k_used": float(np.mean([p for p in props if p > 0])) if props else None,
        "speedup": s.get("speedup"),
        "acceptance_rate": s.get("acceptance_rate"),
        "mean_accepted_length": s.get("mean_accepted_length"),
    }


def k_sweep_summary(
    rows: list[dict[str, Any]], arms: dict[str, Any], cfg: dict[str, Any]
) -> dict[str, Any]:
    """rows, their per-arm summary (`analysis.summary.summarize`) and the sweep's config -> its
    summary.json."""
    ks = cfg["ks"]
    table = [k_row(k, arms[f"k{k}"]) for k in ks]
    a_pool, c_pool = pooled(table)
    known = a_pool is not None and c_pool is not None
    a = min(max(a_pool, 0.0), 1.0) if known else None
    for t in table:
        t["predicted_speedup_pooled"] = expected_speedup(a, t["k"], c_pool) if known else None
    meas = [t for t in table if t["speedup"] is not None]
    best = max(meas, key=lambda t: t["speedup"]) if meas else None
    adaptive = adaptive_summary(rows, arms, cfg["adaptive"])
    headline = {
        "best_k_measured": best["k"] if best else None,
        "best_speedup_measured": best["speedup"] if best else None,
        "best_k_predicted": best_k(a, c_pool, max(ks)) if known else None,
        "pooled_per_token_acceptance": a_pool,
        "pooled_cost_ratio": c_pool,
        "adaptive_speedup": adaptive["speedup"],
    }
    return {"arms": arms, "ks": ks, "table": table, "adaptive": adaptive, "headline": headline}


def from_rows(
    rows: list[dict[str, Any]], cfg: dict[str, Any], stated: dict[str, Any]
) -> dict[str, Any]:
    """The summary the stored rows give (`analysis.from_rows`): the run's own summary."""
    return k_sweep_summary(rows, summarize(rows), cfg)


# --------------------------------------------------------------------------- figures


def measured_vs_predicted(summary: dict[str, Any], rows: Sequence[dict[str, Any]]) -> Any:
    """Measured speedup against draft length K beside the predicted speedups."""
    return arm_figures.measured_vs_predicted(summary)


def position_acceptance(summary: dict[str, Any], rows: Sequence[dict[str, Any]]) -> Any:
    """Line chart of the acceptance at each draft position for K = 2, 4, 8 and adaptive K."""
    return arm_figures.position_acceptance(
        {k: v for k, v in summary["arms"].items() if k in ADAPTIVE_ARMS}
    )


# --------------------------------------------------------------------------- declaration

# this result directory's section of results/SCHEMA.md (`make notebooks` writes it there)
SCHEMA = """\
Arms `baseline`, `k1` ... `k8` (the transformer draft at fixed K) and `adaptive` (the same draft
with an adaptive K, `k` = its maximum). `arms`: ArmSummary each. `ks`: list.
- `table`: rows `k`, `method`, `speedup`, `speedup_ci_low`, `speedup_ci_high`,
  `predicted_speedup_leviathan`, `predicted_speedup_calibrated`, `acceptance_rate`,
  `per_token_acceptance_iid`, `cost_ratio`, `mean_accepted_length`, `predicted_speedup_pooled`
  (Leviathan's formula at this K with one a and one c: the medians over the fixed-K arms).
- `adaptive`: `{"k_max", "k_start", "mean_k_used", "speedup" (value/ci), "acceptance_rate"}`.
- `headline`: `best_k_measured`, `best_speedup_measured`, `best_k_predicted` (Leviathan's model
  with a and c pooled over the fixed-K arms), `pooled_per_token_acceptance`, `pooled_cost_ratio`,
  `adaptive_speedup` (value/ci).
- `adaptive` also has `k_min` and `mean_accepted_length` (value/ci). The adaptive schedule: K
  starts at `k_start`; +1 after a fully accepted draft of the current K, -1 when fewer than half
  of the drafted tokens were accepted; within [k_min, k_max].
"""


def reading_headline(summary: dict[str, Any], config: dict[str, Any]) -> list[str]:
    """The reading's headline: the best measured K (its speedup, n and Leviathan's prediction),
    and the adaptive schedule's speedup."""
    ts = [t for t in summary.get("table", []) if is_number(t.get("speedup"))]
    out = []
    if ts:
        best = max(ts, key=lambda t: t["speedup"])
        out.append(
            f"best measured K = {best['k']}: speedup "
            f"{interval(best['speedup'], best.get('speedup_ci_low'), best.get('speedup_ci_high'), 'x')}"  # noqa: E501
            f" (n = {config.get('n_prompts')}); predicted (Leviathan) "
            f"{fmt(best.get('predicted_speedup_leviathan'), 'x')}"
        )
    ad = summary.get("adaptive") or {}
    if ad.get("speedup"):
        span = "..".join(str(ad[k]) for k in ("k_min", "k_max") if ad.get(k) is not None)
        out.append(f"adaptive K ({span or 'schedule'}): speedup {interval_of(ad['speedup'], 'x')}")
    return out


k_sweep = Experiment(
    "k_sweep",
    "the transformer draft at each draft length K, and an adaptive-K schedule",
    schema=SCHEMA,
    summary=KSweepSummary,
    config_shape=KSweepConfig,
    figures=(
        Figure(
            "measured_vs_predicted.png",
            "Measured speedup per K (whiskers: 95% interval) beside the "
            "predictions from the measured acceptance and cost ratio; the dash-dotted line is "
            "adaptive K. Look at "
            "where the measured curve peaks and how far the predictions sit from it.",
            draw=measured_vs_predicted,
        ),
        Figure(
            "position_acceptance.png",
            "Probability that draft position i is accepted given that positions "
            "1..i-1 were. A flat line is what the i.i.d. model behind Leviathan et al.'s "
            "prediction assumes; a falling one means long drafts pay off less than predicted.",
            draw=position_acceptance,
        ),
    ),
    build_config=config,
    run=run,
    summarize=from_rows,
    headline=reading_headline,
)

NOTEBOOK = Notebook(
    "05_k_sweep",
    "Draft length K",
    "The transformer draft at each K of the profile (`ks`): measured speedup beside "
    "Leviathan et al.'s prediction from the measured acceptance and cost ratio, and an "
    "adaptive-K schedule (longer after a fully accepted draft, shorter after an early "
    "rejection). Writes `k_sweep/`.",
    (k_sweep,),
)
