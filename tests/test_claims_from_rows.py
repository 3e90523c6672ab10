"""Claims that can fail (issue 38, case 6): every headline and arm claim is recomputed from
per_prompt.csv, so `claims --check` fails on a summary.json edited after publication (the
baseline's headline tokens/s times 10, an arm's speedup), naming the claim."""

from __future__ import annotations

import json
import shutil

import pytest

from specdec_study.analysis.from_rows import SUMMARIZED, summary_from_rows
from specdec_study.cli import main
from specdec_study.reporting.claims import claims, differing
from specdec_study.reporting.format import central
from specdec_study.results.read import load_results, results_root

PROFILE = "embedded"


@pytest.fixture
def copied(tmp_path, monkeypatch):
    """A copy of the committed embedded results, which $SPECDEC_RESULTS points at."""
    if load_results(PROFILE).empty:
        pytest.skip("no committed embedded results")
    shutil.copytree(results_root() / PROFILE, tmp_path / PROFILE)
    monkeypatch.setenv("SPECDEC_RESULTS", str(tmp_path))
    return tmp_path / PROFILE


def edit(path, change) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")


def test_every_headline_and_arm_claim_is_recomputed_from_the_rows():
    p = load_results(PROFILE)
    if p.empty:
        pytest.skip("no committed embedded results")
    mine = [c for c in claims(p) if c.group in ("headline", "arms")]
    assert mine and all(c.recompute.startswith("at(rows(p, ") for c in mine)
    assert set(SUMMARIZED) >= set(p.results)


@pytest.mark.parametrize(
    ("experiment", "path", "claim"),
    [
        ("baseline", ("headline", "tokens_per_s", "median"), "baseline: tokens_per_s"),
        ("bigram", ("arms", "bigram", "speedup", "value"), "bigram: arms / bigram / speedup"),
        ("k_sweep", ("headline", "best_speedup_measured"), "k_sweep: best_speedup_measured"),
    ],
)
def test_claims_check_fails_on_a_summary_edited_after_publication(
    copied, capsys, experiment, path, claim
):
    def times_ten(s: dict) -> None:
        cell = s
        for key in path[:-1]:
            cell = cell[key]
        cell[path[-1]] *= 10

    edit(copied / experiment / "summary.json", times_ten)
    assert main(["claims", "--profile", PROFILE, "--check"]) == 1
    out = capsys.readouterr()
    assert claim in out.out + out.err
    p = load_results(PROFILE, copied.parent)
    assert any(d.startswith(f"{claim}:") for d in differing(claims(p), p))


def test_the_rows_give_the_committed_summary_numbers():
    p = load_results(PROFILE)
    if p.empty:
        pytest.skip("no committed embedded results")
    res = p.get("baseline")
    again = summary_from_rows(res, "baseline")
    stated = res.summary["headline"]["tokens_per_s"]
    assert central(again["headline"]["tokens_per_s"]) == central(stated)
