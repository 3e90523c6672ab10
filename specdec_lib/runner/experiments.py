"""The study's experiments by result directory: how each builds its config from the profile alone
(no model is loaded; the config's hash names the stored result) and how each runs.

Knows nothing about notebooks (`results.catalog` says which notebook writes which directory).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from specdec_lib.results.store import ExperimentResult
from specdec_lib.runner.agreement import agreement_config, run_agreement
from specdec_lib.runner.context import Study
from specdec_lib.runner.context_sweep import run_context_sweep, sweep_config
from specdec_lib.runner.k_sweep import k_sweep_config, run_k_sweep
from specdec_lib.runner.peers import peers_config, peers_problem, run_peers
from specdec_lib.runner.sampling import run_sampling, sampling_config
from specdec_lib.runner.single import (
    baseline_config,
    bigram_config,
    run_baseline,
    run_bigram,
    run_transformer_draft,
    transformer_config,
)

CONFIGS: dict[str, Callable[[Study], dict[str, Any]]] = {
    "baseline": baseline_config,
    "bigram": bigram_config,
    "transformer_draft": transformer_config,
    "context_sweep": lambda S: sweep_config(S, "context_sweep"),
    "context_sweep_nocache": lambda S: sweep_config(S, "context_sweep_nocache"),
    "agreement": agreement_config,
    "k_sweep": k_sweep_config,
    "sampling": sampling_config,
    "peers": lambda S: peers_config(S, peers_problem()),
}

RUNS: dict[str, Callable[[Study], ExperimentResult]] = {
    "baseline": run_baseline,
    "bigram": run_bigram,
    "transformer_draft": run_transformer_draft,
    "context_sweep": run_context_sweep,
    "context_sweep_nocache": lambda S: run_context_sweep(S, use_cache=False),
    "agreement": run_agreement,
    "k_sweep": run_k_sweep,
    "sampling": run_sampling,
    "peers": run_peers,
}


def config_of(S: Study, experiment: str) -> dict[str, Any]:
    """The config `RUNS[experiment]` would compute (or reuse a stored result) for."""
    return CONFIGS[experiment](S)
