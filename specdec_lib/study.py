"""The study's experiments, as functions the notebooks call: profile -> arms -> result files.

A notebook does `S = study.setup(profile, results_dir=..., force=...)` and then one of the
`run_*` functions, each of which builds its config from the profile alone, returns the stored
result when one exists for the same config hash (unless forced or FORCE=1), and otherwise loads
the target (once per process), builds the arms, runs them paired and interleaved per prompt
(`runner.paired.run_paired`), summarizes (`analysis`), draws the figures and publishes the
directory atomically (`results.store.publish`). The layout and every key are documented in
`results/SCHEMA.md`.

This module is a facade: the code lives in `specdec_lib.runner` (context, execution, one module
per experiment) and the torch-free summaries in `specdec_lib.analysis`; the notebooks, the
gpu-check and the tests keep calling `study.*`. `python -m specdec_lib.study download` is
`make download` (`runner.hub`).
"""

from __future__ import annotations

import sys

from specdec_lib.analysis.agreement import CONTROL, EXIT, SEPARATE, SHARED, agreement_summary
from specdec_lib.analysis.single import headline_pair
from specdec_lib.analysis.summary import ci_dict
from specdec_lib.analysis.sweep import sweep_summary
from specdec_lib.results.catalog import NOTEBOOKS
from specdec_lib.runner.agreement import agreement_drafts, draft_extras, run_agreement
from specdec_lib.runner.context import (
    _DRAFTERS,
    _MODELS,
    PROFILES,
    ROOT,
    SPLIT_SEED,
    Study,
    arm_name,
    base_config,
    build_arms,
    get_drafter,
    load_profile,
    load_target,
    make_arm,
    resolve_profile,
    roles,
    setup,
    thread_choice,
    tiny_draft,
    transformer_specs,
)
from specdec_lib.runner.context_sweep import run_context_sweep, sweep_config
from specdec_lib.runner.execute import (
    WANDB_PROJECT,
    Run,
    cached,
    display_result,
    execute,
    pair_figures,
    paired,
    rel,
    reuse_note,
    wandb_group,
)
from specdec_lib.runner.hub import download, hub_models, hub_reachable, main
from specdec_lib.runner.k_sweep import run_k_sweep
from specdec_lib.runner.peers import ACCEPTANCE_KEYS, HF_ARMS, assistant_for, run_peers
from specdec_lib.runner.prompts import eval_articles, prompts_for
from specdec_lib.runner.sampling import (
    distribution_checks,
    draft_first_probs,
    exact_next_probs,
    first_token_samples,
    run_sampling,
)
from specdec_lib.runner.single import (
    run_baseline,
    run_bigram,
    run_pair,
    run_transformer_draft,
    single_config,
)
from specdec_lib.runner.teacher_forced import draft_kind, exit_layers, teacher_forced_guesses
from specdec_lib.runner.tiny import TINY, TINY_DRAFT, tiny_random_model, tiny_tokenizer

EXPERIMENTS = NOTEBOOKS  # notebook -> the result directories it writes (results.catalog)

__all__ = [
    "ACCEPTANCE_KEYS",
    "CONTROL",
    "EXIT",
    "EXPERIMENTS",
    "HF_ARMS",
    "PROFILES",
    "ROOT",
    "SEPARATE",
    "SHARED",
    "SPLIT_SEED",
    "TINY",
    "TINY_DRAFT",
    "WANDB_PROJECT",
    "Run",
    "Study",
    "_DRAFTERS",
    "_MODELS",
    "agreement_drafts",
    "agreement_summary",
    "arm_name",
    "assistant_for",
    "base_config",
    "build_arms",
    "cached",
    "ci_dict",
    "display_result",
    "distribution_checks",
    "download",
    "draft_extras",
    "draft_first_probs",
    "draft_kind",
    "eval_articles",
    "exact_next_probs",
    "execute",
    "exit_layers",
    "first_token_samples",
    "get_drafter",
    "headline_pair",
    "hub_models",
    "hub_reachable",
    "load_profile",
    "load_target",
    "make_arm",
    "pair_figures",
    "paired",
    "prompts_for",
    "rel",
    "resolve_profile",
    "reuse_note",
    "roles",
    "run_agreement",
    "run_baseline",
    "run_bigram",
    "run_context_sweep",
    "run_k_sweep",
    "run_pair",
    "run_peers",
    "run_sampling",
    "run_transformer_draft",
    "setup",
    "single_config",
    "sweep_config",
    "sweep_summary",
    "teacher_forced_guesses",
    "thread_choice",
    "tiny_draft",
    "tiny_random_model",
    "tiny_tokenizer",
    "transformer_specs",
    "wandb_group",
]

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
