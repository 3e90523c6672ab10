"""04's positive control (`implementations`): the implementations a hand-written study plausibly
used, timed side by side on the context sweep's documents and anchors, interleaved exactly as the
sweep is (`Lab.interleaved_rows`: prompt by prompt, each prompt's contexts in the seeded order,
each (prompt, context) block after its own warm-up, its arms paired and rotated), each read the
earlier study's way (one context-20 baseline over every row) and paired with its own baseline,
with tokens per target call beside it; the change of each from context 10 to 100, and the rule
that says whether a variant reproduces the published shape.

Six arms run in every block: the cached baseline (the reference of token identity), the uncached
baseline, and one speculative arm per variant (`CACHES`): `cached` (target and draft cached),
`mixed_target` (the target recomputes the prefix at every call, the draft cached), `mixed_draft`
(the target cached, the draft re-reads the whole sequence for every token it drafts) and
`nocache` (both recompute). A variant is a (baseline arm, speculative arm) pair of the config's
`variants`; its single-divisor speedup divides *its own* baseline's time at the reference
context: the uncached baseline's for `nocache`, the cached one's for the others.

The whole experiment: its declaration (notebook 04 is `context_sweep`'s), the shapes of its
config.json and summary.json, its config (which reads the `context_sweep` section's anchors) and
run (given a `runner.lab.Lab`), the shape rule, its summary and its figure. Imports no runner and
no torch.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np

from specdec_lib.errors import SpecdecError
from specdec_study.analysis import stats
from specdec_study.analysis.summary import ArmsCell, Num, PointCI, arm_rows, arm_walls, summarize
from specdec_study.reporting.earlier import earlier_recomputed
from specdec_study.reporting.figures import implementation_figures
from specdec_study.reporting.number_format import fmt, interval_of
from specdec_study.results.declare import (
    BASELINE,
    Experiment,
    Figure,
    PairedConfig,
    StudySummary,
)

if TYPE_CHECKING:
    from specdec_lib.measure.paired import Arm
    from specdec_study.results.store import ExperimentResult
    from specdec_study.runner.execute import Progress, Run
    from specdec_study.runner.lab import Lab

EXPERIMENT = "implementations"

# ------------------------------------------------------------------ the shape rule (fixed first)
# Written on 2026-12-06, before any embedded number of this experiment existed. The published
# transformer draft's single-divisor speedup falls from 1.83x at context 10 to 1.01x at 100
# (ratio 0.55); a variant "reproduces the published shape" when its single-divisor speedup falls
# by more than a fifth over the same range while its tokens per target call stays flat.
SHAPE_FALL = 0.80  # the 100/10 single-divisor ratio's whole 95% interval lies below this
FLAT_BAND = (0.90, 1.10)  # ... and the tokens-per-call ratio's whole interval lies inside this
REPRODUCES = "reproduces"
DOES_NOT_REPRODUCE = "does not reproduce"
INCONCLUSIVE = "inconclusive"
SHAPE_LABELS = (REPRODUCES, DOES_NOT_REPRODUCE, INCONCLUSIVE)
SHAPE_RULE = (
    f"A variant {REPRODUCES} the published shape when the 95% interval of its single-divisor "
    f"speedup's ratio (context 100 over 10) lies wholly below {SHAPE_FALL:.2f} and that of its "
    f"tokens per target call lies wholly inside [{FLAT_BAND[0]:.2f}, {FLAT_BAND[1]:.2f}]. It "
    f"{DOES_NOT_REPRODUCE} when the first interval lies wholly above {SHAPE_FALL:.2f} (no "
    "material fall) or the second lies wholly outside that band (the acceptance moved). "
    f"Anything else, a missing number included, is {INCONCLUSIVE}."
)

VARIANTS = ("nocache", "mixed_target", "mixed_draft", "cached")
# variant -> (target's KV cache in the speculative loop, draft's KV cache, baseline cached)
CACHES: dict[str, tuple[bool, bool, bool]] = {
    "nocache": (False, False, False),
    "mixed_target": (False, True, True),
    "mixed_draft": (True, False, True),
    "cached": (True, True, True),
}
CACHED_BASELINE = BASELINE  # the reference of token identity
UNCACHED_BASELINE = "baseline_nocache"


def variant_arms(variants: list[str]) -> dict[str, dict[str, Any]]:
    """Variant -> its baseline and speculative arm (the arm is named as the variant) and where
    each keeps a KV cache (`CACHES`)."""
    out = {}
    for v in variants:
        target, draft, base_cached = CACHES[v]
        out[v] = {
            "baseline": CACHED_BASELINE if base_cached else UNCACHED_BASELINE,
            "speculative": v,
            "target_cache": target,
            "draft_cache": draft,
            "baseline_cache": base_cached,
        }
    return out


def shape_label(ratio: dict[str, Any] | None, tokens_ratio: dict[str, Any] | None) -> str:
    """The shape rule (`SHAPE_RULE`) on two {value, ci_low, ci_high} intervals: the single-divisor
    speedup's and the tokens per call's ratio, context 100 over 10. The three outcomes cannot
    overlap: `reproduces` needs the first interval's top below SHAPE_FALL (so its bottom is too)
    and the second inside the band; `does not reproduce` needs one of their mirrors."""
    s_lo, s_hi = _bounds(ratio)
    t_lo, t_hi = _bounds(tokens_ratio)
    if s_hi < SHAPE_FALL and FLAT_BAND[0] <= t_lo and t_hi <= FLAT_BAND[1]:
        return REPRODUCES
    if s_lo > SHAPE_FALL or t_lo > FLAT_BAND[1] or t_hi < FLAT_BAND[0]:
        return DOES_NOT_REPRODUCE
    return INCONCLUSIVE


def _bounds(d: dict[str, Any] | None) -> tuple[float, float]:
    """(ci_low, ci_high) as floats; NaN for a missing interval (every comparison is false)."""
    if not d or d.get("ci_low") is None or d.get("ci_high") is None:
        return math.nan, math.nan
    return float(d["ci_low"]), float(d["ci_high"])


# ------------------------------------------------------------------ shapes


class VariantArms(TypedDict):
    """A variant's two arms and where each keeps a KV cache."""

    baseline: str
    speculative: str
    target_cache: bool
    draft_cache: bool
    baseline_cache: bool


class VariantRow(TypedDict):
    """One (variant, context) row of the summary's table."""

    variant: str
    context: int
    baseline: str
    speculative: str
    n_prompts: int
    total_wall_s: float
    baseline_total_wall_s: float
    tokens_per_call: PointCI
    acceptance_rate: PointCI
    paired_speedup: PointCI
    single_divisor_speedup: PointCI
    baseline_single_divisor_speedup: PointCI
    identical_fraction: float


class VariantChange(TypedDict):
    """A variant's change from context `lo` to `hi`, each ratio paired by prompt, and its label."""

    lo: int
    hi: int
    single_divisor_lo: PointCI
    single_divisor_hi: PointCI
    single_divisor_ratio: PointCI
    tokens_per_call_ratio: PointCI
    paired_speedup_ratio: PointCI
    label: str


class _ShapeRuleKeys(TypedDict):
    fall: float
    flat_band: list[float]
    text: str


class ShapeRule(_ShapeRuleKeys, total=False):
    """The shape rule's thresholds and text, as they were when the summary was made, and the
    hash of this module then (`rule_sha256`: the book can tell a rule revised after the run;
    absent from the first embedded result, measured before it was recorded)."""

    sha256: str


def rule_sha256() -> str:
    """The hash of this file, where the shape rule is written (as `rules.rules_sha256` is of
    the paradox's rules; `analysis/implementations.py` until the experiment moved here)."""
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()


class ShapeHeadline(TypedDict):
    """A variant's headline: its two ratios (context hi over lo) and the shape rule's label."""

    single_divisor_ratio: Num
    tokens_per_call_ratio: Num
    label: str


class _ImplementationsKeys(StudySummary):
    contexts: list[int]
    reference_context: int
    draft: str
    variants: dict[str, VariantArms]
    by_context: dict[str, ArmsCell]
    table: list[VariantRow]
    changes: dict[str, VariantChange]
    shape_rule: ShapeRule
    headline: dict[str, ShapeHeadline]


class ImplementationsSummary(_ImplementationsKeys, total=False):
    """The positive control's summary.json (`implementations_summary`)."""


class ImplementationsConfig(PairedConfig):
    """The positive control's config: the sweep's documents and anchors, the contexts, one draft,
    and per variant its arms and caches (`config`)."""

    contexts: list[int]
    anchor_min: int
    anchor_room: int
    n_prompts_by_context: dict[str, int]
    order: str
    warmup_tokens: int
    reference_context: int
    draft: str
    arm_cache: dict[str, dict[str, bool]]  # arm -> {"target": bool, "draft": bool}
    variants: dict[str, VariantArms]


# ------------------------------------------------------------------ config and run


def config(lab: Lab) -> dict[str, Any]:
    """The positive control's config: its own contexts, prompt count, tokens and draft, the
    context sweep's anchors (`anchor_min`, `anchor_room`), so that its prompts are the first of
    the sweep's documents, and the variants it times (all four unless the section lists
    `variants`)."""
    e = lab.section()
    sweep = lab.profile_section("context_sweep") or {}
    contexts = [int(c) for c in e["contexts"]]
    chosen = [str(v) for v in (e.get("variants") or VARIANTS)]
    unknown = sorted(set(chosen) - set(VARIANTS))
    if unknown:
        known = ", ".join(VARIANTS)
        raise SpecdecError(f"{EXPERIMENT}: variants {unknown} unknown; known: {known}")
    chosen = [v for v in VARIANTS if v in chosen]  # one order, whatever the profile's
    if not chosen:
        raise SpecdecError(f"{EXPERIMENT}: no variant to run")
    variants = variant_arms(chosen)
    draft = str(e["draft"])
    baselines = [b for b in (CACHED_BASELINE, UNCACHED_BASELINE) if any(
        a["baseline"] == b for a in variants.values())]  # fmt: skip
    if CACHED_BASELINE not in baselines:
        baselines.insert(0, CACHED_BASELINE)  # always: the reference of token identity
    n = int(e["n_prompts"])
    sweep_contexts = [int(c) for c in sweep.get("contexts") or contexts]
    return {
        **lab.base_config(),
        "contexts": contexts,
        "anchor_min": int(sweep.get("anchor_min") or max(sweep_contexts + contexts)),
        "anchor_room": int(sweep.get("anchor_room", 0)),
        "n_prompts": n,
        "n_prompts_by_context": {str(c): n for c in contexts},
        "max_new_tokens": int(e["max_new_tokens"]),
        "order": "interleaved",
        "warmup_tokens": int(e.get("warmup_tokens", lab.warmup_tokens)),
        "reference_context": int(e.get("reference_context", 20)),
        "draft": draft,
        "arms": {**{b: "none" for b in baselines}, **{v: draft for v in variants}},
        "arm_cache": {
            **{
                b: {"target": b == CACHED_BASELINE, "draft": b == CACHED_BASELINE}
                for b in baselines
            },  # fmt: skip
            **{
                v: {"target": a["target_cache"], "draft": a["draft_cache"]}
                for v, a in variants.items()
            },  # fmt: skip
        },
        "variants": variants,
    }


def run(lab: Lab) -> ExperimentResult:
    """04's positive control: each variant's single-divisor and paired speedup and its tokens per
    target call at every context, on the same prompts."""
    cfg = config(lab)
    return lab.execute(cfg, lambda on_row: _measure(lab, cfg, on_row))


def build_variant_arms(lab: Lab, loaded: Any, cfg: dict[str, Any]) -> list[Arm]:
    """Every arm of the config, the cached baseline first, each with its own caches."""
    return [
        lab.arm(
            loaded,
            name,
            spec,
            cfg["k"],
            use_cache=cfg["arm_cache"][name]["target"],
            draft_cache=cfg["arm_cache"][name]["draft"],
        )
        for name, spec in cfg["arms"].items()
    ]


def arm_variant(cfg: dict[str, Any]) -> dict[str, str]:
    """Arm -> the `variant` column of its rows: a speculative arm's variant; the uncached
    baseline's `nocache`; the cached baseline's `cached` (it is also the mixed variants')."""
    out = {CACHED_BASELINE: "cached", UNCACHED_BASELINE: "nocache"}
    out.update({v: v for v in cfg["variants"]})
    return out


def _measure(lab: Lab, cfg: dict[str, Any], on_row: Progress) -> Run:
    """Every block after its warm-up, checkpointed per (context, prompt) as the sweep's are; rows
    by context, then prompt, each with its `variant` and its draft's cache."""
    loaded = lab.load_target()
    arms = build_variant_arms(lab, loaded, cfg)
    variant = arm_variant(cfg)
    rows = lab.interleaved_rows(loaded, cfg, arms, on_row)
    for r in rows:
        r["variant"] = variant[r["method"]]
        r["draft_cache"] = bool(cfg["arm_cache"][r["method"]]["draft"])
    return lab.result(rows, implementations_summary(rows, cfg))


# ------------------------------------------------------------------ the summary


def _column(rows: list[dict[str, Any]], key: str) -> np.ndarray:
    return np.array([float(r[key]) for r in rows], dtype=float)


def _nan() -> dict[str, Any]:
    return stats.Interval(math.nan, math.nan, math.nan, 0, "none").as_dict()


def _tokens_per_call(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """New tokens over target calls, pooled over prompts with a paired bootstrap interval."""
    if not rows:
        return _nan()
    return stats.pooled_ratio(_column(rows, "new_tokens"), _column(rows, "target_calls")).as_dict()


def _acceptance(rows: list[dict[str, Any]]) -> dict[str, Any]:
    prop = _column(rows, "proposed") if rows else np.array([])
    if not rows or prop.sum() == 0:
        return _nan()
    return stats.pooled_ratio(_column(rows, "accepted"), prop).as_dict()


def _speedup(num: np.ndarray, den: np.ndarray) -> dict[str, Any]:
    """sum(num) / sum(den) over the prompts both have (the first n), paired by prompt."""
    n = min(len(num), len(den))
    return _nan() if n == 0 else stats.paired_speedup(num[:n], den[:n]).as_dict()


def variant_row(
    rows: list[dict[str, Any]], variant: str, arms: dict[str, Any], context: int, ref: int
) -> dict[str, Any]:
    """One (variant, context) row: tokens per call, the speedup paired with the variant's own
    baseline at this context, and the earlier study's single-divisor speedup (the variant's
    baseline at the reference context over this row, paired by prompt)."""
    spec = arm_rows(rows, arms["speculative"], context=context)
    base_w = arm_walls(rows, arms["baseline"], context=context)
    ref_w = arm_walls(rows, arms["baseline"], context=ref)
    spec_w = np.array([r["wall_s"] for r in spec], dtype=float)
    return {
        "variant": variant,
        "context": context,
        "baseline": arms["baseline"],
        "speculative": arms["speculative"],
        "n_prompts": len(spec),
        "total_wall_s": float(spec_w.sum()),
        "baseline_total_wall_s": float(base_w.sum()),
        "tokens_per_call": _tokens_per_call(spec),
        "acceptance_rate": _acceptance(spec),
        "paired_speedup": _speedup(base_w, spec_w),
        "single_divisor_speedup": _speedup(ref_w, spec_w),
        "baseline_single_divisor_speedup": _speedup(ref_w, base_w),
        "identical_fraction": float(np.mean([bool(r["identical"]) for r in spec]))
        if spec
        else math.nan,
    }


def _tokens_ratio(hi: list[dict[str, Any]], lo: list[dict[str, Any]]) -> dict[str, Any]:
    """(tokens per call at hi) / (at lo), each pooled, paired by prompt."""
    n = min(len(hi), len(lo))
    if n == 0:
        return _nan()
    data = [_column(x[:n], k) for x in (hi, lo) for k in ("new_tokens", "target_calls")]
    return stats.bootstrap(
        data, lambda a, b, c, d, axis: (a.sum(axis) / b.sum(axis)) / (c.sum(axis) / d.sum(axis))
    ).as_dict()


def variant_change(
    rows: list[dict[str, Any]], arms: dict[str, Any], table: list[dict[str, Any]], lo: int, hi: int
) -> dict[str, Any]:
    """The variant's change from context lo to hi, paired by prompt. The single-divisor ratio
    is S(hi) / S(lo) = T(lo) / T(hi): the one divisor cancels, so it is the speculative arm's
    own time ratio; the paired ratio keeps each context's baseline."""
    s_lo = arm_walls(rows, arms["speculative"], context=lo)
    s_hi = arm_walls(rows, arms["speculative"], context=hi)
    b_lo = arm_walls(rows, arms["baseline"], context=lo)
    b_hi = arm_walls(rows, arms["baseline"], context=hi)
    at = {t["context"]: t for t in table}
    n = min(len(s_lo), len(s_hi), len(b_lo), len(b_hi))
    paired_ratio = (
        _nan()
        if n == 0
        else stats.bootstrap(
            [b_hi[:n], s_hi[:n], b_lo[:n], s_lo[:n]],
            lambda a, b, c, d, axis: (a.sum(axis) / b.sum(axis)) / (c.sum(axis) / d.sum(axis)),
        ).as_dict()
    )
    ratio = _speedup(s_lo, s_hi)
    tokens = _tokens_ratio(
        arm_rows(rows, arms["speculative"], context=hi),
        arm_rows(rows, arms["speculative"], context=lo),
    )
    return {
        "lo": lo,
        "hi": hi,
        "single_divisor_lo": at[lo]["single_divisor_speedup"] if lo in at else _nan(),
        "single_divisor_hi": at[hi]["single_divisor_speedup"] if hi in at else _nan(),
        "single_divisor_ratio": ratio,
        "tokens_per_call_ratio": tokens,
        "paired_speedup_ratio": paired_ratio,
        "label": shape_label(ratio, tokens),
    }


def implementations_summary(rows: list[dict[str, Any]], cfg: dict[str, Any]) -> dict[str, Any]:
    """rows (with `context` and `variant` columns) and the config -> the summary.json."""
    contexts = [int(c) for c in cfg["contexts"]]
    ref = int(cfg["reference_context"]) if cfg["reference_context"] in contexts else contexts[0]
    lo, hi = min(contexts), max(contexts)
    # in the study's order (VARIANTS), whatever order config.json was read back in
    variants = {v: cfg["variants"][v] for v in VARIANTS if v in cfg["variants"]}
    variants |= {v: a for v, a in cfg["variants"].items() if v not in variants}
    by_context = {
        str(c): {"arms": summarize([r for r in rows if r["context"] == c])} for c in contexts
    }
    table = [variant_row(rows, v, arms, c, ref) for v, arms in variants.items() for c in contexts]
    changes = {
        v: variant_change(rows, arms, [t for t in table if t["variant"] == v], lo, hi)
        for v, arms in variants.items()
    }
    return {
        "contexts": contexts,
        "reference_context": ref,
        "draft": cfg["draft"],
        "variants": variants,
        "by_context": by_context,
        "table": table,
        "changes": changes,
        "shape_rule": {
            "fall": SHAPE_FALL,
            "flat_band": list(FLAT_BAND),
            "text": SHAPE_RULE,
            "sha256": rule_sha256(),
        },
        "headline": {
            v: {
                "single_divisor_ratio": ch["single_divisor_ratio"]["value"],
                "tokens_per_call_ratio": ch["tokens_per_call_ratio"]["value"],
                "label": ch["label"],
            }
            for v, ch in changes.items()
        },
    }


def from_rows(
    rows: list[dict[str, Any]], cfg: dict[str, Any], stated: dict[str, Any]
) -> dict[str, Any]:
    """The summary the stored rows give (`analysis.from_rows`): the run's own summary."""
    return implementations_summary(rows, cfg)


# ------------------------------------------------------------------ figures


def implementations_figure(summary: dict[str, Any], rows: Sequence[dict[str, Any]]) -> Any:
    """The declared figure of a result directory (`implementations.png`): its summary, with the
    published rows."""
    return implementation_figures.draw_implementations(summary, earlier_recomputed())


# ------------------------------------------------------------------ declaration

# this result directory's section of results/SCHEMA.md (`make notebooks` writes it there)
SCHEMA = """\
The positive control: the implementations a hand-written study plausibly used, timed on the same
prompts and contexts, run order exactly as `context_sweep`'s (prompt by prompt, each prompt's
contexts in the seeded order, each (prompt, context) block after a `warmup_tokens` warm-up of
every arm, the arms paired and rotated; resumes per block). Prompts: the first `n_prompts` of the
context sweep's documents (its `anchor_min` and `anchor_room`, read from the `context_sweep`
section). One draft (`draft`), six arms: `baseline` (KV-cached; the reference of `identical`),
`baseline_nocache` (recomputes the prefix at every step) and one speculative arm per variant,
named as the variant:

| variant | speculative loop's target | its draft | baseline it is read against |
|---|---|---|---|
| `nocache` | recomputes the prefix per call | recomputes it per draft token | `baseline_nocache` |
| `mixed_target` | recomputes the prefix per call | cached | `baseline` |
| `mixed_draft` | cached | re-reads the whole sequence for every drafted token | `baseline` |
| `cached` | cached | cached (ours) | `baseline` |

- config: `contexts`, `n_prompts`, `n_prompts_by_context`, `max_new_tokens`, `anchor_min`,
  `anchor_room`, `order` (`"interleaved"`), `warmup_tokens`, `reference_context` (20), `draft`,
  `arms` (arm -> spec), `arm_cache` (arm -> `{"target": bool, "draft": bool}`), `variants`
  (variant -> `{baseline, speculative, target_cache, draft_cache, baseline_cache}`). A profile's
  section may list `variants` (a subset, run in the order above).
- per_prompt.csv: the common columns plus `context`, `order`, `variant` (a speculative arm's
  variant; `baseline_nocache` -> `nocache`, `baseline` -> `cached`, though it is the mixed
  variants' baseline too) and `draft_cache`; `use_cache` is the target's cache.
- summary: `contexts`, `reference_context`, `draft`, `variants` (as the config's), `by_context`
  (`"<context>"` -> `{"arms": {arm -> ArmSummary}}`, paired with the cached baseline);
  `table`: one row per variant x context: `variant`, `context`, `baseline`, `speculative`,
  `n_prompts`, `total_wall_s`, `baseline_total_wall_s`, `identical_fraction`, and as
  `{value, ci_low, ci_high, n, ci_method}`: `tokens_per_call` (new tokens / target calls,
  pooled), `acceptance_rate`, `paired_speedup` (the variant's baseline at this context / the
  arm), `single_divisor_speedup` (the earlier study's: the variant's baseline at
  `reference_context` / the arm at this context, prompts paired by index),
  `baseline_single_divisor_speedup` (the same for the variant's baseline itself);
  `changes[variant]`: `lo`, `hi` (the lowest and highest context), `single_divisor_lo`,
  `single_divisor_hi`, `single_divisor_ratio` (hi over lo: the divisor cancels, so it is the
  arm's time at lo / at hi), `tokens_per_call_ratio`, `paired_speedup_ratio` (each paired by
  prompt) and `label` (the shape rule: `reproduces` | `does not reproduce` | `inconclusive`);
  `shape_rule`: `fall`, `flat_band`, `text` (the rule as it was applied), `sha256` (of
  the module where the rule is written, `specdec_study/experiments/implementations.py`, when the
  summary was made; of `analysis/implementations.py` for a summary made before the experiment
  moved there; absent from a result measured before it was recorded);
  `headline[variant]`: `single_divisor_ratio`, `tokens_per_call_ratio`, `label`.
"""


def reading_headline(summary: dict[str, Any], config: dict[str, Any]) -> list[str]:
    """Per variant of the positive control: its single-divisor speedup at the lowest and highest
    context (and its n)."""
    out = []
    for v, ch in (summary.get("changes") or {}).items():
        out.append(
            f"`{v}`: speedup against its baseline at context {summary.get('reference_context')}: "
            f"{interval_of(ch.get('single_divisor_lo'), 'x')} at {ch.get('lo')}, "
            f"{interval_of(ch.get('single_divisor_hi'), 'x')} at {ch.get('hi')}"
        )
    return out


def reading_showed(summary: dict[str, Any]) -> list[str]:
    """Per variant: the two ratios (highest over lowest context) and the shape rule's label."""
    out = []
    for v, ch in (summary.get("changes") or {}).items():
        r = ch.get("single_divisor_ratio") or {}
        calls = ch.get("tokens_per_call_ratio") or {}
        out.append(
            f"`{v}`'s speedup the earlier study's way changed by a factor "
            f"{interval_of({**r, 'n': None}, '')} from context {ch.get('lo')} to "
            f"{ch.get('hi')}, its tokens per target call by a factor "
            f"{interval_of({**calls, 'n': None}, '')}"
            f" (n = {r.get('n')} prompts): the shape rule says {ch.get('label')}"
        )
    return out


def reading_table(rows: Sequence[dict[str, Any]]) -> list[dict[str, str]]:
    """The reading's table: the positive control's (variant, context) rows, each interval
    joined."""
    return [
        {
            "variant": f"`{t.get('variant')}`",
            "context (tokens)": fmt(t.get("context"), "n"),
            "n (prompts)": fmt(t.get("n_prompts"), "n"),
            "tokens per target call": interval_of(t.get("tokens_per_call"), ""),
            "paired speedup": interval_of(t.get("paired_speedup"), "x"),
            "speedup vs its baseline at 20": interval_of(t.get("single_divisor_speedup"), "x"),
            "identical to greedy": fmt(t.get("identical_fraction"), "%"),
        }
        for t in rows
    ]


implementations = Experiment(
    "implementations",
    "the positive control: the earlier study's shape reproduced on purpose by the implementations "
    "a hand-written study plausibly used (no KV cache; a cached baseline beside a loop that "
    "recomputes its target's or its draft's prefix; both cached), one draft, the same prompts "
    "and contexts",
    schema=SCHEMA,
    figures=(
        Figure(
            "implementations.png",
            "Left: each variant's speedup the earlier study's way (its own baseline at context "
            "20 over each row; whiskers: 95% intervals), the published transformer draft in "
            "red. Right: tokens per target call. A fall on the left with a flat line on the "
            "right is the published shape made by the implementation, not by acceptance.",
            draw=implementations_figure,
        ),
    ),
    defaults={
        "contexts": [10, 20, 50, 100],
        "n_prompts": 2,
        "max_new_tokens": 8,
        "warmup_tokens": 4,
        "draft": "self:1",
    },
    summary=ImplementationsSummary,
    config_shape=ImplementationsConfig,
    build_config=config,
    run=run,
    summarize=from_rows,
    headline=reading_headline,
    showed=reading_showed,
    table=reading_table,
)
