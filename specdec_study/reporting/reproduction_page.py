"""The reproducibility page's account of the last reproduction check: read from
results/<profile>/reproduce.json (written by `python -m specdec_lib reproduce`), which columns
are compared exactly and which are timings. Torch-free; runs nothing."""

from __future__ import annotations

from typing import Any

from specdec_study.reporting.format import md_table
from specdec_study.results.read import Profile
from specdec_study.results.reproduction import (
    DETERMINISTIC,
    PASSED,
    SKIPPED,
    read_record,
    record_path,
    rows_fingerprint,
)

NOT_CHECKED = (
    "Not yet checked: no `reproduce.json` for this profile. Run "
    "`python -m specdec_lib reproduce --profile {name}` to re-run the first prompt of each "
    "experiment with the current code and compare it with these files."
)


def deterministic_markdown() -> str:
    """Which per-prompt columns the check compares exactly, and which it never compares."""
    cols = ", ".join(f"`{c}`" for c in DETERMINISTIC)
    return (
        f"Compared exactly (the same code, prompts and dtype give them again): {cols}, where a "
        "result has them. Never compared: timings (`wall_s`, `tokens_per_s`, `draft_s`, "
        "`verify_s`, `prefill_s` and every speedup derived from them), which change from run "
        "to run and machine to machine; their intervals say how much."
    )


def record_markdown(p: Profile) -> str:
    """When the check last ran, at which commit, and each experiment's outcome."""
    rec = read_record(record_path(p.root, p.name))
    if rec is None:
        return NOT_CHECKED.format(name=p.name)
    exps: dict[str, Any] = rec.get("experiments") or {}
    verdict = "passed" if rec.get("passed") else "did not pass"
    some = any(c.get("outcome") == SKIPPED for c in exps.values())
    scope = " for every experiment it could compare there (the others skipped, as noted)"
    commit = str(rec.get("commit") or "unknown")[:7]
    head = (
        f"The reproduction check last ran on {rec.get('date', 'an unknown date')} at commit "
        f"`{commit}`"
        + (f" on {rec['machine']}" if rec.get("machine") else "")
        + f", with the first {rec.get('prompts', '?')} prompt(s) of each experiment it checked, "
        f"and **{verdict}**{scope if some else ''}."
    )
    unchecked = [e for e in p.results if e not in exps]
    if unchecked:
        head += " Not checked that time: " + ", ".join(f"`{e}`" for e in unchecked) + "."
    if changed := changed_since(p, exps):
        head += (
            " The committed rows of " + ", ".join(f"`{e}`" for e in changed) + " have changed "
            "since: that check was of earlier results, so it says nothing of these; re-run it."
        )
    return head + ("\n\n" + md_table(_outcome_rows(exps)) if exps else "")


def changed_since(p: Profile, exps: dict[str, Any]) -> list[str]:
    """The compared experiments whose committed per_prompt.csv is not the one the check read
    (a skipped one read none)."""
    return [
        e
        for e, c in exps.items()
        if c.get("outcome") != SKIPPED
        and p.get(e) is not None
        and c.get("committed_sha256") != rows_fingerprint(p.get(e))
    ]


def _outcome_rows(exps: dict[str, Any]) -> list[dict[str, str]]:
    """One row per checked experiment (the columns compared are said once, above the table); a
    note column only where one did not pass."""
    rows = []
    for e, c in exps.items():
        row = {
            "experiment": f"`{e}`",
            "outcome": str(c.get("outcome")),
            "rows compared": str(c.get("rows", 0)),
        }
        if any(x.get("outcome") != PASSED for x in exps.values()):
            row["note"] = "; ".join(c.get("details") or []) if c.get("outcome") != PASSED else "-"
        rows.append(row)
    return rows
