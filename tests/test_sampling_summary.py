"""The sampling experiment's summary pieces (`experiments.speculative_sampling`): the TVD of two
distributions of different widths, and a drafting method's check, which says it detects its
unverified drafts only when every prompt's unverified TVD exceeds what the combined test can
detect."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as sps

from specdec_study.analysis import stats
from specdec_study.experiments.speculative_sampling import method_check, tvd_between


def test_tvd_between_pads_the_narrower_distribution():
    """By hand: p = (0.5, 0.3, 0.2), q = (0.6, 0.4) padded with a 0: 0.5 x (0.1 + 0.1 + 0.2) =
    0.2. Planted bug it catches (seen failing): q cut to p's width instead of padded (the
    narrower one's missing mass ignored, 0.1)."""
    assert tvd_between(np.array([0.5, 0.3, 0.2]), np.array([0.6, 0.4])) == pytest.approx(0.2)
    assert tvd_between(np.array([0.6, 0.4]), np.array([0.5, 0.3, 0.2])) == pytest.approx(0.2)
    assert tvd_between(np.array([1.0]), np.zeros(3)) is None  # nothing proposed


def goodness_fits(n: int, seeds: int) -> list[dict]:
    p = np.array([0.4, 0.3, 0.2, 0.1])
    rng = np.random.default_rng(0)
    return [stats.goodness_of_fit(rng.choice(4, n, p=p).tolist(), p) for _ in range(seeds)]


def test_detects_unverified_only_when_every_prompt_lies_beyond_the_detectable_tvd():
    """With 3 prompts of 400 samples the combined test detects some TVD d; unverified drafts at
    2d on every prompt are detected, one prompt at d / 2 or without a value is not. Planted bugs
    it catches (each seen failing): the mean instead of the minimum compared with d, a prompt
    without a value skipped."""
    tests = goodness_fits(400, 3)
    d = method_check(tests, [], drafts=True)["detectable_tvd"]
    # d is the TVD at which the combined test (1200 samples, the prompts' summed dof) has 80%
    # power at alpha 0.05: the noncentral chi-square at lambda = 4 n d^2 (stats.detectable_tvd's
    # bound) rejects with probability 0.8. Planted bug it catches (seen failing): d from one
    # prompt's 400 samples instead of the pooled 1200 (sqrt(3) too large, power ~0.99).
    dof = sum(t["dof"] for t in tests)
    crit = sps.chi2.isf(0.05, dof)
    assert sps.ncx2.sf(crit, dof, 4 * 1200 * d**2) == pytest.approx(0.8, abs=1e-6)
    assert method_check(tests, [2 * d] * 3, drafts=True)["detects_unverified"] is True
    assert method_check(tests, [3 * d, 3 * d, d / 2], drafts=True)["detects_unverified"] is False
    assert method_check(tests, [2 * d, 2 * d, None], drafts=True)["detects_unverified"] is False
    chk = method_check(tests, [2 * d, 4 * d, 2 * d], drafts=True)
    assert chk["tvd_unverified"] == pytest.approx(8 * d / 3)
    assert chk["tvd"] == pytest.approx(np.mean([t["tvd"] for t in tests]))
    assert "detects_unverified" not in method_check(tests, [], drafts=False)
