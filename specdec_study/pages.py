"""What the book's chapters call (`from specdec_study import pages as R`): a facade over the
torch-free reading (results.read), the analysis (analysis.changes, analysis.theory) and the
presentation (reporting.format, earlier, tables, hypotheses, figures). Defines nothing of its own
except the command line:

`python -m specdec_study.pages --profile embedded` prints the paradox verdicts with their numbers.
"""
# ruff: noqa: I001 - grouped by module, one line per group, so the facade reads as a list

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

# fmt: off
from specdec_study.analysis.changes import acceptance_change, growth
from specdec_study.analysis.rules import published_level, published_ratio
from specdec_study.analysis.theory import a_from_rate, rate_from_a
from specdec_study.reporting.earlier import (earlier_baseline_time, earlier_drop,
                                             earlier_recomputed, earlier_study, earlier_table)
from specdec_study.reporting.figures.book import (
    fig_accepted_histogram, fig_acceptance_vs_context, fig_agreement_vs_context,
    fig_baseline_growth, fig_divergence_margins, fig_earlier_study, fig_ladder,
    fig_measured_vs_predicted, fig_position_acceptance, fig_prompt_confound, fig_replay,
    fig_speedup_vs_context, fig_time_split, fig_training_curve)
from specdec_study.reporting.figures.implementation_figures import fig_implementations
from specdec_study.reporting.figures.style import new_figure, show
from specdec_study.reporting.format import (admonition, ci, ci_pct, common_markdown, download_role,
                                          md_code, md_table, md_text, missing_note, num, pct,
                                          split_common)
from specdec_study.reporting.decomposition_tables import decomposition_numbers, decomposition_table
from specdec_study.reporting.figures.decomposition_bars import fig_decomposition
from specdec_study.reporting.hypotheses import (LABELS, h3_per_draft, rule_markdown, scope,
                                              verdict_glue, verdict_table, verdicts)
from specdec_study.reporting.hypotheses_summary import (key_numbers, replay_check_sentence,
                                                      t4_beside)
from specdec_study.reporting.identity import identity_clause, identity_sentence, identity_table
from specdec_study.reporting.implementation_tables import (implementations_glue,
                                                          implementations_rule,
                                                          implementations_shape,
                                                          implementations_table, slowest_block)
from specdec_study.reporting.runs import (batch_time_sentence, config_table, env_table,
                                        total_batch_seconds)
from specdec_study.reporting.sampling_tables import (sampling_table, sequence_sentence,
                                                     sequence_table)
from specdec_study.reporting.tables import (beside_published, headline_table, k_sweep_table,
                                          peers_table, study_table, transformer_note)
from specdec_study.results.catalog import EXPERIMENTS, NOTEBOOKS
from specdec_study.results.read import (book_profile, damaged_results, load_results,
                                      profiles_with_results)
# fmt: on

__all__ = [
    "EXPERIMENTS", "LABELS", "NOTEBOOKS", "a_from_rate", "acceptance_change", "admonition",
    "beside_published", "book_profile", "ci", "ci_pct", "common_markdown",
    "config_table", "damaged_results", "download_role", "md_code", "md_text",
    "earlier_baseline_time", "earlier_drop",
    "earlier_recomputed", "earlier_study", "earlier_table", "env_table",
    "fig_accepted_histogram", "fig_acceptance_vs_context", "fig_agreement_vs_context",
    "fig_baseline_growth", "fig_divergence_margins", "fig_earlier_study", "fig_ladder",
    "fig_measured_vs_predicted", "fig_replay", "replay_check_sentence",
    "fig_position_acceptance", "fig_prompt_confound",
    "fig_speedup_vs_context", "fig_time_split", "fig_training_curve", "growth", "h3_per_draft",
    "headline_table", "identity_clause", "identity_sentence", "identity_table", "k_sweep_table",
    "key_numbers", "load_results", "md_table", "missing_note", "new_figure", "num", "pct",
    "peers_table", "profiles_with_results", "rate_from_a", "rule_markdown", "sampling_table",
    "scope", "sequence_sentence", "sequence_table", "show", "split_common", "study_table",
    "t4_beside", "total_batch_seconds", "transformer_note", "batch_time_sentence",
    "verdict_table", "verdicts", "published_level", "published_ratio", "verdict_glue",
    "decomposition_numbers", "decomposition_table", "fig_decomposition",
    "fig_implementations", "implementations_rule", "implementations_shape",
    "implementations_table", "implementations_glue", "slowest_block",
]  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    """The CLI: print the paradox verdicts of one profile with their text numbers."""
    ap = argparse.ArgumentParser(description="Print the paradox verdicts of one profile.")
    ap.add_argument("--profile", default=book_profile())
    ap.add_argument("--results", type=Path, default=None)
    args = ap.parse_args(argv)
    p = load_results(args.profile, args.results)
    print(f"profile {p.name}: {len(p.results)} of {len(EXPERIMENTS)} result directories")
    for v in verdicts(p):
        print(f"\n{v.key} ({v.hypothesis}): {v.verdict}")
        for k, val in v.numbers.items():
            if isinstance(val, str):
                print(f"  {k}: {val}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
