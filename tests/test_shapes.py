"""Each experiment's summary.json has a declared shape (a TypedDict beside its declaration), and
results.schema holds a result to it: on read a summary missing a declared key, or with a value of
another type, is a damaged result with a one-line reason; on write the runner refuses to publish
it. The committed results are of their declared shapes, with no key the declaration omits.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from specdec_lib.analysis.summary import ArmSummary, MedianCI, PointCI
from specdec_lib.errors import SpecdecError
from specdec_lib.results import catalog
from specdec_lib.results.schema import result_problem, shape_problem, summary_problem
from specdec_lib.results.store import clean, load_result

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


def rewrite(d: Path, edit) -> None:
    """Edit summary.json (per_prompt.csv and its record stay as they are)."""
    f = d / "summary.json"
    s = json.loads(f.read_text())
    edit(s)
    f.write_text(json.dumps(s))


def test_a_summary_missing_a_declared_key_is_refused_in_one_line(tmp_path):
    d = copy_of(tmp_path, "bigram")
    rewrite(d, lambda s: s["headline"].pop("arm"))
    problem = result_problem(d, study=True)
    assert problem == "summary.json['headline'] has no 'arm'"
    with pytest.raises(SpecdecError) as e:
        load_result(d, study=True)
    assert "\n" not in str(e.value) and "has no 'arm'" in str(e.value)
    assert result_problem(d) is None  # outside the study the shape is not asked for


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
