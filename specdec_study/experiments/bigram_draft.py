"""02 (experiment `bigram`): a bigram drafter (a table fitted on WikiText-2) against the paired
baseline on the same prompts, interleaved per prompt.

The whole experiment: its notebook, its declaration, the shape of its summary.json, its config
and run (given a `runner.lab.Lab`), its headline and figures. Also what every paired
single-context experiment (02 bigram, 03 transformer draft) shares, which `transformer_draft`
imports from here: the paired measurement (`measure_pair`), the headline (`headline_pair`), the
summary shape and the four figures (`PAIR_FIGURES`). Named `bigram_draft.py`, not `bigram.py`:
the library's drafter is `specdec_lib/drafters/bigram.py` (`tests/test_layers.py`'s same-name
rule). Imports no runner and no torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypedDict

from specdec_study.analysis.summary import ArmSummary, MedianCI, PointCI, summarize
from specdec_study.experiments.baseline import baseline_headline, single_config
from specdec_study.reporting.figures import arms as arm_figures
from specdec_study.results.declare import (
    BASELINE,
    Experiment,
    Figure,
    Notebook,
    SingleContextConfig,
    StudySummary,
)

if TYPE_CHECKING:
    from specdec_study.results.store import ExperimentResult
    from specdec_study.runner.execute import Progress, Run
    from specdec_study.runner.lab import Lab


# --------------------------------------------------------------------------- shapes


class PairHeadline(TypedDict):
    """02 and 03's headline (`headline_pair`)."""

    arm: str
    speedup: PointCI | None
    acceptance_rate: PointCI | None
    mean_accepted_length: PointCI | None
    identical_fraction: float
    tokens_per_s: MedianCI
    baseline_tokens_per_s: MedianCI
    n_prompts: int


class PairSummary(StudySummary):
    """02's summary.json (and 03's, with the identity beside it)."""

    arms: dict[str, ArmSummary]
    headline: PairHeadline


# --------------------------------------------------------------------------- config and run


def specs(lab: Lab) -> dict[str, str]:
    """Arm name -> spec of 02's one draft, the profile's bigram."""
    return {"bigram": lab.profile["drafts"]["bigram"]}


def config(lab: Lab) -> dict[str, Any]:
    """02's config: the bigram drafter beside the baseline."""
    return single_config(lab, specs(lab))


def run(lab: Lab) -> ExperimentResult:
    """02: the bigram drafter against its paired baseline."""
    cfg = config(lab)
    drafts = specs(lab)
    return lab.execute(cfg, lambda on_row: measure_pair(lab, cfg, drafts, on_row))


def measure_pair(lab: Lab, cfg: dict[str, Any], drafts: dict[str, str], on_row: Progress) -> Run:
    """These drafts (name -> spec, the main one first) paired with the baseline on the config's
    prompts, summarized with the main draft's headline (02, and 03's pair)."""
    loaded = lab.load_target()
    arms = lab.arms(loaded, drafts, cfg["k"])
    prompts = lab.prompts(loaded, cfg["n_prompts"], cfg["context_tokens"])
    rows = lab.paired(arms, prompts, cfg, progress=cfg["experiment"], on_row=on_row)
    sm = summarize(rows)
    main = next(iter(drafts))
    return lab.result(rows, {"arms": sm, "headline": headline_pair(sm, main)})


# --------------------------------------------------------------------------- summary


def headline_pair(arms: dict[str, Any], arm: str) -> dict[str, Any]:
    """02 and 03's headline: the main draft arm against the paired baseline."""
    s = arms[arm]
    return {
        "arm": arm,
        "speedup": s.get("speedup"),
        "acceptance_rate": s.get("acceptance_rate"),
        "mean_accepted_length": s.get("mean_accepted_length"),
        "identical_fraction": s.get("identical_fraction"),
        "tokens_per_s": s.get("tokens_per_s"),
        "baseline_tokens_per_s": arms[BASELINE]["tokens_per_s"],
        "n_prompts": s.get("n_prompts"),
    }


def from_rows(
    rows: list[dict[str, Any]], cfg: dict[str, Any], stated: dict[str, Any]
) -> dict[str, Any]:
    """The summary the stored rows give (`analysis.from_rows`): the arms, and the headline of the
    main arm the summary names (`headline.arm`, not a function of the rows; without one, the
    baseline's headline). 03's too."""
    arms = summarize(rows)
    arm = (stated.get("headline") or {}).get("arm")
    if arm is None:
        return {"arms": arms, "headline": baseline_headline(arms, cfg)}
    return {"arms": arms, "headline": headline_pair(arms, arm)}


# --------------------------------------------------------------------------- figures


def speedup(summary: dict[str, Any], rows: Sequence[dict[str, Any]]) -> Any:
    """Bar chart of each drafting arm's speedup over the paired baseline, with 95% intervals."""
    return arm_figures.speedup_bars(summary["arms"])


def position_acceptance(summary: dict[str, Any], rows: Sequence[dict[str, Any]]) -> Any:
    """Line chart of the acceptance at each draft position given the earlier ones, per arm."""
    return arm_figures.position_acceptance(summary["arms"])


def accepted_histogram(summary: dict[str, Any], rows: Sequence[dict[str, Any]]) -> Any:
    """Bar chart of the share of verifications that accepted 0 to K draft tokens, per arm."""
    return arm_figures.accepted_histogram(summary["arms"])


def time_split(summary: dict[str, Any], rows: Sequence[dict[str, Any]]) -> Any:
    """Stacked bars of each arm's seconds in prefill, drafting, verification and the rest."""
    return arm_figures.time_split(rows)


# --------------------------------------------------------------------------- declaration

PAIR_FIGURES = (
    Figure(
        "speedup.png",
        "Speedup of each drafting arm over the baseline on the same prompts (total "
        "baseline time / total arm time); whiskers: 95% paired-bootstrap interval. Above 1 is "
        "faster; an interval that straddles 1 is no measured speedup.",
        draw=speedup,
    ),
    Figure(
        "position_acceptance.png",
        "Probability that draft position i is accepted given that positions "
        "1..i-1 were. A flat line is what the i.i.d. model behind Leviathan et al.'s prediction "
        "assumes; a falling one means long drafts pay off less than predicted.",
        draw=position_acceptance,
    ),
    Figure(
        "accepted_histogram.png",
        "Accepted draft tokens per verification, as a share of verifications. "
        "Mass at K is whole drafts accepted; mass at 0 is drafting time wasted.",
        draw=accepted_histogram,
    ),
    Figure(
        "time_split.png",
        "Where the seconds went, summed over prompts: prefill, drafting, verification "
        "and the rest. A drafter pays its acceptance with the drafting bar.",
        draw=time_split,
    ),
)

# this result directory's section of results/SCHEMA.md (`make notebooks` writes it there)
SCHEMA = """\
`arms`: `{"baseline", "bigram"}`. `headline`: `speedup`, `acceptance_rate`,
`mean_accepted_length` (value/ci), `identical_fraction`, `n_prompts`.
"""

bigram = Experiment(
    "bigram",
    "a bigram drafter (a table fitted on WikiText-2) against the paired baseline",
    schema=SCHEMA,
    figures=PAIR_FIGURES,
    summary=PairSummary,
    config_shape=SingleContextConfig,
    build_config=config,
    run=run,
    summarize=from_rows,
)

NOTEBOOK = Notebook(
    "02_bigram",
    "Bigram drafter",
    "A bigram table fitted on the fit split of WikiText-2 drafts K tokens; the target "
    "verifies them greedily. Paired with the baseline on the same prompts, interleaved per "
    "prompt. Writes `bigram/`.",
    (bigram,),
)
