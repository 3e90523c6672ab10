"""The context-length paradox's verdicts as numbers: for each hypothesis (H1..H4) the quantity Q its
rule (analysis.rules) compares with a threshold, the other numbers it rests on, and the label.

`findings(profile, published)` reads a profile's results (results.read) and the earlier study's
recomputed table (reporting.earlier passes it in) and returns one `Finding` per hypothesis. A
profile that lacks what a rule needs gives "not tested" with what is missing. Pure and torch-free;
writes no prose (reporting.hypotheses does).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from specdec_study.analysis import rules
from specdec_study.analysis.changes import (
    acceptance_change,
    extra_growth,
    growth,
    prompt_swap_change,
    same_documents,
    test_range,
    tokens_per_call_change,
)
from specdec_study.analysis.replay import SEPARATE
from specdec_study.results.declare import BASELINE
from specdec_study.results.read import Profile, stored_sweep_table, sweep_contexts
from specdec_study.results.store import ExperimentResult

NAN_INTERVAL = {"value": math.nan, "ci_low": math.nan, "ci_high": math.nan, "n_prompts": 0}


@dataclass
class Finding:
    """One hypothesis under its rule: the label, Q (an interval dict with its n), the contexts Q
    spans, and the other numbers the verdict cites. For "not tested", `missing` names what the
    profile lacks, or `stale` the experiment whose stored result predates a key."""

    key: str
    label: str
    q: dict[str, Any] = field(default_factory=dict)
    contexts: tuple[int, int] | None = None
    inputs: dict[str, Any] = field(default_factory=dict)
    missing: tuple[str, ...] = ()
    stale: tuple[str, str] | None = None  # (experiment, key)
    power: rules.Power | None = None  # what the design detects at its n (rules.power)
    named: tuple[str, ...] = ()  # H2's regimes, H3's falling drafts (rules.Outcome.named)


def not_tested(key: str, *missing: str, stale: tuple[str, str] | None = None, **inputs) -> Finding:
    """A NOT_TESTED finding naming the experiments it lacks (or the stale one)."""
    return Finding(key, rules.NOT_TESTED, missing=missing, stale=stale, inputs=inputs)


def published_call_cost(published: pd.DataFrame) -> dict[str, float]:
    """H1 from the earlier table alone: the transformer draft's time grows by `time_ratio` from
    context 10 to 100 for the same tokens, while the tokens per call its acceptance implies
    (1 + K acceptance) fall only by `calls_ratio`; so the cost of a call grew by at least
    time_ratio / calls_ratio, which a KV-cached target's per-call cost at 100 tokens does not."""
    t = published[published["strategy"] == "transformer draft"].set_index("context")
    if 10 not in t.index or 100 not in t.index:
        return {}
    time_ratio = float(t.loc[100, "time_s"]) / float(t.loc[10, "time_s"])
    tpc = {
        c: rules.published_tokens_per_call(float(t.loc[c, "acceptance_pct"]) / 100)
        for c in (10, 100)
    }
    calls_ratio = tpc[10] / tpc[100]
    return {
        "time_ratio": time_ratio,
        "tokens_per_call_10": tpc[10],
        "tokens_per_call_100": tpc[100],
        "calls_ratio": calls_ratio,
        "call_cost_growth": time_ratio / calls_ratio,
    }


def h1_recomputation(p: Profile, published: pd.DataFrame | None = None) -> Finding:
    """rules.h1_rule on the cached and uncached sweeps (same prompts, contexts, tokens); the
    published table's own arithmetic (`published_call_cost`) beside it."""
    on, off = p.get("context_sweep"), p.get("context_sweep_nocache")
    if on is None or off is None:
        pairs = (("context_sweep", on), ("context_sweep_nocache", off))
        return not_tested("H1", *(name for name, r in pairs if r is None))
    common = sorted(set(sweep_contexts(on)) & set(sweep_contexts(off)))
    if len(common) < 2:
        return not_tested("H1", "two contexts shared by the cached and uncached sweeps")
    c0, c1 = test_range(common) or (common[0], common[-1])
    q = extra_growth(on.rows, off.rows, c0, c1)
    same = all(on.config.get(k) == off.config.get(k) for k in ("n_prompts", "max_new_tokens"))
    inputs = {
        "growth_on": growth(on.rows, BASELINE, c0, c1),
        "growth_off": growth(off.rows, BASELINE, c0, c1),
        "same_config": same,
        "published": published_call_cost(published) if published is not None else {},
    }
    return Finding("H1", rules.h1_rule(rules.Quantity.of(q)), q, (c0, c1), inputs)


def published_arithmetic(published: pd.DataFrame) -> dict[str, Any]:
    """H2's first half, from the earlier study's recomputed table: how many published speedups
    one divisor reproduces, the divisor, and the context-100 baseline a paired speedup needed."""
    out: dict[str, Any] = {
        "matching": int(published["matches_printed"].sum()),
        "rows": len(published),
        "all_match": bool(published["matches_printed"].all()),
        "baseline_s": float(
            published.loc[published["strategy"] == "baseline autoregressive", "time_s"].iloc[0]
        ),
    }
    t = published[published["strategy"] == "transformer draft"].set_index("context")
    if 10 in t.index and 100 in t.index:
        s10 = float(t.loc[10, "one_baseline_speedup"])
        out["paired_speedup_10"] = s10
        out["baseline_100_needed_s"] = s10 * float(t.loc[100, "time_s"])
    return out


def h2_single_baseline(p: Profile, published: pd.DataFrame) -> Finding:
    """rules.h2_rule: the published arithmetic, then our baseline's growth from the reference
    context to 100 on the same prompts, with the KV cache on and off (one mechanism with
    recomputation). Q is the cache-off growth when that sweep exists, else the cache-on one."""
    arithmetic = published_arithmetic(published)
    sweeps = {
        rules.CACHE_ON: p.get("context_sweep"),
        rules.CACHE_OFF: p.get("context_sweep_nocache"),
    }
    if stored_sweep_table(sweeps[rules.CACHE_ON]) is None:
        return not_tested("H2", "context_sweep", **arithmetic)
    on = sweeps[rules.CACHE_ON]
    ref = int((on.summary.get("earlier_style") or {}).get("reference_context", 20))
    ctx = sweep_contexts(on)
    c1 = 100 if 100 in ctx else max(ctx)
    grow: dict[str, dict] = {}
    for regime, res in sweeps.items():
        if res is None:
            continue
        here = sweep_contexts(res)
        measurable = ref in here and c1 in here and c1 != ref
        grow[regime] = (
            growth(res.rows, BASELINE, ref, c1, per_token=False) if measurable else NAN_INTERVAL
        )
    out = rules.h2_rule(arithmetic["all_match"], {r: rules.Quantity.of(g) for r, g in grow.items()})
    q = grow.get(rules.CACHE_OFF, grow[rules.CACHE_ON])
    inputs = {**arithmetic, "growth": grow}
    return Finding("H2", out.label, q, (ref, c1), inputs, named=out.named)


def separate_drafts(res: ExperimentResult) -> list[str]:
    """The agreement's drafts that are their own computation (own weights and KV cache)."""
    kinds = res.summary.get("kinds") or {}
    return [d for d, k in kinds.items() if k == SEPARATE]


def ladder(res: ExperimentResult) -> list[dict[str, Any]]:
    """Every draft of the replay with its level (agreement at the range's first context on the
    target's own continuation), its change on every scale and H3's rule on it (None for a draft
    that is no test of H3: shared states, context-free); sorted by level."""
    cont = res.summary.get("continuation") or {}
    kinds = res.summary.get("kinds") or {}
    out = []
    for d, ch in (cont.get("changes") or {}).items():
        kind = kinds.get(d, "")
        q = rules.Quantity.of(ch.get("tokens_per_call"))
        testable = kind == SEPARATE  # early exits read the target's states: no test of H3
        out.append(
            {
                "draft": d,
                "kind": kind,
                "level": (cont.get("levels") or {}).get(d),
                "change": ch,
                "label": rules.h3_draft_rule(q) if testable else None,
                "power": rules.power(q, rules.MATERIAL_RATIO),
            }
        )
    return sorted(out, key=lambda r: -1.0 if r["level"] is None else r["level"])


def h3_divergence(p: Profile) -> Finding:
    """rules.h3_rule over every separate draft of the replay (context 10 -> 100): which fall.
    No single Q: each draft's ratio is in `ladder`; the draft nearest the published level
    (rules.decisive_draft) is named in the inputs with its ratio as `nearest_q`."""
    res = p.get("agreement")
    if res is None:
        return not_tested("H3", "agreement")
    cont = res.summary.get("continuation")
    if not cont or not cont.get("changes"):
        return not_tested("H3", stale=("agreement", "continuation"))
    levels = cont.get("levels") or {}
    separate = [d for d in separate_drafts(res) if d in cont["changes"]]
    candidates = {d: levels.get(d) for d in separate}
    steps = ladder(res)
    inputs: dict[str, Any] = {
        "published_level": rules.published_level(),
        "published_ratio": rules.published_ratio(),
        "levels": candidates,
        "ladder": steps,
        "positions": cont.get("continuation_tokens"),
        "consistency": cont.get("target_consistency"),
    }
    ratios = {d: rules.Quantity.of(cont["changes"][d].get("tokens_per_call")) for d in separate}
    out = rules.h3_rule(ratios)
    if out.label == rules.NOT_TESTED:
        return not_tested("H3", "a draft that computes apart from the target", **inputs)
    inputs.update({"falls": out.named, "holds": out.holds, "undecided": out.undecided})
    chosen = rules.decisive_draft(candidates)
    c0, c1 = cont["changes"][separate[0]]["contexts"]
    if chosen is not None:
        ch = cont["changes"][chosen]
        inputs.update(
            {
                "nearest_q": ch["tokens_per_call"],
                "draft": chosen,
                "level": levels.get(chosen),
                "scales": {k: v for k, v in ch.items() if k not in ("contexts", "tokens_per_call")},
                "at": (
                    cont["by_draft"][chosen][str(c0)]["tokens_per_call"],
                    cont["by_draft"][chosen][str(c1)]["tokens_per_call"],
                ),
            }
        )
    return Finding("H3", out.label, {}, (c0, c1), inputs, named=out.named)


def sweep_primary(res: ExperimentResult | None) -> str | None:
    """The timed sweep's draft that does not share the target's hidden states (H4's)."""
    if res is None:
        return None
    prim = res.summary.get("primary") or res.config.get("primary")
    kinds = res.summary.get("kinds") or {}
    t = stored_sweep_table(res)
    arms = set(t["method"]) if t is not None else set(res.arms)
    if prim in arms and prim in kinds and not kinds[prim].startswith("shares"):
        return prim
    return None


def h4_prompt_confound(p: Profile, published: pd.DataFrame) -> Finding:
    """rules.h4_rule: the acceptance fall that 2.5% of random half-prompt splits per context
    reach in the timed sweep's primary draft (analysis.changes.prompt_swap_change), against
    the published fall from context 10 to 100. Q = that fall in points, no interval."""
    sweep = p.get("context_sweep")
    if sweep is None:
        return not_tested("H4", "context_sweep")
    arm = sweep_primary(sweep)
    if arm is None:
        return not_tested("H4", stale=("context_sweep", "primary / kinds"))
    span = test_range(sweep_contexts(sweep))
    if span is None:
        return not_tested("H4", "contexts 10 and 100 in the timed sweep")
    c0, c1 = span
    swap = prompt_swap_change(sweep.rows, arm, c0, c1)
    fall = -float(swap["ci_low"])  # the 2.5% quantile of the change, as a fall
    pub = published[published["strategy"] == "transformer draft"].set_index("context")
    published_fall = float(pub.loc[10, "acceptance_pct"] - pub.loc[100, "acceptance_pct"]) / 100
    inputs = {
        "draft": arm,
        "swap": {k: v for k, v in swap.items() if k != "draws"},
        "published_fall": published_fall,
        "acceptance_change": acceptance_change(sweep.rows, arm, c0, c1),
        "tokens_per_call": tokens_per_call_change(sweep.rows, arm, c0, c1),
        "same_documents": same_documents(sweep.rows, arm),
    }
    q = {"value": fall, "n_prompts": swap["n_half"]}
    return Finding("H4", rules.h4_rule(fall, published_fall), q, (c0, c1), inputs)


def findings(p: Profile, published: pd.DataFrame) -> list[Finding]:
    """H1..H4 on one profile; `published` is reporting.earlier.earlier_recomputed()."""
    out = [
        h1_recomputation(p, published),
        h2_single_baseline(p, published),
        h3_divergence(p),
        h4_prompt_confound(p, published),
    ]
    for f in out:
        if f.label != rules.NOT_TESTED and f.key in rules.THRESHOLDS and f.q:
            f.power = rules.power(rules.Quantity.of(f.q), rules.THRESHOLDS[f.key])
    return out
