"""Can the smoke sampling run's distribution check fail? tests/test_notebooks.py asks the smoke
batch's first-token check to pass (p above 0.1%); this runs the same check, on the same seeds
(`experiments.speculative_sampling._check`: the baseline, then the self-draft and bigram arms,
K = 1), on the smoke profile's tiny target with the smoke counts (2 prompts x 200 samples), with
the library's verifier and with a broken one that accepts every draft, and says what that
assertion can and cannot see.

Measured on the smoke target (seeded, so reproducible), per count of samples a prompt:

- 50 (the counts before issue 26's finding 9): at T = 0.7 the check pooled the vocabulary into 2
  bins on one prompt (dof 1) and the verifier with no rejection test passed (bigram arm, p 0.014);
  at T = 1.0 no token reached an expected count of 5 (dof 0, p None: nothing tested).
- 200 (now): at T = 0.7 dof 9, and that verifier is rejected on the bigram arm (p 1e-22) and on
  the self-draft arm (p 8.5e-6; on 8 other seed sets, 6 rejected); the library's verifier passes
  (p 0.14 / 0.43 / 0.31 for baseline / self / bigram). At T = 1.0 dof 2, and it is not rejected
  (bigram p 0.0011, self 0.10): the smoke assertion still cannot catch it there.
- 250 or 300 would test T = 1.0 too (the broken verifier's bigram arm at 300: p 2e-8), but there
  the library's verifier fails on the bigram arm (p 1.3e-6 and 3e-6): the first 300 seeds of its
  first prompt draw token 1293 18 times where 6.1 are expected. With 2000 samples the same
  prompt passes (p 0.86), and of 149 other windows of 300 seeds none gave p below 0.01: a
  false alarm of those seeds, not of the verifier (of 40 windows starting at round millions one
  other gave 6.7e-4), but a check that fails on the library's own sampler cannot be the smoke
  assertion.

Cost (`study.run(study_run, "sampling")` on the smoke profile, one thread, 2 runs each): 50 samples
5.9 s CPU, 200 samples 9.8 s CPU, so about 4 s more per sampling run; CI computes it about four
times (tests/test_notebooks.py's batch, tests/test_resume.py's kill, resume and whole run, `make
evaluate PROFILE=smoke`), under 30 s in all. smoke-pair keeps its own counts (1 x 40 at T = 1.0:
nothing tested). The subtle bug that tests/test_verify.py catches, accepting at min(1, 1.25 p / q),
is far below what these counts see (measured at 50 samples: p 0.46 on the bigram arm, 0.23 on the
self-draft arm): tests/test_verify.py and tests/test_shared.py are what test the verifier."""

from __future__ import annotations

import pytest
import torch

from specdec_lib.config import SamplingConfig
from specdec_lib.core import decode
from specdec_lib.core.sampling import sample
from specdec_lib.core.verify import Verdict
from specdec_study import study
from specdec_study.experiments import speculative_sampling as sampling
from specdec_study.runner.lab import Lab
from specdec_study.runner.prompts import prompts_for
from specdec_study.runner.session import Session, build_arms, load_target

THRESHOLD = 1e-3  # tests/test_notebooks.py: a lossless sampler is not rejected at 0.1%
SMOKE_COUNTS = (2, 200, 1)  # (prompts, samples a prompt, K): profiles/smoke.yaml


def accept_every_draft(draft, q, p, generator):
    """A broken verifier: no rejection test at all."""
    return Verdict(len(draft), sample(p[len(draft)], generator))


@pytest.fixture(scope="module")
def smoke_check(tmp_path_factory):
    """The smoke profile's sampling check as its run computes it: (config, run), run(verifier,
    temperature) -> {method: its check, n_samples_per_prompt, n_prompts}."""
    S = Session(study.load_profile("smoke"), tmp_path_factory.mktemp("results"))
    threads = torch.get_num_threads()
    torch.set_num_threads(S.profile["threads"])  # as the smoke batch runs (one thread)
    lab = Lab(S, sampling.sampling)
    cfg = sampling.config(lab)
    loaded = load_target(S)
    arms = build_arms(S, loaded, sampling.sampling_specs(lab), cfg["k"])
    prompts = prompts_for(S, loaded, cfg["n_prompts"], cfg["context_tokens"])

    def run(verifier, t: float) -> dict:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(decode, "speculative_verify", verifier)
            check, _ = sampling._check(
                lab, cfg, arms, prompts, SamplingConfig(temperature=t, seed=cfg["seed"]), t
            )
        return check

    try:
        yield cfg, run
    finally:
        torch.set_num_threads(threads)


def test_the_smoke_counts_are_the_measured_ones(smoke_check):
    """The numbers in this module's docstring were measured at these counts."""
    cfg, _ = smoke_check
    dist = cfg["distribution"]
    assert (dist["n_prompts"], dist["n_samples"], dist["k"]) == SMOKE_COUNTS
    assert cfg["temperatures"] == [0.7, 1.0] and set(dist["arms"]) == {"self", "bigram"}


def test_at_t_0_7_the_smoke_check_rejects_a_verifier_with_no_rejection_test(smoke_check):
    """The smoke assertion can fail: at T = 0.7 the library's verifier passes on every arm and a
    verifier that accepts every draft is rejected below 0.1% on both draft arms. At the old
    counts (2 x 50) this failed: that verifier's bigram arm had p 0.014 (seen failing)."""
    _, run = smoke_check
    good = run(decode.speculative_verify, 0.7)
    assert all(good[m]["p_value"] > THRESHOLD for m in ("baseline", "self", "bigram")), good
    bad = run(accept_every_draft, 0.7)
    assert bad["bigram"]["p_value"] < THRESHOLD, bad["bigram"]
    assert bad["self"]["p_value"] < THRESHOLD, bad["self"]
    assert bad["baseline"]["p_value"] > THRESHOLD  # drafts nothing: the broken verifier unused


def test_at_t_1_0_the_smoke_check_tests_little_and_misses_that_verifier(smoke_check):
    """The limit that remains, measured: at T = 1.0 the check has 2 dof (0 at the old counts)
    and the library's verifier passes, but the verifier with no rejection test passes too
    (bigram arm p 0.0011). If this starts failing, the counts or the seeds changed: measure
    again and update the docstrings."""
    _, run = smoke_check
    good = run(decode.speculative_verify, 1.0)
    assert all(good[m]["p_value"] > THRESHOLD for m in ("baseline", "self", "bigram")), good
    assert all(good[m]["dof"] >= 1 for m in ("baseline", "self", "bigram")), good
    bad = run(accept_every_draft, 1.0)
    assert bad["bigram"]["p_value"] > THRESHOLD and bad["self"]["p_value"] > THRESHOLD, bad
