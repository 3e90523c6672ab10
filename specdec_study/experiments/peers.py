"""07: Hugging Face generate (greedy, prompt lookup, assisted) beside our baseline, n-gram lookup
and transformer draft on the same prompts, interleaved per prompt (`specdec_lib.measure.huggingface`
wraps HF).

The whole experiment: its notebook, its declaration, the shape of its summary.json, its config
and run (given a `runner.lab.Lab`; HF's arms are built by the runner, `Lab.hf_arms`), its
summary (each arm with its tokens/s, its paired speedup over our baseline and over HF greedy,
and the fraction of outputs identical to each greedy reference; HF reports no acceptance, so its
arms carry none) and its figure. Without a usable `specdec_lib.measure.huggingface`
(`Lab.hf_problem`) it runs our arms only and says why in the summary. Imports no runner and no
torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np

from specdec_study.analysis import stats
from specdec_study.analysis.summary import (
    ArmSummary,
    Num,
    SpeedupColumns,
    TokensPerSColumns,
    arm_walls,
    summarize,
)
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

# arm -> Hugging Face generate's mode (`specdec_lib.measure.huggingface.HFGenerator`)
HF_ARMS = {"hf-greedy": "greedy", "hf-prompt-lookup": "prompt_lookup", "hf-assisted": "assisted"}
HF_GREEDY = "hf-greedy"
ACCEPTANCE_KEYS = (
    "acceptance_rate",
    "mean_accepted_length",
    "position_acceptance",
    "accepted_histogram",
    "draft_share_of_time",
    "draft_s_per_token",
    "verify_s_per_call",
    "cost_ratio",
    "per_token_acceptance_iid",
    "predicted_speedup_leviathan",
    "verify_cost_ratio",
    "predicted_speedup_calibrated",
    "acceptance_rate_pooled",
)


# --------------------------------------------------------------------------- shapes


class PeerRow(SpeedupColumns, TokensPerSColumns):
    """One arm's row of the table (`peers_table`)."""

    method: str
    implementation: str  # "hf" or "ours"
    speedup_vs_hf_greedy: Num
    identical_to_baseline: float
    identical_to_hf_greedy: Num


class PeerHeadline(TypedDict):
    """One arm's headline: its speedup over our baseline and identity with it."""

    speedup: Num
    identical_to_baseline: float


class PeersSummary(StudySummary):
    """07's summary.json (`peers_summary`); `peers_error` says why HF's arms did not run."""

    arms: dict[str, ArmSummary]
    table: list[PeerRow]
    peers_available: bool
    peers_error: str | None
    headline: dict[str, PeerHeadline]


# --------------------------------------------------------------------------- config and run


def our_specs(lab: Lab) -> dict[str, str]:
    """Arm name -> spec of our arms in 07: the n-gram and the transformer drafts."""
    d = lab.profile["drafts"]
    return {lab.arm_name(d["ngram"]): d["ngram"], lab.arm_name(d["transformer"]): d["transformer"]}


def peers_config(lab: Lab, peers_error: str | None) -> dict[str, Any]:
    """07's config; HF's arms are in it only where `specdec_lib.measure.huggingface` can run
    them."""
    e = lab.section()
    hf = {m: f"hf:{mode}" for m, mode in HF_ARMS.items()} if not peers_error else {}
    return {
        **lab.base_config(),
        "n_prompts": int(e["n_prompts"]),
        "context_tokens": int(e["context_tokens"]),
        "max_new_tokens": int(e["max_new_tokens"]),
        "arms": {BASELINE: "none", **our_specs(lab), **hf},
    }


def config(lab: Lab) -> dict[str, Any]:
    """07's config with HF's arms as this environment can run them."""
    return peers_config(lab, lab.hf_problem())


def run(lab: Lab) -> ExperimentResult:
    """07: Hugging Face generate (greedy, prompt lookup, assisted) beside our baseline, n-gram
    lookup and transformer draft on the same prompts, interleaved per prompt."""
    peers_error = lab.hf_problem()
    if peers_error:
        print(
            f"specdec_lib.measure.huggingface is not usable ({peers_error}); running our arms only"
        )
    cfg = peers_config(lab, peers_error)
    return lab.execute(cfg, lambda on_row: _measure(lab, cfg, peers_error, on_row))


def _measure(lab: Lab, cfg: dict[str, Any], peers_error: str | None, on_row: Progress) -> Run:
    loaded = lab.load_target()
    k = cfg["k"]
    arms = lab.arms(loaded, our_specs(lab), k)
    if not peers_error:
        arms += lab.hf_arms(loaded, HF_ARMS, k)

    def hook(row: dict[str, Any]) -> None:
        if row["draft"] == "hf:greedy":
            row["k"] = 0  # HF greedy drafts nothing
        on_row(row)

    prompts = lab.prompts(loaded, cfg["n_prompts"], cfg["context_tokens"])
    rows = lab.paired(arms, prompts, cfg, progress="peers", on_row=hook)
    sm = summarize(rows)
    drop_acceptance(sm)
    summary = peers_summary(rows, sm, len(prompts), peers_error)
    return lab.result(rows, summary)


# --------------------------------------------------------------------------- summary


def drop_acceptance(arms: dict[str, Any]) -> None:
    """Remove the acceptance statistics of HF's arms (in place): HF's generate reports no
    acceptance, so its rows hold none worth summarizing."""
    for m in HF_ARMS:
        for key in ACCEPTANCE_KEYS:
            arms.get(m, {}).pop(key, None)


def peers_table(rows: list[dict[str, Any]], arms: dict[str, Any], n: int) -> list[dict[str, Any]]:
    """One row per arm: tokens/s, speedup over our baseline and over HF greedy (when it ran),
    and identity with each greedy reference over the n prompts."""
    toks = {(r["method"], r["prompt"]): r["tokens"] for r in rows}
    hf_base = HF_GREEDY if HF_GREEDY in arms else None
    hf_wall = arm_walls(rows, hf_base) if hf_base else None
    table = []
    for m, s in arms.items():
        sp = s.get("speedup") or {}
        wall = arm_walls(rows, m)
        table.append(
            {
                "method": m,
                "implementation": "hf" if m in HF_ARMS else "ours",
                "tokens_per_s": s["tokens_per_s"]["median"],
                "tokens_per_s_ci_low": s["tokens_per_s"]["ci_low"],
                "tokens_per_s_ci_high": s["tokens_per_s"]["ci_high"],
                "speedup": sp.get("value", 1.0 if m == BASELINE else None),
                "speedup_ci_low": sp.get("ci_low"),
                "speedup_ci_high": sp.get("ci_high"),
                "speedup_vs_hf_greedy": stats.paired_speedup(hf_wall, wall).value
                if hf_wall is not None
                else None,
                "identical_to_baseline": s["identical_fraction"],
                "identical_to_hf_greedy": float(
                    np.mean([toks[(m, i)] == toks[(hf_base, i)] for i in range(n)])
                )
                if hf_base
                else None,
            }
        )
    return table


def peers_summary(
    rows: list[dict[str, Any]], arms: dict[str, Any], n: int, peers_error: str | None
) -> dict[str, Any]:
    """rows, their per-arm summary (HF's acceptance dropped) and the prompt count -> the peers'
    summary.json; peers_error says why HF's arms did not run (None: they did)."""
    table = peers_table(rows, arms, n)
    return {
        "arms": arms,
        "table": table,
        "peers_available": peers_error is None,
        "peers_error": peers_error,
        "headline": {
            t["method"]: {
                "speedup": t["speedup"],
                "identical_to_baseline": t["identical_to_baseline"],
            }
            for t in table
        },
    }


def from_rows(
    rows: list[dict[str, Any]], cfg: dict[str, Any], stated: dict[str, Any]
) -> dict[str, Any]:
    """The summary the stored rows give (`analysis.from_rows`): the run's own, with the peers'
    error as the summary states it (not a function of the rows)."""
    for r in rows:
        if r["draft"] == "hf:greedy":
            r["k"] = 0
    arms = summarize(rows)
    drop_acceptance(arms)
    n = len({r["prompt"] for r in rows})
    return peers_summary(rows, arms, n, stated.get("peers_error"))


# --------------------------------------------------------------------------- figures


def peers_speed(summary: dict[str, Any], rows: Sequence[dict[str, Any]]) -> Any:
    """Bar chart of tokens per second of our decoders and Hugging Face generate."""
    return arm_figures.peers(summary)


# --------------------------------------------------------------------------- declaration

# this result directory's section of results/SCHEMA.md (`make notebooks` writes it there)
SCHEMA = """\
Our arms (`baseline`, `ngram`, the transformer arm) and Hugging Face `generate` arms
(`hf-greedy`, `hf-prompt-lookup`, `hf-assisted`; hyphens, because the secret scrubber masks any
`hf_` + 8 letters) on the same prompts, interleaved per prompt.
- `arms`: ArmSummary for each (HF arms: no acceptance keys). `identical_fraction` is against our
  greedy baseline.
- `table`: rows `method`, `implementation` (`ours` / `hf`), `tokens_per_s`,
  `tokens_per_s_ci_low`, `tokens_per_s_ci_high`, `speedup`, `speedup_ci_low`, `speedup_ci_high`
  (vs our baseline; 1.0 with null CI for the baseline), `speedup_vs_hf_greedy` (ratio of total
  times), `identical_to_baseline`, `identical_to_hf_greedy` (fractions of prompts).
- `peers_available`: bool (false when `specdec_lib.measure.huggingface` could not be imported:
  then only our arms are present), `peers_error`: str or null.
- `headline`: method -> `{speedup, identical_to_baseline}`.
"""

peers = Experiment(
    "peers",
    "Hugging Face `generate` (greedy, prompt lookup, assisted) beside our decoders",
    schema=SCHEMA,
    summary=PeersSummary,
    config_shape=SingleContextConfig,
    figures=(
        Figure(
            "peers_speed.png",
            "Tokens per second (median, 95% interval) of our decoders (blue) and Hugging "
            "Face generate (orange) on the same prompts; the label is the share of outputs "
            "identical to greedy.",
            draw=peers_speed,
        ),
    ),
    build_config=config,
    run=run,
    summarize=from_rows,
)

NOTEBOOK = Notebook(
    "07_peers",
    "Hugging Face peers",
    "Hugging Face `generate`: greedy, prompt lookup (`prompt_lookup_num_tokens`) and "
    "assisted generation (`assistant_model`) on the same prompts and the same pair, beside "
    "our baseline, n-gram lookup and transformer draft: speed, and the fraction of outputs "
    "identical to greedy. Writes `peers/`.",
    (peers,),
)
