"""The context-length paradox in words: each verdict of analysis.verdicts (H1..H4) with its reason,
what it can and cannot show and where it was measured, the ladder of drafts behind H3 and each
hypothesis's rule. What the chapters build from these verdicts (the bottom line, the
introduction's key numbers, the T4 pair beside them) is reporting.hypotheses_summary. Decides
nothing: labels come from the findings, numbers from results.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from specdec_lib.analysis import rules
from specdec_lib.analysis.verdicts import Finding, findings, ladder
from specdec_lib.reporting.earlier import earlier_drop, earlier_recomputed
from specdec_lib.reporting.format import admonition, ci, finite, md_text, num, pct
from specdec_lib.results.read import Profile
from specdec_lib.results.store import ExperimentResult

LABELS = rules.LABELS
HYPOTHESES = {
    "H1": "without a KV cache, recomputing the prefix makes long contexts slow",
    "H2": "every published speedup divides the one context-20 baseline",
    "H3": "a draft that computes apart from the target loses acceptance as context grows",
    "H4": "the fall needs prompts that differ across contexts",
}
STALE = (
    "The stored `{exp}` result predates the current schema (it lacks `{key}`); re-run it "
    "(`make evaluate` runs it again because its config changed)."
)


@dataclass
class HypothesisVerdict:
    """One hypothesis's verdict in words: label, reason, numbers, scope and limits."""

    key: str  # H1..H4
    hypothesis: str
    label: str  # one of LABELS
    text: str  # Markdown: the reason, with its numbers
    numbers: dict[str, str] = field(default_factory=dict)  # what the verdict table shows
    quantity: dict[str, Any] = field(default_factory=dict)  # Q, the rule's interval
    shows: str = ""  # what this measurement can show
    cannot: str = ""  # what it cannot show (the earlier study's own runs)
    scope: str = ""  # where it was measured ("Gemma 3 270M on a CPU")

    def row(self) -> dict[str, str]:
        """The verdict table's row: hypothesis, verdict with scope, key numbers."""
        return {
            "hypothesis": f"{self.key}: {self.hypothesis}",
            "verdict": f"{self.label} ({self.scope})" if self.scope else self.label,
            "key numbers": self.short(),
        }

    def short(self) -> str:
        """The key numbers as 'name: value; ...'."""
        return "; ".join(f"{k}: {v}" for k, v in self.numbers.items())

    def markdown(self) -> str:
        """The verdict's text followed by what it can and cannot show."""
        out = self.text
        if self.shows:
            out += f"\n\n**What this shows:** {self.shows}"
        if self.cannot:
            out += f"\n\n**What it cannot show:** {self.cannot}"
        return out


def scope(p: Profile) -> str:
    """Where the profile's numbers come from: 'Gemma 3 270M on a CPU', 'gemma-3-4b-pt on a GPU'."""
    cfg = next((r.config for r in p.results.values()), {})
    target = str(cfg.get("target", "?"))
    model = "Gemma 3 270M" if target == "embedded" else target.rsplit("/", 1)[-1]
    env = p.env()
    where = "a GPU" if env.get("cuda") or str(env.get("device", "")).startswith("cuda") else "a CPU"
    return f"{md_text(model)} on {where}"  # Markdown: the target's name is literal text


def power_sentence(f: Finding, digits: int = 2) -> str:
    """n and the smallest distance from the threshold the design detects at 80% power; for an
    inconclusive verdict, how many units would decide it (rules.power)."""
    pw = f.power
    if pw is None or not finite(pw.detectable):
        return ""
    out = (
        f" Power: n = {pw.n}; at 80% power this design detects a Q {pw.detectable:.{digits}f} "
        f"or more away from the threshold {rules.THRESHOLDS[f.key]:.2f}."
    )
    if f.label == rules.INCONCLUSIVE:
        out += (
            f" About {pw.units_to_decide} would decide it if Q stayed where it is."
            if pw.units_to_decide
            else " Q sits on the threshold: no n would decide it."
        )
    return out


def _verdict(
    f: Finding, p: Profile, text: str, numbers: dict[str, str], **kw: str
) -> HypothesisVerdict:
    if f.power is not None and finite(f.power.detectable):
        numbers = {
            **numbers,
            "n; detectable at 80% power": f"{f.power.n}; {f.power.detectable:.3f}",
        }
    return HypothesisVerdict(
        f.key,
        HYPOTHESES[f.key],
        f.label,
        text + power_sentence(f),
        numbers,
        f.q,
        scope=scope(p),
        **kw,
    )


def _not_tested_text(f: Finding, p: Profile) -> str:
    if f.stale:
        return STALE.format(exp=f.stale[0], key=f.stale[1])
    return f"The profile `{p.name}` lacks {', '.join(f'`{n}`' for n in f.missing)}."


def h1_prose(f: Finding, p: Profile) -> HypothesisVerdict:
    """H1's finding in words: the baseline's growth per token with and without the cache."""
    if f.label == rules.NOT_TESTED:
        return _verdict(f, p, _not_tested_text(f, p), {})
    (c0, c1), g_on, g_off = f.contexts, f.inputs["growth_on"], f.inputs["growth_off"]
    nums = {
        "contexts": f"{c0} -> {c1}",
        "baseline slowdown per token, cache off": ci(g_off, 2, suffix="x"),
        "baseline slowdown per token, cache on": ci(g_on, 2, suffix="x"),
        "Q = off / on": ci(f.q, 2, suffix="x"),
    }
    text = (
        f"From context {c0} to {c1} the baseline's time per generated token grows by "
        f"{nums['baseline slowdown per token, cache off']} without the KV cache and by "
        f"{nums['baseline slowdown per token, cache on']} with it, so Q = {nums['Q = off / on']} "
        f"against the threshold {rules.H1_EXTRA_GROWTH:.2f}: **{f.label}**."
    )
    if not f.inputs["same_config"]:
        text += (
            " (The stored cached and uncached sweeps differ in prompt or token counts: only "
            "the prompts both share are paired.)"
        )
    pub = f.inputs.get("published") or {}
    if pub:
        nums["published: cost of a call, 100 / 10 (at least)"] = num(
            pub["call_cost_growth"], 2, "x"
        )
        text += (
            f" The published table says the same by its own arithmetic: from context 10 to 100 "
            f"the transformer draft's time grows {pub['time_ratio']:.2f}x for the same tokens, "
            f"while the tokens per call its acceptance implies (1 + 4 x acceptance) fall only "
            f"from {pub['tokens_per_call_10']:.2f} to {pub['tokens_per_call_100']:.2f} "
            f"({pub['calls_ratio']:.2f}x more calls). So each call cost at least "
            f"{pub['call_cost_growth']:.2f}x more at context 100 than at 10, which a KV-cached "
            "target does not do over 90 tokens, and which recomputing the prefix does."
        )
    shows = (
        "how much faster per-token time grows with context when a decoder recomputes the "
        f"prefix than when it caches it, on this model and machine ({scope(p)})."
    )
    cannot = (
        "whether the earlier study's decoder used a KV cache, nor that recomputation "
        "caused its speedup to fall: its code and timings are not available to us."
    )
    return _verdict(f, p, text, nums, shows=shows, cannot=cannot)


def h2_prose(f: Finding, p: Profile) -> HypothesisVerdict:
    """H2's finding in words: published rows one divisor reproduces, the baseline's growth."""
    a = f.inputs
    reproduced = f"{a['matching']} of {a['rows']}"
    nums = {"published rows reproduced by one divisor": reproduced}
    if "baseline_100_needed_s" in a:
        key = f"published baseline at context 100 needed for a paired {a['paired_speedup_10']:.2f}x"
        nums[key] = num(a["baseline_100_needed_s"], 2, " s")
    kw = {
        "shows": "that the published speedups are one divisor over every row (arithmetic on the "
        "published table), and how much a baseline's own time changes with context here, "
        "which is the error one divisor makes.",
        "cannot": "how long the earlier study's baseline took at contexts 10, 50 and 100: it was "
        "never run there, so its paired speedups cannot be recovered.",
    }
    if f.label == rules.NOT_TESTED:
        why = _not_tested_text(f, p)
        text = (
            f"The published arithmetic holds ({reproduced} rows equal {a['baseline_s']:.2f} s / "
            f"time), but " + why[0].lower() + why[1:]
        )
        return _verdict(f, p, text, nums, **kw)
    ref, c1 = f.contexts
    nums[f"Q = our baseline time, context {c1} / {ref}"] = q = ci(f.q, 2, suffix="x")
    text = (
        f"{reproduced} published speedups equal {a['baseline_s']:.2f} s divided by the row's "
        f"time. Our baseline, on the same prompts, takes Q = {q} as long at context {c1} as at "
        f"{ref} (threshold {rules.H2_BASELINE_GROWTH:.2f}): **{f.label}**."
    )
    return _verdict(f, p, text, nums, **kw)


def _h3_cannot(p: Profile) -> str:
    if scope(p).startswith("Gemma 3 270M"):
        return (
            "what happened inside the earlier study's gemma-3-1b draft and gemma-3-4b target: a "
            "270M target and its ladder of drafts (perturbed copies of the target, a small "
            "distilled draft) are not those models. A perturbed copy has the target's depth and "
            "attention; it disagrees through weight error, not through less capacity, so a draft "
            "that attends differently because it is smaller is only stood in for by the "
            "distilled one."
        )
    return "what happened in the earlier study's own runs, whose prompts and code we do not have."


def ratio(d: dict | None, digits: int = 3) -> str:
    """An interval dict on a ratio scale: 'value [lo, hi]'."""
    return ci(d or {}, digits)


def h3_prose(f: Finding, p: Profile) -> HypothesisVerdict:
    """H3's finding in words: the replayed tokens-per-call ratio of the draft nearest the
    published level, the other scales beside it, and what the rest of the ladder shows."""
    a = f.inputs
    level_txt = (
        f"The earlier study's acceptance at context 10 ({100 * rules.PUBLISHED_ACCEPTANCE[0]:.2f}% "
        f"at K = 4) implies a per-token agreement of {a.get('published_level', math.nan):.3f}; "
        f"its rows fall to a tokens-per-call ratio of {a.get('published_ratio', math.nan):.3f} "
        "from context 10 to 100."
    )
    if f.label == rules.NOT_TESTED:
        levels = ", ".join(f"`{d}` {pct(v, 1)}" for d, v in (a.get("levels") or {}).items())
        return _verdict(
            f,
            p,
            _not_tested_text(f, p) + " " + level_txt + (f" Levels: {levels}." if levels else ""),
            {},
        )
    (c0, c1), sc = f.contexts, a["scales"]
    t0, t1 = a["at"]
    nums = {
        "draft (level at context 10)": f"{a['draft']} ({pct(a['level'], 1)})",
        f"tokens per call {c0} -> {c1}": f"{t0:.2f} -> {t1:.2f}",
        "Q = tokens per call ratio": ratio(f.q),
        "acceptance change": ci(sc["acceptance"], 1, 100.0, " pts"),
        "rejection-rate ratio": ratio(sc["rejection_ratio"], 2),
        "published ratio": f"{a['published_ratio']:.3f}",
    }
    others = [r for r in a["ladder"] if r["label"] is not None and r["draft"] != a["draft"]]
    falls = [r["draft"] for r in others if r["label"] == rules.SUPPORTED]
    text = (
        f"{level_txt} The separate draft nearest that level is `{a['draft']}` (agreement "
        f"{pct(a['level'], 1)} at context {c0} on the target's own continuation). Replayed on "
        f"the target's greedy continuation of the same {f.q.get('n')} documents "
        f"({a['positions']} tokens each), its tokens per call go from {t0:.2f} to {t1:.2f}: "
        f"Q = {ratio(f.q)} against the threshold {rules.MATERIAL_RATIO:.2f}: **{f.label}**. On "
        f"the other scales: acceptance {ci(sc['acceptance'], 1, 100.0, ' points')}, "
        f"rejection-rate ratio {ratio(sc['rejection_ratio'], 2)} (published "
        f"{(1 - rules.PUBLISHED_ACCEPTANCE[1]) / (1 - rules.PUBLISHED_ACCEPTANCE[0]):.2f})."
    )
    levels = [r["level"] for r in others] + [a["level"]]
    if others:
        text += (
            f" Across the ladder ({len(levels)} drafts that are a test of H3, levels "
            f"{pct(min(levels), 0)} to {pct(max(levels), 0)}), "
            + (
                f"the rule says supported for {', '.join(f'`{d}`' for d in falls)}"
                if falls
                else "no draft shows a material fall"
            )
            + "; the table and figure below show each."
        )
    shows = (
        f"whether a draft at the published level of agreement, computing apart from the target, "
        f"loses tokens per call between contexts {c0} and {c1} on the text a real greedy run "
        f"sees, on {scope(p)}; the ladder shows how that depends on the draft's level."
    )
    return _verdict(f, p, text, nums, shows=shows, cannot=_h3_cannot(p))


def h4_prose(f: Finding, p: Profile) -> HypothesisVerdict:
    """H4's finding in words: measured acceptance across contexts on the same prompts."""
    if f.label == rules.NOT_TESTED:
        return _verdict(f, p, _not_tested_text(f, p), {})
    a, (c0, c1), swap = f.inputs, f.contexts, f.inputs["swap"]
    docs = (
        "the same documents and anchors at every context"
        if a["same_documents"]
        else "prompts that differ across contexts (check the sweep)"
    )
    swap_txt = (
        f"[{100 * swap['ci_low']:.1f}, {100 * swap['ci_high']:.1f}] pts (halves of "
        f"{swap['n_half']})"
        if finite(swap["ci_low"])
        else "n/a (too few prompts)"
    )
    nums = {
        "draft": a["draft"],
        "contexts": f"{c0} -> {c1}",
        "Q = tokens per call ratio, same prompts": ratio(f.q),
        "acceptance change, same prompts": ci(a["acceptance_change"], 1, 100.0, " pts"),
        "acceptance change with its own half of the prompts per context (95% range)": swap_txt,
        "published fall 10 -> 100": num(100 * earlier_drop()["drop"], 2, " pts"),
    }
    text = (
        f"With {docs}, the tokens per call of `{a['draft']}` in timed runs go from "
        f"{f.q.get('at_c0', math.nan):.2f} to {f.q.get('at_c1', math.nan):.2f} from context {c0} "
        f"to {c1}: Q = {ratio(f.q)} against the threshold {rules.MATERIAL_RATIO:.2f}: "
        f"**{f.label}** (acceptance {ci(a['acceptance_change'], 1, 100.0, ' points')}). Giving "
        f"each context its own random half of the prompts instead spreads the acceptance change "
        f"over {swap_txt}."
    )
    shows = (
        "whether a fall in measured acceptance remains when every context sees the same "
        f"prompts, and how much random prompt sets of this size alone move it, on {scope(p)}."
    )
    cannot = (
        "whether the earlier study's contexts saw different prompts, or prompts that "
        "differed systematically: its prompt lists are not available."
    )
    return _verdict(f, p, text, nums, shows=shows, cannot=cannot)


PROSE = {"H1": h1_prose, "H2": h2_prose, "H3": h3_prose, "H4": h4_prose}


def verdicts(p: Profile) -> list[HypothesisVerdict]:
    """The profile's verdicts on H1..H4, in words."""
    return [PROSE[f.key](f, p) for f in findings(p, earlier_recomputed())]


def h3_per_draft(res: ExperimentResult) -> pd.DataFrame | None:
    """The ladder: every draft of the replay, by level, with its 10 -> 100 change on each scale
    and its own label under H3's rule (the verdict is the draft nearest the published level's)."""
    rows = []
    for r in ladder(res):
        ch = r["change"]
        c0, c1 = ch["contexts"]
        rows.append(
            {
                "draft": r["draft"],
                "kind": r["kind"],
                f"agreement at {c0} (own continuation)": pct(r["level"], 1),
                f"tokens per call ratio {c1} / {c0}": ratio(ch["tokens_per_call"]),
                "acceptance change (pts)": ci(ch["acceptance"], 1, 100.0),
                "rejection-rate ratio": ratio(ch["rejection_ratio"], 2),
                "n documents": ch["tokens_per_call"].get("n"),
                "detectable at 80% power": num(r["power"].detectable, 3),
                "label under H3's rule": r["label"] or "(not a test of H3)",
            }
        )
    return pd.DataFrame(rows) if rows else None


def verdict_table(vs: Sequence[HypothesisVerdict]) -> pd.DataFrame:
    """The verdicts as a table, one row each."""
    return pd.DataFrame([v.row() for v in vs])


def verdicts_markdown(vs: Sequence[HypothesisVerdict]) -> str:
    """The verdicts as a Markdown list: key, hypothesis, label and reason."""
    return "\n".join(f"- **{v.key} ({v.hypothesis}): {v.label}.** {v.text}" for v in vs)


def rule_markdown(key: str) -> str:
    """The rule of hypothesis `key`, as the chapter prints it before the numbers."""
    return admonition(rules.RULES[key], "note", f"Rule for {key} (fixed before the runs)")
