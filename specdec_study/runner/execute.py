"""Running one experiment: reuse its stored result for the same config, or compute its rows,
track them (W&B, offline without a key) and publish the result directory atomically.

`execute(study, experiment, config, compute)` is the one path every experiment takes: it hands
`compute` a `Progress` (where rows are tracked, and the experiment's per-prompt checkpoint), and
has the study's `draw` (given by the edge, `study.setup`) paint the declared figures into the
result directory; `paired` runs arms over prompts with that checkpoint (an interrupted run
resumes where it stopped). Knows nothing about what an experiment measures, how its summary is
built or how figures are drawn.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from specdec_lib.config import SamplingConfig, config_hash
from specdec_lib.errors import SpecdecError
from specdec_lib.measure.paired import WARMUP_TOKENS, Arm, run_paired
from specdec_lib.models import LoadedModel
from specdec_lib.models.device import resolve_device, resolve_dtype
from specdec_lib.models.loading import model_folder
from specdec_study.analysis.rules import rules_sha256
from specdec_study.environment.tracking import (
    Tracker,
    cpu_model,
    environment,
    git_commit,
    memory_peaks,
)
from specdec_study.results.inputs import changed_input, fingerprint
from specdec_study.results.schema import config_problem, summary_problem
from specdec_study.results.store import (
    Checkpoint,
    ExperimentResult,
    checkpoint_paths,
    clean,
    load_result,
    publish,
)
from specdec_study.runner.prompts import READ
from specdec_study.runner.session import ROOT, Session, load_target, roles, thread_choice

WANDB_PROJECT = "specdec"


@dataclass(frozen=True)
class Progress:
    """What `execute` hands an experiment's computation: call it with each row as it comes (it
    tracks it), and pass it to `paired`, which resumes from and saves to its `checkpoint`."""

    log_row: Callable[[dict[str, Any]], None]
    checkpoint: Checkpoint | None = None

    def __call__(self, row: dict[str, Any]) -> None:
        self.log_row(row)


@dataclass
class Run:
    """What an experiment's computation hands to `execute` to publish."""

    rows: list[dict[str, Any]]
    summary: dict[str, Any]
    extra: dict[str, Any] | None = None


def cached(study: Session, experiment: str, config: dict[str, Any]) -> ExperimentResult | None:
    """The stored result for this config when it is whole and its inputs (`results.inputs`:
    the model and data files) are those it recorded; a damaged one, or one whose inputs
    changed, is said and redone. One measured before inputs were fingerprinted is reused, and
    said so."""
    d = study.store.dir(experiment)
    if study.force or not d.exists():
        return None
    problem = study.store.problem(experiment, study=True)
    if problem is not None:
        print(f"{experiment}: stored result {rel(d)} is damaged ({problem}); recomputing it")
        return None
    if not study.store.done(experiment, config, study=True):
        return None
    res = load_result(d)
    stored = res.env.get("inputs")
    if isinstance(stored, dict):
        if changed := changed_input(stored, inputs_now(config)):
            print(f"{experiment}: {changed} since {rel(d)} was measured; recomputing it")
            return None
        print(f"{experiment}: reusing {rel(d)} (same config and input files; force to redo)")
    else:
        print(
            f"{experiment}: reusing {rel(d)} (same config; measured before input files were "
            "fingerprinted, so they are unchecked: FORCE=1 records them)"
        )
    # a checkpoint of this config or a temporary folder beside its whole result is a forced
    # recompute cut short: nothing resumes or replaces it (force starts afresh)
    for path in checkpoint_paths(study.store, experiment, config):
        path.unlink(missing_ok=True)
    study.store.remove_stale(experiment)
    if note := reuse_note(study, res.env):
        print(f"{experiment}: {note}")
    return res


def inputs_now(config: dict[str, Any]) -> dict[str, Any]:
    """The fingerprint of the files a run of `config` reads on this machine now
    (`results.inputs.fingerprint`; the data source as this process read it, where it did)."""
    read = READ.get(str(config.get("data_source", "auto")))
    return fingerprint(config, model_folder, read, distilled_folder)


def distilled_folder(spec: str, target: str) -> Path | str:
    """Where the distilled draft `spec` (`distilled[:PATH]`) of target is on this machine, or
    why it cannot be told: not trained yet, or several cached for one target name."""
    from specdec_lib.drafters import distilled

    if ":" in spec:
        return Path(spec.split(":", 1)[1]).expanduser()
    found = distilled.cached_for(target)
    if len(found) == 1:
        return found[0]
    if not found:
        return "not trained on this machine yet: not fingerprinted"
    names = ", ".join(d.name for d in found)
    return f"several cached distilled drafts of {target} ({names}): not fingerprinted"


def machine_key(loaded: LoadedModel, inputs: dict[str, Any]) -> str:
    """What names a checkpoint beside the config hash: the machine (the CPU model, or the GPU's
    name), the loaded target's dtype (`auto` resolves per machine) and the input files, so a
    resumed run never mixes rows measured on two machines, in two dtypes or from two inputs.
    The distilled draft is not part of it: trained inside a run, it would change the key
    between the run and its resume."""
    device = loaded.device
    here = cpu_model() if device.type == "cpu" else torch.cuda.get_device_name(device)
    dtype = str(loaded.dtype).removeprefix("torch.")
    return config_hash({"machine": here or "unknown", "dtype": dtype, "inputs": inputs})[:8]


def reuse_note(study: Session, env: dict[str, Any]) -> str | None:
    """When a reused result was measured on another CPU or in another dtype than this machine
    would use for the same config (dtype auto), say so and how long re-measuring took there."""
    try:
        device = resolve_device(str(study.profile.get("device", "auto")))
        dtype = str(resolve_dtype(str(study.profile.get("dtype", "auto")), device)).removeprefix(
            "torch."
        )
    except Exception:  # noqa: BLE001 - a note, never a failure
        return None
    here = cpu_model() if device.type == "cpu" else torch.cuda.get_device_name(device)
    there = env.get("cpu_model") if device.type == "cpu" else env.get("gpu")
    diffs = []
    if env.get("dtype") and env["dtype"] != dtype:
        diffs.append(f"dtype {env['dtype']} (here: {dtype})")
    if here and there and here != there:
        diffs.append(f"{there} (here: {here})")
    if not diffs:
        return None
    took = env.get("wall_s_experiment")
    return (
        "measured with "
        + " on ".join(diffs)
        + "; FORCE=1 re-measures it here"
        + (f" (it took {took / 60:.1f} min there)" if isinstance(took, (int, float)) else "")
    )


def tracker_for(study: Session, experiment: str, config: dict[str, Any]) -> Tracker:
    """The W&B run of one experiment, in the batch's group. Its files go to $WANDB_DIR, else
    beside the results (`<results_dir>/<profile>/wandb/`, ignored by git), so that offline runs
    survive wherever the results do (a mounted Drive folder in Colab)."""
    wandb_dir = (
        Path(os.environ["WANDB_DIR"]) if os.environ.get("WANDB_DIR") else study.store.dir("")
    )
    return Tracker(
        WANDB_PROJECT,
        f"{study.name}/{experiment}",
        config,
        dir=wandb_dir,
        group=wandb_group(study),
        job_type=experiment,
        tags=[study.name, f"dtype={config['dtype']}", f"device={config['device']}"],
    )


def run_environment(
    study: Session, config: dict[str, Any], wall: float, checkpoint: Checkpoint
) -> dict[str, Any]:
    """env.json: the machine and packages, the target's actual device and dtype, the thread
    choice, this process's wall time, how many prompts an interrupted run had measured, the
    process's memory peaks (host and GPU) and the input files' fingerprint."""
    loaded = load_target(study)
    env = environment(
        device=str(next(loaded.model.parameters()).device),
        dtype=str(loaded.dtype).removeprefix("torch."),
    )
    env["profile_dtype"] = config["dtype"]
    env["threads"] = thread_choice(study)
    env["wall_s_experiment"] = wall  # this process's share when prompts were resumed
    env["resumed_prompts"] = checkpoint.resumed  # rows measured by an interrupted run
    env.update(memory_peaks(env["device"]))
    env["rules_sha256"] = rules_sha256()  # the verdict rules in force when this was measured
    env["inputs"] = inputs_now(config)  # checked when the result is reused (`cached`)
    return env


def execute(
    study: Session,
    experiment: str,
    config: dict[str, Any],
    compute: Callable[[Progress], Run],
) -> ExperimentResult:
    """Reuse the stored result for this config, or compute, track and publish it. A config or
    summary of another shape than the experiment declares is refused in one line (the config
    before anything runs, as config.json will read it)."""
    if problem := config_problem(experiment, clean(config)):
        raise SpecdecError(f"{experiment}: not run, its config differs: {problem}")
    hit = cached(study, experiment, config)
    if hit is not None:
        return hit
    tracker = tracker_for(study, experiment, config)
    key = machine_key(load_target(study), fingerprint(config, model_folder))
    checkpoint = Checkpoint(study.store, experiment, config, fresh=study.force, machine=key)
    t0 = time.perf_counter()
    try:
        run = compute(Progress(tracker.log_row, checkpoint))
        wall = time.perf_counter() - t0
        summary = {
            "experiment": experiment,
            "profile": study.name,
            "roles": roles(study),
            **run.summary,
        }
        if problem := summary_problem(experiment, clean(summary)):  # as summary.json will read
            raise SpecdecError(f"{experiment}: not published, its summary differs: {problem}")
        env = run_environment(study, config, wall, checkpoint)
        figures = figure_painter(study, experiment, summary, run.rows)
        path = publish(study.store, experiment, config, env, run.rows, summary, figures, run.extra)
        checkpoint.remove()
        tracker.publish(path, f"{study.name}-{experiment}", _flat(summary.get("headline", {})))
    finally:
        tracker.finish()
    print(f"{experiment}: {wall:.1f} s, written to {rel(path)}")
    return load_result(path)


def figure_painter(
    study: Session, experiment: str, summary: dict[str, Any], rows: list[dict[str, Any]]
) -> Callable[[Path], None] | None:
    """What draws the experiment's figures into a result directory's `figures/`: the study's
    `draw` (given by the caller that set the study up, e.g. `study.setup`), or None (no figures).
    The runner knows no presentation."""
    if study.draw is None:
        return None
    draw = study.draw

    def paint(d: Path) -> None:
        draw(experiment, summary, rows, d)

    return paint


def wandb_group(study: Session) -> str:
    """One W&B group per batch: SPECDEC_BATCH (set by `make evaluate`), else profile@commit."""
    return os.environ.get("SPECDEC_BATCH") or f"{study.name}@{(git_commit(ROOT) or 'nogit')[:8]}"


def _flat(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flat(v, key + "/"))
        elif isinstance(v, (int, float, str, bool)) or v is None:
            out[key] = v
    return out


def paired(
    arms: list[Arm],
    prompts: Sequence[Any],
    *,
    max_new_tokens: int,
    warmup: int,
    warmup_tokens: int = WARMUP_TOKENS,
    sampling: SamplingConfig | None = None,
    progress: str,
    on_row: Callable[[dict[str, Any]], None],
    extra_cols: dict[str, Any] | None = None,
    checkpoint: Checkpoint | None = None,
    indices: Sequence[int] | None = None,
    bar: bool = True,
) -> list[dict[str, Any]]:
    """run_paired with extra columns per row. With a checkpoint (results.store.Checkpoint; by
    default the one of `on_row` when it is the `Progress` that `execute` handed the computation)
    the prompts an interrupted run finished are taken from it and each new prompt is saved to it
    (the segment is `progress`; a checkpoint line is keyed by segment and prompt index, so a
    (segment, index) pair names one prompt within an experiment). `indices` as in run_paired
    (a caller running one prompt at a time passes its index); `bar=False` draws no progress bar
    (the caller draws its own)."""
    if checkpoint is None and isinstance(on_row, Progress):
        checkpoint = on_row.checkpoint

    def hook(row: dict[str, Any]) -> None:
        if extra_cols:
            for key, value in extra_cols.items():
                row[key] = value
        on_row(row)

    done = checkpoint.done(progress, prompts, indices) if checkpoint is not None else None
    return run_paired(
        arms,
        prompts,
        max_new_tokens=max_new_tokens,
        sampling=sampling or SamplingConfig(),
        warmup=warmup,
        warmup_tokens=warmup_tokens,
        progress=progress if bar else None,
        on_row=hook,
        done=done,
        indices=indices,
        on_prompt=(lambda i, ids, rows: checkpoint.add(progress, i, ids, rows))
        if checkpoint is not None
        else None,
    )


def rel(path: Path) -> str:
    """A path relative to the repository when it lies inside it (for printed messages)."""
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)
