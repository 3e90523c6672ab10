"""The reproduction check: today's code re-runs the first prompt of committed experiments and
compares greedy token ids, accepted / proposed counts and per-position agreement exactly, never
timings; it skips in one line where this machine's dtype is not the results'; the book's page
says when it last passed (or that it was never checked)."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest

from specdec_study.reporting.reproduction_page import record_markdown
from specdec_study.results.read import load_results, results_root
from specdec_study.results.reproduction import (
    FAILED,
    NOT_COMPARABLE,
    PASSED,
    compare_rows,
    record_path,
    rows_fingerprint,
    write_record,
)

PROFILE = "embedded"


def committed_rows(experiment: str) -> pd.DataFrame:
    p = load_results(PROFILE)
    if p.get(experiment) is None:
        pytest.skip(f"no committed {experiment} result")
    return p.get(experiment).rows


def test_committed_rows_reproduce_themselves():
    rows = committed_rows("bigram")
    c = compare_rows(rows.head(2), rows)
    assert (c.outcome, c.rows) == (PASSED, 2)
    assert {"tokens", "accepted", "proposed"} <= set(c.columns)


def test_a_changed_token_id_fails_and_names_its_row():
    rows = committed_rows("bigram")
    new = rows.head(2).copy()
    ids = new.at[0, "tokens"]
    new.at[0, "tokens"] = [ids[0], 1, *ids[1:]]  # a token inserted after the first
    c = compare_rows(new, rows)
    assert c.outcome == FAILED
    assert "tokens" in c.details[0] and f"article={rows.loc[0, 'article']}" in c.details[0]


@pytest.mark.parametrize("position", [0, -1])  # the last: as a float the string lost it
def test_a_changed_agreement_position_fails(position):
    rows = committed_rows("agreement")
    new = rows.head(3).copy()
    m = list(new.at[1, "matches"])
    m[position] = 1 - m[position]
    new.at[1, "matches"] = m
    assert compare_rows(new, rows).outcome == FAILED


def test_a_changed_last_token_id_fails():
    rows = committed_rows("bigram")
    new = rows.head(1).copy()
    ids = new.at[0, "tokens"]
    new.at[0, "tokens"] = [*ids[:-1], ids[-1] + 1]
    assert compare_rows(new, rows).outcome == FAILED


def test_timings_are_never_compared():
    rows = committed_rows("bigram")
    new = rows.head(2).copy()
    new["wall_s"] *= 3
    new["tokens_per_s"] /= 3
    assert compare_rows(new, rows).outcome == PASSED


def test_a_new_identifying_column_pairs_rows_when_both_have_it():
    old = pd.DataFrame({"article": [1, 1], "view": ["a", "b"], "matches": [[0, 1], [1, 0]]})
    new = pd.DataFrame({"article": [1], "view": ["b"], "matches": [[1, 0]]})
    assert compare_rows(new, old).outcome == PASSED
    assert compare_rows(new.assign(view="a"), old).outcome == FAILED


def test_a_key_column_only_the_new_rows_have_pairs_with_every_committed_row_of_the_rest():
    old = pd.DataFrame({"article": [1, 1], "matches": [[0, 1], [1, 0]]})
    new = pd.DataFrame({"article": [1, 1], "view": ["a", "b"], "matches": [[1, 0], [0, 1]]})
    assert compare_rows(new, old).outcome == PASSED
    assert compare_rows(new.assign(matches=[[1, 1]] * 2), old).outcome == FAILED


def test_rows_that_pair_with_no_committed_row_are_not_comparable():
    old = pd.DataFrame({"article": [1], "tokens": [[1, 2]]})
    assert compare_rows(pd.DataFrame({"article": [2], "tokens": [[1, 2]]}), old).outcome == (
        NOT_COMPARABLE
    )


def test_the_page_says_not_yet_checked_without_a_record(tmp_path):
    p = load_results(PROFILE, tmp_path)
    assert record_markdown(p).startswith("Not yet checked")


def test_the_page_says_when_and_at_which_commit_it_last_passed(tmp_path):
    rows = committed_rows("bigram")
    check = compare_rows(rows.head(1), rows)
    where = "a CPU in bfloat16 (Some CPU)"
    write_record(record_path(tmp_path, PROFILE), "abcdef1234", "2026-12-04 18:00 UTC", 1, where,
                 {"bigram": check})  # fmt: skip
    text = record_markdown(load_results(PROFILE, tmp_path))
    assert "2026-12-04 18:00 UTC" in text and "`abcdef1`" in text and "**passed**" in text
    data = json.loads(record_path(tmp_path, PROFILE).read_text())
    assert data["experiments"]["bigram"]["outcome"] == PASSED
    assert "a CPU in bfloat16 (Some CPU)" in text


def test_the_page_names_what_differed_and_what_was_not_checked(tmp_path):
    rows = committed_rows("bigram")
    committed_rows("baseline")
    for e in ("bigram", "baseline"):
        shutil.copytree(results_root() / PROFILE / e, tmp_path / PROFILE / e)
    new = rows.head(1).copy()
    new.loc[0, "accepted"] = int(new.loc[0, "accepted"]) + 1
    write_record(record_path(tmp_path, PROFILE), "abc", "today", 1, "here",
                 {"bigram": compare_rows(new, rows)})  # fmt: skip
    text = record_markdown(load_results(PROFILE, tmp_path))
    assert "**did not pass**" in text and "accepted differ" in text
    assert "Not checked that time: `baseline`" in text


def test_the_page_says_a_check_of_earlier_results_says_nothing_of_these(tmp_path):

    rows = committed_rows("bigram")
    shutil.copytree(results_root() / PROFILE / "bigram", tmp_path / PROFILE / "bigram")
    copy = load_results(PROFILE, tmp_path)
    texts = []
    for sha in (rows_fingerprint(copy.get("bigram")), "0" * 64):
        check = compare_rows(rows.head(1), rows)
        check.committed_sha256 = sha
        write_record(record_path(tmp_path, PROFILE), "abc", "today", 1, "here",
                     {"bigram": check})  # fmt: skip
        texts.append(record_markdown(copy))
    assert "changed since" not in texts[0]
    assert "The committed rows of `bigram` have changed since" in texts[1]


def test_the_pages_cells_say_what_is_compared_when_it_was_checked_and_how_many_claims():
    import re

    from specdec_lib import ROOT
    from specdec_study import pages as R

    page = (ROOT / "book" / "reproducibility.md").read_text(encoding="utf-8")
    cells = re.findall(r"```\{code-cell\} ipython3\n(.*?)```", page, re.S)
    mine = [c for c in cells if "repro." in c or "claims(P)" in c]
    assert len(mine) == 2
    shown: list[str] = []
    p = load_results(PROFILE)
    for cell in mine:
        code = "\n".join(ln for ln in cell.splitlines() if not ln.startswith(":tags:"))
        exec(code, {"P": p, "pd": pd, "R": R, "Markdown": str, "display": shown.append})
    text = "\n".join(shown)
    # what is compared is said in the page's prose (the list is the CLI's and SCHEMA.md's)
    assert "tokens and counts exactly, never timings" in " ".join(page.split())
    assert "Not yet checked" in text or "The reproduction check last ran on" in text
    assert f"claims from the files of `{PROFILE}`" in text


def skip_reason_with_env(tmp_path, **env_change) -> tuple[str | None, tuple[str, str]]:
    """skip_reason for a copy of the committed bigram result whose env.json is changed, and
    this machine's (device type, dtype)."""
    from specdec_study.runner.reproduce import capped_study, machine, skip_reason

    shutil.copytree(results_root() / PROFILE / "bigram", tmp_path / PROFILE / "bigram")
    study = capped_study(PROFILE, str(tmp_path / "out"), 1)
    env = tmp_path / PROFILE / "bigram" / "env.json"
    env.write_text(json.dumps({**json.loads(env.read_text()), **env_change}))
    return skip_reason(study, load_results(PROFILE, tmp_path)), machine(study)


def test_results_of_another_dtype_are_skipped_with_the_reason(tmp_path):
    committed_rows("bigram")
    from specdec_study.runner.reproduce import capped_study, machine

    mine = machine(capped_study(PROFILE, str(tmp_path / "out"), 1))
    other = "float16" if mine[1] != "float16" else "float32"
    reason, mine = skip_reason_with_env(tmp_path, dtype=other, device=mine[0])
    assert reason is not None and other in reason and mine[1] in reason


def test_results_of_another_device_are_skipped_with_the_reason(tmp_path):
    committed_rows("bigram")
    from specdec_study.runner.reproduce import capped_study, machine

    mine = machine(capped_study(PROFILE, str(tmp_path / "out"), 1))
    other = "cuda:0" if mine[0] == "cpu" else "cpu"
    reason, _ = skip_reason_with_env(tmp_path, dtype=mine[1], device=other)
    assert reason is not None and f"{mine[1]} on a {'GPU' if other == 'cuda:0' else 'CPU'}" in (
        reason
    )


def test_results_of_this_machines_kind_are_not_skipped_for_their_dtype(tmp_path):
    committed_rows("bigram")
    from specdec_lib.models.embedded import embedded_available
    from specdec_study.environment.tracking import cpu_model
    from specdec_study.runner.reproduce import capped_study, machine

    mine = machine(capped_study(PROFILE, str(tmp_path / "out"), 1))
    reason, _ = skip_reason_with_env(tmp_path, dtype=mine[1], device=mine[0], cpu_model=cpu_model())
    assert reason is None or not embedded_available()


def test_bfloat16_results_of_another_cpu_model_are_skipped_with_the_reason(tmp_path):
    """AMD EPYC bfloat16 rows did not repeat on a Xeon with AMX (one greedy token differed):
    the kernels, not the code, so the check skips and says so."""
    committed_rows("bigram")
    from specdec_study.environment.tracking import cpu_model
    from specdec_study.runner.reproduce import capped_study, machine

    mine = machine(capped_study(PROFILE, str(tmp_path / "out"), 1))
    if mine != ("cpu", "bfloat16") or not cpu_model():
        pytest.skip(f"this machine computes in {mine[1]} on {mine[0]}: the dtype rule decides")
    reason, _ = skip_reason_with_env(
        tmp_path, dtype="bfloat16", device="cpu", cpu_model="Another CPU"
    )
    assert reason is not None and "bfloat16 on Another CPU" in reason and cpu_model() in reason
    assert "\n" not in reason


def test_a_skip_is_one_line_saying_why():
    from specdec_study.results.reproduction import report_lines, skipped

    why = "the results were computed in bfloat16 on a CPU; this machine computes in float32"
    assert report_lines({"bigram": skipped(why), "peers": skipped(why)}) == [
        f"reproduce: skipped: {why}"
    ]


def test_each_checked_experiment_gets_its_line_and_its_mismatches():
    from specdec_study.results.reproduction import report_lines

    rows = committed_rows("bigram")
    new = rows.head(1).copy()
    new.loc[0, "proposed"] = int(new.loc[0, "proposed"]) + 1
    lines = report_lines({"bigram": compare_rows(new, rows), "baseline": compare_rows(rows, rows)})
    assert lines[0].startswith("bigram: failed (1 rows") and "proposed differ" in lines[0]
    assert lines[1].startswith("baseline: passed")


def test_the_command_refuses_an_unknown_experiment_in_one_line(capsys):
    from specdec_study.cli import main

    assert main(["reproduce", "--experiment", "bigrm"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'bigrm'" in err


def test_capped_counts_reach_every_depth():
    from specdec_study.runner.reproduce import cap_counts

    sec = {"n_prompts": 6, "identity": {"n_prompts": 4, "dtypes": ["float32"]}, "k": 4}
    assert cap_counts(sec, 1) == {
        "n_prompts": 1,
        "identity": {"n_prompts": 1, "dtypes": ["float32"]},
        "k": 4,
    }


@pytest.mark.slow
@pytest.mark.parametrize("experiment", ["baseline", "k_sweep"])  # the fastest to re-run
def test_todays_code_reproduces_the_committed_rows(experiment):
    """The baseline's greedy tokens, and the K sweep's self-draft at every K and adaptive K
    (tokens, accepted and proposed counts), on the first committed prompt."""
    from conftest import skip_or_fail

    from specdec_lib.models.embedded import embedded_available
    from specdec_study.results.reproduction import SKIPPED
    from specdec_study.runner.reproduce import reproduce

    if not embedded_available():
        skip_or_fail("the embedded model package is not installed")
    if load_results(PROFILE).get(experiment) is None:
        pytest.skip(f"no committed {experiment} result")
    check = reproduce(PROFILE, 1, [experiment], write=False)[experiment]
    if check.outcome == SKIPPED:
        pytest.skip(check.details[0])
    assert check.outcome == PASSED, check.details
    assert check.rows >= 1 and {"tokens", "accepted", "proposed"} <= set(check.columns)
    assert len(check.committed_sha256) == 64  # which committed rows it was compared with


def test_the_command_refuses_a_bad_prompt_count_in_one_line(capsys):
    from specdec_study.cli import main

    assert main(["reproduce", "--prompts", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--prompts" in err


def test_a_profile_from_two_machines_is_checked_experiment_by_experiment(tmp_path):
    """Results of this machine's kind are compared even where others of the same profile came
    from another dtype (the embedded sampling result is float32 beside bfloat16 ones). Planted
    bug: one skip for the whole profile when any result is of another kind."""
    committed_rows("bigram")
    committed_rows("baseline")
    from specdec_lib.models.embedded import embedded_available
    from specdec_study.environment.tracking import cpu_model
    from specdec_study.runner.reproduce import capped_study, machine, skip_reason

    for e in ("bigram", "baseline"):
        shutil.copytree(results_root() / PROFILE / e, tmp_path / PROFILE / e)
    study = capped_study(PROFILE, str(tmp_path / "out"), 1)
    mine = machine(study)
    other = "float16" if mine[1] != "float16" else "float32"
    for e, dt in (("bigram", other), ("baseline", mine[1])):
        env = tmp_path / PROFILE / e / "env.json"
        here = {"dtype": dt, "device": mine[0], "cpu_model": cpu_model()}
        env.write_text(json.dumps({**json.loads(env.read_text()), **here}))
    committed = load_results(PROFILE, tmp_path)
    assert skip_reason(study, committed) is not None  # the profile as a whole: two kinds
    assert other in (skip_reason(study, committed, ["bigram"]) or "")
    assert skip_reason(study, committed, ["baseline"]) is None or not embedded_available()


def test_the_page_says_a_pass_covers_only_what_this_machine_could_compare(tmp_path):
    """A record with one experiment passed and one skipped passed, for what it compared; the
    skipped one's reason is in the table, and it is not called changed since (it read no rows).
    Planted bugs: a skip counted as a failure; a skip's missing fingerprint read as a change."""
    from specdec_study.results.reproduction import SKIPPED, skipped

    rows = committed_rows("bigram")
    committed_rows("sampling")
    for e in ("bigram", "sampling"):
        shutil.copytree(results_root() / PROFILE / e, tmp_path / PROFILE / e)
    checks = {"bigram": skipped("computed in bfloat16"), "sampling": compare_rows(rows, rows)}
    checks["sampling"].committed_sha256 = rows_fingerprint(
        load_results(PROFILE, tmp_path).get("sampling")
    )
    write_record(record_path(tmp_path, PROFILE), "abc", "today", 1, "here", checks)
    data = json.loads(record_path(tmp_path, PROFILE).read_text())
    assert data["passed"] and data["experiments"]["bigram"]["outcome"] == SKIPPED
    text = record_markdown(load_results(PROFILE, tmp_path))
    assert "**passed** for every experiment it could compare there" in text
    assert "computed in bfloat16" in text and "have changed since" not in text
    write_record(record_path(tmp_path, PROFILE), "abc", "today", 1, "here",
                 {"bigram": skipped("computed in bfloat16")})  # fmt: skip
    assert not json.loads(record_path(tmp_path, PROFILE).read_text())["passed"]
