"""The reproducibility chapter's provenance (`reporting.provenance`) against this checkout's
own git history: how far each result's commit lies from the build, and whether the rules a
result records were those of its own commit."""

from __future__ import annotations

import subprocess
from types import SimpleNamespace

import pytest

from specdec_lib import ROOT
from specdec_study.analysis.rules import SECOND_ROUND_SHA256, rules_sha256
from specdec_study.reporting import provenance


def git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()


def profile(**envs: dict) -> SimpleNamespace:
    return SimpleNamespace(results={n: SimpleNamespace(env=e) for n, e in envs.items()})


@pytest.fixture(scope="module")
def head() -> str:
    try:
        return git("rev-parse", "HEAD")
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")


def test_commits_markdown_says_how_far_each_result_lies(head):
    """Planted bug it catches (seen failing): the commit count reversed (HEAD..c counts 0)."""
    three_back = git("rev-parse", "HEAD~3")
    md = provenance.commits_markdown(
        profile(
            here={"git_commit": head},
            earlier={"git_commit": three_back},
            none={},
            foreign={"git_commit": "f" * 40},
        )
    )
    lines = md.splitlines()
    # HEAD~3 follows first parents: with merges, more than 3 commits may lie between
    between = int(git("rev-list", "--count", f"{three_back}..HEAD"))
    assert between >= 3
    assert lines[0] == f"This book was built at commit `{head[:12]}`."
    assert "- `here`: computed at this commit." in lines
    assert any(
        line.startswith(
            f"- `earlier`: computed at `{three_back[:12]}`, **{between} commits before**"
        )
        for line in lines
    )
    assert "- `none`: no commit recorded." in lines
    assert f"- `foreign`: computed at `{'f' * 12}`, not in this checkout's history." in lines
    assert "FORCE=1" in md  # results from an earlier commit: how to recompute them
    assert provenance.commits_markdown(profile()) == "No results for this profile."


def test_rules_markdown_checks_each_results_rules_against_its_commit(head):
    """A result at HEAD recording today's rules hash was measured under them and its commit
    holds them; one recording another hash says so twice; a commit not here cannot be checked.
    Planted bug it catches (seen failing): the recorded hash compared with itself (always
    "current")."""
    md = provenance.rules_markdown(
        profile(
            same={"git_commit": head, "rules_sha256": rules_sha256()},
            other={"git_commit": head, "rules_sha256": "0" * 64},
            gone={"git_commit": "f" * 40, "rules_sha256": rules_sha256()},
            old={},
            second={"git_commit": head, "rules_sha256": SECOND_ROUND_SHA256},
        )
    )
    line = {n: next(x for x in md.splitlines() if x.startswith(f"- `{n}`")) for n in
            ("same", "other", "gone", "old", "second")}  # fmt: skip
    assert (
        "under the current rules" in line["same"]
        and "already held the rules it records" in line["same"]
    )
    assert "under **other rules**" in line["other"] and "held **other rules**" in line["other"]
    assert "does not hold" in line["gone"]
    assert "records no rules hash" in line["old"]
    assert "second round's rules" in line["second"] and "revised after it existed" in line["second"]
    assert md.startswith(provenance.FIRST_ROUND)


def test_env_records_which_measuring_files_differ_from_the_commit(tmp_path):
    """git_commit alone names code that may not be what ran: env.json's `git_modified` lists the
    files of the measuring code changed or added since that commit ([] when it is the code), and
    is None outside a git checkout. Other files (a chapter, a test) and ignored ones are not
    listed."""
    from specdec_study.environment.tracking import git_modified

    def run(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    assert git_modified(tmp_path) is None
    run("init", "-q")
    (tmp_path / "specdec_lib").mkdir()
    (tmp_path / "specdec_lib" / "decode.py").write_text("K = 1\n")
    (tmp_path / "notes.md").write_text("a\n")
    run("add", ".")
    run("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "c")
    assert git_modified(tmp_path) == []
    (tmp_path / ".gitignore").write_text("*.pyc\n")
    (tmp_path / "notes.md").write_text("b\n")
    (tmp_path / "specdec_lib" / "decode.pyc").write_bytes(b"\0")
    assert git_modified(tmp_path) == []
    (tmp_path / "specdec_lib" / "decode.py").write_text("K = 2\n")
    (tmp_path / "specdec_lib" / "new.py").write_text("K = 3\n")
    assert git_modified(tmp_path) == ["specdec_lib/decode.py", "specdec_lib/new.py"]
