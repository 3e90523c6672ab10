"""The study's experiments, as functions the notebooks call: profile -> arms -> result files.

A notebook does `study_run = study.setup(profile, results_dir=..., force=...)` and then one of the
`run_*` functions, each of which builds its config from the profile alone, returns the stored
result when one exists for the same config hash (unless forced or FORCE=1), and otherwise loads
the target (once per process), builds the arms, runs them paired and interleaved per prompt
(`measure.paired.run_paired`), summarizes (`analysis`), draws the figures its declaration names
and publishes the directory atomically (`results.store.publish`). The layout and every key are
documented in `results/SCHEMA.md`.

The notebooks' API (nothing inside specdec_lib imports it): the code lives in
`specdec_lib.runner` (the context, execution, one module per experiment), the torch-free
summaries and each experiment's declaration in `specdec_lib.analysis`, and the one list of
experiments in `specdec_lib.results.catalog`; notebooks, the gpu-check and the tests call
`study.*`. The `run_*` functions are not listed here: each declared experiment's `run`
(`results.declare.Experiment`) is `study.<its name>` (`run_baseline`, ...), read from the
catalog when asked for, so a new experiment needs no line in this module.
`python -m specdec_lib.study download` is `make download` (`environment.hub`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from specdec_lib.analysis.agreement import CONTROL, EXIT, SEPARATE, SHARED, agreement_summary
from specdec_lib.analysis.summary import ci_dict
from specdec_lib.analysis.sweep import sweep_summary
from specdec_lib.environment import colab
from specdec_lib.environment.hub import download, main
from specdec_lib.environment.profiles import load_profile, resolve_profile
from specdec_lib.reporting.figures import declared
from specdec_lib.reporting.readings import display_reading
from specdec_lib.results import bundle, catalog
from specdec_lib.results.catalog import NOTEBOOKS
from specdec_lib.results.declare import load
from specdec_lib.runner.context import (
    MODELS,
    ROOT,
    Study,
    arm_name,
    get_drafter,
    load_target,
)
from specdec_lib.runner.context import (
    setup as setup_context,
)
from specdec_lib.runner.context_sweep import sweep_config
from specdec_lib.runner.distribution import (
    distribution_checks,
    exact_next_probs,
    first_token_samples,
)
from specdec_lib.runner.estimate import print_estimate
from specdec_lib.runner.execute import rel
from specdec_lib.runner.prompts import prompts_for
from specdec_lib.runner.teacher_forced import draft_kind, teacher_forced_guesses
from specdec_lib.runner.tiny import tiny_random_model, tiny_tokenizer

EXPERIMENTS = NOTEBOOKS  # notebook -> the result directories it writes (results.catalog)

__all__ = [  # + the declared experiments' run_* (declared_runs())
    "CONTROL",
    "EXIT",
    "EXPERIMENTS",
    "MODELS",
    "ROOT",
    "SEPARATE",
    "SHARED",
    "Study",
    "agreement_summary",
    "arm_name",
    "ci_dict",
    "declared_runs",
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
    "setup",
    "sweep_config",
    "sweep_summary",
    "teacher_forced_guesses",
    "tiny_random_model",
    "tiny_tokenizer",
    "write_bundle",
]


def setup(
    profile: str = "auto", *, quick: bool = False, results_dir: str = "results", **kwargs: Any
) -> Study:
    """The notebook's study context: `runner.context.setup(profile, **kwargs)` (force,
    overrides, dtype), whose experiments draw their declared figures into their result
    directories (`reporting.figures.declared.draw`). `results_dir="auto"` is a Drive folder in
    Colab, else "results" (`colab.results_home`); `quick`: the quick notebook, whose "auto"
    profile is `colab.quick_profile()` (in Colab, "auto" without a GPU stops in one line)."""
    profile = colab.resolve(profile, quick=quick)
    home = colab.results_home(results_dir)
    return setup_context(profile, draw=declared.draw, results_dir=home, **kwargs)


def write_bundle(study_run: Study) -> Path:
    """Zip the profile's finished results beside them (`<results_dir>/<profile>-bundle.zip`) for
    `python -m specdec_lib import-bundle` (`results.bundle`); says where in one line. In Colab,
    a bundle that is not on Drive is offered for download (`colab.offer_download`)."""
    out = bundle.write_bundle(
        study_run.store.dir(""), study_run.results_dir / f"{study_run.name}-bundle.zip"
    )
    print(f"results bundle: {out} (download it; then python -m specdec_lib import-bundle FILE)")
    colab.offer_download(out)
    return out


def display_result(study_run: Study, experiment: str) -> None:
    """Show an experiment's reading, table and captioned figures from its stored result files
    (what the book renders; `reporting.readings`)."""
    display_reading(study_run.store.dir(experiment))


def declared_runs() -> dict[str, str]:
    """Each declared experiment's run function by its name (`run_baseline` ->
    `specdec_lib.runner.single:run_baseline`), from the declarations in `results.catalog`."""
    return {e.run.rpartition(":")[2]: e.run for _, e in catalog.declared().values()}


def __getattr__(name: str) -> Any:  # study.run_<experiment>: the declaration's run function
    ref = declared_runs().get(name) if name.startswith("run_") else None
    if ref is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return load(ref)


def __dir__() -> list[str]:  # what a notebook's completion lists: the run_* functions too
    return sorted({*globals(), *declared_runs()})


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
