"""The bench's result folder, `<results>/<profile>/<run>/`, like every experiment's: `bench/` for
a run of the default groups, `bench-loopfree/` for `--groups loopfree` (one folder per run, not
one per profile: the two runs may come from different machines, each with its own env.json).

    summary.json  the run's JSON object, every number (the line `run_bench` prints last)
    config.json   the run's options and the settings they resolved to, with `config_hash`
    env.json      the machine (`tracking.environment`, the CPU kind, the presets' machine key)
                  and `header`: one line saying how, when, where and in what dtype it ran
    bench.log     what the run printed (the table, the strata, the identity, the targets),
                  that line first

Written at once through `store.ResultStore.writing`: the folder is whole or absent, never
half-written. Torch-free; knows nothing about how the numbers were measured (that is `run`) or
how the book reads them (`reporting.performance.read_bench`).
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from specdec_lib.config import config_hash
from specdec_lib.drafters.presets import cpu_words
from specdec_lib.errors import SpecdecError
from specdec_study.results.store import ResultStore, write_json

BENCH_RUN = "bench"  # the folder of a run of the default groups (or of long and short)
LOOPFREE_RUN = "bench-loopfree"  # the folder of `--groups loopfree` alone
LOG = "bench.log"
FILES = ("config.json", "env.json", "summary.json", LOG)


def run_name(groups: Sequence[str]) -> str:
    """The folder a run of these kinds of group is written to by default."""
    return LOOPFREE_RUN if tuple(groups) == ("loopfree",) else BENCH_RUN


def command_line(config: dict[str, Any]) -> str:
    """The command that runs this config again, every option spelled out."""
    words = ["python -m specdec_lib bench", f"--target {config['target']}"]
    words.append(f"--groups {','.join(config['groups'])}")
    words.append(f"--prompts {config['n_prompts']}")
    for key in ("dtype", "device", "seed", "presets"):
        if config.get(key) is not None:
            words.append(f"--{key} {config[key]}")
    if config.get("max_new_tokens") is not None:
        words.append(f"--max-new-tokens {config['max_new_tokens']}")
    if config.get("arms"):
        words.append(f"--arms {','.join(config['arms'])}")
    if config.get("quick"):
        words.append("--quick")
    return " ".join(words)


def machine_words(summary: dict[str, Any], env: dict[str, Any]) -> str:
    """The machine in words: the CPU kind (`presets.cpu_words`) with its core count, else the
    GPU's name, else the device."""
    cpu = summary.get("cpu")
    if isinstance(cpu, dict):
        cores = cpu.get("cores")
        return (f"{cores}-core " if cores else "") + cpu_words(cpu)
    return str(env.get("gpu") or summary.get("device") or "an unrecorded machine")


def header(config: dict[str, Any], summary: dict[str, Any], env: dict[str, Any]) -> str:
    """The line saying how, when, where and in what dtype a run ran (the shape of the line that
    headed the bench files written by hand: `reporting.performance` reads its date and machine
    from it)."""
    threads = summary.get("threads") or {}
    commit = str(env.get("git_commit") or "unknown")[:7]
    wall = (summary.get("timing_s") or {}).get("total")
    return (
        f"`{command_line(config)}` ({summary.get('n_prompts')} prompts per group) on "
        f"{env.get('date')} at commit {commit}, {machine_words(summary, env)}, "
        f"{summary.get('dtype')}, {threads.get('threads')} threads chosen by "
        f"{threads.get('chosen_by')}" + (f", {wall:,.0f} s." if wall is not None else ".")
    )


def today() -> str:
    """Today's date in UTC, as the header writes it."""
    return datetime.datetime.now(datetime.UTC).date().isoformat()


def write_run(
    directory: Path,
    config: dict[str, Any],
    env: dict[str, Any],
    summary: dict[str, Any],
    log: str,
) -> Path:
    """Write one run's folder atomically (the store's temporary folder renamed into place,
    under its lock; a folder already there is replaced); returns it. A folder that cannot be
    written is one line (SpecdecError), and nothing half-written is left."""
    directory = Path(directory)
    store = ResultStore(directory.parent.parent, directory.parent.name)
    try:
        with store.writing(directory.name) as tmp:
            write_json(tmp / "config.json", {**config, "config_hash": config_hash(config)})
            write_json(tmp / "env.json", env)
            write_json(tmp / "summary.json", summary)
            (tmp / LOG).write_text(log if log.endswith("\n") else log + "\n", encoding="utf-8")
    except OSError as e:
        raise SpecdecError(
            f"bench: cannot write {directory} ({e.strerror or e}); nothing was written there"
        ) from None
    return directory
