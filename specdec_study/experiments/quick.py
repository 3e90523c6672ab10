"""The quick path (notebook 00_quick, profile colab-t4-quick): the three experiments that decide
H1-H4 on the real pair, in one Colab sitting. Not part of the study's notebooks (`STUDY`): its
experiments are 04's (`agreement`, `context_sweep`, `context_sweep_nocache`), so `make evaluate`
runs them there; the notebook generator renders it beside the study's. Hence `QUICK`, not
`NOTEBOOK` (which the catalog collects into `STUDY`); `results.catalog` re-exports it with its
profile. Declares no experiment of its own. Imports no runner and no torch.
"""

from __future__ import annotations

from specdec_study.experiments import agreement, context_sweep
from specdec_study.results.declare import Notebook

QUICK = Notebook(
    "00_quick",
    "The real pair's paradox test, quick",
    "The smallest set of runs that decides H1-H4 on Gemma 3 4B with the 1B draft, in one Colab "
    "T4 sitting (profile `colab-t4-quick`, whose comments justify its counts from the rules' "
    "power and its minutes from the estimator): the agreement replayed on the target's own "
    "greedy continuation at contexts 10 and 100 (16 documents per forward), the timed sweep "
    "(baseline and the 1B draft) at contexts 10, 20 and 100 on the agreement's first documents, "
    "and the baseline with the KV cache off on the first 6 of them. Writes `agreement/`, "
    "`context_sweep/` and `context_sweep_nocache/`.",
    (
        agreement.agreement,
        context_sweep.context_sweep,
        context_sweep.context_sweep_nocache,
    ),
)
QUICK_PROFILE = "colab-t4-quick"  # the quick notebook's profile on a Colab GPU (else smoke-pair)
