"""Can the smoke sampling run's distribution check fail? tests/test_notebooks.py asks the smoke
batch's first-token check to pass (p above 0.1%); this runs the same check
(`runner.distribution.distribution_checks`) on the smoke profile's tiny target with the smoke
counts (2 prompts x 50 samples, K = 1) on its bigram arm, with the library's verifier and with a
broken one, and says what that assertion can and cannot see.

Measured on the smoke target (seeded, so reproducible): the 2048-word distribution is nearly
flat, so at T = 0.7 the check pools it into 2 bins on one prompt (dof 1, detectable TVD about
0.2) and at T = 1.0 no token reaches the expected count of a bin of its own (dof 0, p None: the
smoke assertion cannot fail there). Even a verifier with no rejection test (first token = the
bigram's point mass) is not rejected at 0.1% with these counts (p about 0.014); with 500 samples a
prompt it is. The subtle bug that tests/test_verify.py catches, accepting at min(1, 1.25 p / q),
left the smoke check's p unchanged on the bigram arm (0.46) and at 0.23 on the self-draft arm
(one run each at T = 0.7): its power there is about its level. The smoke assertion is a
tripwire for gross errors at larger counts; tests/test_verify.py and tests/test_shared.py are
what test the verifier.
"""

from __future__ import annotations

import pytest

from specdec_lib import study
from specdec_lib.config import SamplingConfig
from specdec_lib.core import decode
from specdec_lib.core.sampling import sample
from specdec_lib.core.verify import Verdict
from specdec_lib.runner.context import Study, build_arms, load_target
from specdec_lib.runner.distribution import distribution_checks
from specdec_lib.runner.prompts import prompts_for
from specdec_lib.runner.sampling import sampling_config

THRESHOLD = 1e-3  # tests/test_notebooks.py: a lossless sampler is not rejected at 0.1%


def accept_every_draft(draft, q, p, generator):
    """A broken verifier: no rejection test at all."""
    return Verdict(len(draft), sample(p[len(draft)], generator))


@pytest.fixture(scope="module")
def smoke_check(tmp_path_factory):
    """The smoke profile's sampling check, restricted to its bigram arm: (run, generators,
    prompts), run(verifier, temperature) -> {method: its check}."""
    S = Study(study.load_profile("smoke"), tmp_path_factory.mktemp("results"))
    cfg = sampling_config(S)
    loaded = load_target(S)
    base, bigram = build_arms(S, loaded, {"bigram": cfg["arms"]["bigram"]}, cfg["k"])
    dist = cfg["distribution"]
    gens = {"baseline": (base.generator, 0), "bigram": (bigram.generator, dist["k"])}
    prompts = prompts_for(S, loaded, cfg["n_prompts"], cfg["context_tokens"])[: dist["n_prompts"]]

    def run(verifier, t: float, n_samples: int = dist["n_samples"]) -> dict:
        mp = pytest.MonkeyPatch()
        mp.setattr(decode, "speculative_verify", verifier)
        try:
            checks, _ = distribution_checks(
                gens, prompts, SamplingConfig(temperature=t, seed=cfg["seed"]), n_samples, t
            )
        finally:
            mp.undo()
        return checks

    assert (dist["n_prompts"], dist["n_samples"], dist["k"]) == (2, 50, 1)  # the smoke counts
    return run, gens, prompts


def test_at_the_smoke_counts_even_accepting_every_draft_is_not_rejected(smoke_check):
    """The limit of the smoke assertion, measured: with 2 x 50 samples at T = 0.7 the library's
    verifier passes, and so does (p about 0.014, above 0.1%) a verifier with no rejection test,
    whose first token is the bigram's point mass: the drafted token sits in the pooled bin. At
    T = 1.0 nothing is tested (dof 0, p None). If this starts failing, the smoke counts gained
    power: update the docstrings here and in test_notebooks.py."""
    run, _, _ = smoke_check
    good = run(decode.speculative_verify, 0.7)
    assert good["bigram"]["p_value"] > THRESHOLD and good["baseline"]["p_value"] > THRESHOLD
    bad = run(accept_every_draft, 0.7)
    assert THRESHOLD < bad["bigram"]["p_value"] < 0.05, bad["bigram"]
    at_1 = run(accept_every_draft, 1.0)
    assert all(c["p_value"] is None for c in at_1.values() if isinstance(c, dict)), at_1


def test_with_ten_times_the_samples_the_same_check_fails_that_verifier(smoke_check):
    """The assertion can fail: the same check on the same target and prompts with 500 samples a
    prompt rejects the verifier with no rejection test far below 0.1% (planted bug, seen
    failing), while the library's verifier and the baseline pass."""
    run, _, _ = smoke_check
    bad = run(accept_every_draft, 0.7, 500)
    assert bad["bigram"]["p_value"] < THRESHOLD, bad["bigram"]
    assert bad["baseline"]["p_value"] > THRESHOLD
    good = run(decode.speculative_verify, 0.7, 500)
    assert good["bigram"]["p_value"] > THRESHOLD, good["bigram"]
