"""The reproducibility page's account of the last reproduction check: read from
results/<profile>/reproduce.json (written by `python -m specdec_lib reproduce`), which columns
are compared exactly and which are timings. Torch-free; runs nothing."""

from __future__ import annotations

from typing import Any

from specdec_lib.reporting.format import md_table
from specdec_lib.results.read import Profile
from specdec_lib.results.reproduce import DETERMINISTIC, PASSED, read_record, record_path

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
    commit = str(rec.get("commit") or "unknown")[:7]
    head = (
        f"The reproduction check last ran on {rec.get('date', 'an unknown date')} at commit "
        f"`{commit}` with the first {rec.get('prompts', '?')} prompt(s) of each experiment, "
        f"and **{verdict}**."
    )
    rows = [
        {
            "experiment": e,
            "outcome": c.get("outcome"),
            "rows compared": str(c.get("rows", 0)),
            "note": "; ".join(c.get("details") or []) if c.get("outcome") != PASSED else "",
        }
        for e, c in exps.items()
    ]
    return head + ("\n\n" + md_table(rows) if rows else "")
