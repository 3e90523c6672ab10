"""The positive control (`implementations`): its config and rows on the smoke profile, token
identity of every variant, the summary's arithmetic by hand, the shape rule's outcomes, the
figure and table from a synthetic result, and that adding it changed no other experiment's config
hash (so `make evaluate` reuses their stored results)."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from specdec_lib.config import config_hash
from specdec_lib.errors import SpecdecError
from specdec_study import study
from specdec_study.experiments import implementations as impl
from specdec_study.experiments.implementations import (
    DOES_NOT_REPRODUCE,
    FLAT_BAND,
    INCONCLUSIVE,
    REPRODUCES,
    SHAPE_FALL,
    implementations_summary,
    shape_label,
    variant_arms,
)
from specdec_study.reporting.figures.style import DRAFT_COLORS
from specdec_study.results import catalog
from specdec_study.runner.experiments import RUNNERS
from specdec_study.runner.interleaved import context_order

ROOT = Path(__file__).resolve().parents[1]
EMBEDDED = ROOT / "results" / "embedded"
ARMS = ["baseline", "baseline_nocache", "nocache", "mixed_target", "mixed_draft", "cached"]


def smoke(tmp_path: Path, **profile: Any) -> study.Session:
    prof = {**study.load_profile("smoke"), **profile}
    return study.Session(prof, tmp_path)


# --------------------------------------------------------------------------- config


def test_the_config_times_every_variant_on_the_context_sweeps_documents(tmp_path):

    s = smoke(tmp_path)
    cfg = RUNNERS["implementations"].config(s)
    sweep = RUNNERS["context_sweep"].config(s)
    assert cfg["anchor_min"] == sweep["anchor_min"] and cfg["anchor_room"] == sweep["anchor_room"]
    assert list(cfg["arms"]) == ARMS
    assert cfg["arms"]["baseline"] == cfg["arms"]["baseline_nocache"] == "none"
    assert {cfg["arms"][v] for v in impl.VARIANTS} == {"self:2"}
    cache = {a: (c["target"], c["draft"]) for a, c in cfg["arm_cache"].items()}
    assert cache == {
        "baseline": (True, True),
        "baseline_nocache": (False, False),
        "nocache": (False, False),
        "mixed_target": (False, True),
        "mixed_draft": (True, False),
        "cached": (True, True),
    }
    assert {v: a["baseline"] for v, a in cfg["variants"].items()} == {
        "nocache": "baseline_nocache",
        "mixed_target": "baseline",
        "mixed_draft": "baseline",
        "cached": "baseline",
    }
    assert cfg["n_prompts_by_context"] == {str(c): 2 for c in (10, 20, 50, 100)}
    assert cfg["reference_context"] == 20 and cfg["order"] == "interleaved"


def test_a_profile_may_run_fewer_variants_and_the_uncached_baseline_only_when_needed(tmp_path):

    prof = study.load_profile("smoke")
    prof["experiments"]["implementations"]["variants"] = ["cached", "mixed_target"]
    cfg = RUNNERS["implementations"].config(study.Session(prof, tmp_path))
    assert list(cfg["variants"]) == ["mixed_target", "cached"]  # the study's order
    assert list(cfg["arms"]) == ["baseline", "mixed_target", "cached"]


def test_an_unknown_variant_is_refused_in_one_line(tmp_path):

    prof = study.load_profile("smoke")
    prof["experiments"]["implementations"]["variants"] = ["cached", "halfcached"]
    with pytest.raises(SpecdecError) as err:
        RUNNERS["implementations"].config(study.Session(prof, tmp_path))
    assert "halfcached" in str(err.value) and "\n" not in str(err.value)


# --------------------------------------------------------------------------- a smoke run


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    """The experiment on the smoke profile's tiny models in float32, greedy (seconds)."""
    s = study.setup("smoke", results_dir=str(tmp_path_factory.mktemp("res")), dtype="float32")
    return RUNNERS["implementations"].config(s), study.run(s, "implementations")


def test_the_rows_are_one_per_arm_prompt_and_context_with_variant_and_caches(smoke_run):
    cfg, res = smoke_run
    rows = res.rows
    assert len(rows) == len(ARMS) * 2 * 4
    assert sorted(rows.groupby(["method", "prompt", "context"]).size().unique()) == [1]
    variant = {r.method: r.variant for r in rows.itertuples()}
    assert variant == {
        "baseline": "cached",
        "baseline_nocache": "nocache",
        **{v: v for v in impl.VARIANTS},
    }
    for r in rows.itertuples():
        assert (bool(r.use_cache), bool(r.draft_cache)) == (
            cfg["arm_cache"][r.method]["target"],
            cfg["arm_cache"][r.method]["draft"],
        )
    # interleaved as the sweep: each prompt's contexts in its seeded order
    for i in range(2):
        mine = rows[(rows.prompt == i) & (rows.method == "baseline")].sort_values("order")
        assert list(mine.context) == context_order(cfg["seed"], i, cfg["contexts"])
    # the speculative arms draft: proposals on every row, and tokens per call above one somewhere
    spec = rows[rows.method.isin(impl.VARIANTS)]
    assert (spec.proposed > 0).all()
    assert res.summary["experiment"] == "implementations"
    assert {t["variant"] for t in res.summary["table"]} == set(impl.VARIANTS)


def test_every_variants_output_is_token_identical_to_the_cached_baseline(smoke_run):
    _, res = smoke_run
    rows = res.rows
    base = rows[rows.method == "baseline"].set_index(["prompt", "context"])["tokens"]
    for arm in ARMS[1:]:
        mine = rows[rows.method == arm].set_index(["prompt", "context"])["tokens"]
        assert len(mine) == len(base)
        for key, tokens in mine.items():
            assert list(tokens) == list(base[key]), (arm, key)
    assert rows.identical.all()


# --------------------------------------------------------------------------- summary by hand


def _row(method: str, prompt: int, context: int, wall: float, tokens: int, calls: int) -> dict:
    k = 0 if method.startswith("baseline") else 4
    return {
        "method": method,
        "draft": "none" if not k else "self:1",
        "k": k,
        "prompt": prompt,
        "context": context,
        "wall_s": wall,
        "tokens_per_s": tokens / wall,
        "new_tokens": tokens,
        "target_calls": calls,
        "proposed": 4 * (calls - 1) if k else 0,
        "accepted": tokens - calls if k else 0,
        "identical": True,
        "repetition_4gram": 0.0,
        "accepted_lengths": [1] * (calls - 1) if k else [],
        "proposed_lengths": [4] * (calls - 1) if k else [],
        "draft_s": 0.1 * wall if k else 0.0,
        "verify_s": 0.8 * wall,
    }


def _config(variants: list[str], contexts=(10, 20, 100)) -> dict:
    return {
        "contexts": list(contexts),
        "reference_context": 20,
        "draft": "self:1",
        "variants": variant_arms(variants),
    }


def test_the_single_divisor_is_the_variants_own_baseline_at_20_and_the_paired_one_its_context():
    # two prompts; the cached baseline 1 s everywhere, the uncached one 2 s at 20 and 4 s at 100
    walls = {
        ("baseline", 10): (1.0, 1.0),
        ("baseline", 20): (1.0, 1.0),
        ("baseline", 100): (1.0, 1.0),
        ("baseline_nocache", 10): (1.5, 1.5),
        ("baseline_nocache", 20): (2.0, 2.0),
        ("baseline_nocache", 100): (4.0, 4.0),
        ("cached", 10): (0.5, 0.5),
        ("cached", 20): (0.5, 0.5),
        ("cached", 100): (0.6, 0.4),
        ("nocache", 10): (1.0, 1.0),
        ("nocache", 20): (1.0, 3.0),
        ("nocache", 100): (2.0, 2.0),
    }
    rows = [
        _row(m, p, c, w, 20, 6 if m in impl.VARIANTS else 20)
        for (m, c), ws in walls.items()
        for p, w in enumerate(ws)
    ]
    s = implementations_summary(rows, _config(["nocache", "cached"]))
    t = {(r["variant"], r["context"]): r for r in s["table"]}
    # nocache at 100: its own (uncached) baseline at 20, 4 s in all, over its 4 s
    assert t[("nocache", 100)]["single_divisor_speedup"]["value"] == pytest.approx(4.0 / 4.0)
    assert t[("nocache", 100)]["paired_speedup"]["value"] == pytest.approx(8.0 / 4.0)
    assert t[("nocache", 10)]["single_divisor_speedup"]["value"] == pytest.approx(4.0 / 2.0)
    assert t[("nocache", 20)]["single_divisor_speedup"]["value"] == pytest.approx(4.0 / 4.0)
    # cached at 100: the cached baseline at 20 (2 s) over 1 s
    assert t[("cached", 100)]["single_divisor_speedup"]["value"] == pytest.approx(2.0)
    assert t[("cached", 10)]["paired_speedup"]["value"] == pytest.approx(2.0)
    assert t[("nocache", 100)]["baseline_single_divisor_speedup"]["value"] == pytest.approx(0.5)
    assert t[("cached", 100)]["tokens_per_call"]["value"] == pytest.approx(40 / 12)
    # the change 10 -> 100: the single divisor cancels, so the ratio is the arm's time 10 / 100
    ch = s["changes"]["nocache"]
    assert (ch["lo"], ch["hi"]) == (10, 100)
    assert ch["single_divisor_ratio"]["value"] == pytest.approx(2.0 / 4.0)
    assert ch["single_divisor_ratio"]["value"] == pytest.approx(
        ch["single_divisor_hi"]["value"] / ch["single_divisor_lo"]["value"]
    )
    # paired: (8 / 4) / (3 / 2)
    assert ch["paired_speedup_ratio"]["value"] == pytest.approx(2.0 / 1.5)
    assert ch["tokens_per_call_ratio"]["value"] == pytest.approx(1.0)
    assert s["headline"]["nocache"]["label"] == ch["label"]
    assert s["changes"]["cached"]["single_divisor_ratio"]["value"] == pytest.approx(1.0)


def test_the_tokens_per_call_ratio_pools_each_context_before_dividing():
    rows = []
    for p, (lo_calls, hi_calls) in enumerate([(5, 8), (10, 10)]):
        for c, calls in ((10, lo_calls), (20, lo_calls), (100, hi_calls)):
            rows.append(_row("baseline", p, c, 1.0, 20, 20))
            rows.append(_row("cached", p, c, 0.5, 20, calls))
    ch = implementations_summary(rows, _config(["cached"]))["changes"]["cached"]
    assert ch["tokens_per_call_ratio"]["value"] == pytest.approx((40 / 18) / (40 / 15))


# --------------------------------------------------------------------------- the shape rule


def iv(lo: float, hi: float) -> dict:
    return {"value": (lo + hi) / 2, "ci_low": lo, "ci_high": hi, "n": 12}


FLAT = iv(0.95, 1.05)


@pytest.mark.parametrize(
    ("ratio", "tokens", "label"),
    [
        (iv(0.45, 0.65), FLAT, REPRODUCES),  # the published shape: a large fall, flat acceptance
        (iv(0.90, 1.10), FLAT, DOES_NOT_REPRODUCE),  # no fall
        (iv(0.45, 0.65), iv(0.70, 0.85), DOES_NOT_REPRODUCE),  # a fall that acceptance carries
        (iv(0.45, 0.65), iv(1.15, 1.30), DOES_NOT_REPRODUCE),  # acceptance rose
        (iv(0.70, 0.90), FLAT, INCONCLUSIVE),  # the interval holds the threshold
        (iv(0.45, 0.65), iv(0.85, 1.00), INCONCLUSIVE),  # tokens per call straddles the band
        (None, FLAT, INCONCLUSIVE),  # missing
        (iv(0.45, 0.65), {"value": 1.0, "ci_low": None, "ci_high": None}, INCONCLUSIVE),
        (iv(math.nan, math.nan), FLAT, INCONCLUSIVE),
    ],
)
def test_the_shape_rule_reaches_each_outcome(ratio, tokens, label):
    assert shape_label(ratio, tokens) == label


def test_the_shape_rule_outcomes_never_overlap_on_a_grid():
    """Every pair of intervals on a grid around the thresholds gets exactly the label its
    conditions name, and `reproduces` never coexists with a mirror condition."""
    edges = [0.5, SHAPE_FALL - 0.01, SHAPE_FALL, SHAPE_FALL + 0.01, 0.85, *FLAT_BAND, 1.2]
    for a in edges:
        for b in edges:
            if b < a:
                continue
            for c in edges:
                for d in edges:
                    if d < c:
                        continue
                    label = shape_label(iv(a, b), iv(c, d))
                    fits = b < SHAPE_FALL and FLAT_BAND[0] <= c and d <= FLAT_BAND[1]
                    mirror = a > SHAPE_FALL or c > FLAT_BAND[1] or d < FLAT_BAND[0]
                    assert not (fits and mirror)
                    assert label == (
                        REPRODUCES if fits else DOES_NOT_REPRODUCE if mirror else INCONCLUSIVE
                    )


# --------------------------------------------------------------------------- figure and tables


@dataclass
class FakeResult:
    summary: dict


@dataclass
class FakeProfile:
    results: dict = field(default_factory=dict)

    def get(self, name: str):
        return self.results.get(name)


def synthetic_summary() -> dict:
    rows = []
    for p in range(6):
        for c in (10, 20, 50, 100):
            grow = 1 + c / 40
            rows += [
                _row("baseline", p, c, 1.0 + 0.01 * p, 32, 32),
                _row("baseline_nocache", p, c, 1.0 * grow + 0.01 * p, 32, 32),
                _row("nocache", p, c, 0.5 * grow + 0.02 * p, 32, 9 + p % 2),
                _row("mixed_target", p, c, 0.45 * grow + 0.02 * p, 32, 9 + p % 2),
                _row("mixed_draft", p, c, 0.5 * grow + 0.02 * p, 32, 9 + p % 2),
                _row("cached", p, c, 0.5 + 0.02 * p, 32, 9 + p % 2),
            ]
    return implementations_summary(rows, _config(list(impl.VARIANTS), (10, 20, 50, 100)))


def test_the_figure_draws_each_variant_and_the_published_rows_in_red():
    from specdec_study import pages as report

    s = synthetic_summary()
    fig = report.fig_implementations(FakeProfile({"implementations": FakeResult(s)}))
    left, right = fig.axes[:2]
    labels = [t.get_text().replace("\n", " ") for t in fig.legends[0].get_texts()]  # wrapped
    assert len([x for x in labels if "(n = 6)" in x]) == 4
    assert any("earlier study" in x for x in labels)
    red = [line for line in left.get_lines() if line.get_color() == DRAFT_COLORS["earlier"]]
    assert len(red) == 1 and list(red[0].get_xdata()) == [10, 20, 50, 100]
    published = report.earlier_recomputed()
    t = published[published["strategy"] == "transformer draft"].sort_values("context")
    assert list(red[0].get_ydata()) == pytest.approx(list(t["one_baseline_speedup"]))
    assert red[0].get_ydata()[0] == pytest.approx(273.80 / 149.76)
    assert left.get_xlabel() and right.get_xlabel() and right.get_ylabel()
    # one curve per variant on the right, at its tokens per call
    cached = next(t for t in s["table"] if t["variant"] == "cached" and t["context"] == 10)
    ys = [y for line in right.get_lines() for y in line.get_ydata()]
    assert any(y == pytest.approx(cached["tokens_per_call"]["value"]) for y in ys)
    assert report.fig_implementations(FakeProfile()) is None


def test_the_declared_figure_draws_from_a_summary():
    (figure,) = catalog.experiment("implementations").figures
    assert figure.draw(synthetic_summary(), []) is not None


def test_the_table_and_the_shape_read_the_summary():
    from specdec_study import pages as report

    s = synthetic_summary()
    p = FakeProfile({"implementations": FakeResult(s)})
    df = report.implementations_table(p)
    assert len(df) == 16 and set(df["n"]) == {6}
    assert list(df.columns[:2]) == ["variant", "context"]
    shape = report.implementations_shape(p)
    assert set(shape) == set(impl.VARIANTS)
    # the uncached variants' time grows with context: the single divisor falls; cached: flat
    assert shape["nocache"]["ratio"]["value"] < 0.5 < shape["cached"]["ratio"]["value"]
    assert shape["cached"]["label"] == DOES_NOT_REPRODUCE
    assert shape["nocache"]["label"] == REPRODUCES
    assert report.implementations_table(FakeProfile()) is None
    assert report.implementations_shape(FakeProfile()) == {}


# --------------------------------------------------------------------------- reuse


@pytest.mark.parametrize(
    "name",
    [
        e
        for e in catalog.EXPERIMENTS
        if e != "implementations" and (EMBEDDED / e / "config.json").exists()
    ],
)
def test_the_other_experiments_committed_results_keep_their_config_hash(name):
    """Adding the positive control (and make_arm's draft_cache) changed no other experiment's
    config: the embedded profile builds the config whose hash names its committed result, so
    the batch reuses it rather than re-measuring it."""
    committed = json.loads((EMBEDDED / name / "config.json").read_text())
    s = study.Session(study.load_profile("embedded"), ROOT / "results")
    built = RUNNERS[name].config(s)
    assert config_hash(built) == committed["config_hash"], name


def test_the_reading_gives_each_variants_label_and_a_row_per_variant_and_context(smoke_run):
    from specdec_study.reporting.readings import reading

    _, res = smoke_run
    text = reading(res.path)
    shown = text.split("**What it showed.**")[1]
    for v, ch in res.summary["changes"].items():
        assert next(x for x in text.splitlines() if x.startswith(f"- `{v}`"))
        said = re.search(rf"`{v}`'s [^;]*?the shape rule says ([a-z ]+)[;.]", shown)
        assert said and said.group(1) == ch["label"], shown
    rows = [x for x in text.splitlines() if x.startswith("| `")]
    assert len(rows) == len(impl.VARIANTS) * 4
    assert "{" not in text  # no interval dict printed raw


def test_the_time_estimate_counts_each_arms_own_target_cache(tmp_path):
    """The notebook's estimate (`runner.estimate.work`) feeds an arm whose target recomputes the
    prefix the whole sequence per call, and a cached arm one token (per K + 1) per call."""
    from specdec_study.runner.estimate import work

    cfg = RUNNERS["implementations"].config(smoke(tmp_path))
    calls = work("implementations", cfg)
    per_block = 3 * len(cfg["arms"])  # per arm its prefill, its decode and its warm-up
    assert len(calls) == per_block * len(cfg["contexts"])
    first = calls[:per_block]  # context 10
    decode = {arm: first[3 * i + 1] for i, arm in enumerate(cfg["arms"])}
    assert decode["baseline"].tokens == 1
    assert decode["cached"].tokens == decode["mixed_draft"].tokens == cfg["k"] + 1
    assert decode["baseline_nocache"].tokens > 10
    assert decode["nocache"].tokens == decode["mixed_target"].tokens > cfg["k"] + 1


def test_identity_is_counted_against_each_variants_own_baseline():
    """An uncached variant is compared with the uncached baseline, a cached one with the cached
    baseline, prompt by prompt at one context."""
    import pandas as pd

    from specdec_study.reporting.implementation_tables import identical_to_own_baseline

    rows = pd.DataFrame(
        [
            {"method": m, "prompt": p, "context": 10, "tokens": t}
            for m, p, t in [
                ("baseline", 0, [1, 2]),
                ("baseline", 1, [3, 4]),
                ("baseline_nocache", 0, [1, 9]),
                ("baseline_nocache", 1, [3, 4]),
                ("nocache", 0, [1, 9]),
                ("nocache", 1, [3, 4]),
                ("cached", 0, [1, 2]),
                ("cached", 1, [3, 5]),
            ]
        ]
    )
    arms = variant_arms(["nocache", "cached"])
    assert identical_to_own_baseline(rows, arms["nocache"], 10) == "2/2"
    assert identical_to_own_baseline(rows, arms["cached"], 10) == "1/2"
    assert identical_to_own_baseline(None, arms["cached"], 10) == "-"
