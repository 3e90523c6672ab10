"""Each experiment's summary.json and config.json have declared shapes (TypedDicts beside its
declaration), and results.schema holds a result to them: on read a summary or config missing a
declared key, or with a value of another type, is a damaged result with a one-line reason; on
write the runner refuses to publish the summary, and refuses to run with the config. The
committed results, and the configs the runner builds for every profile, are of their declared
shapes, with no key the declaration omits.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import whole_config

from specdec_lib.config import config_hash
from specdec_lib.errors import SpecdecError
from specdec_study import study
from specdec_study.analysis.summary import ArmSummary, MedianCI, PointCI
from specdec_study.results import catalog
from specdec_study.results.declare import StudyConfig
from specdec_study.results.schema import (
    config_problem,
    result_problem,
    shape_problem,
    summary_problem,
)
from specdec_study.results.store import clean, load_result
from specdec_study.runner.experiments import RUNNERS

ROOT = Path(__file__).resolve().parents[1]
EMBEDDED = ROOT / "results" / "embedded"


def test_every_experiment_declares_its_summary():
    for name, (_, e) in catalog.declared().items():
        assert e.summary is not None, name
        assert {"experiment", "profile", "roles", "headline"} <= e.summary.__required_keys__, name


@pytest.mark.parametrize("name", catalog.EXPERIMENTS)
def test_the_committed_results_are_of_their_declared_shapes_and_declare_every_key(name):
    summary = json.loads((EMBEDDED / name / "summary.json").read_text())
    assert summary_problem(name, summary, strict=True) is None
    assert result_problem(EMBEDDED / name, study=True) is None


def copy_of(tmp_path: Path, name: str) -> Path:
    d = tmp_path / "embedded" / name
    shutil.copytree(EMBEDDED / name, d)
    return d


def edit_json(f: Path, edit) -> None:
    """Rewrite the JSON file f as edit(its data) left it."""
    data = json.loads(f.read_text())
    edit(data)
    f.write_text(json.dumps(data))


def rewrite(d: Path, edit) -> None:
    """Edit summary.json (per_prompt.csv and its record stay as they are)."""
    edit_json(d / "summary.json", edit)


def assert_refused_in_one_line(d: Path, problem: str) -> None:
    """A study result whose problem is `problem`: load_result refuses it in one line naming
    it; outside the study the shape is not asked for."""
    assert result_problem(d, study=True) == problem
    with pytest.raises(SpecdecError) as e:
        load_result(d, study=True)
    assert "\n" not in str(e.value) and problem in str(e.value)
    assert result_problem(d) is None


def test_a_summary_missing_a_declared_key_is_refused_in_one_line(tmp_path):
    d = copy_of(tmp_path, "bigram")
    rewrite(d, lambda s: s["headline"].pop("arm"))
    assert_refused_in_one_line(d, "summary.json['headline'] has no 'arm'")


def test_a_summary_value_of_another_type_is_refused_naming_where(tmp_path):
    d = copy_of(tmp_path, "k_sweep")
    rewrite(d, lambda s: s["table"][2].update(k="3"))
    assert result_problem(d, study=True) == "summary.json['table'][2]['k'] is a str, not int"
    d = copy_of(tmp_path, "context_sweep")
    rewrite(d, lambda s: s["by_context"]["20"]["arms"]["baseline"].update(wall_s=[1.0]))
    assert result_problem(d, study=True) == (
        "summary.json['by_context']['20']['arms']['baseline']['wall_s'] is a list, not an object"
    )


def test_null_statistics_and_keys_from_before_a_declaration_pass(tmp_path):
    """A NaN statistic is written as null; `primary` and `continuation` were added later, and a
    result without them is read (the book asks for a re-run)."""
    d = copy_of(tmp_path, "agreement")
    rewrite(d, lambda s: [s.pop("primary"), s.pop("continuation")])
    assert result_problem(d, study=True) is None
    d = copy_of(tmp_path, "bigram")
    rewrite(d, lambda s: s["arms"]["bigram"]["speedup"].update(ci_low=None))
    assert result_problem(d, study=True) is None


def test_the_shape_checker_reads_unions_lists_and_numbers():
    ci = {"value": 1.5, "ci_low": None, "ci_high": 2, "n": 3, "ci_method": "bca"}
    assert shape_problem(ci, PointCI) is None  # an int passes for a float, null for a Num
    assert shape_problem({**ci, "n": 3.0}, PointCI, "x") == "x['n'] is a float, not int"
    assert shape_problem({**ci, "n": True}, PointCI, "x") == "x['n'] is a bool, not int"
    assert shape_problem({**ci, "extra": 1}, PointCI) is None
    assert shape_problem({**ci, "extra": 1}, PointCI, "x", strict=True) == (
        "x has 'extra', which PointCI does not declare"
    )
    assert shape_problem(ci, MedianCI, "x") == "x has no 'median'"
    assert shape_problem([1, None], list[float | None]) is None
    assert shape_problem([1, "a"], list[float | None], "x") == "x[1] is a str, not float | None"


def test_the_write_check_sees_the_summary_as_json_will_read_it():
    """The runner checks clean(summary): numpy numbers and NaN are what summary.json holds."""
    name = "baseline"
    summary = json.loads((EMBEDDED / name / "summary.json").read_text())
    arm = summary["arms"]["baseline"]
    arm["n_prompts"] = np.int64(arm["n_prompts"])
    arm["wall_s"]["ci_low"] = np.float64(math.nan)  # a Num: null passes
    assert summary_problem(name, clean(summary)) is None
    arm["k"] = "0"
    assert summary_problem(name, clean(summary)) == (
        "summary.json['arms']['baseline']['k'] is a str, not int"
    )
    assert shape_problem(clean(summary)["arms"]["baseline"], ArmSummary) is not None


# --------------------------------------------------------------------------- config.json


def test_every_experiment_declares_its_config_shape():
    for name, (_, e) in catalog.declared().items():
        assert e.config_shape is not None, name
        assert StudyConfig.__required_keys__ <= e.config_shape.__required_keys__, name


COMMITTED_CONFIGS = sorted((ROOT / "results").glob("*/*/config.json"))


@pytest.mark.parametrize(
    "path", COMMITTED_CONFIGS, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}"
)
def test_every_committed_config_is_of_its_declared_shape_and_declares_every_key(path):
    config = json.loads(path.read_text())
    assert config_problem(path.parent.name, config, strict=True) is None


def test_every_experiment_has_a_committed_config():
    assert {p.parent.name for p in COMMITTED_CONFIGS} >= set(catalog.EXPERIMENTS)


PROFILES = sorted(p.stem for p in (ROOT / "profiles").glob("*.yaml"))


@pytest.mark.parametrize("profile", PROFILES)
def test_the_configs_the_runner_builds_are_of_their_declared_shapes_and_declare_every_key(profile):
    """Every profile's config of every experiment it runs, as config.json will read it (clean),
    with the hash publish adds."""
    s = study.Session(study.load_profile(profile), ROOT / "results")
    runs = [name for name in catalog.EXPERIMENTS if s.section(name) is not None]
    assert runs
    for name in runs:
        config = clean(RUNNERS[name].config(s))
        config["config_hash"] = config_hash(config)
        assert config_problem(name, config, strict=True) is None, (profile, name)


def rewrite_config(d: Path, edit) -> None:
    """Edit config.json (its config_hash stays: the shape is checked, not the hash)."""
    edit_json(d / "config.json", edit)


def test_a_config_missing_a_declared_key_is_refused_on_read_in_one_line(tmp_path):
    d = copy_of(tmp_path, "k_sweep")
    rewrite_config(d, lambda c: c["adaptive"].pop("k_max"))
    assert result_problem(d, study=True) == "config.json['adaptive'] has no 'k_max'"
    d = copy_of(tmp_path, "bigram")
    rewrite_config(d, lambda c: c.pop("warmup"))
    assert_refused_in_one_line(d, "config.json has no 'warmup'")


def test_a_config_value_of_another_type_is_refused_on_read_naming_where(tmp_path):
    d = copy_of(tmp_path, "context_sweep")
    rewrite_config(d, lambda c: c.update(use_cache="yes"))
    assert result_problem(d, study=True) == "config.json['use_cache'] is a str, not bool"
    d = copy_of(tmp_path, "sampling")
    rewrite_config(d, lambda c: c["sequence"].update(tvd_target=[0.05]))
    assert result_problem(d, study=True) == (
        "config.json['sequence']['tvd_target'] is a list, not float"
    )


def test_keys_from_before_a_config_declaration_and_no_sequence_check_pass(tmp_path):
    """`primary` was added later (a result without it is read; the book asks for a re-run), a
    draft on fewer prompts is recorded only where there is one, and a profile without a sequence
    check writes null."""
    d = copy_of(tmp_path, "agreement")
    rewrite_config(d, lambda c: c.pop("primary"))
    assert result_problem(d, study=True) is None
    d = copy_of(tmp_path, "context_sweep")
    rewrite_config(d, lambda c: [c.pop("primary"), c.pop("n_prompts_by_arm")])
    assert result_problem(d, study=True) is None
    d = copy_of(tmp_path, "sampling")
    rewrite_config(d, lambda c: c.update(sequence=None))
    assert result_problem(d, study=True) is None


@pytest.mark.parametrize(
    ("name", "edit", "problem"),
    [
        ("baseline", lambda c: c.pop("n_prompts"), "config.json has no 'n_prompts'"),
        (
            "transformer_draft",
            lambda c: c["identity"].update(n_prompts="4"),
            "config.json['identity']['n_prompts'] is a str, not int",
        ),
        (
            "agreement",
            lambda c: c.update(arms=["quant8"]),
            "config.json['arms'] is a list, not an object",
        ),
    ],
)
def test_a_config_of_another_shape_is_refused_before_anything_runs(tmp_path, name, edit, problem):
    from specdec_study.runner.execute import execute

    config = whole_config(name, "embedded")
    edit(config)
    s = study.Session(study.load_profile("smoke"), tmp_path)

    def compute(progress):
        raise AssertionError("computed with a config of another shape")

    with pytest.raises(SpecdecError) as e:
        execute(s, name, config, compute)
    assert str(e.value) == f"{name}: not run, its config differs: {problem}"
    assert not any(tmp_path.rglob("*.jsonl"))  # no checkpoint was started


def test_the_config_write_check_sees_the_config_as_json_will_read_it():
    """The runner checks clean(config): numpy numbers are what config.json holds."""
    config = whole_config("k_sweep", "embedded")
    config["n_prompts"] = np.int64(config["n_prompts"])
    config["ks"] = tuple(np.int64(k) for k in config["ks"])
    assert config_problem("k_sweep", clean(config)) is None
    config["k"] = 4.0
    assert config_problem("k_sweep", clean(config)) == "config.json['k'] is a float, not int"
