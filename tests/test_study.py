"""The study's own pieces: the adaptive-K drafter stays lossless, the multi-draft teacher-forced
agreement equals experiments.teacher_forced_agreement, and the first-token distribution check
accepts exact speculative sampling and rejects a broken sampler."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch
from scipy.stats import chi2 as chi2_dist

from specdec_lib.config import SamplingConfig
from specdec_lib.core import decode
from specdec_lib.core.cache import CachedLM
from specdec_lib.core.decode import speculative_decode
from specdec_lib.core.draft import NoDrafter
from specdec_lib.core.sampling import sample, uniform
from specdec_lib.core.verify import Verdict
from specdec_lib.drafters.adaptive import AdaptiveDrafter
from specdec_lib.drafters.bigram import BigramDrafter
from specdec_lib.drafters.model import ModelDrafter
from specdec_lib.drafters.self_draft import SelfDrafter
from specdec_lib.measure.paired import teacher_forced_agreement
from specdec_study import study
from specdec_study.analysis import stats
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


def test_teacher_forced_guesses_read_exits_exactly_as_the_exit_drafts_compute(target64, draft64):
    """Early exits and the pruned self-draft read from the target's forward give the same
    guesses as each drafter's own forward; a separate model and a bigram match their own
    teacher-forced predictions; the target's guesses are its argmax."""
    seq = random_prompt(5, 30)
    n = 12
    keep = torch.arange(0, 96, 2)
    drafters = {
        "exit1": SelfDrafter(target64, n_layers=1, vocab_size=96),
        "exit3": SelfDrafter(target64, n_layers=3, vocab_size=96),
        "self_pruned": SelfDrafter(target64, n_layers=4, vocab_size=96, keep_ids=keep),
        "model": ModelDrafter(draft64),
        "bigram": BigramDrafter.fit(random_prompt(7, 400), 96),
    }
    assert study.draft_kind(drafters["exit1"], target64) == study.EXIT
    assert study.draft_kind(drafters["self_pruned"], target64) == study.SHARED
    assert study.draft_kind(drafters["model"], target64) == study.SEPARATE
    assert study.draft_kind(drafters["bigram"], target64) == study.CONTROL
    target_next, guesses = study.teacher_forced_guesses(target64, drafters, seq, n)
    x = torch.tensor([seq])
    with torch.inference_mode():
        want_t = target64(input_ids=x, use_cache=False).logits[0, -n:].argmax(-1).tolist()
        assert target_next == want_t
        for name in ("exit1", "exit3", "self_pruned", "model"):
            d = drafters[name]
            logits = d.lm.model(input_ids=x, use_cache=False).logits[0, -n:]
            best = logits.argmax(-1)
            own = (d.token_map[best] if d.token_map is not None else best).tolist()
            assert guesses[name] == own, name
    assert guesses["bigram"] == [drafters["bigram"].next_of(t) for t in seq[-n:]]
    assert all(g % 2 == 0 for g in guesses["self_pruned"])  # only kept ids
    # agreement with the target, as the older one-draft function computes it
    prefix, cont = seq[: len(seq) - n + 1], seq[len(seq) - n + 1 :]
    tf = teacher_forced_agreement(target64, study_predict(draft64), prefix, [*cont, 0])
    got = np.mean([a == b for a, b in zip(target_next, guesses["model"], strict=True)])
    assert got == pytest.approx(tf)


def study_predict(model):
    def predict(ids):
        with torch.inference_mode():
            return (
                model(input_ids=torch.tensor([ids]), use_cache=False).logits[0].argmax(-1).tolist()
            )

    return predict


def _agreement_rows(n_docs, contexts, level, rng):
    rows = []
    for i in range(n_docs):
        for c in contexts:
            m = (rng.random(64) < level(c)).astype(int)
            rows.append(
                {"prompt": i, "context": c, "draft": "d", "agreement": m.mean(), "positions": 64}
            )
    return rows


def test_agreement_summary_reports_implied_acceptance_and_paired_change_with_n():
    rng = np.random.default_rng(0)
    ctx = [10, 20, 50, 100, 200]
    rows = _agreement_rows(40, ctx, lambda c: 0.8 - 0.002 * c, rng)
    s = study.agreement_summary(rows, ctx, k=4, test_range=[10, 100])
    cell = s["by_draft"]["d"]["10"]
    assert cell["n_documents"] == 40
    a = cell["mean"]
    assert cell["implied_acceptance"] == pytest.approx((a - a**5) / (4 * (1 - a)))
    assert (
        cell["implied_acceptance_ci_low"]
        < cell["implied_acceptance"]
        < cell["implied_acceptance_ci_high"]
    )
    ch = s["headline"]["d"]["change_test"]
    assert ch["contexts"] == [10, 100] and ch["agreement"]["n"] == 40
    assert ch["agreement"]["ci_low"] < -0.18 < ch["agreement"]["ci_high"]  # truth: -0.18
    assert ch["implied_acceptance"]["ci_high"] < 0
    flat = study.agreement_summary(
        _agreement_rows(40, ctx, lambda c: 0.6, rng), ctx, k=4, test_range=[10, 100]
    )
    f = flat["headline"]["d"]["change_test"]["implied_acceptance"]
    assert f["ci_low"] < 0 < f["ci_high"]


def test_distribution_test_accepts_exact_samples_and_rejects_wrong_ones():
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(20))
    good = rng.choice(20, size=4000, p=p).tolist()
    r = stats.goodness_of_fit(good, p)
    assert chi2_dist.sf(r["chi2"], r["dof"]) > 1e-3 and r["tvd"] < 0.06
    wrong = rng.choice(20, size=4000, p=np.roll(p, 1)).tolist()
    r = stats.goodness_of_fit(wrong, p)
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
        r = stats.goodness_of_fit(samples, p)
        assert chi2_dist.sf(r["chi2"], r["dof"]) > 1e-3, (k, r)
    # the check has power: the draft's own distribution is not the target's
    q = torch.softmax(fake_draft.table[prompt[-1]] / temperature, -1).numpy()
    g = torch.Generator().manual_seed(0)
    draws = torch.multinomial(torch.tensor(q), 3000, replacement=True, generator=g).tolist()
    r = stats.goodness_of_fit(draws, p)
    assert chi2_dist.sf(r["chi2"], r["dof"]) < 1e-3


def _accepts_every_draft(draft, q, p, generator):
    """A broken verifier: no rejection test at all."""
    return Verdict(len(draft), sample(p[len(draft)], generator))


def _resamples_from_p(draft, q, p, generator):
    """A broken verifier: the right rejection test, but a rejected token is replaced by a draw
    from p instead of from the residual max(0, p - q)."""
    k = len(draft)
    u = uniform(k, generator)
    for i in range(k):
        qx = float(q[i, draft[i]]) if q is not None else 1.0
        if u[i] * qx >= float(p[i, draft[i]]):
            return Verdict(i, sample(p[i], generator))
    return Verdict(k, sample(p[k], generator))


@pytest.mark.parametrize("broken", [_accepts_every_draft, _resamples_from_p])
def test_distribution_check_fails_a_broken_verifier(fake_target, fake_draft, monkeypatch, broken):
    """The study's check, on a draft whose q differs from the target's p: the library's verifier
    passes, a broken one fails, and the baseline (which never drafts) passes either way. The
    check states that it can see the difference: the TVD of an unverified draft exceeds the
    smallest TVD it detects."""
    sampling = SamplingConfig(temperature=1.0)
    prompts = [SimpleNamespace(ids=[1, 2, 3]), SimpleNamespace(ids=[4, 5])]

    def gens():
        plain = SimpleNamespace(lm=CachedLM(fake_target, use_cache=False), drafter=NoDrafter())
        spec = SimpleNamespace(
            lm=CachedLM(fake_target, use_cache=False),
            drafter=ModelDrafter(fake_draft, use_cache=False),
        )
        return {"baseline": (plain, 0), "model": (spec, 3)}

    good, rows = study.distribution_checks(gens(), prompts, sampling, 1500, 1.0)
    assert good["model"]["p_value"] > 1e-3 and good["baseline"]["p_value"] > 1e-3
    assert good["model"]["detects_unverified"]
    assert good["model"]["tvd_unverified"] > good["model"]["detectable_tvd"]
    assert good["model"]["n_samples"] == 3000 and len(rows) == 4
    monkeypatch.setattr(decode, "speculative_verify", broken)
    bad, _ = study.distribution_checks(gens(), prompts, sampling, 1500, 1.0)
    assert bad["model"]["p_value"] < 1e-6, bad["model"]
    assert bad["baseline"]["p_value"] > 1e-3


def test_methods_get_their_own_seeds(fake_target):
    """Two methods never share random draws (a shared seed once made the baseline's and the
    speculative arm's statistics identical): the same sampler under two method names gives
    different samples."""
    sampling = SamplingConfig(temperature=1.0)
    plain = SimpleNamespace(lm=CachedLM(fake_target, use_cache=False), drafter=NoDrafter())
    _, rows = study.distribution_checks(
        {"a": (plain, 0), "b": (plain, 0)}, [SimpleNamespace(ids=[1, 2])], sampling, 300, 1.0
    )
    assert rows[0]["chi2"] != rows[1]["chi2"]


def test_arm_names_and_profiles():
    assert study.arm_name("model:google/gemma-3-1b-pt") == "gemma-3-1b-pt"
    assert study.arm_name("self:6:16384") == "self"
    for name in ("embedded", "colab-t4", "smoke"):
        prof = study.load_profile(name)
        assert {"target", "drafts", "experiments"} <= prof.keys()
        assert set(prof["experiments"]) == {
            "baseline", "bigram", "transformer_draft", "context_sweep",
            "context_sweep_nocache", "agreement", "k_sweep", "sampling", "peers",
            "implementations",
        }  # fmt: skip
        S = study.Session(prof, study.ROOT / "results")
        on, off = (study.RUNNERS[e].config(S) for e in ("context_sweep", "context_sweep_nocache"))
        assert 20 in on["contexts"] and 10 in on["contexts"] and 100 in on["contexts"]
        for key in ("contexts", "max_new_tokens", "anchor_min", "anchor_room"):
            assert on[key] == off[key], (name, key)  # the cache-off run: the very same prompts
        for c, n in off["n_prompts_by_context"].items():  # or the first of them
            assert 1 <= n <= on["n_prompts_by_context"][c], (name, c)
        assert on["use_cache"] is not off["use_cache"]
        agr = prof["experiments"]["agreement"]
        assert agr["primary"] in agr["drafts"] and agr["test_range"] == [10, 100]


def test_embedded_configs_match_committed_results():
    """`make evaluate` reuses the committed results/embedded directories: every experiment's
    config, built from the embedded profile as a notebook builds it (no overrides, no model
    loaded), equals the committed config.json, hashes to its config_hash, and the store calls
    the directory done for it."""
    import json

    from specdec_lib.config import config_hash
    from specdec_study.results.catalog import EXPERIMENTS
    from specdec_study.runner.experiments import RUNNERS

    S = study.Session(study.load_profile("embedded"), study.ROOT / "results")
    for experiment in EXPERIMENTS:
        saved = json.loads((S.store.dir(experiment) / "config.json").read_text())
        cfg = RUNNERS[experiment].config(S)
        want = {k: v for k, v in saved.items() if k != "config_hash"}
        assert json.loads(json.dumps(cfg)) == want, experiment
        assert config_hash(cfg) == saved["config_hash"], experiment
        assert S.store.done(experiment, cfg, study=True), experiment


def test_a_changed_config_field_is_recomputed_and_an_unchanged_one_reused(
    tmp_path, monkeypatch, single_thread
):
    """Through the runner's real path on the smoke profile: the same config again is reused (no
    generation, the directory untouched); an experiment field (max_new_tokens) or a profile field
    (k) changed is recomputed, and the new result records the new value.

    Planted bugs it catches: `ResultStore.done` not comparing the config hash (every stored
    result reused), and `runner.execute.cached` never reusing (everything recomputed)."""
    from specdec_lib.generate import Generator

    monkeypatch.delenv("FORCE", raising=False)
    monkeypatch.setenv("WANDB_MODE", "disabled")
    calls: list[int] = []
    real = Generator.generate_ids

    def generate_ids(self, ids, spec, sampling):
        calls.append(spec.max_new_tokens)
        return real(self, ids, spec, sampling)

    monkeypatch.setattr(Generator, "generate_ids", generate_ids)

    def run(overrides: dict, k: int = 4):
        S = study.setup("smoke", results_dir=str(tmp_path), overrides=overrides)
        S.profile["k"] = k
        calls.clear()
        return study.run(S, "bigram"), len(calls)

    first, n = run({"n_prompts": 2})
    assert n > 0
    summary = first.path / "summary.json"
    stamp = summary.stat().st_mtime_ns
    again, n = run({"n_prompts": 2})
    assert n == 0 and summary.stat().st_mtime_ns == stamp
    assert again.config["config_hash"] == first.config["config_hash"]
    longer, n = run({"n_prompts": 2, "max_new_tokens": 5})
    assert n > 0 and 5 in calls and longer.config["max_new_tokens"] == 5
    assert longer.config["config_hash"] != first.config["config_hash"]
    other_k, n = run({"n_prompts": 2, "max_new_tokens": 5}, k=3)
    assert n > 0 and other_k.config["k"] == 3 and set(other_k.rows["k"]) <= {0, 3}


def test_drafters_are_kept_per_target_model(single_thread):
    """A drafter is built once per target model object, spec and cache setting; the cache-off
    drafter shares the cache-on one's weights; another target object (even one built the same
    way) never gets the first one's drafters."""
    S = study.Session(study.load_profile("smoke"), study.ROOT / "results")
    loaded = study.load_target(S)
    on = study.get_drafter(S, loaded, "self:2")
    assert study.get_drafter(S, loaded, "self:2") is on and on.lm.use_cache
    off = study.get_drafter(S, loaded, "self:2", use_cache=False)
    assert off is not on and off.lm.model is on.lm.model and not off.lm.use_cache
    assert study.get_drafter(S, loaded, "self:2", use_cache=False) is off
    twin = study.tiny_random_model("float64", **S.profile["tiny"])
    assert study.MODELS.drafters(twin) == {}
    assert study.get_drafter(S, twin, "self:2").lm.model is not on.lm.model


def test_an_adaptive_draft_is_what_it_wraps(target64):
    exit1 = SelfDrafter(target64, n_layers=1, vocab_size=96)
    assert study.draft_kind(AdaptiveDrafter(exit1), target64) == study.EXIT
    assert AdaptiveDrafter(exit1).unwrapped() is exit1
    bigram = BigramDrafter.fit(random_prompt(7, 400), 96)
    assert study.draft_kind(AdaptiveDrafter(bigram), target64) == study.CONTROL


def test_notebooks_match_their_generator():
    """notebooks/*.ipynb and results/SCHEMA.md's generated parts are what
    notebooks/make_notebooks.py writes; the notebooks without outputs, each with exactly one
    `parameters` cell of typed literals."""
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
        # the parameters first: the Colab setup cell after them reads `profile` and `results_dir`
        assert code[0] is params[0] and "google.colab" in "".join(code[1]["source"])


def test_every_declaration_runs_through_the_study_api():
    """Each experiment's notebook cell calls `study.run(study_run, "<name>")`, the run bound to
    it (`runner.experiments.RUNNERS`); every declared experiment has a run and a config and
    nothing else has."""
    from specdec_study.results.catalog import EXPERIMENTS
    from specdec_study.results.catalog import experiment as declaration
    from specdec_study.runner.experiments import RUNNERS

    assert list(RUNNERS) == list(EXPERIMENTS)
    for name in EXPERIMENTS:
        assert declaration(name).call == f'study.run(study_run, "{name}")', name
        assert callable(RUNNERS[name].run) and callable(RUNNERS[name].config), name


def test_study_runs_experiments_by_name_only():
    """No `study.run_<name>` is left (issue 40: one lookup, by the name the notebook's cell
    types); an unknown name is refused in one line, any other attribute an AttributeError."""
    from specdec_lib import ROOT
    from specdec_lib.errors import SpecdecError
    from specdec_study.environment.profiles import load_profile
    from specdec_study.runner.session import Session

    assert [n for n in dir(study) if n.startswith("run_")] == []
    with pytest.raises(SpecdecError, match="unknown experiment 'nope'; declared: baseline"):
        study.run(Session(load_profile("smoke"), ROOT / "results"), "nope")
    with pytest.raises(AttributeError, match="run_nope"):
        study.run_nope  # noqa: B018


def test_two_profiles_whose_tiny_targets_differ_get_their_own_models_in_one_process(tmp_path):
    """The smoke profile's tiny target and the smoke pair's share a name but not their options
    (the pair's has 64 extra ids and is a conditional model): a process that ran the one must
    not hand the other its weights (a test session did, and the pair's rows changed)."""
    from specdec_study.runner.session import load_target, tiny_draft

    smoke = load_target(study.setup("smoke", results_dir=str(tmp_path)))
    pair = study.setup("smoke-pair", results_dir=str(tmp_path))
    target = load_target(pair)
    assert target.model is not smoke.model
    rows = lambda m: m.get_output_embeddings().weight.shape[0]  # noqa: E731
    assert rows(target.model) == rows(smoke.model) + 64
    assert load_target(pair).model is target.model  # and each is still loaded once
    assert tiny_draft(pair, target).model is tiny_draft(pair, target).model


def test_study_run_runs_a_declared_experiment_by_name_and_refuses_another_in_one_line(tmp_path):
    """`study.run(study_run, name)`: the runner `runner.experiments.RUNNERS` binds to the name
    the notebook types; an undeclared name is one SpecdecError listing the declared ones."""
    from specdec_lib.errors import SpecdecError

    s = study.setup("smoke", results_dir=str(tmp_path))
    with pytest.raises(SpecdecError, match=r"unknown experiment 'nope'; declared: baseline, "):
        study.run(s, "nope")
