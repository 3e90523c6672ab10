"""The context-length paradox: one verdict per hypothesis (H1..H4), decided by the rules of
analysis.rules on intervals, with its prose, the bottom line and the key numbers."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from specdec_lib.analysis import rules
from specdec_lib.analysis.changes import (
    _same_docs,
    acceptance_change,
    extra_growth,
    growth,
    prompt_swap_change,
    test_range,
)
from specdec_lib.analysis.rules import INCONCLUSIVE as INCONCLUSIVE_
from specdec_lib.analysis.rules import NOT_SUPPORTED as NOT_SUPPORTED_
from specdec_lib.analysis.rules import NOT_TESTED
from specdec_lib.analysis.rules import SUPPORTED as SUPPORTED_
from specdec_lib.reporting.earlier import earlier_baseline_time, earlier_drop, earlier_recomputed
from specdec_lib.reporting.format import _f, admonition, central, ci, ci_n, finite, num, pct
from specdec_lib.results.catalog import BASELINE
from specdec_lib.results.read import Profile, sweep_contexts, sweep_table
from specdec_lib.results.store import ExperimentResult

LABELS = rules.LABELS


@dataclass
class Verdict:
    key: str  # H1..H4
    hypothesis: str
    label: str  # one of LABELS
    text: str  # Markdown: the reason, with its numbers
    numbers: dict[str, Any] = field(default_factory=dict)
    shows: str = ""  # what this measurement can show
    cannot: str = ""  # what it cannot show (the earlier study's own runs)
    scope: str = ""  # where it was measured ("Gemma 3 270M on a CPU")

    def row(self) -> dict[str, str]:
        return {
            "hypothesis": f"{self.key}: {self.hypothesis}",
            "verdict": f"{self.label} ({self.scope})" if self.scope else self.label,
            "key numbers": self.short(),
        }

    def short(self) -> str:
        return "; ".join(f"{k}: {v}" for k, v in self.numbers.items() if isinstance(v, str))

    def markdown(self) -> str:
        """The verdict's text followed by what it can and cannot show."""
        out = self.text
        if self.shows:
            out += f"\n\n**What this shows:** {self.shows}"
        if self.cannot:
            out += f"\n\n**What it cannot show:** {self.cannot}"
        return out


HYPOTHESES = {
    "H1": "without a KV cache, recomputing the prefix makes long contexts slow",
    "H2": "every published speedup divides the one context-20 baseline",
    "H3": "a draft that computes apart from the target agrees with it less as context grows",
    "H4": "the fall needs prompts that differ across contexts",
}


RULES = rules.RULES


STALE = (
    "The stored `{exp}` result predates the current schema (it lacks `{key}`); re-run it "
    "(`make evaluate` runs it again because its config changed)."
)


def scope(p: Profile) -> str:
    """Where the profile's numbers come from: 'Gemma 3 270M on a CPU', 'gemma-3-4b-pt on a GPU'."""
    cfg = next((r.config for r in p.results.values()), {})
    target = str(cfg.get("target", "?"))
    model = "Gemma 3 270M" if target == "embedded" else target.rsplit("/", 1)[-1]
    env = p.env()
    where = "a GPU" if env.get("cuda") or str(env.get("device", "")).startswith("cuda") else "a CPU"
    return f"{model} on {where}"


def _not_tested(key: str, p: Profile, *needs: str, why: str | None = None) -> Verdict:
    return Verdict(
        key,
        HYPOTHESES[key],
        NOT_TESTED,
        why or f"The profile `{p.name}` lacks {', '.join(f'`{n}`' for n in needs)}.",
        scope=scope(p),
    )


def _above(a: dict, b: dict) -> bool:
    """a's CI lies entirely above b's."""
    return _f(a.get("ci_low")) > _f(b.get("ci_high"))


def _iv(d: dict, n: int | None = None) -> rules.Interval:
    return rules.Interval.of(d, n)


def h1_recomputation(p: Profile) -> Verdict:
    """rules.RULES['H1'] on the cached and uncached sweeps (same prompts, contexts, tokens)."""
    on, off = p.get("context_sweep"), p.get("context_sweep_nocache")
    if on is None or off is None:
        return _not_tested(
            "H1",
            p,
            *(n for n, r in (("context_sweep", on), ("context_sweep_nocache", off)) if r is None),
        )
    common = sorted(set(sweep_contexts(on)) & set(sweep_contexts(off)))
    if len(common) < 2:
        return _not_tested("H1", p, "two contexts shared by the cached and uncached sweeps")
    c0, c1 = test_range(common) or (common[0], common[-1])
    g_on = growth(on.rows, BASELINE, c0, c1)
    g_off = growth(off.rows, BASELINE, c0, c1)
    q = extra_growth(on.rows, off.rows, c0, c1)
    label = rules.h1_rule(_iv(q))
    nums = {
        "contexts": f"{c0} -> {c1}",
        "baseline slowdown per token, cache off": ci_n(g_off, 2, suffix="x"),
        "baseline slowdown per token, cache on": ci_n(g_on, 2, suffix="x"),
        "Q = off / on": ci_n(q, 2, suffix="x"),
    }
    same = on.config.get("n_prompts") == off.config.get("n_prompts") and on.config.get(
        "max_new_tokens"
    ) == off.config.get("max_new_tokens")
    text = (
        f"From context {c0} to {c1} the baseline's time per generated token grows by "
        f"{ci_n(g_off, 2, suffix='x')} without the KV cache and by {ci_n(g_on, 2, suffix='x')} "
        f"with it, so Q = {ci_n(q, 2, suffix='x')} against the threshold "
        f"{rules.H1_EXTRA_GROWTH:.2f}: **{label}**."
    )
    if not same:
        text += (
            " (The stored cached and uncached sweeps differ in prompt or token counts: only "
            "the prompts both share are paired.)"
        )
    return Verdict(
        "H1",
        HYPOTHESES["H1"],
        label,
        text,
        {**nums, "_q": q, "_g_on": g_on, "_g_off": g_off, "_c": (c0, c1)},
        shows=(
            f"how much faster per-token time grows with context when a decoder recomputes the "
            f"prefix than when it caches it, on this model and machine ({scope(p)})."
        ),
        cannot=(
            "whether the earlier study's decoder used a KV cache, nor that recomputation "
            "caused its speedup to fall: its code and timings are not available to us."
        ),
        scope=scope(p),
    )


def h2_single_baseline(p: Profile) -> Verdict:
    """rules.RULES['H2']: the published arithmetic from the CSV, then our baseline's growth
    from the reference context to 100 on the same prompts."""
    er = earlier_recomputed()
    base = earlier_baseline_time(er)
    all_match = bool(er["matches_printed"].all())
    nums: dict[str, Any] = {
        "published rows reproduced by one divisor": f"{int(er['matches_printed'].sum())} of "
        f"{len(er)}",
    }
    t10 = er[(er["strategy"] == "transformer draft") & (er["context"] == 10)]
    t100 = er[(er["strategy"] == "transformer draft") & (er["context"] == 100)]
    if len(t10) and len(t100):
        s10 = float(t10["one_baseline_speedup"].iloc[0])
        need = s10 * float(t100["time_s"].iloc[0])
        nums[f"published baseline at context 100 needed for a paired {s10:.2f}x"] = num(
            need, 2, " s"
        )
    shows = (
        "that the published speedups are one divisor over every row (arithmetic on the "
        "published table), and how much a baseline's own time changes with context here, "
        "which is the error one divisor makes."
    )
    cannot = (
        "how long the earlier study's baseline took at contexts 10, 50 and 100: it was never "
        "run there, so its paired speedups cannot be recovered."
    )
    sweep = p.get("context_sweep")
    t = sweep_table(sweep)
    if t is None:
        v = _not_tested("H2", p, "context_sweep")
        v.text = (
            f"The published arithmetic holds ({nums['published rows reproduced by one divisor']}"
            f" rows equal {base:.2f} s / time), but " + v.text[0].lower() + v.text[1:]
        )
        v.numbers, v.shows, v.cannot = nums, shows, cannot
        return v
    ref = int((sweep.summary.get("earlier_style") or {}).get("reference_context", 20))
    ctx = sweep_contexts(sweep)
    c1 = 100 if 100 in ctx else max(ctx)
    g = (
        growth(sweep.rows, BASELINE, ref, c1, per_token=False)
        if ref in ctx and c1 != ref
        else {"value": math.nan, "ci_low": math.nan, "ci_high": math.nan, "n_prompts": 0}
    )
    label = rules.h2_rule(all_match, _iv(g))
    nums[f"Q = our baseline time, context {c1} / {ref}"] = ci_n(g, 2, suffix="x")
    text = (
        f"{nums['published rows reproduced by one divisor']} published speedups equal "
        f"{base:.2f} s divided by the row's time. Our baseline, on the same prompts, takes "
        f"Q = {ci_n(g, 2, suffix='x')} as long at context {c1} as at {ref} (threshold "
        f"{rules.H2_BASELINE_GROWTH:.2f}): **{label}**."
    )
    return Verdict(
        "H2",
        HYPOTHESES["H2"],
        label,
        text,
        {**nums, "_growth": g},
        shows=shows,
        cannot=cannot,
        scope=scope(p),
    )


def agreement_primary(res: ExperimentResult) -> str | None:
    """H3's primary draft: the one the profile named before the run."""
    head = res.summary.get("headline") or {}
    prim = res.summary.get("primary") or res.config.get("primary")
    return prim if prim in head else None


def divergent_drafts(res: ExperimentResult) -> list[str]:
    """The agreement's drafts that do not share the target's hidden states (no bigram)."""
    kinds = res.summary.get("kinds") or {}
    return [d for d, k in kinds.items() if not k.startswith(("shares", "context-free", "control"))]


def h3_per_draft(res: ExperimentResult) -> pd.DataFrame | None:
    """Every draft's 10 -> 100 change in agreement and implied acceptance, with its own label
    under H3's rule (the verdict is the primary draft's)."""
    head = res.summary.get("headline") or {}
    kinds = res.summary.get("kinds") or {}
    rows = []
    for d, h in head.items():
        ch = h.get("change_test")
        if not ch or "implied_acceptance" not in ch:
            continue
        imp, agr = ch["implied_acceptance"], ch["agreement"]
        c0, c1 = ch["contexts"]
        cells = (res.summary.get("by_draft") or {}).get(d, {})
        rows.append(
            {
                "draft": d,
                "kind": kinds.get(d, "control: the target against the real text"),
                f"agreement at {c0}": pct((cells.get(str(c0)) or {}).get("mean"), 1),
                f"agreement at {c1}": pct((cells.get(str(c1)) or {}).get("mean"), 1),
                "agreement change (pts)": ci(agr, 1, 100.0),
                "implied acceptance change at K = 4 (pts)": ci(imp, 1, 100.0),
                "n documents": agr.get("n"),
                "label under H3's rule": rules.h3_rule(_iv(imp))
                if d in kinds and not kinds[d].startswith(("shares", "context-free"))
                else "(not a test of H3)",
            }
        )
    return pd.DataFrame(rows) if rows else None


def h3_divergence(p: Profile) -> Verdict:
    """rules.RULES['H3'] on the timing-free agreement's primary draft, 10 -> 100."""
    res = p.get("agreement")
    if res is None:
        return _not_tested("H3", p, "agreement")
    prim = agreement_primary(res)
    head = res.summary.get("headline") or {}
    if prim is None or "change_test" not in head.get(prim, {}):
        return _not_tested("H3", p, why=STALE.format(exp="agreement", key="primary / change_test"))
    h = head[prim]
    ch = h["change_test"]
    c0, c1 = ch["contexts"]
    imp, agr = ch["implied_acceptance"], ch["agreement"]
    cells = (res.summary.get("by_draft") or {}).get(prim, {})
    e = earlier_drop(lo=c0, hi=c1) if (c0, c1) == (10, 100) else earlier_drop()
    label = rules.h3_rule(_iv(imp))
    kind = (res.summary.get("kinds") or {}).get(prim, "")
    n = agr.get("n")
    T = res.summary.get("continuation_tokens")
    nums = {
        "draft": f"{prim} ({kind})",
        f"agreement {c0} -> {c1}": f"{pct((cells.get(str(c0)) or {}).get('mean'), 1)} -> "
        f"{pct((cells.get(str(c1)) or {}).get('mean'), 1)}",
        "agreement change": ci_n(agr, 1, 100.0, " pts"),
        "Q = implied acceptance change at K = 4": ci_n(imp, 1, 100.0, " pts"),
        "published acceptance 10 -> 100": f"{100 * e['acc_lo']:.2f}% -> {100 * e['acc_hi']:.2f}%",
    }
    others = [d for d in divergent_drafts(res) if d != prim]
    a0 = pct((cells.get(str(c0)) or {}).get("mean"), 1)
    a1 = pct((cells.get(str(c1)) or {}).get("mean"), 1)
    text = (
        f"`{prim}` ({kind}) agrees with the target at {a0} of positions with {c0} tokens of "
        f"context and {a1} with {c1} (the same {n} documents and "
        f"{T} positions each). The acceptance at K = 4 this implies changes by "
        f"Q = {ci_n(imp, 1, 100.0, ' points')}, against the threshold -"
        f"{100 * rules.MATERIAL_FALL:.0f} points: **{label}**. The earlier study reported "
        f"{100 * e['acc_lo']:.2f}% -> {100 * e['acc_hi']:.2f}% over the same contexts."
    )
    if others:
        text += (
            " The other drafts that compute apart from the target get the same rule in the "
            "table below; they do not change this verdict."
        )
    return Verdict(
        "H3",
        HYPOTHESES["H3"],
        label,
        text,
        {**nums, "_change": imp, "_agreement_change": agr, "_c": (c0, c1)},
        shows=(
            f"whether a draft that computes apart from the target ({prim} here) loses agreement "
            f"with it between contexts {c0} and {c1}, and by how much, on {scope(p)}: this "
            "mechanism produces a fall of this size here."
        ),
        cannot=(
            "what happened inside the earlier study's gemma-3-1b draft and gemma-3-4b target: a "
            "270M target and its stand-in drafts are not those models, and the earlier study's "
            "acceptance was measured in timed runs, not teacher-forced."
            if scope(p).startswith("Gemma 3 270M")
            else "what happened in the earlier study's own runs, whose prompts and code we do "
            "not have."
        ),
        scope=scope(p),
    )


def sweep_primary(res: ExperimentResult | None) -> str | None:
    """The timed sweep's draft that does not share the target's hidden states (H4's)."""
    if res is None:
        return None
    prim = res.summary.get("primary") or res.config.get("primary")
    kinds = res.summary.get("kinds") or {}
    t = sweep_table(res)
    arms = set(t["method"]) if t is not None else set(res.arms)
    if prim in arms and prim in kinds and not kinds[prim].startswith("shares"):
        return prim
    return None


def _agreement_n(res: ExperimentResult, arm: str) -> int | None:
    """The documents behind an agreement change, for results written before it carried its n."""
    ns = [t.get("n_prompts") for t in res.summary.get("table") or [] if t.get("draft") == arm]
    return int(min(ns)) if ns and all(finite(x) for x in ns) else None


def h4_prompt_confound(p: Profile) -> Verdict:
    """rules.RULES['H4'] on the timed sweep's primary draft, same prompts at every context."""
    sweep = p.get("context_sweep")
    if sweep is None:
        return _not_tested("H4", p, "context_sweep")
    arm = sweep_primary(sweep)
    ctx = sweep_contexts(sweep)
    rng_ = test_range(ctx)
    if arm is None:
        return _not_tested("H4", p, why=STALE.format(exp="context_sweep", key="primary / kinds"))
    if rng_ is None:
        return _not_tested("H4", p, "contexts 10 and 100 in the timed sweep")
    c0, c1 = rng_
    same = acceptance_change(sweep.rows, arm, c0, c1)
    swap = prompt_swap_change(sweep.rows, arm, c0, c1)
    drop = earlier_drop()["drop"]
    label = rules.h4_rule(_iv(same))
    docs = (
        "the same documents and anchors at every context"
        if _same_docs(sweep.rows, arm)
        else "prompts that differ across contexts (check the sweep)"
    )
    swap_txt = (
        f"[{100 * _f(swap['ci_low']):.1f}, {100 * _f(swap['ci_high']):.1f}] pts "
        f"(halves of {swap['n_half']})"
        if finite(swap["ci_low"])
        else "n/a (too few prompts)"
    )
    nums = {
        "draft": arm,
        "contexts": f"{c0} -> {c1}",
        "Q = acceptance change, same prompts": ci_n(same, 1, 100.0, " pts"),
        "change with its own half of the prompts per context (95% range)": swap_txt,
        "published fall 10 -> 100": num(100 * drop, 2, " pts"),
    }
    text = (
        f"With {docs}, the measured acceptance of `{arm}` changes by "
        f"Q = {ci_n(same, 1, 100.0, ' points')} from context {c0} to {c1}, against the "
        f"threshold -{100 * rules.MATERIAL_FALL:.0f} points: **{label}**. Giving each context "
        f"its own random half of the prompts instead spreads the change over {swap_txt}."
    )
    return Verdict(
        "H4",
        HYPOTHESES["H4"],
        label,
        text,
        {**nums, "_same": same, "_swap": swap, "_c": (c0, c1)},
        shows=(
            "whether a fall in measured acceptance remains when every context sees the same "
            f"prompts, and how much random prompt sets of this size alone move it, on {scope(p)}."
        ),
        cannot=(
            "whether the earlier study's contexts saw different prompts, or prompts that "
            "differed systematically: its prompt lists are not available."
        ),
        scope=scope(p),
    )


def verdicts(p: Profile) -> list[Verdict]:
    return [h1_recomputation(p), h2_single_baseline(p), h3_divergence(p), h4_prompt_confound(p)]


def verdict_table(vs: Sequence[Verdict]) -> pd.DataFrame:
    return pd.DataFrame([v.row() for v in vs])


def verdicts_markdown(vs: Sequence[Verdict]) -> str:
    return "\n".join(f"- **{v.key} ({v.hypothesis}): {v.label}.** {v.text}" for v in vs)


def rule_markdown(key: str) -> str:
    """The rule of hypothesis `key`, as the chapter prints it before the numbers."""
    return admonition(rules.RULES[key], "note", f"Rule for {key} (fixed before the runs)")


def bottom_line(p: Profile, vs: Sequence[Verdict] | None = None) -> str:
    """The chapter's plain-language bottom line, assembled from the verdicts' labels."""
    v = {x.key: x for x in (vs if vs is not None else verdicts(p))}
    where = scope(p)
    say = {
        "H1": {
            SUPPORTED_: "Decoding without a KV cache makes long contexts much slower per token "
            "than decoding with one",
            NOT_SUPPORTED_: "Turning the KV cache off does not make long contexts materially "
            "slower per token",
            INCONCLUSIVE_: "Whether recomputation makes long contexts materially slower is not "
            "settled by these runs",
        },
        "H2": {
            SUPPORTED_: "the earlier study's speedups all divide one context-20 baseline, and a "
            "baseline's own time changes enough with context for that to misstate them",
            NOT_SUPPORTED_: "one divisor does not explain the published speedups here",
            INCONCLUSIVE_: "the published speedups all divide one context-20 baseline, but our "
            "baseline's growth with context is too uncertain to say how much that matters",
        },
        "H3": {
            SUPPORTED_: "a draft that computes apart from the target does lose a material share "
            "of its agreement with the target between 10 and 100 tokens of context",
            NOT_SUPPORTED_: "a draft that computes apart from the target does not lose a material "
            "share of its agreement between 10 and 100 tokens of context",
            INCONCLUSIVE_: "whether a draft that computes apart from the target loses a material "
            "share of its agreement between 10 and 100 tokens is not settled by these runs",
        },
        "H4": {
            SUPPORTED_: "with the prompts held fixed, no material fall in measured acceptance "
            "remains",
            NOT_SUPPORTED_: "a material fall in measured acceptance remains with the prompts "
            "held fixed",
            INCONCLUSIVE_: "whether a fall in measured acceptance remains with the prompts fixed "
            "is not settled by these runs",
        },
    }
    parts = []
    for key in ("H1", "H2", "H3", "H4"):
        x = v.get(key)
        if x is None or x.label not in say[key]:
            parts.append(f"{key} was not tested with this profile's results")
        else:
            parts.append(f"{say[key][x.label]} ({key}: {x.label})")
    parts = [x[0].lower() + x[1:] if x[1:2].islower() else x for x in parts]
    text = (
        f"On {where}: {parts[0]}; {parts[1]}; {parts[2]}; and {parts[3]}. "
        "None of this says what happened inside the earlier study's own runs, whose code, "
        "prompts and models we do not have; it says which of the four explanations can produce "
        "a fall of the published size in a setting we can measure."
    )
    return text


def key_numbers(p: Profile) -> pd.DataFrame | None:
    """The introduction's key numbers, each with its interval and n, read from the results."""
    rows: list[dict[str, Any]] = []

    def add(what: str, d: Any, n: Any, source: str, scale: float = 1.0, suffix: str = "") -> None:
        if d is None or not finite(central(d)):
            return
        rows.append(
            {
                "figure": what,
                "value": num(scale * central(d), 1 if scale == 100.0 else 2, suffix),
                "95% CI": f"[{num(scale * _f(d.get('ci_low')), 1 if scale == 100.0 else 2)}, "
                f"{num(scale * _f(d.get('ci_high')), 1 if scale == 100.0 else 2)}]"
                if finite(d.get("ci_low"))
                else "n/a",
                "n": n,
                "from": source,
            }
        )

    e = earlier_drop()
    for c, a in ((e["context_lo"], e["acc_lo"]), (e["context_hi"], e["acc_hi"])):
        rows.append(
            {
                "figure": f"earlier study: acceptance at context {c} (as reported)",
                "value": num(100 * a, 2, "%"),
                "95% CI": "not reported",
                "n": "not reported",
                "from": "book/data/earlier_study.csv",
            }
        )
    agr = p.get("agreement")
    if agr is not None:
        prim = agreement_primary(agr)
        by = agr.summary.get("by_draft") or {}
        for d in [x for x in [prim, *divergent_drafts(agr)] if x]:
            if d in [r["figure"].split(":")[0] for r in rows]:
                continue
            ch = (agr.summary.get("headline") or {}).get(d, {}).get("change_test")
            if not ch:
                continue
            c0, c1 = ch["contexts"]
            for c in (c0, c1):
                cell = by.get(d, {}).get(str(c)) or {}
                add(
                    f"{d}: per-position agreement at context {c}",
                    {"value": cell.get("mean"), **cell},
                    cell.get("n_documents"),
                    "agreement",
                    100.0,
                    "%",
                )
            add(
                f"{d}: implied acceptance at K = 4, change {c0} -> {c1}",
                ch["implied_acceptance"],
                ch["implied_acceptance"].get("n"),
                "agreement",
                100.0,
                " pts",
            )
    for v in verdicts(p):
        for key, d in v.numbers.items():
            if key in ("_q", "_growth", "_same") and isinstance(d, dict):
                add(
                    f"{v.key} quantity: "
                    + {
                        "_q": "baseline slowdown, cache off / on",
                        "_growth": "baseline time at 100 / at 20",
                        "_same": "acceptance change 10 -> 100, same prompts",
                    }[key],
                    d,
                    d.get("n", d.get("n_prompts")),
                    {"H1": "context sweeps", "H2": "context_sweep", "H4": "context_sweep"}[v.key],
                    100.0 if key == "_same" else 1.0,
                    " pts" if key == "_same" else "x",
                )
    return pd.DataFrame(rows) if rows else None
