"""The book's tables of where and with what each experiment ran (environment, config) and how
long the batch took, from a profile's results. Knows nothing about decoding."""

from __future__ import annotations

import pandas as pd

from specdec_study.reporting.format import as_float, finite, num
from specdec_study.results.catalog import EXPERIMENTS
from specdec_study.results.read import Profile
from specdec_study.results.store import ExperimentResult


def _stored(p: Profile) -> list[tuple[str, ExperimentResult]]:
    """The profile's stored experiments, in the catalog's order."""
    return [(e, r) for e in EXPERIMENTS if (r := p.get(e)) is not None]


def _cell(v: object) -> str:
    """A table cell: the value as text, "-" where it is missing."""
    return "-" if v is None else str(v)


def env_table(p: Profile) -> pd.DataFrame | None:
    """One row per experiment: where and with what it ran (its commit is in env.json and in the
    reproducibility page's provenance line, not in this table)."""
    if p.empty:
        return None
    keys = [
        "device",
        "dtype",
        "gpu",
        "cpu_model",
        "bf16_native",
        "cpu_count",
        "torch_threads",
        "python",
        "torch",
        "transformers",
        "wall_s_experiment",
    ]
    rows = []
    for e, r in _stored(p):
        row = {"experiment": e}
        for k in keys:
            v = r.env.get(k)
            if k == "wall_s_experiment":
                v = num(v, 0, " s")
            row[k] = _cell(v)
        rows.append(row)
    return pd.DataFrame(rows)


def config_table(p: Profile) -> pd.DataFrame | None:
    """One row per stored experiment: its main config values and its sweep (the config hash,
    bookkeeping for reuse, stays in config.json)."""
    if p.empty:
        return None
    keys = [
        "target",
        "dtype",
        "device",
        "data_source",
        "seed",
        "k",
        "max_new_tokens",
        "n_prompts",
    ]
    rows = []
    for e, r in _stored(p):
        row = {"experiment": e} | {k: _cell(r.config.get(k)) for k in keys}
        extra = {k: r.config[k] for k in ("contexts", "ks", "temperatures") if k in r.config}
        row["sweep"] = "; ".join(f"{k}={v}" for k, v in extra.items()) or "-"
        rows.append(row)
    return pd.DataFrame(rows)


def machine_kinds(p: Profile) -> dict[tuple[str, ...], list[str]]:
    """The experiments of a profile grouped by the kind of machine that computed them (device,
    GPU or CPU model, native bfloat16, dtype, as each env.json records them)."""
    kinds: dict[tuple[str, ...], list[str]] = {}
    for e, r in _stored(p):
        key = tuple(str(r.env.get(k)) for k in ("device", "gpu", "cpu_model", "bf16_native"))
        kinds.setdefault(key + (str(r.env.get("dtype")),), []).append(e)
    return kinds


def batch_time_sentence(p: Profile) -> str:
    """The profile's summed experiment time, and whether it stands for one machine's batch."""
    head = (
        f"The experiments of this profile took {num(total_batch_seconds(p) / 60, 1)} minutes in "
        "all (the sum of `wall_s_experiment`, warm-ups included; reused results count as when "
        "they were computed)"
    )
    kinds = machine_kinds(p)
    if len(kinds) <= 1:
        return (
            head
            + ": about what `make evaluate FORCE=1` takes to re-measure them on the machine above."
        )
    parts = []
    for key, names in kinds.items():
        minutes = sum(as_float(p.get(e).env.get("wall_s_experiment") or 0) for e in names) / 60
        native = {"True": "yes", "False": "no"}.get(key[3], "not recorded")
        listed = ", ".join(f"`{e}`" for e in names)
        parts.append(f"{listed} in {key[-1]} (native bfloat16: {native}; {num(minutes, 1)} min)")
    return (
        head
        + f". They were computed on {len(kinds)} kinds of machine ("
        + "; ".join(parts)
        + "), so the sum is no one machine's batch time: `make evaluate FORCE=1` re-measures "
        "them all on the machine it runs on, at that machine's speed."
    )


def total_batch_seconds(p: Profile) -> float:
    """The summed wall time in seconds of every stored experiment."""
    return float(
        sum(
            as_float(r.env.get("wall_s_experiment"))
            for r in p.results.values()
            if finite(r.env.get("wall_s_experiment"))
        )
    )
