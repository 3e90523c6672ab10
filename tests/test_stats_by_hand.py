"""analysis.stats' distances worked out by hand (a survivor of `make mutation`)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from specdec_study.analysis import stats

P = np.array([0.5, 0.25, 0.25, 0.0])


def test_tvd_by_hand():
    """Samples 0, 0, 1, 3 against p = (1/2, 1/4, 1/4, 0): empirical (1/2, 1/4, 0, 1/4), so
    TVD = 1/2 (|1/2 - 1/2| + |1/4 - 1/4| + |0 - 1/4| + |1/4 - 0|) = 1/4; the third term is p's mass
    on unseen tokens. Samples 0, 0, 1, 2 match p exactly: 0.
    Catches: counts multiplied by n instead of divided, the unseen mass subtracted, not added."""
    assert stats.tvd([0, 0, 1, 3], P) == pytest.approx(0.25)
    assert stats.tvd([0, 0, 1, 2], P) == pytest.approx(0.0)
    assert stats.tvd([3, 3], P) == pytest.approx(1.0)  # all mass where p has none


# The survivors of `make mutation` on stats.py (38/72 killed before these), each by hand.


def test_distinct_resamples_by_hand():
    """Multisets of n from n units, C(2n - 1, n): 0 for no units, 1, 3 (aa, ab, bb), 10.
    Catches: C(2n - 2, n) (0, 0, 4 at n = 1, 2, 3), n >= 0 (math.comb(-1, 0) raises), the
    guard n > 1 (0 at n = 1), 1 instead of 0 for no units."""
    assert [stats.distinct_resamples(n) for n in range(4)] == [0, 1, 3, 10]


def test_bca_needs_two_units_and_as_many_distinct_resamples_as_drawn():
    """Two units have 3 distinct resamples: BCa when 3 are drawn, not 4; one unit never.
    Catches: `n >= 2` written `n > 2` or `n >= 3`, `distinct >= drawn` written `>`."""
    assert stats.bca_allowed(2, n_resamples=3) and not stats.bca_allowed(2, n_resamples=4)
    assert not stats.bca_allowed(1, n_resamples=1)


def test_one_unit_keeps_its_value_and_none_is_nan_on_zero_units():
    """One prompt: its value, n = 1, no interval. No prompt: NaN, n = 0.
    Catches: the no-unit branch taken at n == 1 (value NaN, n 0), n = 1 reported for none."""
    one = stats.mean([3.0])
    assert (one.value, one.n, one.method) == (3.0, 1, "none")
    none = stats.mean([])
    assert math.isnan(none.value) and (none.n, none.method) == (0, "none")


def test_a_constant_ratio_of_large_values_is_constant_despite_rounding():
    """sum(3e6 x) / sum(x) is 3e6 on every resample, up to rounding of about 1e-9: the tolerance
    1e-12 scales with the value, so the interval is the value, method "constant".
    Catches: the tolerance divided by the value (1e-12 / 3e6), which calls rounding a spread."""
    x = np.random.default_rng(0).uniform(1.0, 2.0, size=30)
    iv = stats.pooled_ratio(3e6 * x, x)
    assert iv.method == "constant" and iv.low == iv.high == iv.value
    assert iv.value == pytest.approx(3e6)


def test_pooled_bins_by_hand_at_the_edges():
    """n = 20 at p = (1/4, 1/2, 1/4): expected 5, 10, 5, each exactly min_expected, so each its
    own bin, and a token never seen observes 0. n = 40 at p = (1/2, 3/8, 1/16, 1/16): the two
    rare tokens pool to exactly 5, which is a bin of its own (not merged). p given unnormalised
    (doubled) gives the same bins.
    Catches: `expected >= min_expected` written `>`, `rest < min_expected` written `<=`, an
    unseen token counted 1, expected counts multiplied by sum(p) instead of divided."""
    obs, exp = stats.pooled_bins([1] * 20, np.array([0.25, 0.5, 0.25]))
    assert exp.tolist() == [5.0, 10.0, 5.0] and obs.tolist() == [0.0, 20.0, 0.0]
    samples = [0] * 20 + [1] * 15 + [2] * 3 + [3] * 2
    for p in (np.array([0.5, 0.375, 0.0625, 0.0625]), np.array([1.0, 0.75, 0.125, 0.125])):
        obs, exp = stats.pooled_bins(samples, p)
        assert exp.tolist() == [20.0, 15.0, 5.0] and obs.tolist() == [20.0, 15.0, 5.0]


def test_two_bins_are_a_test_with_one_degree_of_freedom():
    """Ten of each of two equally likely tokens: two bins, dof 1, chi2 0, p-value 1.
    Catches: a test only from three bins (`obs.size < 2` written `<= 2` or `< 3`)."""
    r = stats.goodness_of_fit([0] * 10 + [1] * 10, np.array([0.5, 0.5]))
    assert (r["n_bins"], r["dof"], r["chi2"]) == (2, 1, 0.0)
    assert r["p_value"] == pytest.approx(1.0)


def test_power_at_one_degree_of_freedom_by_hand():
    """dof 1: the statistic is (Z + sqrt(lambda))^2, so 80% power at 5% needs
    lambda = (z_0.975 + z_0.8)^2 = (1.960 + 0.842)^2 = 7.849 (up to the far tail); one sample
    detects TVD sqrt(7.849 / 4) = 1.40; TVD 0.05 needs ceil(7.849 / (4 * 0.05^2)) = 785 samples;
    no sample or no dof detects nothing.
    Catches: dof 1 treated as no test (`dof < 1` written `<= 1` or `< 2`, in
    noncentrality_for_power or detectable_tvd), one sample treated as none, the target TVD cubed
    in samples_to_detect."""
    lam = (1.959963984540054 + 0.8416212335729143) ** 2
    assert stats.noncentrality_for_power(1) == pytest.approx(lam, rel=1e-4)
    assert stats.detectable_tvd(1, 1) == pytest.approx(math.sqrt(lam / 4), rel=1e-4)
    assert stats.samples_to_detect(0.05, 1) == 785
    assert math.isnan(stats.detectable_tvd(0, 1)) and math.isnan(stats.detectable_tvd(1, 0))
