"""The one drafter grammar (`drafters.registry`): every form builds the drafter it names, every
configuration the bench and the study run is accepted by `generate --draft`, presets carry their
K into the CLI, and bad specs give one line naming the spec and the valid forms."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml
from conftest import VOCAB, random_prompt, stepwise_greedy

from specdec_lib.core.cache import CachedLM
from specdec_lib.core.decode import speculative_decode
from specdec_lib.core.draft import NoDrafter
from specdec_lib.drafters.adaptive import AdaptiveDrafter
from specdec_lib.drafters.bigram import BigramDrafter
from specdec_lib.drafters.gate import GateDrafter
from specdec_lib.drafters.lookup import LookupDrafter
from specdec_lib.drafters.model import ModelDrafter
from specdec_lib.drafters.ngram import NgramDrafter
from specdec_lib.drafters.perturbed import NoiseDrafter, QuantDrafter
from specdec_lib.drafters.registry import (
    PRESETS,
    REGISTRY,
    DraftContext,
    build,
    build_drafter,
    parse,
    valid_forms,
)
from specdec_lib.drafters.self_draft import SelfDrafter
from specdec_lib.drafters.shared import SharedBodyDrafter
from specdec_lib.drafters.tree import TreeDrafter
from specdec_lib.errors import SpecdecError
from specdec_lib.models import LoadedModel
from specdec_study.bench import configs
from specdec_study.cli import main

ROOT = Path(__file__).resolve().parents[1]
FIT = [i % VOCAB for i in range(7, 700, 3)]


@pytest.fixture(scope="module")
def loaded(target64) -> LoadedModel:
    return LoadedModel(target64, None, "tiny", torch.float64, torch.device("cpu"), VOCAB)


def ctx(loaded: LoadedModel, **kw) -> DraftContext:
    return DraftContext(loaded, lambda: FIT, **kw)


FORMS = [
    ("none", NoDrafter, {}),
    ("bigram", BigramDrafter, {}),
    ("ngram", NgramDrafter, {"max_ngram": 3, "fallback": None}),
    ("ngram:5", NgramDrafter, {"max_ngram": 5, "fallback": None}),
    ("ngram:2+bigram", NgramDrafter, {"max_ngram": 2}),
    ("ngram+bigram", NgramDrafter, {"max_ngram": 3}),
    ("lookup", LookupDrafter, {"k_fallback": 2, "fallback": None}),
    ("lookup:3:2", LookupDrafter, {"k_fallback": 3}),
    ("lookup+bigram:1", LookupDrafter, {"k_fallback": 1}),
    ("lookup+shared:4:2", LookupDrafter, {"k_fallback": 4}),
    ("self:2", SelfDrafter, {"n_layers": 2, "keep": None}),
    ("self:3:40", SelfDrafter, {"n_layers": 3, "keep": 40}),
    ("shared:30", SharedBodyDrafter, {}),
    ("adaptive:bigram", AdaptiveDrafter, {"k_start": 4, "k_max": 6}),
    ("adaptive:2:5:ngram+bigram", AdaptiveDrafter, {"k_start": 2, "k_max": 5}),
    ("gate:ngram", GateDrafter, {"window": 8, "min_accepted": 2, "backoff": 8}),
    ("gate:4:1:16:lookup:3", GateDrafter, {"window": 4, "min_accepted": 1, "backoff": 16}),
    ("best", NgramDrafter, {"max_ngram": 3}),
    ("tree", TreeDrafter, {}),
    ("tree:8:3", TreeDrafter, {}),
    ("tree+shared:16:4", TreeDrafter, {}),
    ("tree+bigram", TreeDrafter, {}),
    ("best_short", LookupDrafter, {"k_fallback": 3}),
    ("quant:4:16", QuantDrafter, {}),
    ("noise:100:1", NoiseDrafter, {}),
]


@pytest.mark.parametrize(("spec", "cls", "attrs"), FORMS)
def test_every_form_builds_the_drafter_it_names(loaded, spec, cls, attrs):
    drafter = build(spec, ctx(loaded, k=6))
    assert type(drafter) is cls
    for name, value in attrs.items():
        assert getattr(drafter, name) == value, name


def test_nested_and_fallback_drafters_are_the_right_kinds(loaded):
    assert isinstance(build("ngram:2+bigram", ctx(loaded)).fallback, BigramDrafter)
    assert isinstance(build("lookup+bigram", ctx(loaded)).fallback, BigramDrafter)
    shared = build("lookup+shared:4:2", ctx(loaded))
    assert isinstance(shared.fallback, SharedBodyDrafter) and shared.lookup.min_ngram == 2
    assert shared.fallback.keep_ids.numel() == VOCAB // 2  # scaled down for a small vocabulary
    ad = build("adaptive:2:5:ngram+bigram", ctx(loaded))
    assert isinstance(ad.inner, NgramDrafter) and isinstance(ad.inner.fallback, BigramDrafter)
    assert isinstance(build("self:2", ctx(loaded)), ModelDrafter)
    gate = build("gate:4:1:16:lookup:3", ctx(loaded))
    assert isinstance(gate.inner, LookupDrafter) and gate.inner.k_fallback == 3
    gated = build("gate:adaptive:2:5:ngram", ctx(loaded))
    assert isinstance(gated.inner, AdaptiveDrafter) and isinstance(gated.inner.inner, NgramDrafter)


def test_adaptive_takes_its_cap_from_the_run_and_its_inner_drafter_from_the_caller(loaded):
    inner = BigramDrafter.fit(FIT, VOCAB)
    d = build("adaptive:bigram", ctx(loaded, k=3, k_start=4, build_inner=lambda s: inner))
    assert d.inner is inner and (d.k_start, d.k_min, d.k_max) == (3, 1, 3)


def test_presets_carry_the_benchmarks_best_configurations():
    assert (PRESETS["best"].spec, PRESETS["best"].k) == ("ngram", 7)
    assert (PRESETS["best_short"].spec, PRESETS["best_short"].k) == ("lookup+shared:3:2", 4)
    assert (configs.BEST_LONG.draft, configs.BEST_LONG.k) == ("ngram", 7)
    assert (configs.BEST_SHORT.draft, configs.BEST_SHORT.k) == ("lookup+shared:3:2", 4)
    assert (configs.TREE_LONG.draft, configs.TREE_LONG.k) == ("tree+shared:16:4", 8)
    assert parse("best").k == 7 and parse("lookup+shared:4:2").k is None
    assert parse("self").args == (18, 16384) and parse("shared").args == (16384,)


def test_the_best_preset_is_lossless_at_its_k(target64, loaded):
    prompt = random_prompt(3, 9) * 2
    drafter = build("best", ctx(loaded))
    out = speculative_decode(
        CachedLM(target64), drafter, prompt, k=parse("best").k, max_new_tokens=14
    )
    assert out.tokens == stepwise_greedy(target64, prompt, 14)


def study_and_bench_specs() -> set[str]:
    specs = {c.draft for c in configs.all_configs()} | set(PRESETS)
    for profile in sorted((ROOT / "profiles").glob("*.yaml")):
        data = yaml.safe_load(profile.read_text())
        for exp in (data.get("experiments") or {}).values():  # an experiment's own drafts
            if isinstance(exp, dict) and isinstance(exp.get("drafts"), dict):
                specs.update(s for s in exp["drafts"].values() if isinstance(s, str))
        drafts = data["drafts"]
        for role, spec in drafts.items():
            for s in [spec] if isinstance(spec, str) else spec or []:
                specs.add(s)
                if role == "transformer":
                    specs.add(f"adaptive:{s}")  # the study's adaptive-K arm
    return specs


@pytest.mark.parametrize("spec", sorted(study_and_bench_specs()))
def test_every_bench_and_study_configuration_is_accepted_by_generate(capsys, spec):
    """The spec is checked before the prompt file is read: the error must be about the file."""
    code = main(["generate", "--target", "embedded", "--draft", spec, "--prompt-file", "/no/p"])
    err = capsys.readouterr().err
    assert code == 2 and "cannot read prompt file" in err, err


@pytest.mark.parametrize("cfg", configs.all_configs(), ids=lambda c: c.name)
def test_every_bench_configuration_runs_from_generate_with_the_benchs_k(monkeypatch, tmp_path, cfg):
    """`generate --draft DRAFT --k K` hands the generator the bench's spec and K; a configuration
    that is a preset runs by its name alone, with the same K (no calibration cached: the static
    table, as the bench's `--presets static`)."""
    import types

    import torch

    seen = {}

    class FakeGenerator:
        @classmethod
        def load(cls, target, draft, **kw):
            seen[draft] = kw["k"]
            raise SpecdecError("stop here")

        @classmethod
        def from_loaded(cls, loaded, draft, **kw):
            seen[f"{loaded.asked}->{draft}"] = kw["k"]
            raise SpecdecError("stop here")

    import specdec_lib.generate
    import specdec_lib.models.loading

    current = [None]  # the preset asked for

    def fake_load(name, dtype, device):
        cpu = torch.device("cpu")
        return types.SimpleNamespace(name=name, dtype=torch.bfloat16, device=cpu, asked=current[0])

    monkeypatch.setattr(specdec_lib.generate, "Generator", FakeGenerator)
    monkeypatch.setattr(specdec_lib.models.loading, "load_model", fake_load)
    monkeypatch.setenv("SPECDEC_PRESETS", str(tmp_path / "none.json"))
    argv = ["generate", "--target", "embedded", "--prompt", "x", "--draft"]
    assert main([*argv, cfg.draft, "--k", str(cfg.k)]) == 2
    assert seen == {cfg.draft: cfg.k}
    presets = [n for n, p in PRESETS.items() if (p.spec, p.k) == (cfg.draft, cfg.k)]
    for name in presets:
        current[0] = name
        assert main([*argv, name]) == 2 and seen[f"{name}->{cfg.draft}"] == cfg.k
    if cfg in (configs.BEST_LONG, configs.BEST_SHORT):
        assert presets, f"{cfg.name}: no preset names it"


def test_generate_runs_a_gated_ngram_at_the_k_given(monkeypatch):
    """`generate --draft gate:ngram --k 7` hands the generator the gated spec and K = 7."""
    seen = {}

    class FakeGenerator:
        @classmethod
        def load(cls, target, draft, **kw):
            seen[draft] = kw["k"]
            raise SpecdecError("stop here")

    import specdec_lib.generate

    monkeypatch.setattr(specdec_lib.generate, "Generator", FakeGenerator)
    argv = ["generate", "--target", "embedded", "--prompt", "x", "--draft", "gate:ngram"]
    assert main([*argv, "--k", "7"]) == 2
    assert seen == {"gate:ngram": 7}


def test_the_benchs_self_spec_is_accepted(loaded):
    assert parse(configs._self_spec(loaded)).name == "self"


@pytest.mark.parametrize(
    ("extra", "k"), [([], 7), (["--k", "3"], 3)], ids=["preset K", "explicit --k wins"]
)
def test_the_cli_uses_a_presets_k_unless_k_is_given(monkeypatch, tmp_path, extra, k):
    """The preset resolves to its configuration (here the static table: no calibration cached)
    and runs at that configuration's K unless --k is given."""
    import types

    import torch

    seen = {}

    class FakeGenerator:
        @classmethod
        def from_loaded(cls, loaded, draft, **kw):
            seen.update(kw, draft=draft)
            raise SpecdecError("stop here")

    import specdec_lib.generate
    import specdec_lib.models.loading

    def fake_load(name, dtype, device):
        return types.SimpleNamespace(name=name, dtype=torch.float32, device=torch.device("cpu"))

    monkeypatch.setattr(specdec_lib.generate, "Generator", FakeGenerator)
    monkeypatch.setattr(specdec_lib.models.loading, "load_model", fake_load)
    monkeypatch.setenv("SPECDEC_PRESETS", str(tmp_path / "none.json"))
    assert (
        main(["generate", "--target", "embedded", "--draft", "best", "--prompt", "x", *extra]) == 2
    )
    from specdec_lib.core.processors import NO_CONTROL

    want = {"draft": "ngram", "dtype": "auto", "device": "auto", "k": k, "control": NO_CONTROL}
    assert seen == want


BAD = [
    "self:²",
    "model:.",
    "self:0",
    "unicorn",
    "self:",
    "self:1:2:3",
    "ngram:2+trigram",
    "adaptive:4:8",
    "adaptive:5:2:bigram",
    "adaptive:adaptive:bigram",
    "gate:8:ngram",
    "gate:8:2:ngram",
    "gate:0:2:8:ngram",
    "gate:8:2:0:ngram",
    "gate:8:2:8",
    "gate:gate:ngram",
    "gate:unicorn",
    "shared:x",
    "",
    " ",
    "lookup+shared:-1",
    "model:/no/such/dir",
    "model:a b",
    "quant:9",
    "noise:",
]


@pytest.mark.parametrize("spec", BAD)
def test_a_bad_spec_is_one_line_naming_it_and_the_valid_forms(capsys, spec):
    with pytest.raises(SpecdecError) as e:
        parse(spec)
    msg = str(e.value)
    assert "\n" not in msg and repr(spec) in msg and "self[:LAYERS[:KEEP]]" in msg and "best" in msg
    code = main(["generate", "--target", "embedded", "--draft", spec, "--prompt", "hi"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and repr(spec) in lines[0]


def test_build_drafter_stays_a_thin_wrapper(loaded):
    d = build_drafter("adaptive:self:2", loaded, fit_ids=lambda: FIT, k=5)
    assert isinstance(d, AdaptiveDrafter) and d.k_max == 5 and isinstance(d.inner, SelfDrafter)


def test_every_drafter_that_can_guess_teacher_forced_says_so(loaded):
    prompt = random_prompt(1, 12)
    for spec in ("bigram", "ngram", "self:2", "adaptive:self:2"):
        predict = build(spec, ctx(loaded)).predictor()
        assert predict is not None and len(predict(prompt)) == len(prompt)
    assert (
        build("self:2", ctx(loaded)).predictor()(prompt)[-1]
        == stepwise_greedy(build("self:2", ctx(loaded)).lm.model, prompt, 1)[0]
    )
    assert build("lookup+shared:4:2", ctx(loaded)).predictor() is None


# ------------------------------------------------------------------- drafters by declaration

CHECKED_WITHOUT_TORCH = [
    "ngram",
    "best",
    "best_short",
    "adaptive:2:5:ngram+bigram",
    "adaptive:self",
    "gate:ngram",
    "gate:8:2:8:lookup+shared:3:2",
    "self:3:40",
    "tree+shared:16:4",
    "lookup+bigram:1",
    "model:org/name",
    "none",
    "quant:4",
    "quant:3:32",
    "noise:300:1",
]


def test_checking_a_spec_imports_no_torch_and_no_drafter():
    """The CLI checks `--draft` before loading anything: the registry names every drafter without
    importing it, so parse (good specs, presets, adaptive, a bad spec's message) loads no torch."""
    code = (
        "import sys, specdec_lib.drafters.registry as r\n"
        f"for s in {CHECKED_WITHOUT_TORCH!r}: r.parse(s)\n"
        "try:\n    r.parse('unicorn')\nexcept ValueError:\n    pass\n"
        "r.valid_forms()\n"
        "drafters = sorted(m for m in sys.modules if m.startswith('specdec_lib.drafters.'))\n"
        "print('torch' in sys.modules, drafters)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "False ['specdec_lib.drafters.registry']", out


# Modules in specdec_lib/drafters/ that no registry entry needs to name, and why.
NOT_DRAFTERS = {
    "__init__": "the package: a docstring, imports nothing",
    "registry": "the table itself, and the spec grammar",
    "presets": "what a preset resolves to on this machine (calibration cache), no drafter",
}


def test_every_drafter_module_has_an_entry_and_every_entry_resolves():
    """A drafter module that the table does not name would silently not exist: every module
    (except the ones named above) is some entry's builder module, and every entry's
    `module:object` imports and is callable."""
    package = ROOT / "specdec_lib" / "drafters"
    modules = {p.stem for p in package.glob("*.py")} - set(NOT_DRAFTERS)
    named = {e.builder.partition(":")[0] for e in REGISTRY.values()}
    assert {f"specdec_lib.drafters.{m}" for m in modules} <= named, "a module without an entry"
    for entry in REGISTRY.values():
        assert callable(entry.load()), entry.builder
        assert all(f in valid_forms() for f in entry.forms)
