"""What the study consists of: each notebook and the result directories it writes
(`results/SCHEMA.md`), in the order `make evaluate` runs them, and the baseline arm's name. The
one list: the Makefile, the notebook generator, the study, the book and the tests read it here.
Knows nothing else.

`python -m specdec_lib.results.catalog` prints the notebook names, one per line (the Makefile).
"""

from __future__ import annotations

NOTEBOOKS: dict[str, tuple[str, ...]] = {
    "01_baseline": ("baseline",),
    "02_bigram": ("bigram",),
    "03_transformer_draft": ("transformer_draft",),
    "04_context_sweep": ("context_sweep", "context_sweep_nocache", "agreement"),
    "05_k_sweep": ("k_sweep",),
    "06_sampling": ("sampling",),
    "07_peers": ("peers",),
}
EXPERIMENTS: tuple[str, ...] = tuple(e for names in NOTEBOOKS.values() for e in names)
BASELINE = "baseline"  # the arm every speedup is paired against (draft "none")


def notebook_of(experiment: str) -> str:
    """The notebook that writes `experiment`."""
    for nb, names in NOTEBOOKS.items():
        if experiment in names:
            return nb
    raise KeyError(experiment)


if __name__ == "__main__":
    print("\n".join(NOTEBOOKS))
