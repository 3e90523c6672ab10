"""Where the book's results came from against where the book was built: commits, machines,
versions, and what `make evaluate` reuses. Markdown for the reproducibility chapter.

Reads the env.json files of a profile its caller loaded (a `results.read.Profile`) and asks git
and the running interpreter about the build; knows nothing about decoding. Without git (an
unpacked archive) it says so.
"""

from __future__ import annotations

import platform
import subprocess
import sys
import warnings
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from specdec_lib import ROOT

LIBRARY = ("specdec_lib", "specdec_study")


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=10, check=True
        )
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None


def _v(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return "not installed"


def result_commits(p: Any) -> dict[str, list[str]]:
    """commit -> experiments measured at it."""
    out: dict[str, list[str]] = {}
    for name, res in p.results.items():
        out.setdefault(res.env.get("git_commit") or "unknown", []).append(name)
    return out


def _changed_files(commit: str, head: str) -> list[str]:
    """The measuring code's files that differ between `commit` and `head`, by their names at
    `head`; a file moved with its content unchanged (status R100) is not a change."""
    out = _git("diff", "--name-status", "-M", commit, head, "--", *LIBRARY) or ""
    rows = [line.split("\t") for line in out.splitlines() if line]
    return [r[-1] for r in rows if r[0] != "R100"]


def commits_markdown(p: Any, files: bool = True) -> str:
    """Whether the results were computed at the commit the book is built at, and if not, how far
    apart they are and (with `files`) at which commit and which library files changed in
    between; without, only how many commits apart (the hashes stay in env.json)."""
    head = _git("rev-parse", "HEAD")
    commits = result_commits(p)
    if not commits:
        return "No results for this profile."
    if head is None:
        return "This book was built outside a git checkout: its commit is unknown."
    lines = [f"This book was built at commit `{head[:12]}`."]
    for c, exps in commits.items():
        names = ", ".join(f"`{e}`" for e in exps)
        if c == head:
            lines.append(f"- {names}: computed at this commit.")
            continue
        if c == "unknown":
            lines.append(f"- {names}: no commit recorded.")
            continue
        n = _git("rev-list", "--count", f"{c}..{head}")
        changed = _changed_files(c, head)
        if n is None:
            lines.append(f"- {names}: computed at `{c[:12]}`, not in this checkout's history.")
            continue
        changed_files = changed if files else []
        lines.append(
            f"- {names}: computed "
            + (f"at `{c[:12]}`, " if files else "")
            + f"**{n} commits before** the build"
            + (
                "; library files changed since: "
                + ", ".join(f"`{f}`" for f in changed_files[:12])
                + (f" and {len(changed_files) - 12} more" if len(changed_files) > 12 else "")
                if changed_files
                else ("; no library file changed since" if files else "")
            )
            + "."
        )
    if any(c != head for c in commits):
        lines.append(
            "\nResults computed at an earlier commit are reused as long as their configuration "
            "is unchanged; `make evaluate FORCE=1` recomputes them with the current code."
        )
    return "\n".join(lines)


RULES_FILE = "specdec_study/analysis/rules.py"
RULES_FORMER = "specdec_lib/analysis/rules.py"  # its path before the study left the library
FIRST_ROUND = (
    "The verdict rules were revised twice after numbers existed. The first H3 rule ('supported "
    "when the interval of the implied-acceptance change lies below 0') was replaced at `fff36cb` "
    "by a three-way rule with a material fall of 5 points, after a full embedded batch had been "
    "computed at `ba996bb`; on those numbers the old rule would have said *supported* and the "
    "new one said *not supported*. That revision was made because the old rule let an interval "
    "be 'below 0' and 'above the published fall' at once (two labels for one interval), but it "
    "was made knowing the numbers, so those verdicts were not pre-registered. The second round's "
    "rules (H3 and H4 on tokens per call, decided on the draft nearest the published level) were "
    "committed before the batch the book shows. A third round revised H2, H3 and H4 after that "
    "batch existed (each rule's box gives the date and the reason): the book's verdicts are the "
    "third round's rules applied to numbers measured under the second's, so they are not "
    "pre-registered either. The lines below check each result against the files."
)


def _rules_in_tree(commit: str, recorded: str | None) -> str:
    """Whether the result's own commit already held the rules it records: then they were
    committed before it was measured. Read from git by content, so a rebase that gives the
    same tree another history does not matter; unknown where the commit is not here."""
    import hashlib

    out = None
    for path in (RULES_FILE, RULES_FORMER):
        try:
            out = subprocess.run(
                ["git", "show", f"{commit}:{path}"],
                cwd=ROOT,
                capture_output=True,
                timeout=10,
                check=True,
            ).stdout
            break
        except (OSError, subprocess.SubprocessError):
            continue
    if out is None:
        return "a commit this checkout does not hold (the rules' order cannot be checked)"
    if recorded and hashlib.sha256(out).hexdigest() == recorded:
        return "whose committed tree already held the rules it records (fixed before its numbers)"
    return "whose committed tree held **other rules** than those the result records"


def rules_markdown(p: Any) -> str:
    """When the verdict rules were fixed against when the results were measured: the commit that
    last changed the rules, whether every result records the rules' current hash, and whether
    the rules' commit is an ancestor of each result's commit (rules first, then numbers)."""
    from specdec_study.analysis.rules import REVISIONS, SECOND_ROUND_SHA256, rules_sha256

    lines = [FIRST_ROUND, ""]
    # the last commit that changed the rules' text (a move with the text unchanged is not one)
    last = _git(
        "log", "-1", "-M100%", "--diff-filter=AM", "--format=%H %cs", "--", RULES_FILE, RULES_FORMER
    )
    if last is None or not last:
        lines.append("- The rules' commit is unknown (no git history here).")
    else:
        rules_commit, day = last.split()
        lines.append(f"- The rules were last changed at `{rules_commit[:12]}` ({day}).")
    now = rules_sha256()
    # results in the same state at the same commit are one line
    groups: dict[tuple[str, str], list[str]] = {}
    for name, res in p.results.items():
        recorded = res.env.get("rules_sha256")
        c = res.env.get("git_commit") or ""
        if recorded is None:
            state = "{records} no rules hash (measured before rules were recorded)"
        elif recorded == now:
            state = "{was} measured under the current rules (same hash)"
        elif recorded == SECOND_ROUND_SHA256:
            state = (
                "{was} measured under the second round's rules, which the third round "
                f"({', '.join(sorted({r.date for r in REVISIONS}))}) revised after {{it}} existed"
            )
        else:
            state = "{was} measured under **other rules** than the current ones"
        order = f"; at `{c[:12]}`, {_rules_in_tree(c, recorded)}" if c else ""
        groups.setdefault((state, order), []).append(f"`{name}`")
    for (state, order), names in groups.items():
        one = len(names) == 1
        verbs = {"records": "records" if one else "record", "was": "was" if one else "were",
                 "it": "it" if one else "they"}  # fmt: skip
        lines.append(f"- {', '.join(names)} {state.format(**verbs)}{order}.")
    return "\n".join(lines) + "\n"


def build_markdown() -> str:
    """The machine and versions that built the book (not those that measured the results)."""
    try:
        os_name = platform.freedesktop_os_release().get("PRETTY_NAME", platform.system())
    except OSError:
        os_name = f"{platform.system()} {platform.release()}"
    from specdec_study.environment.tracking import cpu_model

    return (
        f"The book itself was built on {cpu_model() or platform.machine()}, {os_name}, with "
        f"Python {sys.version.split()[0]}, jupyter-book {_v('jupyter-book')}, "
        f"numpy {_v('numpy')}, pandas {_v('pandas')} and matplotlib {_v('matplotlib')}."
    )


def reuse_markdown(p: Any) -> str:
    """What `make evaluate` on this machine would do with these results: reuse ones measured on
    another CPU or in another dtype (dtype auto resolves per machine) without re-measuring."""
    import yaml

    path = ROOT / "profiles" / f"{p.name}.yaml"
    if not path.is_file():
        return ""
    prof = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if prof.get("dtype", "auto") != "auto":  # a fixed dtype means the same on every machine
        return ""
    try:
        with warnings.catch_warnings():  # tqdm's "IProgress not found" in a kernel's stderr
            warnings.simplefilter("ignore")
            from specdec_lib.models.device import resolve_device, resolve_dtype
        from specdec_study.environment.tracking import cpu_model

        device = resolve_device(str(prof.get("device", "auto")))
        dtype = str(resolve_dtype(str(prof.get("dtype", "auto")), device)).removeprefix("torch.")
    except Exception:  # noqa: BLE001 - a profile not in this checkout, a missing device
        return ""
    here = cpu_model() or platform.machine()
    other = []
    for name, res in p.results.items():
        env = res.env
        if (env.get("dtype") and env["dtype"] != dtype) or (
            device.type == "cpu" and env.get("cpu_model") and env["cpu_model"] != here
        ):
            other.append(f"`{name}` ({env.get('dtype')} on {env.get('cpu_model') or '?'})")
    if not other:
        return (
            f"On the machine that built this book ({here}, dtype `{prof.get('dtype')}` = "
            f"{dtype}), these results count as measured here."
        )
    return (
        f":::{{note}}\nOn the machine that built this book ({here}), the profile's dtype "
        f"`{prof.get('dtype')}` means {dtype}. `make evaluate` would still **reuse** "
        f"{', '.join(other)}: the configuration is the same, so nothing is re-measured; the batch "
        "prints a line for each such experiment. Run `make evaluate FORCE=1` to measure them on "
        "this machine (the total time above is what that took where they were measured).\n:::"
    )
