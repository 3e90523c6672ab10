"""The notebooks' API: profile -> experiments -> result files.

A notebook does `study_run = study.setup(profile, results_dir=..., force=...)`, then, per
experiment, `study.run(study_run, "<name>")` and `study.display_result(study_run, "<name>")`.
`run` builds the experiment's config from the profile alone, returns the stored result when one
exists for the same config hash (unless forced or FORCE=1), and otherwise loads the target (once
per process), runs the experiment (its module's `run`, handed a `runner.lab.Lab`: the arms
paired and interleaved per prompt, `measure.paired.run_paired`), summarizes, draws the figures
its declaration names and publishes the directory atomically (`results.store.publish`). The
layout and every key are documented in `results/SCHEMA.md`.

Each experiment is one module of `specdec_study.experiments` (declaration, config, run, summary,
figures; torch-free), its torch side in `specdec_study.runner` (the session, execution, the
`Lab`); `specdec_study.results.catalog` finds the modules and their notebooks. `run` is the one
lookup by a name a user types (`runner.experiments.RUNNERS`); the rest of `__all__` serves the
gpu check and the tests. Nothing inside specdec_lib imports this module.
`python -m specdec_study.study download` is `make download` (`environment.hub`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from specdec_lib.errors import SpecdecError
from specdec_study.analysis.replay import CONTROL, EXIT, SEPARATE, SHARED
from specdec_study.analysis.summary import ci_dict
from specdec_study.environment import colab
from specdec_study.environment.hub import download, main
from specdec_study.environment.profiles import load_profile, resolve_profile
from specdec_study.experiments.agreement import agreement_summary
from specdec_study.experiments.context_sweep import sweep_summary
from specdec_study.reporting.figures import declared
from specdec_study.reporting.readings import display_reading
from specdec_study.results import bundle
from specdec_study.results.catalog import NOTEBOOKS
from specdec_study.results.store import ExperimentResult
from specdec_study.runner.distribution import (
    distribution_checks,
    exact_next_probs,
    first_token_samples,
)
from specdec_study.runner.estimate import print_estimate
from specdec_study.runner.execute import rel
from specdec_study.runner.experiments import RUNNERS
from specdec_study.runner.prompts import prompts_for
from specdec_study.runner.session import (
    MODELS,
    ROOT,
    Session,
    arm_name,
    get_drafter,
    load_target,
)
from specdec_study.runner.session import (
    setup as setup_context,
)
from specdec_study.runner.teacher_forced import draft_kind, teacher_forced_guesses
from specdec_study.runner.tiny import tiny_random_model, tiny_tokenizer

EXPERIMENTS = NOTEBOOKS  # notebook -> the result directories it writes (results.catalog)

__all__ = [
    "CONTROL",
    "EXIT",
    "EXPERIMENTS",
    "MODELS",
    "ROOT",
    "SEPARATE",
    "SHARED",
    "Session",
    "agreement_summary",
    "arm_name",
    "ci_dict",
    "display_result",
    "distribution_checks",
    "download",
    "draft_kind",
    "exact_next_probs",
    "first_token_samples",
    "get_drafter",
    "load_profile",
    "load_target",
    "print_estimate",
    "prompts_for",
    "rel",
    "resolve_profile",
    "run",
    "setup",
    "sweep_summary",
    "teacher_forced_guesses",
    "tiny_random_model",
    "tiny_tokenizer",
    "write_bundle",
]


def setup(
    profile: str = "auto", *, quick: bool = False, results_dir: str = "results", **kwargs: Any
) -> Session:
    """The notebook's study context: `runner.session.setup(profile, **kwargs)` (force,
    overrides, dtype), whose experiments draw their declared figures into their result
    directories (`reporting.figures.declared.draw`). `results_dir="auto"` is a Drive folder in
    Colab, else "results" (`colab.results_home`); `quick`: the quick notebook, whose "auto"
    profile is `colab.quick_profile()` (in Colab, "auto" without a GPU stops in one line)."""
    profile = colab.resolve(profile, quick=quick)
    home = colab.results_home(results_dir)
    return setup_context(profile, draw=declared.draw, results_dir=home, **kwargs)


def run(study_run: Session, experiment: str) -> ExperimentResult:
    """Run the declared experiment `experiment` (a name the notebook types; refused in one line
    when no notebook declares it): its stored result for the same config, or a new one."""
    if experiment not in RUNNERS:
        raise SpecdecError(f"unknown experiment {experiment!r}; declared: {', '.join(RUNNERS)}")
    return RUNNERS[experiment].run(study_run)


def write_bundle(study_run: Session) -> Path:
    """Zip the profile's finished results beside them (`<results_dir>/<profile>-bundle.zip`) for
    `python -m specdec_lib import-bundle` (`results.bundle`); says where in one line. In Colab,
    a bundle that is not on Drive is offered for download (`colab.offer_download`)."""
    out = bundle.write_bundle(
        study_run.store.dir(""), study_run.results_dir / f"{study_run.name}-bundle.zip"
    )
    print(f"results bundle: {out} (download it; then python -m specdec_lib import-bundle FILE)")
    colab.offer_download(out)
    return out


def display_result(study_run: Session, experiment: str) -> None:
    """Show an experiment's reading, table and captioned figures from its stored result files
    (what the book renders; `reporting.readings`)."""
    display_reading(study_run.store.dir(experiment))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
