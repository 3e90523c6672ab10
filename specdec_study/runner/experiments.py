"""Each declared experiment's run and config functions, by its name: what `study.run`, the
reproduction (`runner.reproduce`), the kept-results check (`runner.keep`) and the estimators
(`runner.estimate`, `runner.t4`) call. Torch loads here.

An experiment of the `specdec_study.experiments` package carries its run and config in its
declaration, as functions of a `runner.lab.Lab`: `bound` hands them one, and every such
declaration of the catalog is bound here without being named.
Knows nothing about what an experiment measures or how its figures are drawn
(`reporting.figures.declared.draw`, from each `Figure.draw`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from specdec_study.results import catalog
from specdec_study.results.declare import Experiment
from specdec_study.results.store import ExperimentResult
from specdec_study.runner.lab import Lab
from specdec_study.runner.session import Session


class Runner(NamedTuple):
    """An experiment's run (Session -> its result, computed or reused) and its config (Session ->
    the config.json it would write, from the profile alone, loading no model)."""

    run: Callable[[Session], ExperimentResult]
    config: Callable[[Session], dict[str, Any]]


def bound(e: Experiment) -> Runner:
    """The run and config of an experiment module's declaration, each handed a `Lab` for it."""
    run, build_config = e.run, e.build_config
    if run is None or build_config is None:
        raise ValueError(f"experiment {e.name} declares no run or no build_config")
    return Runner(lambda s: run(Lab(s, e)), lambda s: build_config(Lab(s, e)))


RUNNERS: dict[str, Runner] = {name: bound(e) for name, (_, e) in catalog.declared().items()}
