"""What the study consists of: the notebooks, each naming the declarations of the experiments
(result directories, `results/SCHEMA.md`) it runs, in the order `make evaluate` runs them
(`STUDY`, by notebook name). The Makefile, the notebook generator, the study, the readings, the
book and the tests read it here.

The notebooks are found, not listed: every module of the `specdec_study.experiments` package is
imported (`modules`) and the `NOTEBOOK` of each that leads one is collected (`discovered`). No
name is looked up from a string: the package's folder is the list. The quick notebook (`QUICK`,
of 04's experiments, not in `STUDY`) and its profile are `experiments.quick`'s, re-exported.

`python -m specdec_study.results.catalog` prints the notebook names, one per line (the Makefile).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Sequence
from types import ModuleType

from specdec_study import experiments
from specdec_study.experiments.quick import QUICK, QUICK_PROFILE
from specdec_study.results.declare import BASELINE, Experiment, Notebook

__all__ = [
    "BASELINE",
    "EXPERIMENTS",
    "NOTEBOOKS",
    "QUICK",
    "QUICK_PROFILE",
    "STUDY",
    "declared",
    "discovered",
    "experiment",
    "notebook_of",
]


def modules(package: ModuleType = experiments) -> list[ModuleType]:
    """Every module of the experiments package, imported, in the order of their names."""
    found = sorted(info.name for info in pkgutil.iter_modules(package.__path__))
    return [importlib.import_module(f"{package.__name__}.{name}") for name in found]


def discovered(package: ModuleType = experiments) -> tuple[Notebook, ...]:
    """The notebooks the experiment modules lead (each module's `NOTEBOOK`, where it has one)."""
    return tuple(
        m.NOTEBOOK for m in modules(package) if isinstance(getattr(m, "NOTEBOOK", None), Notebook)
    )


def ordered(notebooks: Sequence[Notebook]) -> tuple[Notebook, ...]:
    """The notebooks in the order of their names (`01_baseline` first); a name twice is
    refused."""
    names = [nb.name for nb in notebooks]
    if twice := sorted({n for n in names if names.count(n) > 1}):
        raise ValueError(f"notebook declared twice: {', '.join(twice)}")
    return tuple(sorted(notebooks, key=lambda nb: nb.name))


STUDY: tuple[Notebook, ...] = ordered(discovered())


def declared(
    notebooks: Sequence[Notebook] | None = None,
) -> dict[str, tuple[Notebook, Experiment]]:
    """Every experiment of `notebooks` (default: `STUDY`) by name, with its notebook, in order."""
    out: dict[str, tuple[Notebook, Experiment]] = {}
    for nb in STUDY if notebooks is None else notebooks:
        for e in nb.experiments:
            if e.name in out:
                raise ValueError(f"experiment {e.name} declared twice ({nb.name})")
            out[e.name] = (nb, e)
    return out


def by_notebook(notebooks: Sequence[Notebook]) -> dict[str, tuple[str, ...]]:
    """Notebook name -> the names of the experiments it runs, in order."""
    return {nb.name: tuple(e.name for e in nb.experiments) for nb in notebooks}


NOTEBOOKS = by_notebook(STUDY)  # notebook -> the result directories it writes
EXPERIMENTS = tuple(declared())  # every result directory, in the order of the study


def experiment(name: str) -> Experiment:
    """The declaration of experiment `name`."""
    return declared()[name][1]


def notebook_of(experiment: str) -> str:
    """The notebook that writes `experiment`."""
    return declared()[experiment][0].name


if __name__ == "__main__":
    print("\n".join(nb.name for nb in STUDY))
