"""Rows -> an experiment's summary: per arm, medians over prompts with bootstrap intervals (n and
method beside each), the paired speedup over the baseline, pooled acceptance, and the speedup
that theory predicts from them; and their declared shapes (`ArmSummary`, the interval dicts),
which every experiment's summary type builds on. Torch-free; knows nothing about how the rows
were measured.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any, TypedDict

import numpy as np

from specdec_study.analysis import stats, theory
from specdec_study.results.declare import BASELINE

Num = float | None  # a statistic; null where it was NaN or infinite (results.store.clean)


class PointCI(TypedDict):
    """An estimate with its bootstrap interval (`stats.Interval.as_dict()`)."""

    value: Num
    ci_low: Num
    ci_high: Num
    n: int
    ci_method: str


class MedianCI(TypedDict):
    """A median over prompts with its bootstrap interval (`ci_dict`)."""

    median: Num
    ci_low: Num
    ci_high: Num
    n: int
    ci_method: str


class _ArmKeys(TypedDict):
    n_prompts: int
    draft: str
    k: int
    tokens_per_s: MedianCI
    wall_s: MedianCI
    total_wall_s: float
    new_tokens: float
    identical_fraction: float
    repetition_4gram: MedianCI


class ArmSummary(_ArmKeys, total=False):
    """One arm's summary (`summarize`): the drafting keys where it drafts (k > 0), the paired
    ones where a baseline of as many prompts ran beside it, the predictions where both."""

    acceptance_rate: PointCI
    mean_accepted_length: PointCI
    position_acceptance: list[Num]
    accepted_histogram: list[int]
    draft_share_of_time: Num
    draft_s_per_token: Num
    verify_s_per_call: Num
    speedup: PointCI
    speedup_per_prompt: MedianCI
    baseline_s_per_token: Num
    cost_ratio: Num
    per_token_acceptance_iid: Num
    predicted_speedup_leviathan: Num
    verify_cost_ratio: Num
    predicted_speedup_calibrated: Num
    acceptance_rate_pooled: Num


class SpeedupColumns(TypedDict):
    """A flat table's paired speedup with its interval."""

    speedup: Num
    speedup_ci_low: Num
    speedup_ci_high: Num


class AcceptanceColumns(TypedDict):
    """A flat table's pooled acceptance rate with its interval."""

    acceptance_rate: Num
    acceptance_rate_ci_low: Num
    acceptance_rate_ci_high: Num


class TokensPerSColumns(TypedDict):
    """A flat table's median tokens per second with its interval."""

    tokens_per_s: Num
    tokens_per_s_ci_low: Num
    tokens_per_s_ci_high: Num


class ArmsCell(TypedDict):
    """One cell of a sweep (a context, a temperature): its arms, against that cell's baseline."""

    arms: dict[str, ArmSummary]


def _lengths(rows: Sequence[dict[str, Any]], key: str) -> list[list[int]]:
    """One list column of the rows (`results.schema.LIST_COLUMNS`: lists of ints)."""
    return [list(r[key]) for r in rows]


def pooled_position_acceptance(rows: Sequence[dict[str, Any]], k: int) -> list[float | None]:
    """Per draft position 0..K-1: accepted / reached, pooled over the rows (None: unreached)."""
    reached, took = np.zeros(k), np.zeros(k)
    for acc, prop in zip(
        _lengths(rows, "accepted_lengths"), _lengths(rows, "proposed_lengths"), strict=True
    ):
        for n, d in zip(acc, prop, strict=True):
            m = min(d, n + 1, k)
            reached[:m] += 1
            took[: min(n, m)] += 1
    return [float(t / r) if r else None for t, r in zip(took, reached, strict=True)]


def pooled_histogram(rows: Sequence[dict[str, Any]], k: int) -> list[int]:
    """[K + 1] counts of calls that drafted anything, by accepted length (capped at K)."""
    hist = np.zeros(k + 1, dtype=int)
    for acc, prop in zip(
        _lengths(rows, "accepted_lengths"), _lengths(rows, "proposed_lengths"), strict=True
    ):
        for n, d in zip(acc, prop, strict=True):
            if d:
                hist[min(n, k)] += 1
    return hist.tolist()


def ci_dict(values: Sequence[float]) -> dict[str, Any]:
    """The median over prompts with its bootstrap interval, n and method."""
    return stats.median(values).as_dict("median")


def _ratio_ci(num: np.ndarray, den: np.ndarray) -> dict[str, Any]:
    """Pooled ratio sum(num)/sum(den) with a paired bootstrap interval over prompts."""
    if den.sum() == 0:
        return stats.Interval(math.nan, math.nan, math.nan, int(num.size), "none").as_dict()
    return stats.pooled_ratio(num, den).as_dict()


def arm_rows(rows: Iterable[dict[str, Any]], method: str, **where: Any) -> list[dict[str, Any]]:
    """One arm's rows (and only those whose columns also equal `where`), in prompt order."""
    mine = (r for r in rows if r["method"] == method and all(r[k] == v for k, v in where.items()))
    return sorted(mine, key=lambda r: r["prompt"])


def arm_walls(rows: Iterable[dict[str, Any]], method: str, **where: Any) -> np.ndarray:
    """[n] one arm's wall times (rows matching `where`), in prompt order."""
    return np.array([r["wall_s"] for r in arm_rows(rows, method, **where)], dtype=float)


def summarize(rows: Sequence[dict[str, Any]], baseline: str = BASELINE) -> dict[str, Any]:
    """Per method: medians with CIs, paired speedup, pooled acceptance, predicted speedup."""
    methods = list(dict.fromkeys(r["method"] for r in rows))
    by = {m: arm_rows(rows, m) for m in methods}
    base = by.get(baseline)
    out: dict[str, Any] = {}
    for m, rs in by.items():
        wall = np.array([r["wall_s"] for r in rs])
        tokens = np.array([r["new_tokens"] for r in rs], dtype=float)
        k = max((r["k"] for r in rs), default=0)
        s: dict[str, Any] = {
            "n_prompts": len(rs),
            "draft": rs[0]["draft"],
            "k": k,
            "tokens_per_s": ci_dict([r["tokens_per_s"] for r in rs]),
            "wall_s": ci_dict(wall.tolist()),
            "total_wall_s": float(wall.sum()),
            "new_tokens": float(tokens.sum()),
            "identical_fraction": float(np.mean([bool(r["identical"]) for r in rs])),
            "repetition_4gram": ci_dict([r["repetition_4gram"] for r in rs]),
        }
        if k:
            prop = np.array([r["proposed"] for r in rs], dtype=float)
            acc = np.array([r["accepted"] for r in rs], dtype=float)
            calls = np.array([len(r["accepted_lengths"]) for r in rs], dtype=float)
            s["acceptance_rate"] = _ratio_ci(acc, prop)
            s["mean_accepted_length"] = _ratio_ci(acc + calls, calls)
            s["position_acceptance"] = pooled_position_acceptance(rs, k)
            s["accepted_histogram"] = pooled_histogram(rs, k)
            draft_s = np.array([r["draft_s"] for r in rs])
            verify_s = np.array([r["verify_s"] for r in rs])
            s["draft_share_of_time"] = float(draft_s.sum() / wall.sum()) if wall.sum() else None
            s["draft_s_per_token"] = float(draft_s.sum() / prop.sum()) if prop.sum() else None
            s["verify_s_per_call"] = float(verify_s.sum() / calls.sum()) if calls.sum() else None
        # an arm run on fewer prompts than the baseline is paired on its own prompts
        mine = {r["prompt"] for r in rs}
        paired_base = [r for r in base or [] if r["prompt"] in mine]  # none without a baseline
        if m != baseline and len(paired_base) == len(rs):
            b_wall = np.array([r["wall_s"] for r in paired_base])
            s["speedup"] = stats.paired_speedup(b_wall, wall).as_dict()
            s["speedup_per_prompt"] = ci_dict((b_wall / wall).tolist())
            b_tokens = np.array([r["new_tokens"] for r in paired_base], dtype=float)
            step_s = float(b_wall.sum() / b_tokens.sum()) if b_tokens.sum() else None
            s["baseline_s_per_token"] = step_s
            if k and step_s and s.get("draft_s_per_token") is not None:
                c = s["draft_s_per_token"] / step_s
                a = s["acceptance_rate"]["value"]
                mal = s["mean_accepted_length"]["value"]
                # fitted to the calls' counts, so a last call cut short by the token cap is
                # not read as a full draft of K that failed (theory.fitted_acceptance)
                a_iid = theory.fitted_acceptance(
                    [n for r in rs for n in r["accepted_lengths"]],
                    [d for r in rs for d in r["proposed_lengths"]],
                )
                s["cost_ratio"] = c
                s["per_token_acceptance_iid"] = a_iid
                s["predicted_speedup_leviathan"] = (
                    theory.expected_speedup(a_iid, k, c) if a_iid is not None else None
                )
                # calibrated: the measured verify cost instead of "one call = one step"
                v = s["verify_s_per_call"] / step_s
                s["verify_cost_ratio"] = v
                s["predicted_speedup_calibrated"] = mal / (k * c + v)
                s["acceptance_rate_pooled"] = a
        out[m] = s
    return out


def point(x: Any) -> float | None:
    """The point value of a {value|median, ci_low, ci_high} dict (or a plain number)."""
    if isinstance(x, dict):
        return x.get("value", x.get("median"))
    return x
