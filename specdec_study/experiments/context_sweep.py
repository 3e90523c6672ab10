"""04: the timed context sweep, with and without the KV cache (`context_sweep`,
`context_sweep_nocache`): per context the arms paired with that context's own baseline, on the
same documents and anchors at every context; the earlier study's speedup (one
reference-context baseline over every row) beside it.

The contexts are interleaved, not run in blocks (`Lab.interleaved_rows`, `runner.interleaved`:
prompt by prompt, each prompt's contexts in a seeded random order, each (prompt, context) block
after its own short warm-up), so a drift in the machine's speed during the run spreads over
every context instead of landing on the contexts run last; the positive control
(`implementations`) runs its blocks through the same loop.

The whole pair of experiments: notebook 04 (which also runs `agreement` and `implementations`),
both declarations, the shapes of their config.json and summary.json, their config and run (given
a `runner.lab.Lab`), their summary (per context the arms' summaries, a flat table with the paired
speedup beside the earlier study's, the baseline's growth with context, headlines) and their
figures. Imports no runner and no torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np

from specdec_lib.errors import SpecdecError
from specdec_study.analysis import stats
from specdec_study.analysis.summary import (
    AcceptanceColumns,
    ArmsCell,
    Num,
    SpeedupColumns,
    TokensPerSColumns,
    arm_walls,
    point,
    summarize,
)
from specdec_study.experiments import agreement, implementations
from specdec_study.reporting.figures import context_length as context_figures
from specdec_study.reporting.reading_lines import headline_table, shown_table
from specdec_study.results.declare import (
    BASELINE,
    Experiment,
    Figure,
    Notebook,
    PairedConfig,
    StudySummary,
)

if TYPE_CHECKING:
    from specdec_study.results.store import ExperimentResult
    from specdec_study.runner.execute import Progress, Run
    from specdec_study.runner.lab import Lab


# --------------------------------------------------------------------------- shapes


class SweepRow(SpeedupColumns, AcceptanceColumns, TokensPerSColumns):
    """One (context, arm) row of the sweep's flat table (`table_row`)."""

    context: int
    method: str
    draft: str
    k: int
    n_prompts: int
    use_cache: bool
    total_wall_s: float
    baseline_total_wall_s: float
    earlier_style_speedup: Num
    earlier_style_speedup_ci_low: Num
    earlier_style_speedup_ci_high: Num
    earlier_style_speedup_ci_method: str
    mean_accepted_length: Num


class EarlierStyle(TypedDict):
    """The reference context whose baseline the earlier study's speedup divides."""

    reference_context: int
    reference_total_wall_s: float


class BaselineGrowth(TypedDict):
    """The baseline's total time and time per token, one entry per context."""

    context: list[int]
    total_wall_s: list[float]
    s_per_token: list[float]


class SweepHeadline(TypedDict):
    """Arm -> context -> speedup, paired and the earlier study's way (`sweep_headline`)."""

    speedup_at: dict[str, dict[str, Num]]
    earlier_style_speedup_at: dict[str, dict[str, Num]]


class _SweepKeys(StudySummary):
    contexts: list[int]
    use_cache: bool
    by_context: dict[str, ArmsCell]
    table: list[SweepRow]
    earlier_style: EarlierStyle
    baseline_growth: BaselineGrowth
    headline: SweepHeadline
    kinds: dict[str, str]  # draft arm -> how it relates to the target (Lab.draft_kinds)


class SweepSummary(_SweepKeys, total=False):
    """04's timed sweep's summary.json, with the KV cache on or off (`sweep_summary` and the
    runner's primary arm and draft kinds). The runner always writes `primary`; a result from
    before it is read, and the book asks for a re-run."""

    primary: str


class _SweepConfigKeys(PairedConfig):
    contexts: list[int]
    anchor_min: int
    anchor_room: int
    n_prompts_by_context: dict[str, int]  # context (as JSON writes a key) -> its prompts
    order: str
    warmup_tokens: int
    use_cache: bool
    reference_context: int


class SweepConfig(_SweepConfigKeys, total=False):
    """04's timed sweep's config (and its cache-off ablation's): the contexts, each with its
    prompts, and the earlier study's reference context."""

    n_prompts_by_arm: dict[str, int]  # only where a draft runs on fewer prompts
    primary: str  # absent from results configured before it was recorded


# --------------------------------------------------------------------------- config and run


def config(lab: Lab) -> dict[str, Any]:
    """The timed sweep's config (`context_sweep`, or its cache-off ablation
    `context_sweep_nocache`, by the Lab's experiment). The ablation takes its contexts, prompt
    counts, token counts, anchors and drafts from `context_sweep`, so that it runs on exactly the
    same prompts; only the cache differs. Its own section may list `drafts`, a subset of the
    sweep's draft arms (the baseline always runs), to save time."""
    experiment = lab.name
    e = lab.section("context_sweep")
    if experiment != "context_sweep":
        lab.section()  # the section must exist (a clear error otherwise)
    d = lab.profile["drafts"]
    specs = (
        {str(k): str(v) for k, v in e["drafts"].items()}
        if e.get("drafts")
        else {
            lab.arm_name(d["bigram"]): d["bigram"],
            lab.arm_name(d["transformer"]): d["transformer"],
        }
    )
    if experiment == "context_sweep_nocache" and "drafts" in lab.section():
        keep = [str(m) for m in lab.section()["drafts"] or []]
        unknown = sorted(set(keep) - set(specs))
        if unknown:
            raise SpecdecError(
                f"context_sweep_nocache: drafts {unknown} are not context_sweep drafts {specs}"
            )
        specs = {m: v for m, v in specs.items() if m in keep}
    contexts = [int(c) for c in e["contexts"]]
    n = int(e["n_prompts"])
    if experiment == "context_sweep_nocache" and lab.section().get("n_prompts"):
        # the ablation may run on the first of the sweep's prompts only (the same documents:
        # make_prompts is prefix-stable), to save the cost of recomputing every prefix
        n = min(n, int(lab.section()["n_prompts"]))
    beyond = e.get("n_prompts_beyond_100")
    # a draft arm may run on the first of the prompts only (`draft_prompts: {arm: n}`), paired with
    # the baseline on those prompts: the budget's cut for an arm that decides no hypothesis
    fewer = {str(m): min(n, int(v)) for m, v in (e.get("draft_prompts") or {}).items()}
    unknown = sorted(set(fewer) - set(e.get("drafts") or specs))
    if unknown:
        raise SpecdecError(f"{experiment}: draft_prompts names {unknown}, not sweep drafts")
    fewer = {m: v for m, v in fewer.items() if m in specs}
    return {
        **lab.base_config(),
        "contexts": contexts,
        "anchor_min": int(e.get("anchor_min") or max(contexts)),
        # room kept after each anchor (make_prompts): with the agreement's anchor_min and
        # continuation_tokens, the sweep's prompts are the first of the agreement's documents,
        # so the replay can be checked against these timed runs (analysis.replay.replay_check)
        "anchor_room": int(e.get("anchor_room", 0)),
        "n_prompts": n,
        "n_prompts_by_context": {
            str(c): (int(beyond) if beyond and c > 100 else n) for c in contexts
        },
        **({"n_prompts_by_arm": fewer} if fewer else {}),
        "max_new_tokens": int(e["max_new_tokens"]),
        "order": "interleaved",  # not the blocks of earlier results: another config hash
        "warmup_tokens": int(e.get("warmup_tokens", lab.warmup_tokens)),
        "use_cache": experiment != "context_sweep_nocache",
        "reference_context": int(e.get("reference_context", 20)),
        "primary": str(e.get("primary") or next(iter(specs), "")),
        "arms": {BASELINE: "none", **specs},
    }


def run(lab: Lab) -> ExperimentResult:
    """04: time, speedup and acceptance per context, each context with its own paired baseline,
    on the same documents and anchors (a context with fewer prompts takes the first ones); plus
    the earlier study's speedup (one reference-context baseline over every row). With the KV
    cache off for `context_sweep_nocache`, on the very same prompts."""
    cfg = config(lab)
    return lab.execute(cfg, lambda on_row: _measure(lab, cfg, on_row))


def _measure(lab: Lab, cfg: dict[str, Any], on_row: Progress) -> Run:
    """The sweep's rows (`Lab.interleaved_rows`: a resumed run skips the finished blocks), its
    summary, its primary draft and each draft's kind."""
    loaded = lab.load_target()
    use_cache = cfg["use_cache"]
    specs = {k: v for k, v in cfg["arms"].items() if k != BASELINE}
    arms = lab.arms(loaded, specs, cfg["k"], use_cache=use_cache)
    rows = lab.interleaved_rows(loaded, cfg, arms, on_row)
    summary = sweep_summary(rows, cfg)
    summary["primary"] = cfg["primary"]
    summary["kinds"] = lab.draft_kinds(loaded, lab.drafters(loaded, specs, use_cache=use_cache))
    return lab.result(rows, summary)


# --------------------------------------------------------------------------- summary


def table_row(
    context: int, method: str, arms: dict[str, Any], earlier: stats.Interval, use_cache: bool
) -> dict[str, Any]:
    """One (context, arm) row of the flat table; `earlier` is its earlier-study-style speedup."""
    s = arms[method]
    sp = s.get("speedup") or {}
    acc = s.get("acceptance_rate") or {}
    return {
        "context": context,
        "method": method,
        "draft": s["draft"],
        "k": s["k"],
        "n_prompts": s["n_prompts"],
        "use_cache": use_cache,
        "total_wall_s": s["total_wall_s"],
        "baseline_total_wall_s": arms[BASELINE]["total_wall_s"],
        "tokens_per_s": s["tokens_per_s"]["median"],
        "tokens_per_s_ci_low": s["tokens_per_s"]["ci_low"],
        "tokens_per_s_ci_high": s["tokens_per_s"]["ci_high"],
        "speedup": sp.get("value"),
        "speedup_ci_low": sp.get("ci_low"),
        "speedup_ci_high": sp.get("ci_high"),
        "earlier_style_speedup": earlier.value,
        "earlier_style_speedup_ci_low": earlier.low,
        "earlier_style_speedup_ci_high": earlier.high,
        "earlier_style_speedup_ci_method": earlier.method,
        "acceptance_rate": acc.get("value"),
        "acceptance_rate_ci_low": acc.get("ci_low"),
        "acceptance_rate_ci_high": acc.get("ci_high"),
        "mean_accepted_length": point(s.get("mean_accepted_length")),
    }


def sweep_table(
    rows: list[dict[str, Any]],
    by_context: dict[str, Any],
    contexts: list[int],
    ref_wall: np.ndarray,
    use_cache: bool,
) -> list[dict[str, Any]]:
    """Every (context, arm) row; the earlier-study-style speedup divides the reference context's
    baseline time by the arm's, prompt by prompt (a context with fewer prompts has the first
    ones)."""
    table = []
    for c in contexts:
        arms = by_context[str(c)]["arms"]
        for m in arms:
            w = arm_walls(rows, m, context=c)
            n = min(len(w), len(ref_wall))
            earlier = stats.paired_speedup(ref_wall[:n], w[:n])
            table.append(table_row(c, m, arms, earlier, use_cache))
    return table


def baseline_growth(table: list[dict[str, Any]], by_context: dict[str, Any]) -> dict[str, Any]:
    """The baseline's total time and time per token at each context."""
    base = [t for t in table if t["method"] == BASELINE]
    per_token = []
    for t in base:
        b = by_context[str(t["context"])]["arms"][BASELINE]
        per_token.append(b["total_wall_s"] / max(b["new_tokens"], 1))
    return {
        "context": [t["context"] for t in base],
        "total_wall_s": [t["total_wall_s"] for t in base],
        "s_per_token": per_token,
    }


def sweep_headline(table: list[dict[str, Any]], methods: list[str]) -> dict[str, Any]:
    """Per draft arm its speedup at each context; per arm (baseline too) the earlier style's."""

    def at(m: str, key: str) -> dict[str, Any]:
        return {str(t["context"]): t[key] for t in table if t["method"] == m}

    return {
        "speedup_at": {m: at(m, "speedup") for m in methods},
        "earlier_style_speedup_at": {
            m: at(m, "earlier_style_speedup") for m in [BASELINE, *methods]
        },
    }


def sweep_summary(rows: list[dict[str, Any]], cfg: dict[str, Any]) -> dict[str, Any]:
    """rows (with a `context` column) and the sweep's config -> its summary.json."""
    contexts = cfg["contexts"]
    ref = cfg["reference_context"] if cfg["reference_context"] in contexts else contexts[0]
    by_context = {
        str(c): {"arms": summarize([r for r in rows if r["context"] == c])} for c in contexts
    }
    ref_wall = arm_walls(rows, BASELINE, context=ref)
    table = sweep_table(rows, by_context, contexts, ref_wall, cfg["use_cache"])
    methods = [m for m in cfg["arms"] if m != BASELINE]
    return {
        "contexts": contexts,
        "use_cache": cfg["use_cache"],
        "by_context": by_context,
        "table": table,
        "earlier_style": {
            "reference_context": ref,
            "reference_total_wall_s": float(ref_wall.sum()),
        },
        "baseline_growth": baseline_growth(table, by_context),
        "headline": sweep_headline(table, methods),
    }


def from_rows(
    rows: list[dict[str, Any]], cfg: dict[str, Any], stated: dict[str, Any]
) -> dict[str, Any]:
    """The summary the stored rows give (`analysis.from_rows`): the sweep's own summary."""
    return sweep_summary(rows, cfg)


# --------------------------------------------------------------------------- figures


def speedup_vs_context(summary: dict[str, Any], rows: Sequence[dict[str, Any]]) -> Any:
    """Line chart of each arm's paired speedup against context length, with 95% intervals."""
    return context_figures.speedup_vs_context(summary)


def acceptance_vs_context(summary: dict[str, Any], rows: Sequence[dict[str, Any]]) -> Any:
    """Line chart of each drafting arm's acceptance rate against context length."""
    return context_figures.acceptance_vs_context(summary)


def time_vs_context(summary: dict[str, Any], rows: Sequence[dict[str, Any]]) -> Any:
    """Line chart of each arm's total seconds against context length."""
    return context_figures.time_vs_context(summary)


def earlier_style_vs_paired(summary: dict[str, Any], rows: Sequence[dict[str, Any]]) -> Any:
    """Speedup against context length, paired and divided the earlier study's way."""
    return context_figures.earlier_style_vs_paired([summary])


# --------------------------------------------------------------------------- declarations

CONTEXT_FIGURES = (
    Figure(
        "speedup_vs_context.png",
        "Paired speedup at each context, each against the baseline at the same "
        "context (whiskers: 95% intervals). A drafter that loses ground as context grows falls "
        "here.",
        draw=speedup_vs_context,
    ),
    Figure(
        "acceptance_vs_context.png",
        "Acceptance rate (accepted / proposed) at each context (whiskers: 95% "
        "intervals): the timing-free half of the speedup.",
        draw=acceptance_vs_context,
    ),
    Figure(
        "time_vs_context.png",
        "Total seconds per arm at each context. The baseline's own growth is "
        "what a single baseline at one context hides.",
        draw=time_vs_context,
    ),
    Figure(
        "earlier_style_vs_paired.png",
        "Dashed (crosses): speedup the earlier study's way (one baseline at "
        "the reference context divided by each row's time, the baseline's own row included); "
        "solid: paired with the same context. "
        "Where the two part, the difference is the baseline's growth, not the drafter's.",
        draw=earlier_style_vs_paired,
    ),
)

# this result directory's section of results/SCHEMA.md (`make notebooks` writes it there)
CONTEXT_SWEEP_SCHEMA = """\
Timing sweep over `contexts` (config), KV cache on / off. Prompts: the same documents and anchors
at every context (`make_prompts(..., anchor_min=max(contexts))`, same seed), so only the visible
prefix changes. Each context has its own baseline, interleaved per prompt with the drafts of the
`context_sweep` profile section's `drafts` (arm name -> spec). The cache-off run takes contexts,
prompt and token counts, anchors and drafts from `context_sweep` (its own section may name a
subset of the drafts), so both run on the very same prompts. Config: `n_prompts_by_context`
(`"<context>"` -> count; a context with fewer prompts has the first ones), `n_prompts_by_arm`
(present only when the profile's `draft_prompts` cuts an arm: arm -> count; that arm runs on the
first prompts only and its speedup pairs it with the baseline on those), `primary` (H4's arm),
`order` (`"interleaved"`), `warmup_tokens` (int, default 8). Run order: prompt by prompt, each
prompt's contexts in a random order seeded by the config's `seed` and the prompt index, each
(prompt, context) block after a warm-up of every arm on that block's prompt (`warmup_tokens`
new tokens, not recorded; the profile-wide `warmup` is not used here), the arms within a block
paired and rotated as in every experiment. A run interrupted part-way resumes per block. Results
measured before `order` existed ran the contexts in blocks; their config hash differs, so they
are never reused as interleaved ones.
- `contexts`: list of ints. `use_cache`: bool. `primary`: the arm H4 uses. `kinds`: arm -> how
  it relates to the target (see agreement).
- `by_context`: `"<context>"` -> `{"arms": {arm -> ArmSummary}}`.
- `table`: list of flat rows, one per context x arm: `context`, `method`, `draft`, `k`,
  `n_prompts`, `use_cache`, `total_wall_s`, `baseline_total_wall_s`, `tokens_per_s`,
  `tokens_per_s_ci_low`, `tokens_per_s_ci_high`, `speedup`, `speedup_ci_low`, `speedup_ci_high`
  (paired, same context; null for the baseline), `earlier_style_speedup`,
  `earlier_style_speedup_ci_low`, `earlier_style_speedup_ci_high` (the baseline's total time at
  the reference context divided by this arm's total time at this context; prompts paired by
  index; the baseline rows carry it too), `acceptance_rate`, `acceptance_rate_ci_low`,
  `acceptance_rate_ci_high`, `mean_accepted_length` (null for the baseline).
- `earlier_style`: `{"reference_context": 20, "reference_total_wall_s": float}` (H2).
- `baseline_growth`: `{"context": [...], "total_wall_s": [...], "s_per_token": [...]}`:
  the baseline's own time per context (H1/H2).
- `headline`: `speedup_at` / `earlier_style_speedup_at`: arm -> `{"<context>": value}`.
- per_prompt.csv has a `context` column and an `order` column (the context's 0-based position
  in its prompt's run order); its rows are by context, then prompt.
"""


def reading_headline(summary: dict[str, Any], config: dict[str, Any]) -> list[str]:
    """The reading's headline (both sweeps): each draft's speedup at the lowest and highest
    context."""
    return headline_table(summary, "speedup", "context", "speedup")


def reading_showed(summary: dict[str, Any]) -> list[str]:
    """What it showed (both sweeps): whether each draft's speedup intervals at those contexts
    overlap."""
    return shown_table(summary, "speedup", "context")


context_sweep = Experiment(
    "context_sweep",
    "drafting at growing visible context, each context against its own baseline",
    schema=CONTEXT_SWEEP_SCHEMA,
    figures=CONTEXT_FIGURES,
    summary=SweepSummary,
    config_shape=SweepConfig,
    build_config=config,
    run=run,
    summarize=from_rows,
    headline=reading_headline,
    showed=reading_showed,
)

# this result directory's section of results/SCHEMA.md (`make notebooks` writes it there)
CONTEXT_SWEEP_NOCACHE_SCHEMA = """\
The cache-off run of `context_sweep` (its layout, above): the same contexts, prompts, token
counts and anchors, read from the `context_sweep` section, with `use_cache` false, so every call
re-reads the whole sequence; its own section may name a subset of the sweep's drafts (embedded:
none, the baseline alone) and fewer prompts (the first ones).
"""

# the same shapes, config, run, summary and reading as the sweep's (the Lab's name says which)
context_sweep_nocache = replace(
    context_sweep,
    name="context_sweep_nocache",
    what="the context sweep with the KV cache off (every call re-reads the whole sequence)",
    schema=CONTEXT_SWEEP_NOCACHE_SCHEMA,
    # the baseline alone: no acceptance to plot (the plot was an empty frame with an empty legend)
    figures=tuple(f for f in CONTEXT_FIGURES if f.file != "acceptance_vs_context.png"),
)

NOTEBOOK = Notebook(
    "04_context_sweep",
    "Context sweep",
    "Speedup and acceptance as the visible context grows, on the same documents and "
    "anchors at every context, each context with its own paired baseline; the earlier "
    "study's way of computing speedup (one context-20 baseline for every row) beside it; "
    "the same sweep with the KV cache off on the very same prompts; and the timing-free "
    "agreement of every draft with the target, at the same positions for every context: "
    "replayed on the target's own greedy continuation (what a greedy run is scored on), "
    "with the document's own next tokens teacher-forced as a second view; and the positive "
    "control: the implementations a hand-written study plausibly used (no KV cache, a cached "
    "baseline beside a loop that recomputes its target's or its draft's prefix, both "
    "cached) timed on the same prompts, each read the earlier study's way and paired, with "
    "tokens per target call beside it. Writes `context_sweep/`, `context_sweep_nocache/`, "
    "`agreement/` and `implementations/`.",
    (
        context_sweep,
        context_sweep_nocache,
        agreement.agreement,
        implementations.implementations,
    ),
)
