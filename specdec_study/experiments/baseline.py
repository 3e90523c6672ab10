"""01: the KV-cached autoregressive baseline: one target call per generated token; its tokens/s
and time per prompt.

The whole experiment: its notebook, its declaration, the shape of its summary.json, its config
and run (given a `runner.lab.Lab`), its headline and figure. Also the config every
single-context experiment (01 baseline, 02 bigram, 03 transformer draft) starts with
(`single_config`), which `bigram_draft` and `transformer_draft` import from here. Imports no
runner and no torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypedDict

from specdec_study.analysis.summary import ArmSummary, MedianCI, Num, summarize
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


class BaselineHeadline(TypedDict):
    """01's headline (`baseline_headline`)."""

    tokens_per_s: MedianCI
    wall_s: MedianCI
    s_per_token: Num
    n_prompts: int
    max_new_tokens: int
    context_tokens: int


class BaselineSummary(StudySummary):
    """01's summary.json."""

    arms: dict[str, ArmSummary]
    headline: BaselineHeadline


# --------------------------------------------------------------------------- config and run


def single_config(lab: Lab, arms: dict[str, str]) -> dict[str, Any]:
    """The config of a single-context experiment (01, 02, 03) pairing these arms with the
    baseline."""
    e = lab.section()
    return {
        **lab.base_config(),
        "n_prompts": int(e["n_prompts"]),
        "context_tokens": int(e["context_tokens"]),
        "max_new_tokens": int(e["max_new_tokens"]),
        "arms": {BASELINE: "none", **arms},
    }


def config(lab: Lab) -> dict[str, Any]:
    """01's config: the baseline alone."""
    return single_config(lab, {})


def run(lab: Lab) -> ExperimentResult:
    """01: the KV-cached autoregressive baseline: tokens/s and time per prompt."""
    cfg = config(lab)
    return lab.execute(cfg, lambda on_row: _measure(lab, cfg, on_row))


def _measure(lab: Lab, cfg: dict[str, Any], on_row: Progress) -> Run:
    loaded = lab.load_target()
    arms = lab.arms(loaded, {}, cfg["k"])
    prompts = lab.prompts(loaded, cfg["n_prompts"], cfg["context_tokens"])
    rows = lab.paired(arms, prompts, cfg, progress="baseline", on_row=on_row)
    sm = summarize(rows)
    return lab.result(rows, {"arms": sm, "headline": baseline_headline(sm, cfg)})


# --------------------------------------------------------------------------- summary


def baseline_headline(arms: dict[str, Any], cfg: dict[str, Any]) -> dict[str, Any]:
    """01's headline: the baseline's tokens/s, time per prompt and per token, and its n."""
    b = arms[BASELINE]
    return {
        "tokens_per_s": b["tokens_per_s"],
        "wall_s": b["wall_s"],
        "s_per_token": b["total_wall_s"] / b["new_tokens"] if b["new_tokens"] else None,
        "n_prompts": b["n_prompts"],
        "max_new_tokens": cfg["max_new_tokens"],
        "context_tokens": cfg["context_tokens"],
    }


def from_rows(
    rows: list[dict[str, Any]], cfg: dict[str, Any], stated: dict[str, Any]
) -> dict[str, Any]:
    """The summary the stored rows give (`analysis.from_rows`): the arms and the headline."""
    arms = summarize(rows)
    return {"arms": arms, "headline": baseline_headline(arms, cfg)}


# --------------------------------------------------------------------------- figures


def tokens_per_s(summary: dict[str, Any], rows: Sequence[dict[str, Any]]) -> Any:
    """Histogram of the baseline's tokens per second over the prompts, with the median marked."""
    return arm_figures.tokens_per_s(rows)


# --------------------------------------------------------------------------- declaration

# this result directory's section of results/SCHEMA.md (`make notebooks` writes it there)
SCHEMA = """\
`arms`: `{"baseline"}`. `headline`: `tokens_per_s` (median/ci), `wall_s` (median/ci, seconds
per prompt), `s_per_token` (float), `n_prompts`, `max_new_tokens`, `context_tokens`.
"""

baseline = Experiment(
    "baseline",
    "the KV-cached autoregressive baseline: one target call per generated token",
    schema=SCHEMA,
    summary=BaselineSummary,
    config_shape=SingleContextConfig,
    figures=(
        Figure(
            "tokens_per_s.png",
            "Tokens per second of each prompt under the baseline; the dashed line is the "
            "median. The spread is the noise that every speedup interval has to beat.",
            draw=tokens_per_s,
        ),
    ),
    build_config=config,
    run=run,
    summarize=from_rows,
)

NOTEBOOK = Notebook(
    "01_baseline",
    "Autoregressive baseline",
    "The KV-cached autoregressive baseline: one target call per token. Tokens per second "
    "and seconds per prompt, medians with bootstrap 95% confidence intervals across prompts. "
    "Writes `baseline/`.",
    (baseline,),
)
