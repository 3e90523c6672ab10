"""The sampling experiment's check of positions 1..m (`runner.distribution.sequence_tests`): it
runs the library's own decode loop, reuses the prompt's prefix without changing a single draw,
tells which verifier path emitted each token, and fails planted verifier bugs at the size the
embedded profile configures."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
import yaml

from specdec_lib.config import SamplingConfig
from specdec_lib.core import decode
from specdec_lib.core.cache import CachedLM
from specdec_lib.core.draft import Draft, Drafter, NoDrafter
from specdec_lib.core.sampling import make_generator, sample, uniform
from specdec_lib.core.verify import Verdict, residual
from specdec_lib.drafters.model import ModelDrafter
from specdec_study.experiments.speculative_sampling import (
    sequence_check,
    sequence_family,
    sequence_verdict,
)
from specdec_study.reporting.readings import _extra_tables
from specdec_study.reporting.sampling_tables import sequence_sentence, sequence_table
from specdec_study.runner import distribution
from specdec_study.runner.distribution import (
    DRAFT_PATHS,
    sequence_checks,
    sequence_tests,
    token_paths,
)
from tests.conftest import ROOT, FakeLM

SEQ = yaml.safe_load((ROOT / "profiles" / "embedded.yaml").read_text())["experiments"]["sampling"][
    "sequence"
]
CFG = {
    "n_samples": SEQ["n_samples"],
    "positions": SEQ["positions"],
    "tvd_target": 0.05,
    "min_path": 50,
}
PROMPT = [1, 2, 3, 1, 2]
SAMPLING = SamplingConfig(temperature=1.0)


def near_target(seed: int = 10, noise: float = 0.3) -> FakeLM:
    """The fake target's table plus a little noise: a sampled draft whose q is close to p."""
    m = FakeLM(seed=seed, order=2)
    g = torch.Generator().manual_seed(99)
    m.table.data += noise * torch.randn(m.table.shape, generator=g, dtype=torch.float64)
    return m


class ArgmaxDrafter(Drafter):
    """A point-mass draft (like the n-gram copy): the fake target's own argmax chain."""

    name = "argmax"

    def __init__(self, model: FakeLM):
        self.model = model

    def propose(self, seq, k, sampling, generator) -> Draft:
        s = list(seq)
        for _ in range(k):
            s.append(int(self.model.table[s[-2], s[-1]].argmax()))
        return Draft(s[len(seq) :])


def gens(target: FakeLM) -> dict[str, tuple[SimpleNamespace, int]]:
    def lm():
        return CachedLM(target, use_cache=False)

    return {
        "baseline": (SimpleNamespace(lm=lm(), drafter=NoDrafter()), 0),
        "near": (
            SimpleNamespace(lm=lm(), drafter=ModelDrafter(near_target(), use_cache=False)),
            SEQ["k"],
        ),
        "argmax": (SimpleNamespace(lm=lm(), drafter=ArgmaxDrafter(target)), SEQ["k"]),
    }


def test_token_paths_name_accept_residual_bonus_and_target():
    # calls: 2 of 2 accepted (+ bonus), 0 of 2 (residual), 1 of 2 (+ residual), nothing drafted
    got = token_paths([2, 0, 1, 0], [2, 2, 2, 0], 9)
    after = "residual_later"
    assert got == ["accept", "accept", "bonus", "residual_first", "accept", after, "target"]
    assert token_paths([2], [2], 2) == ["accept", "accept"]


@pytest.mark.parametrize("which", ["near", "argmax", "baseline"])
def test_reusing_the_prompt_changes_no_draw(fake_target, which):
    """The check's shortcut (the prompt prefilled once, repeated target calls remembered) emits
    exactly what a fresh `speculative_decode` per seed emits."""
    gen, k = gens(fake_target)[which]
    target = distribution._PromptTarget(gen.lm, PROMPT)
    got = distribution.sequence_samples(target, gen.drafter, k, SAMPLING, range(40), 4)
    fresh = CachedLM(fake_target, use_cache=False)
    for s, (toks, paths) in zip(range(40), got, strict=True):
        run = decode.speculative_decode(
            fresh, gen.drafter, PROMPT, k=k, max_new_tokens=4, sampling=SAMPLING,
            generator=make_generator(s),
        )  # fmt: skip
        assert toks == tuple(run.tokens)
        assert len(paths) == 4


def test_the_library_verifier_is_consistent_and_every_path_is_tested(fake_target):
    out, rows = sequence_checks(gens(fake_target), PROMPT, SAMPLING, CFG, 1.0)
    for name, chk in out.items():
        assert chk["verdict"] == "consistent", (name, chk)
        assert chk["detectable_tvd"] <= 0.05
    for name in ("near", "argmax"):
        paths = out[name]["paths_tested"]
        assert min(paths[p] for p in DRAFT_PATHS) >= 50, paths
        # tokens beyond the first position are tested, accepted drafts among them
        assert out[name]["paths_by_position"]["2"]["accept"] >= 50
    assert {r["position"] for r in rows} == set(range(1, CFG["positions"] + 1))


def _accepts_more(draft, q, p, generator):
    """Planted bug: accept with min(1, 1.25 p / q)."""
    k = len(draft)
    u = uniform(k, generator)
    for i in range(k):
        qx = float(q[i, draft[i]]) if q is not None else 1.0
        if u[i] * qx >= 1.25 * float(p[i, draft[i]]):
            qi = q[i] if q is not None else None
            return Verdict(i, sample(residual(p[i], qi, draft[i]), generator))
    return Verdict(k, sample(p[k], generator))


def _resamples_from_p(draft, q, p, generator):
    """Planted bug: a rejected token is replaced by a draw from p, not from the residual."""
    k = len(draft)
    u = uniform(k, generator)
    for i in range(k):
        qx = float(q[i, draft[i]]) if q is not None else 1.0
        if u[i] * qx >= float(p[i, draft[i]]):
            return Verdict(i, sample(p[i], generator))
    return Verdict(k, sample(p[k], generator))


def _bonus_from_last_draft_row(draft, q, p, generator):
    """Planted bug: the bonus drawn from p at the last draft's position instead of after it."""
    v = decode_verify(draft, q, p, generator)
    if draft and v.n_accepted == len(draft):
        return Verdict(v.n_accepted, sample(p[len(draft) - 1], generator))
    return v


def _residual_of_first_row(draft, q, p, generator):
    """Planted bug: after an accepted prefix, the residual is taken at the first position."""
    k = len(draft)
    u = uniform(k, generator)
    for i in range(k):
        qx = float(q[i, draft[i]]) if q is not None else 1.0
        if u[i] * qx >= float(p[i, draft[i]]):
            q0 = q[0] if q is not None else None
            return Verdict(i, sample(residual(p[0], q0, draft[0]), generator))
    return Verdict(k, sample(p[k], generator))


decode_verify = decode.speculative_verify


@pytest.mark.parametrize(
    "broken", [_accepts_more, _resamples_from_p, _bonus_from_last_draft_row, _residual_of_first_row]
)
def test_a_planted_verifier_bug_deviates_at_the_configured_size(fake_target, monkeypatch, broken):
    """At the embedded profile's size, every planted bug makes the drafts' check deviate, while
    the baseline (which never reaches the verifier's draft paths) stays consistent."""
    monkeypatch.setattr(decode, "speculative_verify", broken)
    out, _ = sequence_checks(gens(fake_target), PROMPT, SAMPLING, CFG, 1.0)
    assert out["baseline"]["verdict"] == "consistent"
    assert out["near"]["verdict"] == "deviates", out["near"]
    assert out["argmax"]["verdict"] == "deviates", out["argmax"]


def test_the_verdict_rule_has_three_disjoint_outcomes():
    base = {"alpha": 0.05, "tvd_target": 0.05, "min_path": 50, "needed_paths": ["accept"]}
    ok = {**base, "p_value": 0.4, "detectable_tvd": 0.03, "paths_tested": {"accept": 60}}
    assert sequence_verdict(ok) == "consistent"
    assert sequence_verdict({**ok, "p_value": 0.01}) == "deviates"
    assert sequence_verdict({**ok, "detectable_tvd": 0.08}) == "inconclusive"
    assert sequence_verdict({**ok, "paths_tested": {"accept": 49}}) == "inconclusive"
    assert sequence_verdict({**ok, "p_value": None}) == "inconclusive"
    # a rejection is "deviates" whatever the power or coverage
    assert sequence_verdict({**ok, "p_value": 0.01, "paths_tested": {}}) == "deviates"


def test_the_checks_of_a_run_are_decided_as_one_bonferroni_family():
    """Six checks (3 methods x 2 temperatures) each at 0.05 gave a false "deviates" in 26% of
    runs: the embedded batch's own baseline (no verifier at all) had p = 0.018 at T = 1.0. As one
    family each is tested at 0.05 / 6, with its detectable TVD at that level."""
    base = {"alpha": 0.05, "tvd_target": 0.05, "min_path": 50, "needed_paths": ["target"],
            "paths_tested": {"target": 5469}, "dof": 23, "n_tested": 5469}  # fmt: skip
    checks = {
        t: {m: {**base, "p_value": 0.5, "detectable_tvd": 0.03} for m in ("a", "b", "c")}
        for t in ("0.7", "1.0")
    }
    checks["1.0"]["a"] = {**checks["1.0"]["a"], "p_value": 0.018}
    assert sequence_verdict(checks["1.0"]["a"]) == "deviates"  # alone
    fam = sequence_family(checks)
    assert fam["1.0"]["a"]["verdict"] == "consistent" and fam["1.0"]["a"]["family_size"] == 6
    assert fam["1.0"]["a"]["alpha_family"] == pytest.approx(0.05 / 6)
    assert 0.0318 < fam["1.0"]["a"]["detectable_tvd_family"] < 0.05  # weaker than alone (0.0318)
    checks["0.7"]["b"] = {**checks["0.7"]["b"], "p_value": 0.008}
    assert sequence_family(checks)["0.7"]["b"]["verdict"] == "deviates"
    assert sequence_family(fam) == fam  # a stored family is decided the same way again


def test_sequence_check_counts_tested_tokens_per_path():
    tests = [{"chi2": 1.0, "dof": 2, "n_samples": 30}, {"chi2": 0.0, "dof": 0, "n_samples": 12}]
    by_pos = {"1": {"accept": 20, "residual_first": 10}, "2": {"accept": 5, "bonus": 7}}
    chk = sequence_check(tests, by_pos, DRAFT_PATHS, 0.05, 50)
    assert chk["paths_tested"] == {"accept": 25, "residual_first": 10, "bonus": 7}
    assert chk["n_groups"] == 2 and chk["n_groups_tested"] == 1 and chk["n_tested"] == 30
    assert chk["verdict"] == "inconclusive"  # 30 samples detect no TVD of 0.05


def test_sequence_tests_reject_a_draft_that_runs_the_target_body(fake_target):
    class Hidden(Drafter):
        name = "hidden"

        def propose(self, seq, k, sampling, generator):
            return Draft([1], target_hidden=torch.zeros(2, 3))

    gen = SimpleNamespace(lm=CachedLM(fake_target, use_cache=False), drafter=Hidden())
    with pytest.raises(Exception, match="do not run the target's body"):
        sequence_tests(gen, PROMPT, 1, SAMPLING, range(2), 2)


def test_the_book_and_the_reading_state_the_check_from_the_result(fake_target):
    """The book's sentence, its table and the notebook's reading carry the stored verdicts and
    counts; a result written before the check says that only the first token was tested."""
    out, _ = sequence_checks(gens(fake_target), PROMPT, SAMPLING, {**CFG, "n_samples": 400}, 1.0)
    cfg = {"sequence": {**CFG, "n_samples": 400, "k": SEQ["k"]}}
    res = SimpleNamespace(summary={"sequence_check": {"1.0": out}}, config=cfg)
    prof = SimpleNamespace(get=lambda name: res if name == "sampling" else None)
    text = sequence_sentence(prof)
    verdicts = [out[m]["verdict"] for m in ("baseline", "near", "argmax")]
    assert "400 decode runs" in text and "Of its 3 checks" in text
    assert all(f"{verdicts.count(v)} {v}" in text for v in verdicts)
    table = sequence_table(prof)
    assert list(table["sampler"]) == ["baseline", "near", "argmax"]
    assert list(table["verdict"]) == verdicts
    later = table.set_index("sampler").loc["argmax", "residual (after an accepted prefix)"]
    assert str(later) == str(out["argmax"]["paths_tested"]["residual_later"])
    reading = "\n".join(_extra_tables({"sequence_check": {"1.0": out}}))
    assert "Positions 1..m" in reading and out["near"]["verdict"] in reading
    old = SimpleNamespace(summary={}, config={})
    assert "predates" in sequence_sentence(SimpleNamespace(get=lambda name: old))
    assert sequence_table(SimpleNamespace(get=lambda name: old)) is None


def test_the_book_says_when_the_family_rule_changed_a_stored_verdict():
    """A result decided check by check (no `family_size` stored) is re-decided as a family on
    read; the sentence says the family rule came after that run and names each verdict it
    changed. Planted bug: a sentence that says 'fixed before the run' for such a result."""
    base = {
        "alpha": 0.05,
        "dof": 5,
        "n_tested": 5000,
        "min_path": 50,
        "tvd_target": 0.05,
        "needed_paths": ["target"],
        "paths_tested": {"target": 5000},
    }
    stored = {
        "1.0": {
            "baseline": {**base, "p_value": 0.03, "verdict": "deviates"},
            "ngram": {**base, "p_value": 0.3, "verdict": "consistent"},
        },
    }
    cfg = {
        "sequence": {"n_samples": 2000, "positions": 3, "k": 2, "tvd_target": 0.05, "min_path": 50}
    }
    res = SimpleNamespace(summary={"sequence_check": stored}, config=cfg)
    text = sequence_sentence(SimpleNamespace(get=lambda name: res))
    assert "adopted after this run" in text and "fixed before the run" not in text
    assert "baseline at T = 1.0 (p = 0.030): 'deviates' alone, 'consistent' in the family" in text
    assert "2 checks, each alone at significance level 0.05" in text and "10%" in text
    # decided as a family when it ran: the rule came first, and nothing is revised
    fam = {t: {m: {**c, "family_size": 2} for m, c in chk.items()} for t, chk in stored.items()}
    fam["1.0"]["baseline"]["verdict"] = "consistent"
    res2 = SimpleNamespace(summary={"sequence_check": fam}, config=cfg)
    text2 = sequence_sentence(SimpleNamespace(get=lambda name: res2))
    assert "fixed before the run" in text2 and "revised" not in text2
