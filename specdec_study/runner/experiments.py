"""Each declared experiment's run and config functions, by its name: what `study.run_*`, the
reproduction (`runner.reproduce`), the kept-results check (`runner.keep`) and the estimators
(`runner.estimate`, `runner.t4`) call. Plain imports of the runner modules (torch loads here).

The declarations (`results.catalog`) are data read by the torch-free half; this table binds
each to the code that runs it, one layer up, so that nothing below the runner names it.
Knows nothing about what an experiment measures or how its figures are drawn
(`reporting.figures.declared.DRAWINGS`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from specdec_study.results.store import ExperimentResult
from specdec_study.runner import (
    agreement,
    context_sweep,
    implementations,
    k_sweep,
    peers,
    single,
    speculative_sampling,
)
from specdec_study.runner.session import Session


class Runner(NamedTuple):
    """An experiment's run (Session -> its result, computed or reused) and its config (Session ->
    the config.json it would write, from the profile alone, loading no model)."""

    run: Callable[[Session], ExperimentResult]
    config: Callable[[Session], dict[str, Any]]


RUNNERS: dict[str, Runner] = {
    "baseline": Runner(single.run_baseline, single.baseline_config),
    "bigram": Runner(single.run_bigram, single.bigram_config),
    "transformer_draft": Runner(single.run_transformer_draft, single.transformer_config),
    "context_sweep": Runner(context_sweep.run_context_sweep, context_sweep.context_sweep_config),
    "context_sweep_nocache": Runner(
        context_sweep.run_context_sweep_nocache, context_sweep.context_sweep_nocache_config
    ),
    "agreement": Runner(agreement.run_agreement, agreement.agreement_config),
    "implementations": Runner(
        implementations.run_implementations, implementations.implementations_config
    ),
    "k_sweep": Runner(k_sweep.run_k_sweep, k_sweep.k_sweep_config),
    "sampling": Runner(speculative_sampling.run_sampling, speculative_sampling.sampling_config),
    "peers": Runner(peers.run_peers, peers.peers_default_config),
}
