"""How a timed quantity changes between two contexts on the same prompts: per-token growth,
acceptance change, the prompt-swap simulation, with paired bootstrap intervals (analysis.stats).
Pure functions of per-prompt rows (pandas); torch-free, knows nothing about files or the book."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from specdec_study.analysis import stats
from specdec_study.results.declare import BASELINE

SPLITS = 2000  # random splits of the prompts in prompt_swap_change


def context_column(rows: pd.DataFrame) -> str:
    """The rows' context column: `context` in sweeps, `context_tokens` elsewhere."""
    return "context" if "context" in rows.columns else "context_tokens"


def paired_frame(rows: pd.DataFrame, method: str, contexts: Sequence[int]) -> pd.DataFrame:
    """Per prompt (index) x context: wall_s, new_tokens, accepted, proposed for one arm, keeping
    only prompts present at every context (the sweep's prompts are the same documents)."""
    col = context_column(rows)
    r = rows[rows["method"] == method].copy()
    r[col] = r[col].astype(int)
    r = r[r[col].isin(list(contexts))]
    cols = ("wall_s", "new_tokens", "accepted", "proposed", "target_calls")
    keep = [c for c in cols if c in r.columns]
    wide = r.pivot_table(index="prompt", columns=col, values=keep, aggfunc="sum")
    return wide.dropna()


def ratio_change(a_num, a_den, b_num, b_den, axis=-1):
    """(sum b_num / sum b_den) / (sum a_num / sum a_den), vectorised for the bootstrap."""
    return (b_num.sum(axis) / b_den.sum(axis)) / (a_num.sum(axis) / a_den.sum(axis))


def rate_change(a_num, a_den, b_num, b_den, axis=-1):
    """(sum b_num / sum b_den) - (sum a_num / sum a_den), vectorised for the bootstrap."""
    return b_num.sum(axis) / b_den.sum(axis) - a_num.sum(axis) / a_den.sum(axis)


def _nan_interval(**extra: Any) -> dict[str, Any]:
    return {"value": math.nan, "ci_low": math.nan, "ci_high": math.nan, "n": 0, **extra}


def growth(rows: pd.DataFrame, method: str, c0: int, c1: int, per_token: bool = True) -> dict:
    """How much slower an arm is at context c1 than at c0: ratio of total seconds (per token if
    per_token), with a paired bootstrap CI resampling the same prompts at both contexts."""
    w = paired_frame(rows, method, [c0, c1])
    if w.empty:
        return _nan_interval(n_prompts=0)
    a, b = w["wall_s"][c0].to_numpy(float), w["wall_s"][c1].to_numpy(float)
    if per_token:
        ta, tb = w["new_tokens"][c0].to_numpy(float), w["new_tokens"][c1].to_numpy(float)
    else:
        ta = tb = np.ones_like(a)
    iv = stats.bootstrap([a, ta, b, tb], ratio_change)
    return {**iv.as_dict(), "n_prompts": iv.n}


def acceptance_change(rows: pd.DataFrame, method: str, c0: int, c1: int) -> dict:
    """Pooled acceptance (accepted / proposed) at c1 minus at c0 on the same prompts, with a
    paired bootstrap CI; plus the two pooled values."""
    w = paired_frame(rows, method, [c0, c1])
    if w.empty or "proposed" not in w:
        return _nan_interval(n_prompts=0)
    acc0, acc1 = w["accepted"][c0].to_numpy(float), w["accepted"][c1].to_numpy(float)
    pr0, pr1 = w["proposed"][c0].to_numpy(float), w["proposed"][c1].to_numpy(float)
    iv = stats.bootstrap([acc0, pr0, acc1, pr1], rate_change)
    with np.errstate(invalid="ignore", divide="ignore"):
        a0, a1 = acc0.sum() / pr0.sum(), acc1.sum() / pr1.sum()
    return {**iv.as_dict(), "at_c0": float(a0), "at_c1": float(a1), "n_prompts": iv.n}


def tokens_per_call_change(rows: pd.DataFrame, method: str, c0: int, c1: int) -> dict:
    """H4's quantity: pooled new tokens per verification call (target calls minus the prefill)
    at c1 over the same at c0, on the same prompts, with a paired bootstrap CI."""
    w = paired_frame(rows, method, [c0, c1])
    if w.empty or "target_calls" not in w:
        return _nan_interval(n_prompts=0)
    n0, n1 = w["new_tokens"][c0].to_numpy(float), w["new_tokens"][c1].to_numpy(float)
    k0, k1 = w["target_calls"][c0].to_numpy(float) - 1, w["target_calls"][c1].to_numpy(float) - 1
    iv = stats.bootstrap([n0, k0, n1, k1], ratio_change)
    return {
        **iv.as_dict(),
        "at_c0": float(n0.sum() / k0.sum()),
        "at_c1": float(n1.sum() / k1.sum()),
        "n_prompts": iv.n,
    }


def prompt_swap_change(rows: pd.DataFrame, method: str, c0: int, c1: int) -> dict:
    """The confound simulated: each context sees its own half of the prompts (disjoint random
    halves), as when prompts are drawn per context. Returns the 95% range of the acceptance
    change c0 -> c1 over random splits, and the largest fall seen in 2.5% of splits."""
    w = paired_frame(rows, method, [c0, c1])
    n = len(w)
    if n < 4 or "proposed" not in w:
        return {"value": math.nan, "ci_low": math.nan, "ci_high": math.nan, "n_half": 0}
    acc0, acc1 = w["accepted"][c0].to_numpy(float), w["accepted"][c1].to_numpy(float)
    pr0, pr1 = w["proposed"][c0].to_numpy(float), w["proposed"][c1].to_numpy(float)
    rng = np.random.default_rng(stats.SEED)
    half = n // 2
    perms = np.argsort(rng.random((SPLITS, n)), axis=1)
    a_idx, b_idx = perms[:, :half], perms[:, half : 2 * half]
    with np.errstate(invalid="ignore", divide="ignore"):
        d = acc1[b_idx].sum(1) / pr1[b_idx].sum(1) - acc0[a_idx].sum(1) / pr0[a_idx].sum(1)
    d = d[np.isfinite(d)]
    lo, hi = np.quantile(d, [0.025, 0.975])
    return {
        "value": float(np.median(d)),
        "ci_low": float(lo),
        "ci_high": float(hi),
        "n_half": int(half),
        "draws": d,
    }


def per_prompt_acceptance(rows: pd.DataFrame, method: str) -> pd.DataFrame:
    """prompt x context acceptance of one arm (for the spaghetti plot)."""
    col = context_column(rows)
    r = rows[rows["method"] == method].copy()
    r[col] = r[col].astype(int)
    g = r.groupby(["prompt", col])[["accepted", "proposed"]].sum().reset_index()
    g["acceptance"] = g["accepted"] / g["proposed"].where(g["proposed"] > 0)
    return g.rename(columns={col: "context"})


def range_for_test(contexts: Sequence[int], lo: int = 10, hi: int = 100) -> tuple[int, int]:
    """The published range (10 -> 100) when the sweep has both ends, else its own extremes."""
    cs = sorted(contexts)
    if lo in cs and hi in cs:
        return lo, hi
    return cs[0], cs[-1]


def test_range(contexts: Sequence[int], lo: int = 10, hi: int = 100) -> tuple[int, int] | None:
    """(10, 100), the earlier study's range, when both were measured; else None."""
    return (lo, hi) if lo in contexts and hi in contexts else None


def extra_growth(on: pd.DataFrame, off: pd.DataFrame, c0: int, c1: int) -> dict:
    """H1's quantity: the baseline's per-token slowdown c0 -> c1 without the cache divided by
    the same with it, on the prompts both sweeps share, with a paired bootstrap over prompts."""
    a, b = paired_frame(on, BASELINE, [c0, c1]), paired_frame(off, BASELINE, [c0, c1])
    common = sorted(set(a.index) & set(b.index))
    if len(common) < 2:
        return {"value": math.nan, "ci_low": math.nan, "ci_high": math.nan, "n": len(common)}
    a, b = a.loc[common], b.loc[common]

    def per_token(w: pd.DataFrame, c: int) -> tuple[np.ndarray, np.ndarray]:
        return w["wall_s"][c].to_numpy(float), w["new_tokens"][c].to_numpy(float)

    (a0, n0), (a1, n1) = per_token(a, c0), per_token(a, c1)
    (b0, m0), (b1, m1) = per_token(b, c0), per_token(b, c1)

    def q(a0, n0, a1, n1, b0, m0, b1, m1, axis=-1):
        g_on = (a1.sum(axis) / n1.sum(axis)) / (a0.sum(axis) / n0.sum(axis))
        g_off = (b1.sum(axis) / m1.sum(axis)) / (b0.sum(axis) / m0.sum(axis))
        return g_off / g_on

    return stats.bootstrap([a0, n0, a1, n1, b0, m0, b1, m1], q).as_dict()


def same_documents(rows: pd.DataFrame, method: str) -> bool:
    """True when every prompt index has one (article, anchor) at every context."""
    if not {"article", "anchor"} <= set(rows.columns):
        return False
    r = rows[rows["method"] == method]
    return bool((r.groupby("prompt")[["article", "anchor"]].nunique() <= 1).all().all())
