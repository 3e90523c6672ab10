"""The presets chosen for the machine (`drafters.presets`, `bench.calibrate_presets`): the
calibration picks the fastest lossless candidate by its rule (fake timings, never real ones), the
cache is keyed by CPU kind, dtype and target, a broken cache is one line, the static table applies
where no calibration exists, and the study keeps resolving a preset through the static table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specdec_lib.drafters import presets as P
from specdec_lib.drafters.registry import PRESETS, parse
from specdec_lib.errors import SpecdecError
from specdec_study import cli

NGRAM, INT8W, LOOKUP, SHARED = P.CANDIDATES

XEON = """processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 207
model name\t: Intel(R) Xeon(R) Processor
flags\t\t: fpu avx2 avx512f avx512_bf16

processor\t: 1
vendor_id\t: GenuineIntel
"""
AMX_XEON = XEON.replace("model\t\t: 207", "model\t\t: 167").replace(
    "avx512_bf16", "avx512_bf16 amx_bf16"
)
EPYC = """vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 1
model name\t: AMD EPYC 7B13
flags\t\t: fpu avx2
"""


def rows(walls: dict[str, list[float]], different: set[str] = frozenset()) -> list[dict]:
    """Fake calibration rows: per arm its wall time on each prompt, identical unless named."""
    return [
        {"method": m, "wall_s": w, "identical": m not in different}
        for m, ws in walls.items()
        for w in ws
    ]


def record(chosen: dict | None, dtype: str = "bfloat16") -> dict:
    """A calibration record choosing `chosen` for both presets."""
    group = {"max_new_tokens": 128, "n_prompts": 1, "candidates": {}, "chosen": chosen}
    return {"dtype": dtype, "date": "2026-12-07", "presets": {n: group for n in PRESETS}}


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "presets.json"
    monkeypatch.setenv("SPECDEC_PRESETS", str(path))
    return path


# ------------------------------------------------------------------------------- the rule


def test_calibration_picks_the_fastest_candidate_by_total_time_over_the_prompts():
    walls = {"baseline": [6.0, 6.0], NGRAM.name: [2.0, 4.0], LOOKUP.name: [2.5, 2.5]}
    out = P.choose(rows(walls), [NGRAM, LOOKUP])
    assert out["candidates"][NGRAM.name]["speedup"] == pytest.approx(2.0)
    assert out["candidates"][LOOKUP.name]["speedup"] == pytest.approx(2.4)
    assert out["chosen"] == {"spec": LOOKUP.spec, "k": LOOKUP.k, "speedup": pytest.approx(2.4)}


def test_a_faster_candidate_that_is_not_token_identical_is_never_chosen():
    walls = {"baseline": [6.0, 6.0], INT8W.name: [1.0, 1.0], SHARED.name: [3.0, 3.0]}
    out = P.choose(rows(walls, different={INT8W.name}), [INT8W, SHARED])
    assert out["candidates"][INT8W.name]["identical"] == 0.0
    assert (out["chosen"]["spec"], out["chosen"]["k"]) == (SHARED.spec, SHARED.k)


def test_a_tie_goes_to_the_earlier_candidate():
    walls = {"baseline": [4.0], SHARED.name: [2.0], NGRAM.name: [2.0]}
    assert P.choose(rows(walls), [NGRAM, SHARED])["chosen"]["spec"] == NGRAM.spec


def test_no_lossless_candidate_means_no_choice():
    walls = {"baseline": [4.0], NGRAM.name: [1.0]}
    assert P.choose(rows(walls, different={NGRAM.name}), [NGRAM])["chosen"] is None


def test_a_challenger_inside_the_margin_leaves_the_static_configuration():
    walls = {"baseline": [10.0], NGRAM.name: [3.9], LOOKUP.name: [3.8]}  # 2.56x, 2.63x
    out = P.choose(rows(walls), [NGRAM, LOOKUP], incumbent=NGRAM)
    assert out["candidates"][LOOKUP.name]["speedup"] > out["candidates"][NGRAM.name]["speedup"]
    assert (out["chosen"]["spec"], out["chosen"]["k"]) == (NGRAM.spec, NGRAM.k)
    assert (out["incumbent"], out["margin"]) == (NGRAM.name, P.MARGIN)


def test_a_challenger_at_the_margin_or_beyond_takes_the_preset():
    walls = {"baseline": [10.0], NGRAM.name: [5.0], LOOKUP.name: [4.0]}  # 2.0x, 2.5x: +25%
    out = P.choose(rows(walls), [NGRAM, LOOKUP], incumbent=NGRAM, margin=0.25)
    assert out["chosen"]["spec"] == LOOKUP.spec
    walls[LOOKUP.name] = [4.0 + 1e-9]  # a hair under the margin
    out = P.choose(rows(walls), [NGRAM, LOOKUP], incumbent=NGRAM, margin=0.25)
    assert out["chosen"]["spec"] == NGRAM.spec


def test_an_incumbent_that_is_not_lossless_or_not_measured_keeps_nothing():
    walls = {"baseline": [10.0], NGRAM.name: [2.0], LOOKUP.name: [4.0], SHARED.name: [4.5]}
    out = P.choose(rows(walls, different={NGRAM.name}), [NGRAM, LOOKUP, SHARED], incumbent=NGRAM)
    assert out["chosen"]["spec"] == LOOKUP.spec
    out = P.choose(rows(walls), [LOOKUP, SHARED], incumbent=NGRAM)
    assert out["chosen"]["spec"] == LOOKUP.spec


def test_each_presets_incumbent_is_its_static_configuration_and_a_candidate():
    for preset, p in PRESETS.items():
        c = P.static_candidate(preset)
        assert (c.spec, c.k) == (p.spec, p.k)
        assert c.name in {x.name for x in P.CANDIDATES}


def test_the_candidates_hold_int8w_the_ngram_lookup_shared_and_shared_for_every_preset():
    specs = {(c.spec, c.k) for c in P.CANDIDATES}
    assert {("int8w:32768", 4), ("ngram", 7), ("lookup+shared:3:2", 4)} <= specs
    assert any(s.startswith("shared") for s, _ in specs)
    assert set(P.PRESET_TOKENS) == set(PRESETS)
    assert (P.PRESET_TOKENS["best"], P.PRESET_TOKENS["best_short"]) == (128, 32)
    assert "int8w:32768" not in {c.spec for c in P.candidates_for("cuda")}


def test_calibrate_presets_stores_the_choice_of_the_rule_from_the_runs_rows():
    """The wiring: every candidate runs beside the baseline at each preset's length, and the
    record holds what `choose` picked from those rows (fake walls, a tiny model)."""
    import torch
    from test_bench import loaded_tiny, prompt

    from specdec_study.bench.calibrate_presets import calibrate_presets

    seen = []

    def fake_run(arms, prompts, *, max_new_tokens, warmup):
        seen.append((max_new_tokens, [a.method.name for a in arms], len(prompts)))
        fast = NGRAM.name if max_new_tokens == 128 else "bigram@4"
        return [
            {"method": a.method.name, "wall_s": 1.0 if a.method.name == fast else 3.0}
            | {"identical": True}
            for a in arms
            for _ in prompts
        ]

    loaded = loaded_tiny(torch.float32, n_layers=1)
    cands = [NGRAM, P.Candidate("bigram", 4)]
    rec = calibrate_presets(
        loaded,
        prompts=[prompt(0), prompt(1)],
        candidates=cands,
        n_prompts={"best": 1, "best_short": 2},
        run=fake_run,
        warm=False,
        source="bundled",
    )
    assert seen == [(128, ["baseline", "ngram@7", "bigram@4"], 1)] + [
        (32, ["baseline", "ngram@7", "bigram@4"], 2)
    ]
    assert (rec["presets"]["best"]["chosen"]["spec"], rec["presets"]["best"]["chosen"]["k"]) == (
        "ngram",
        7,
    )
    assert rec["presets"]["best_short"]["chosen"]["spec"] == "bigram"
    # each preset's static configuration is its incumbent (best_short's is not a candidate here)
    assert [rec["presets"][p]["incumbent"] for p in ("best", "best_short")] == [
        P.static_candidate(p).name for p in ("best", "best_short")
    ]
    assert rec["dtype"] == "float32" and rec["key"].endswith("|float32|tiny")
    assert P._record_problem(rec) is None


# ------------------------------------------------------------------------------- the cache


def test_the_cache_key_names_the_cpu_kind_dtype_and_target():
    xeon, amx, epyc = (P.machine_key("cpu", cpuinfo=t) for t in (XEON, AMX_XEON, EPYC))
    assert "family 6 model 207" in xeon and "Intel(R) Xeon(R) Processor" in xeon
    assert len({xeon, amx, epyc}) == 3
    assert "amx_bf16" in amx and "amx_bf16" not in xeon
    assert P.cpu_kind(XEON) | {"cores": None} == {
        "vendor": "GenuineIntel",
        "family": 6,
        "model": 207,
        "model_name": "Intel(R) Xeon(R) Processor",
        "flags": ["avx512_bf16", "avx512f", "avx2"],
        "cores": None,
    }
    assert P.cache_key(xeon, "bfloat16", "embedded") != P.cache_key(xeon, "float32", "embedded")
    assert P.machine_key("cuda", "Tesla T4") == "cuda:Tesla T4"


def test_a_calibration_applies_only_to_its_own_cpu_and_dtype(cache):
    xeon, epyc = P.machine_key("cpu", cpuinfo=XEON), P.machine_key("cpu", cpuinfo=EPYC)
    mine = P.cache_key(xeon, "bfloat16", "embedded")
    P.write_cache(mine, record({"spec": "int8w:32768", "k": 4, "speedup": 2.5}))
    entries = P.read_cache()
    got = P.resolve("best", mine, entries)
    assert (got.spec, got.k, got.source) == ("int8w:32768", 4, "calibration")
    assert "2.50x" in got.line() and "int8w:32768" in got.line()
    for other in (
        P.cache_key(xeon, "float32", "embedded"),
        P.cache_key(epyc, "bfloat16", "embedded"),
    ):
        res = P.resolve("best", other, entries)
        assert (res.spec, res.k, res.source) == (
            PRESETS["best"].spec,
            PRESETS["best"].k,
            "fallback",
        )


def test_writing_one_key_keeps_the_others(cache):
    P.write_cache("a", record({"spec": "ngram", "k": 7, "speedup": 2.0}))
    P.write_cache("b", record({"spec": "shared", "k": 4, "speedup": 1.5}))
    assert set(P.read_cache()) == {"a", "b"}


@pytest.mark.parametrize(
    "text",
    [
        "{not json",
        "[]",
        json.dumps({"version": 1, "entries": {"k": {"presets": {"best": {"chosen": {"k": 4}}}}}}),
        json.dumps(
            {"version": 1, "entries": {"k": record({"spec": "nonsense", "k": 4, "speedup": 1})}}
        ),
        json.dumps({"version": 1, "entries": {"k": record({"spec": "ngram", "k": 0})}}),
        json.dumps({"version": 1, "entries": {"k": record({"spec": "best", "k": 7})}}),
    ],
)
def test_a_corrupt_cache_is_refused_in_one_line_naming_the_file(cache, text):
    cache.write_text(text)
    with pytest.raises(SpecdecError) as e:
        P.read_cache()
    assert len(str(e.value).splitlines()) == 1 and str(cache) in str(e.value)


def test_generate_with_a_corrupt_cache_prints_one_line_and_loads_nothing(cache, capsys):
    cache.write_text("\x00garbage")
    rc = cli.main(["generate", "--target", "embedded", "--draft", "best", "--prompt", "Hi"])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "presets.json" in err
    assert "Traceback" not in err


def test_the_bench_refuses_an_unknown_presets_mode_in_one_line():
    from specdec_study.bench.run import _preset_entries

    with pytest.raises(SpecdecError, match="--presets takes"):
        _preset_entries("fastest")


# ---------------------------------------------------------------------------- the fallback


def test_the_static_table_applies_where_no_calibration_exists(cache):
    assert not cache.exists() and P.read_cache() == {}
    for name, preset in PRESETS.items():
        res = P.resolve(name, "cpu:anything|bfloat16|embedded", {})
        assert (res.spec, res.k, res.source) == (preset.spec, preset.k, "fallback")
        assert "no calibration" in res.line()


def test_a_calibration_without_a_lossless_candidate_falls_back_to_the_static_table(cache):
    P.write_cache("k", record(None))
    res = P.resolve("best_short", "k", P.read_cache())
    assert (res.spec, res.source) == (PRESETS["best_short"].spec, "fallback")


def test_the_bench_records_what_each_preset_resolved_to_and_from_what():
    from specdec_study.bench.run import preset_config

    res = P.resolve("best", "k", {"k": record({"spec": "int8w:32768", "k": 4, "speedup": 2.0})})
    cfg = preset_config("best", res)
    assert (cfg.name, cfg.draft, cfg.k) == ("best", "int8w:32768", 4)
    d = res.as_dict()
    assert (d["draft"], d["k"], d["source"], d["key"]) == ("int8w:32768", 4, "calibration", "k")
    assert d["calibration"]["chosen"]["speedup"] == 2.0


# ------------------------------------------------------------------------------- the study


def test_the_study_resolves_a_preset_through_the_static_table_whatever_the_cache_holds(cache):
    """The agreement experiment names `continuation_by: best`: its config (and hash) must not
    depend on the machine, so `registry.parse` never reads the calibration cache."""
    from specdec_study import study
    from specdec_study.runner.experiments import RUNNERS

    mine = P.cache_key(P.machine_key("cpu"), "bfloat16", "embedded")
    P.write_cache(mine, record({"spec": "int8w:32768", "k": 4, "speedup": 9.0}))
    for dtype in ("float32", "auto"):
        P.write_cache(P.cache_key(P.machine_key("cpu"), dtype, "embedded"), P.read_cache()[mine])
    assert (parse("best").name, parse("best").k) == ("ngram", 7)
    S = study.Session(study.load_profile("embedded"), study.ROOT / "results")
    cfg = RUNNERS["agreement"].config(S)
    assert (cfg["continuation_by"], cfg["continuation_k"]) == ("best", PRESETS["best"].k)


@pytest.mark.parametrize("cached", [True, False])
def test_generate_best_runs_what_the_calibration_chose_and_says_so_in_one_line(
    monkeypatch, cache, capsys, cached
):
    """`generate --draft best`: the calibrated configuration and its K for this machine and
    dtype (the static table without one), and one stderr line saying which and from what."""
    import types

    import torch

    import specdec_lib.generate
    import specdec_lib.models.loading

    seen = {}

    class FakeGenerator:
        @classmethod
        def from_loaded(cls, loaded, draft, **kw):
            seen[draft] = kw["k"]
            raise SpecdecError("stop here")

    def fake_load(name, dtype, device):
        cpu = torch.device("cpu")
        return types.SimpleNamespace(name=name, dtype=torch.bfloat16, device=cpu)

    monkeypatch.setattr(specdec_lib.generate, "Generator", FakeGenerator)
    monkeypatch.setattr(specdec_lib.models.loading, "load_model", fake_load)
    if cached:
        key = P.cache_key(P.machine_key("cpu"), "bfloat16", "embedded")
        P.write_cache(key, record({"spec": "int8w:32768", "k": 4, "speedup": 1.9}))
    rc = cli.main(["generate", "--target", "embedded", "--draft", "best", "--prompt", "x"])
    err = capsys.readouterr().err.strip().splitlines()
    want = ("int8w:32768", 4, "calibration") if cached else ("ngram", 7, "fallback")
    assert rc == 2 and seen == {want[0]: want[1]}
    assert err[0].startswith(f"specdec: best -> {want[0]}, K = {want[1]} ({want[2]}")
    assert len(err) == 2  # the resolution, then the (faked) stop
