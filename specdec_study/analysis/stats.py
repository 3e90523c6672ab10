"""The project's statistics, done once: a paired bootstrap interval and a chi-square goodness of
fit with its power.

- `bootstrap`: one function for every interval in the study (medians and means over prompts,
  pooled ratios such as the paired speedup or the acceptance rate, changes between contexts on
  the same prompts). The arrays it gets are paired by position (prompt i of every array is
  resampled together), it runs `scipy.stats.bootstrap` with a fixed seed, BCa where the sample
  has enough distinct resamples and percentile where it has not, and every `Interval` it returns
  carries its n and its method.
- `goodness_of_fit`: `scipy.stats.chisquare` of samples against an exact distribution, tokens of
  low expected count pooled into one bin, beside the total-variation distance.
- `detectable_tvd`: the smallest total-variation distance such a test detects with the stated
  power, from the noncentral chi-square distribution.

Knows nothing about models, torch, result files or the book: it takes arrays.
"""

from __future__ import annotations

import math
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import optimize
from scipy import stats as sps

SEED = 0
LEVEL = 0.95
N_RESAMPLES = 9999  # scipy's default; resamples of n prompts are cheap at the study's sizes
ALPHA = 0.05
POWER = 0.8
MIN_EXPECTED = 5.0  # the usual rule for the chi-square approximation


@dataclass(frozen=True)
class Interval:
    """A point estimate with a bootstrap interval, the number of (paired) units it rests on and
    how the interval was computed: "BCa", "percentile", "constant" (every resample gives the
    same value) or "none" (fewer than two units: no interval)."""

    value: float
    low: float
    high: float
    n: int
    method: str
    level: float = LEVEL

    def as_dict(self, key: str = "value") -> dict[str, Any]:
        """The result-file form: {key, ci_low, ci_high, n, ci_method}."""
        return {
            key: self.value,
            "ci_low": self.low,
            "ci_high": self.high,
            "n": self.n,
            "ci_method": self.method,
        }


def distinct_resamples(n: int) -> int:
    """How many different bootstrap resamples (multisets) n units have: C(2n - 1, n)."""
    return math.comb(2 * n - 1, n) if n > 0 else 0


def bca_allowed(n: int, n_resamples: int = N_RESAMPLES) -> bool:
    """BCa when there are at least as many distinct resamples as drawn ones (n >= 9 for 9,999):
    below that the bootstrap distribution is a handful of repeated values, its jackknife
    acceleration rests on a few leave-one-out values, and the percentile interval is used."""
    return n >= 2 and distinct_resamples(n) >= n_resamples


def bootstrap(
    data: Sequence[Sequence[float]],
    statistic: Callable[..., Any],
    *,
    level: float = LEVEL,
    seed: int = SEED,
    n_resamples: int = N_RESAMPLES,
) -> Interval:
    """A paired bootstrap interval for statistic(*data, axis=-1).

    data: one or more arrays of equal length n, paired by position (prompt i of each array is
    resampled together); a position with a non-finite value in any array is dropped from all.
    statistic: vectorised over the last axis, e.g. `lambda b, m, axis: b.sum(axis) / m.sum(axis)`.
    """
    arrays = [np.asarray(d, dtype=float) for d in data]
    if not arrays or any(a.ndim != 1 or a.shape != arrays[0].shape for a in arrays):
        raise ValueError("a paired bootstrap needs one or more 1-d arrays of equal length")
    keep = np.logical_and.reduce([np.isfinite(a) for a in arrays])
    arrays = [a[keep] for a in arrays]
    n = int(keep.sum())
    if n == 0:
        return Interval(math.nan, math.nan, math.nan, 0, "none", level)
    with np.errstate(invalid="ignore", divide="ignore"):
        value = float(statistic(*arrays, axis=-1))
    if n == 1 or not math.isfinite(value):
        return Interval(value, math.nan, math.nan, n, "none", level)
    if all(np.all(a == a[0]) for a in arrays):
        return Interval(value, value, value, n, "constant", level)
    method = "BCa" if bca_allowed(n, n_resamples) else "percentile"
    low, high = _scipy_interval(arrays, statistic, method, level, seed, n_resamples)
    if method == "BCa" and not (math.isfinite(low) and math.isfinite(high)):
        method = "percentile"  # a degenerate jackknife (e.g. one prompt carries the statistic)
        low, high = _scipy_interval(arrays, statistic, method, level, seed, n_resamples)
    if math.isfinite(low) and math.isfinite(high) and high - low <= 1e-12 * max(1.0, abs(value)):
        method = "constant"  # e.g. a constant ratio: every resample gives the value
        low = high = value
    return Interval(value, low, high, n, method, level)


def _scipy_interval(arrays, statistic, method, level, seed, n_resamples) -> tuple[float, float]:
    def stat(*xs, axis=-1):
        with np.errstate(invalid="ignore", divide="ignore"):
            return statistic(*xs, axis=axis)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # degenerate or nan resamples are handled by the caller
        res = sps.bootstrap(
            tuple(arrays),
            stat,
            n_resamples=n_resamples,
            confidence_level=level,
            method=method,
            paired=True,
            vectorized=True,
            rng=np.random.default_rng(seed),
        )
    ci = res.confidence_interval
    return float(ci.low), float(ci.high)


def _median(x, axis=-1):
    return np.median(x, axis=axis)


def _mean(x, axis=-1):
    return np.mean(x, axis=axis)


def _ratio(num, den, axis=-1):
    return np.sum(num, axis=axis) / np.sum(den, axis=axis)


def median(values: Sequence[float], **kw) -> Interval:
    """The median over units (prompts) with its bootstrap interval."""
    return bootstrap([values], _median, **kw)


def mean(values: Sequence[float], **kw) -> Interval:
    """The mean over units (prompts) with its bootstrap interval."""
    return bootstrap([values], _mean, **kw)


def pooled_ratio(num: Sequence[float], den: Sequence[float], **kw) -> Interval:
    """sum(num) / sum(den) with a bootstrap over units that resamples num and den in pairs: the
    paired speedup (baseline seconds / method seconds, paired by prompt), the acceptance rate
    (accepted / proposed), tokens per call."""
    if len(num) != len(den) or len(num) == 0:
        raise ValueError("a pooled ratio needs equally many, and some, numerators and denominators")
    return bootstrap([num, den], _ratio, **kw)


def paired_speedup(baseline_s: Sequence[float], method_s: Sequence[float], **kw) -> Interval:
    """Speedup as the ratio of total times, per-prompt times paired by prompt."""
    return pooled_ratio(baseline_s, method_s, **kw)


# --------------------------------------------------------------------------------------------
# goodness of fit of samples to an exact distribution, and its power


def tvd(samples: Sequence[int], p: np.ndarray) -> float:
    """Total-variation distance between the samples' empirical distribution and p ([V])."""
    n = len(samples)
    counts = Counter(int(s) for s in samples)
    ids = np.array(list(counts), dtype=np.int64)
    emp = np.array([counts[i] for i in ids], dtype=float) / n
    return float(0.5 * (np.abs(emp - p[ids]).sum() + (p.sum() - p[ids].sum())))


def pooled_bins(
    samples: Sequence[int], p: np.ndarray, min_expected: float = MIN_EXPECTED
) -> tuple[np.ndarray, np.ndarray]:
    """(observed, expected) counts: one bin per token with expected count >= min_expected, the
    others pooled into one bin (merged into the smallest bin when its own expectation is below
    min_expected)."""
    n = len(samples)
    counts = Counter(int(s) for s in samples)
    expected = n * np.asarray(p, dtype=float) / float(np.sum(p))
    big = np.flatnonzero(expected >= min_expected)
    obs = [float(counts.get(int(i), 0)) for i in big]
    exp = [float(e) for e in expected[big]]
    rest_exp, rest_obs = n - sum(exp), n - sum(obs)
    if rest_exp > 1e-9 * max(n, 1):
        if rest_exp < min_expected and exp:
            j = int(np.argmin(exp))
            exp[j] += rest_exp
            obs[j] += rest_obs
        else:
            exp.append(rest_exp)
            obs.append(rest_obs)
    return np.array(obs), np.array(exp)


def goodness_of_fit(
    samples: Sequence[int], p: np.ndarray, min_expected: float = MIN_EXPECTED
) -> dict[str, Any]:
    """Do the samples follow p? TVD, and `scipy.stats.chisquare` over pooled bins: chi2, dof,
    p_value (None with a single bin: nothing to test), n_samples, n_bins."""
    obs, exp = pooled_bins(samples, p, min_expected)
    out: dict[str, Any] = {"tvd": tvd(samples, p), "n_samples": len(samples), "n_bins": obs.size}
    if obs.size < 2:
        return {**out, "chi2": 0.0, "dof": 0, "p_value": None}
    res = sps.chisquare(obs, exp * obs.sum() / exp.sum())
    return {**out, "chi2": float(res.statistic), "dof": obs.size - 1, "p_value": float(res.pvalue)}


def combined(tests: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Independent chi-square tests (one per prompt) as one: summed statistics and dofs.
    n_tested counts the samples of prompts with something to test (two bins or more)."""
    chi = float(sum(t["chi2"] for t in tests))
    dof = int(sum(t["dof"] for t in tests))
    return {
        "chi2": chi,
        "dof": dof,
        "p_value": float(sps.chi2.sf(chi, dof)) if dof else None,
        "n_samples": int(sum(t["n_samples"] for t in tests)),
        "n_tested": int(sum(t["n_samples"] for t in tests if t["dof"])),
    }


def noncentrality_for_power(dof: int, alpha: float = ALPHA, power: float = POWER) -> float:
    """The noncentrality lambda at which a chi-square test with dof degrees of freedom at level
    alpha rejects with probability `power`."""
    if dof < 1:
        return math.inf
    crit = sps.chi2.isf(alpha, dof)
    return float(optimize.brentq(lambda lam: sps.ncx2.sf(crit, dof, lam) - power, 1e-9, 1e4))


def detectable_tvd(n_samples: int, dof: int, alpha: float = ALPHA, power: float = POWER) -> float:
    """The smallest total-variation distance the chi-square test detects with probability
    `power` at level alpha, whatever the direction of the deviation.

    Under an alternative q the statistic is approximately noncentral chi-square with
    lambda = n * sum_i (q_i - p_i)^2 / p_i over the test's bins, and by Cauchy-Schwarz
    lambda >= n * TVD^2 * (1/P(A) + 1/P(B)) >= 4 n TVD^2 (A, B: the bins q raises and lowers).
    So TVD >= sqrt(lambda_power / (4 n)) is detected. The TVD is the one between the binned
    distributions: a deviation that only moves mass among the tokens inside the pooled bin is
    invisible to the test. For several prompts pooled, pass the total n and the summed dof (the
    bound then holds when every prompt deviates by at least that TVD)."""
    if n_samples < 1 or dof < 1:
        return math.nan
    return math.sqrt(noncentrality_for_power(dof, alpha, power) / (4.0 * n_samples))


def samples_to_detect(
    tvd_target: float, dof: int, alpha: float = ALPHA, power: float = POWER
) -> int:
    """The total samples at which `detectable_tvd` reaches tvd_target (for a given dof)."""
    return math.ceil(noncentrality_for_power(dof, alpha, power) / (4.0 * tvd_target**2))


def power_summary(tests: Sequence[dict[str, Any]], tvd_target: float = 0.05) -> dict[str, Any]:
    """The combined test of several prompts, with what it can detect."""
    c = combined(tests)
    return {
        **c,
        "alpha": ALPHA,
        "power": POWER,
        "detectable_tvd": detectable_tvd(c["n_tested"], c["dof"]) if c["dof"] else None,
        "tvd_target": tvd_target,
        "samples_for_target": samples_to_detect(tvd_target, c["dof"]) if c["dof"] else None,
    }
