"""`python -m specdec_lib claims`: every number the book states from the committed results, each
recomputed from the files by its own expression, covering the introduction's key numbers and
every verdict's Q, and following a change planted in a result file."""

from __future__ import annotations

import dataclasses
import json
import math
import shutil

import pytest

from specdec_study.cli import main
from specdec_study.reporting.claims import CLAIMS, Claim, claims, differing, recompute
from specdec_study.reporting.format import central, num
from specdec_study.reporting.hypotheses import verdicts
from specdec_study.reporting.hypotheses_summary import key_numbers
from specdec_study.results.read import load_results, results_root

PROFILE = "embedded"


@pytest.fixture(scope="module")
def committed():
    p = load_results(PROFILE)
    if p.empty:
        pytest.skip("no committed embedded results")
    return p


@pytest.fixture(scope="module")
def committed_claims(committed) -> list[Claim]:
    return claims(committed)


def test_every_claim_recomputes_from_the_files_by_its_expression(committed, committed_claims):
    assert len(committed_claims) > 50
    for c in committed_claims:
        assert math.isclose(recompute(c, committed), c.value, rel_tol=0, abs_tol=0), c.name


def test_every_group_of_the_registry_states_claims(committed_claims):
    assert {c.group for c in committed_claims} == set(CLAIMS)


def test_claim_names_are_unique(committed_claims):
    names = [c.name for c in committed_claims]
    assert len(names) == len(set(names))


def as_key_number(c: Claim, row: dict) -> dict:
    """The claim formatted as the introduction's key-numbers table formats its row."""
    if row["n"] == "not reported":
        return {**row, "value": num(100 * c.value, 2, "%")}
    suffix = next((s for s in ("%", " pts") if row["value"].endswith(s)), "x")
    scale, nd = (100.0, 1) if suffix != "x" else (1.0, 2)
    return {
        **row,
        "value": num(scale * c.value, nd, suffix),
        "95% CI": "n/a"
        if c.ci_low is None
        else f"[{num(scale * c.ci_low, nd)}, {num(scale * c.ci_high, nd)}]",
        "n": c.n,
    }


def test_every_key_number_of_the_introduction_is_a_claim_of_the_same_value(
    committed, committed_claims
):
    by_name = {c.name: c for c in committed_claims if c.group == "key numbers"}
    rows = key_numbers(committed).to_dict("records")
    assert len(rows) == len(by_name)
    for row in rows:
        assert as_key_number(by_name[row["figure"]], row) == row


def test_every_verdicts_q_is_a_claim_with_its_interval_and_n(committed, committed_claims):
    qs = {c.name.split(":")[0]: c for c in committed_claims if c.group == "verdicts"}
    for v in verdicts(committed):
        if not v.quantity:
            continue
        c = qs[v.key]
        assert c.value == central(v.quantity)
        assert c.ci_low == v.quantity.get("ci_low") and c.ci_high == v.quantity.get("ci_high")
        assert c.n == v.quantity.get("n", v.quantity.get("n_prompts"))


def changed_claims(tmp_path, before: list[Claim], experiment: str, path: list[str]) -> list[Claim]:
    """The claims whose value differs after adding 0.001 to one number of a copy of the
    committed summary of `experiment` (path: its keys; "{primary}" is the summary's primary)."""
    shutil.copytree(results_root() / PROFILE, tmp_path / PROFILE)
    f = tmp_path / PROFILE / experiment / "summary.json"
    s = json.loads(f.read_text())
    keys = [s.get("primary") if k == "{primary}" else k for k in path]
    cell = s
    for k in keys[:-1]:
        cell = cell[k]
    cell[keys[-1]] += 0.001
    f.write_text(json.dumps(s))
    after = claims(load_results(PROFILE, tmp_path))
    assert len(after) == len(before)
    return [a for a, b in zip(after, before, strict=True) if a.value != b.value]


@pytest.mark.parametrize(
    ("experiment", "path", "names"),
    [
        ("bigram", ["headline", "speedup", "value"], ["bigram: speedup"]),
        (
            "bigram",
            ["arms", "bigram", "acceptance_rate", "value"],
            ["bigram: arms / bigram / acceptance_rate"],
        ),
    ],
)
def test_a_change_planted_in_a_summary_changes_its_claim(
    committed, committed_claims, tmp_path, experiment, path, names
):
    changed = changed_claims(tmp_path, committed_claims, experiment, path)
    assert [c.name for c in changed] == names


def test_a_change_planted_in_the_agreement_changes_the_key_number_and_h3(
    committed, committed_claims, tmp_path
):
    if committed.get("agreement") is None:
        pytest.skip("no committed agreement")
    path = ["continuation", "changes", "quant8", "tokens_per_call", "value"]
    changed = changed_claims(tmp_path, committed_claims, "agreement", path)
    assert sorted(c.group for c in changed) == ["key numbers", "verdicts"]
    assert next(c for c in changed if c.group == "verdicts").name.startswith("H3: Q")


def test_a_change_planted_in_the_bench_changes_a_performance_claim(committed, tmp_path):
    shutil.copytree(results_root() / PROFILE, tmp_path / PROFILE)
    bench = tmp_path / PROFILE / "bench" / "summary.json"
    data = json.loads(bench.read_text())
    group = next(iter(data["groups"]))
    arm = next(iter(data["groups"][group]["arms"]))
    data["groups"][group]["arms"][arm]["speedup"]["value"] = 9.75
    bench.write_text(json.dumps(data))
    planted = claims(load_results(PROFILE, tmp_path))
    name = f"bench: groups / {group} / arms / {arm} / speedup"
    assert next(c for c in planted if c.name == name).value == 9.75


def test_the_check_recomputes_every_claim_and_names_one_that_differs(committed, capsys):
    assert main(["claims", "--profile", PROFILE, "--check"]) == 0
    assert capsys.readouterr().out.endswith(f"of {PROFILE}: 0 differ\n")
    c = claims(committed)[0]
    wrong = dataclasses.replace(c, recompute=f"{c.recompute} + 1")
    assert differing([c, wrong], committed) == [f"{c.name}: {c.value!r} -> {c.value + 1!r}"]


def test_the_command_prints_a_table_and_json(capsys, committed_claims):
    assert main(["claims", "--profile", PROFILE]) == 0
    out = capsys.readouterr().out
    assert "| claim | value | 95% CI | n | source | recompute |" in out
    assert f"claims --profile {PROFILE} --check" in out.splitlines()[0]
    assert main(["claims", "--profile", PROFILE, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data) == len(committed_claims)
    assert {"name", "value", "ci_low", "ci_high", "n", "source", "recompute"} <= set(data[0])


def test_the_command_refuses_a_profile_without_results_in_one_line(capsys):
    assert main(["claims", "--profile", "no-such-profile"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no results" in err
