"""The study's own pieces: the adaptive-K drafter stays lossless, the multi-draft teacher-forced
agreement equals experiments.teacher_forced_agreement, and the first-token distribution check
accepts exact speculative sampling and rejects a broken sampler."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch
from scipy.stats import chi2 as chi2_dist

from specdec_lib import study
from specdec_lib.cache import CachedLM
from specdec_lib.config import SamplingConfig
from specdec_lib.decode import speculative_decode
from specdec_lib.drafters import BigramDrafter, ModelDrafter, NoDrafter
from specdec_lib.drafters.adaptive import AdaptiveDrafter
from specdec_lib.experiments import teacher_forced_agreement
from tests.conftest import random_prompt


def test_adaptive_k_is_lossless_and_adapts(target64, draft64, single_thread):
    prompt = random_prompt(3, 12)
    base = speculative_decode(CachedLM(target64), NoDrafter(), prompt, k=1, max_new_tokens=40)
    ad = AdaptiveDrafter(ModelDrafter(draft64), k_start=2, k_min=1, k_max=6)
    out = speculative_decode(CachedLM(target64), ad, prompt, k=6, max_new_tokens=40)
    assert out.tokens == base.tokens
    assert set(ad.trace) <= set(range(1, 7))
    # a draft that is the target itself is always accepted in full: K climbs to its maximum
    full = AdaptiveDrafter(ModelDrafter(target64), k_start=1, k_max=5)
    out = speculative_decode(CachedLM(target64), full, prompt, k=5, max_new_tokens=40)
    assert out.tokens == base.tokens
    assert full.trace[:5] == [1, 2, 3, 4, 5]


def test_adaptive_k_shrinks_after_rejection():
    ad = AdaptiveDrafter(NoDrafter(), k_start=4, k_min=1, k_max=8)
    ad.begin([1])
    ad.observe([1], 4, 0)
    assert ad.k == 3
    ad.observe([1], 3, 3)
    assert ad.k == 4
    ad.observe([1], 4, 2)  # accepted half: unchanged
    assert ad.k == 4
    with pytest.raises(Exception, match="adaptive K"):
        AdaptiveDrafter(NoDrafter(), k_start=9, k_max=8)


def test_agreements_match_teacher_forced_agreement(target64, draft64):
    prefix, cont = random_prompt(5, 10), random_prompt(6, 8)
    bigram = BigramDrafter.fit(random_prompt(7, 400), 96)
    predicts = {
        "model": study.draft_predictor(ModelDrafter(draft64)),
        "bigram": study.draft_predictor(bigram),
    }
    got = study.agreements(target64, predicts, prefix, cont)
    for name, predict in predicts.items():
        assert got[name] == pytest.approx(teacher_forced_agreement(target64, predict, prefix, cont))
    # the target's own greedy continuation agrees with itself everywhere
    from tests.conftest import stepwise_greedy

    own = stepwise_greedy(target64, prefix, 8)
    assert study.agreements(target64, {}, prefix, own)["target_vs_reference"] == 1.0


def test_distribution_test_accepts_exact_samples_and_rejects_wrong_ones():
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(20))
    good = rng.choice(20, size=4000, p=p).tolist()
    r = study.distribution_test(good, p)
    assert chi2_dist.sf(r["chi2"], r["dof"]) > 1e-3 and r["tvd"] < 0.06
    wrong = rng.choice(20, size=4000, p=np.roll(p, 1)).tolist()
    r = study.distribution_test(wrong, p)
    assert chi2_dist.sf(r["chi2"], r["dof"]) < 1e-6 and r["tvd"] > 0.1


@pytest.mark.parametrize("temperature", [0.7, 1.0])
def test_first_token_samples_follow_the_target(fake_target, fake_draft, temperature):
    """Speculative sampling through the library's drafter and verifier: the first emitted token
    over many seeds follows the target's exact distribution (and so does plain sampling)."""
    sampling = SamplingConfig(temperature=temperature)
    prompt = [1, 2, 3]
    spec = SimpleNamespace(
        lm=CachedLM(fake_target, use_cache=False),
        drafter=ModelDrafter(fake_draft, use_cache=False),
    )
    plain = SimpleNamespace(lm=CachedLM(fake_target, use_cache=False), drafter=NoDrafter())
    p = study.exact_next_probs(spec, prompt, sampling)
    assert p.sum() == pytest.approx(1.0)
    for gen, k in ((spec, 3), (plain, 0)):
        samples = study.first_token_samples(gen, prompt, k, sampling, range(3000))
        r = study.distribution_test(samples, p)
        assert chi2_dist.sf(r["chi2"], r["dof"]) > 1e-3, (k, r)
    # the check has power: the draft's own distribution is not the target's
    q = torch.softmax(fake_draft.table[prompt[-1]] / temperature, -1).numpy()
    g = torch.Generator().manual_seed(0)
    draws = torch.multinomial(torch.tensor(q), 3000, replacement=True, generator=g).tolist()
    r = study.distribution_test(draws, p)
    assert chi2_dist.sf(r["chi2"], r["dof"]) < 1e-3


def test_arm_names_and_profiles():
    assert study.arm_name("model:google/gemma-3-1b-pt") == "gemma-3-1b-pt"
    assert study.arm_name("self:6:16384") == "self"
    for name in ("embedded", "colab-t4", "smoke"):
        prof = study.load_profile(name)
        assert {"target", "drafts", "experiments"} <= prof.keys()
        assert set(prof["experiments"]) == {
            "baseline", "bigram", "transformer_draft", "context_sweep",
            "context_sweep_nocache", "agreement", "k_sweep", "sampling", "peers",
        }  # fmt: skip
        sweep = prof["experiments"]["context_sweep"]["contexts"]
        assert 20 in sweep and 20 in prof["experiments"]["context_sweep_nocache"]["contexts"]


def test_notebooks_match_their_generator():
    """notebooks/*.ipynb are what notebooks/make_notebooks.py writes, without outputs, each with
    exactly one `parameters` cell of typed literals."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [sys.executable, str(root / "notebooks" / "make_notebooks.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    for name in study.EXPERIMENTS:
        nb = json.loads((root / "notebooks" / f"{name}.ipynb").read_text())
        code = [c for c in nb["cells"] if c["cell_type"] == "code"]
        assert all(not c["outputs"] and c["execution_count"] is None for c in code)
        params = [c for c in code if "parameters" in c["metadata"].get("tags", [])]
        assert len(params) == 1
        for line in "".join(params[0]["source"]).splitlines():
            assert ": " in line.split("=")[0] and line.split("#")[0].count("=") == 1, line
        assert "colab-badge.svg" in "".join(nb["cells"][0]["source"])
        assert "google.colab" in "".join(code[0]["source"])
