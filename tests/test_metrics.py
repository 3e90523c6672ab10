"""Statistics over prompts: bootstrap CIs, paired speedups, divergence and repetition."""

from __future__ import annotations

import math

import numpy as np
import pytest

from specdec_lib.measure.metrics import first_divergence, repeated_ngram_share
from specdec_study.analysis import stats


def bootstrap_ci(values, stat=np.median, **kw) -> tuple[float, float, float]:
    """(value, low, high) of the one bootstrap, for the assertions below."""
    iv = stats.bootstrap([values], lambda x, axis: stat(x, axis=axis), **kw)
    return iv.value, iv.low, iv.high


def paired_speedup(baseline, method) -> tuple[float, float, float]:
    iv = stats.paired_speedup(baseline, method)
    return iv.value, iv.low, iv.high


def test_bootstrap_ci_contains_the_statistic():
    rng = np.random.default_rng(0)
    for stat in (np.median, np.mean):
        for n in (5, 30, 200):
            x = rng.lognormal(size=n)
            value, lo, hi = bootstrap_ci(x, stat=stat)
            assert value == pytest.approx(float(stat(x)))
            assert lo <= value <= hi


def test_bootstrap_ci_narrows_with_more_data():
    rng = np.random.default_rng(1)
    widths = []
    for n in (20, 80, 320):
        x = rng.normal(size=n)
        _, lo, hi = bootstrap_ci(x, stat=np.mean)
        widths.append(hi - lo)
        # a 95% interval for a mean is about 2 * 1.96 standard errors wide
        assert hi - lo == pytest.approx(2 * 1.96 * x.std() / n**0.5, rel=0.25)
    assert widths[0] > widths[1] > widths[2]


def test_bootstrap_ci_is_seeded_and_wider_at_higher_level():
    x = np.random.default_rng(2).normal(size=50)
    assert bootstrap_ci(x, seed=3) == bootstrap_ci(x, seed=3)
    _, lo90, hi90 = bootstrap_ci(x, level=0.90)
    _, lo99, hi99 = bootstrap_ci(x, level=0.99)
    assert lo99 <= lo90 and hi90 <= hi99


def test_bootstrap_ci_ignores_non_finite_values_and_handles_empty_input():
    assert bootstrap_ci([1.0, float("nan"), 3.0, float("inf")], stat=np.mean)[0] == 2.0
    assert all(math.isnan(v) for v in bootstrap_ci([]))
    assert all(math.isnan(v) for v in bootstrap_ci([float("nan")]))
    assert bootstrap_ci([4.0, 4.0, 4.0]) == (4.0, 4.0, 4.0)


def test_every_interval_carries_its_n_and_method():
    rng = np.random.default_rng(5)
    small, large = stats.median(rng.normal(size=6)), stats.median(rng.normal(size=40))
    assert (small.n, small.method) == (6, "percentile")  # 462 distinct resamples: too few
    assert (large.n, large.method) == (40, "BCa")
    assert stats.median([1.0, float("nan"), 2.0]).n == 2  # a non-finite value is not a unit
    assert stats.mean([3.0]).method == "none" and math.isnan(stats.mean([3.0]).low)
    assert stats.median([4.0, 4.0]).method == "constant"
    d = large.as_dict("median")
    assert d == {
        "median": large.value,
        "ci_low": large.low,
        "ci_high": large.high,
        "n": 40,
        "ci_method": "BCa",
    }
    assert not stats.bca_allowed(8) and stats.bca_allowed(9)  # C(17, 9) = 24310 >= 9999


def test_paired_bootstrap_resamples_prompts_together():
    """Paired: a method always 20% faster than the baseline on the same prompt gives a tight
    interval however much the prompts differ; unpaired it would be wide."""
    rng = np.random.default_rng(6)
    base = rng.lognormal(0, 1, size=30)
    method = base / 1.25 * rng.uniform(0.98, 1.02, size=30)
    iv = stats.paired_speedup(base, method)
    assert iv.low <= 1.25 <= iv.high and iv.high - iv.low < 0.05
    with pytest.raises(ValueError):
        stats.bootstrap([[1.0, 2.0], [1.0]], lambda a, b, axis: a.sum(axis))


def test_bca_interval_covers_a_skewed_mean_as_often_as_stated():
    """Coverage of the BCa interval at n = 20 for a skewed (lognormal) mean: close to 95%."""
    rng = np.random.default_rng(7)
    truth = math.exp(0.5)  # mean of lognormal(0, 1)
    hits = [
        (iv := stats.mean(rng.lognormal(size=20), n_resamples=2000, seed=i)).low <= truth <= iv.high
        for i in range(200)
    ]
    assert 0.86 <= np.mean(hits) <= 0.99


def _least_favourable(p: np.ndarray, tvd: float) -> np.ndarray:
    """q at TVD `tvd` from p with the smallest chi-square noncentrality: mass moved in
    proportion to p from one half of the probability to the other."""
    order = np.argsort(-p)
    a = np.zeros(p.size, dtype=bool)
    for i in order:  # greedy: fill A up to about half the mass
        if p[a].sum() + p[i] <= 0.5 or not a.any():
            a[i] = True
    return p + tvd * np.where(a, p / p[a].sum(), -p / p[~a].sum())


def test_goodness_of_fit_holds_its_level_and_detects_the_stated_tvd():
    """Simulated from an exact distribution: the chi-square rejects about 5% of exact samples
    and, at the TVD detectable_tvd states for its n and dof, at least about 80% of samples from
    the least favourable alternative (a larger shift is detected more often)."""
    rng = np.random.default_rng(8)
    p = rng.dirichlet(np.ones(12))
    n = 1000
    dof = stats.goodness_of_fit(rng.choice(12, size=n, p=p), p)["dof"]
    delta = stats.detectable_tvd(n, dof)
    q = _least_favourable(p, delta)
    assert 0.5 * np.abs(q - p).sum() == pytest.approx(delta)

    def rejects(dist) -> float:
        return np.mean(
            [stats.goodness_of_fit(rng.choice(12, size=n, p=dist), p)["p_value"] < 0.05
             for _ in range(300)]
        )  # fmt: skip

    assert rejects(p) < 0.1
    assert 0.72 <= rejects(q) <= 0.95
    assert rejects(_least_favourable(p, 2 * delta)) > 0.99
    # more samples, smaller detectable TVD; 0.05 needs about 100 * lambda samples
    assert stats.detectable_tvd(4 * n, dof) == pytest.approx(delta / 2)
    assert stats.detectable_tvd(stats.samples_to_detect(0.05, dof), dof) <= 0.05


def test_goodness_of_fit_pools_rare_tokens_and_combines_prompts():
    p = np.array([0.5, 0.3, 0.16, 0.02, 0.01, 0.01])
    samples = [0] * 50 + [1] * 30 + [2] * 16 + [3] * 2 + [4] * 2
    obs, exp = stats.pooled_bins(samples, p)
    # expected 50, 30, 16 get their own bins; 2 + 1 + 1 < 5 is merged into the smallest bin
    assert exp.tolist() == pytest.approx([50, 30, 20]) and obs.tolist() == [50, 30, 20]
    r = stats.goodness_of_fit(samples, p)
    assert (r["dof"], r["n_bins"], r["n_samples"]) == (2, 3, 100)
    assert r["chi2"] == pytest.approx(0.0) and r["p_value"] == pytest.approx(1.0)
    assert stats.goodness_of_fit([0] * 10, np.array([1.0, 0.0]))["p_value"] is None
    c = stats.power_summary([r, r])
    assert (c["dof"], c["n_samples"], c["n_tested"]) == (4, 200, 200)
    assert c["detectable_tvd"] == pytest.approx(stats.detectable_tvd(200, 4))
    one_bin = stats.goodness_of_fit([0] * 10, np.array([1.0, 0.0]))
    c = stats.power_summary([r, one_bin])  # a prompt with one bin adds samples, not power
    assert (c["n_samples"], c["n_tested"]) == (110, 100)
    assert c["detectable_tvd"] == pytest.approx(stats.detectable_tvd(100, 2))


def test_paired_speedup_is_the_ratio_of_total_times():
    baseline = [1.0, 10.0, 4.0]
    method = [0.5, 8.0, 1.0]
    value, lo, hi = paired_speedup(baseline, method)
    assert value == pytest.approx(15.0 / 9.5)
    # not the mean of per-prompt ratios (2.0, 1.25, 4.0)
    assert value != pytest.approx(np.mean([2.0, 1.25, 4.0]))
    assert lo <= value <= hi


def test_paired_speedup_ci_is_tight_for_a_constant_ratio():
    baseline = np.random.default_rng(4).uniform(1, 5, size=40)
    value, lo, hi = paired_speedup(baseline, baseline / 2)
    assert value == pytest.approx(2.0) and lo == pytest.approx(2.0) and hi == pytest.approx(2.0)


@pytest.mark.parametrize(("b", "m"), [([1.0, 2.0], [1.0]), ([], [])])
def test_paired_speedup_needs_equal_nonempty_pairs(b, m):
    with pytest.raises(ValueError):
        paired_speedup(b, m)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ([1, 2, 3], [1, 2, 3], None),
        ([1, 2, 3], [1, 9, 3], 1),
        ([1, 2, 3], [0, 2, 3], 0),
        ([1, 2, 3], [1, 2], 2),
        ([1, 2], [1, 2, 3, 4], 2),
        ([], [5], 0),
        ([], [], None),
    ],
)
def test_first_divergence(a, b, expected):
    assert first_divergence(a, b) == expected


def test_repeated_ngram_share_is_zero_without_repetition():
    assert repeated_ngram_share(list(range(20)), n=2) == 0.0
    assert repeated_ngram_share([5, 6, 7], n=2, context=[1, 2, 3]) == 0.0


def test_repeated_ngram_share_is_one_for_a_loop_seen_in_the_context():
    assert repeated_ngram_share([1, 2, 3, 1, 2, 3], n=3, context=[1, 2, 3, 1, 2, 3]) == 1.0
    assert repeated_ngram_share([4] * 10, n=2, context=[4, 4]) == 1.0


def test_repeated_ngram_share_counts_generated_ngrams_exactly():
    # 1 2 3 1 2 3 1 2 3: trigrams 123 231 312 are new, the next four repeat them
    assert repeated_ngram_share([1, 2, 3] * 3, n=3) == pytest.approx(4 / 7)
    # n-grams that straddle the context boundary count as generated, and can repeat context
    # full = 1 2 | 1 2 9: generated bigrams (2,1), (1,2), (2,9); only (1,2) was seen before
    assert repeated_ngram_share([1, 2, 9], n=2, context=[1, 2]) == pytest.approx(1 / 3)
    assert repeated_ngram_share([7] * 6, n=4) == pytest.approx(2 / 3)


def test_repeated_ngram_share_of_too_short_output_is_zero():
    assert repeated_ngram_share([1, 2], n=4) == 0.0
    assert repeated_ngram_share([], n=2, context=[1, 2, 3]) == 0.0
