"""What the book's chapters call (`from specdec_lib import report as R`): a facade over the
torch-free reading (results.read), the context analysis (analysis.changes) and the presentation
(reporting.format, .earlier, .tables, .verdicts, .figures). Defines nothing of its own.

`python -m specdec_lib.report --profile embedded` prints the paradox verdicts with their numbers.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from specdec_lib.analysis.changes import (
    N_BOOT,
    SEED,
    acceptance_change,
    extra_growth,
    growth,
    paired_frame,
    per_prompt_acceptance,
    prompt_swap_change,
    range_for_test,
    test_range,
)
from specdec_lib.analysis.theory import a_from_rate, rate_from_a
from specdec_lib.reporting.earlier import (
    EARLIER_CSV,
    earlier_baseline_time,
    earlier_drop,
    earlier_recomputed,
    earlier_study,
    earlier_table,
)
from specdec_lib.reporting.figures import (
    fig_acceptance_vs_context,
    fig_accepted_histogram,
    fig_agreement_vs_context,
    fig_baseline_growth,
    fig_divergence_margins,
    fig_earlier_study,
    fig_measured_vs_predicted,
    fig_position_acceptance,
    fig_prompt_confound,
    fig_speedup_vs_context,
    fig_time_split,
    fig_training_curve,
    new_figure,
    show,
    training_record,
)
from specdec_lib.reporting.format import (
    admonition,
    central,
    ci,
    ci_n,
    ci_pct,
    common_markdown,
    finite,
    interval_n,
    md_table,
    missing_note,
    num,
    pct,
    split_common,
)
from specdec_lib.reporting.tables import (
    EARLIER_WAY,
    beside_published,
    by_float_key,
    config_table,
    env_table,
    headline_table,
    identity_margins,
    identity_sentence,
    identity_table,
    k_sweep_table,
    peers_table,
    sampling_table,
    study_table,
    total_batch_seconds,
)
from specdec_lib.reporting.verdicts import (
    HYPOTHESES,
    LABELS,
    RULES,
    STALE,
    Verdict,
    agreement_primary,
    bottom_line,
    divergent_drafts,
    h1_recomputation,
    h2_single_baseline,
    h3_divergence,
    h3_per_draft,
    h4_prompt_confound,
    key_numbers,
    rule_markdown,
    scope,
    sweep_primary,
    verdict_table,
    verdicts,
    verdicts_markdown,
)
from specdec_lib.results.catalog import BASELINE, EXPERIMENTS, NOTEBOOKS
from specdec_lib.results.read import (
    DEFAULT_PROFILE,
    LIST_COLUMNS,
    REAL_PROFILES,
    REPO_ROOT,
    Profile,
    Result,
    book_profile,
    damaged_results,
    load_profile,
    load_result,
    profiles_with_results,
    results_root,
    role_arm,
    sweep_contexts,
    sweep_table,
)  # fmt: skip

__all__ = [
    "BASELINE", "DEFAULT_PROFILE", "EARLIER_CSV", "EARLIER_WAY", "EXPERIMENTS", "HYPOTHESES",
    "LABELS", "LIST_COLUMNS", "N_BOOT", "NOTEBOOKS", "REAL_PROFILES", "REPO_ROOT", "RULES",
    "SEED", "STALE", "Profile", "Result", "Verdict", "a_from_rate", "acceptance_change",
    "admonition", "agreement_primary", "beside_published", "book_profile", "bottom_line",
    "by_float_key", "central", "ci", "ci_n", "ci_pct", "common_markdown", "config_table",
    "damaged_results", "divergent_drafts", "earlier_baseline_time", "earlier_drop",
    "earlier_recomputed", "earlier_study", "earlier_table", "env_table", "extra_growth",
    "fig_accepted_histogram", "fig_acceptance_vs_context", "fig_agreement_vs_context",
    "fig_baseline_growth", "fig_divergence_margins", "fig_earlier_study",
    "fig_measured_vs_predicted", "fig_position_acceptance", "fig_prompt_confound",
    "fig_speedup_vs_context", "fig_time_split", "fig_training_curve", "finite", "growth",
    "h1_recomputation", "h2_single_baseline", "h3_divergence", "h3_per_draft",
    "h4_prompt_confound", "headline_table", "identity_margins", "identity_sentence",
    "identity_table", "interval_n", "k_sweep_table", "key_numbers", "load_profile",
    "load_result", "md_table", "missing_note", "new_figure", "num", "paired_frame", "pct",
    "peers_table", "per_prompt_acceptance", "profiles_with_results", "prompt_swap_change",
    "range_for_test", "rate_from_a", "results_root", "role_arm", "rule_markdown",
    "sampling_table", "scope", "show", "split_common", "study_table", "sweep_contexts",
    "sweep_primary", "sweep_table", "test_range", "total_batch_seconds", "training_record",
    "verdict_table", "verdicts", "verdicts_markdown",
]  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Print the paradox verdicts of one profile.")
    ap.add_argument("--profile", default=book_profile())
    ap.add_argument("--results", type=Path, default=None)
    args = ap.parse_args(argv)
    p = load_profile(args.profile, args.results)
    print(f"profile {p.name}: {len(p.results)} of {len(EXPERIMENTS)} result directories")
    for v in verdicts(p):
        print(f"\n{v.key} ({v.hypothesis}): {v.label}")
        for k, val in v.numbers.items():
            if isinstance(val, str):
                print(f"  {k}: {val}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
