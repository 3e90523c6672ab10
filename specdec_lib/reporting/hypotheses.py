"""The context-length paradox in words: each verdict of analysis.verdicts (H1..H4) with its reason,
what it can and cannot show, where it was measured, the chapter's bottom line and the
introduction's key numbers, and the earlier study's own pair measured on a T4 beside them
(`t4_beside`). Decides nothing: labels come from the findings, numbers from results.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from specdec_lib.analysis import rules
from specdec_lib.analysis.replay import replay_check
from specdec_lib.analysis.verdicts import Finding, findings, ladder
from specdec_lib.reporting.earlier import earlier_drop, earlier_recomputed
from specdec_lib.reporting.figures.style import records
from specdec_lib.reporting.format import (
    admonition,
    as_float,
    central,
    ci,
    finite,
    md_table,
    num,
    pct,
)
from specdec_lib.results.read import Profile, load_results
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
    return f"{model} on {where}"


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


T4_PROFILES = ("colab-t4", "colab-t4-quick")  # the earlier study's pair on a T4: all, quick
NOT_ON_T4 = "not yet measured on a T4"


def t4_beside(p: Profile, root: Any = None) -> str:
    """The verdicts of the earlier study's pair on a T4 (the profiles `T4_PROFILES`, in
    `results/` once a Colab bundle is imported) beside profile p's, as one Markdown table: each
    hypothesis with its label and key numbers per profile. Where no T4 profile has results, one
    note that says so plainly and how to measure them; empty when p is itself the only one."""
    root = p.root if root is None else root
    found = [load_results(name, root) for name in T4_PROFILES if name != p.name]
    found = [q for q in found if not q.empty]
    if not found:
        if p.name in T4_PROFILES:
            return ""
        return admonition(
            f"The real pair (`gemma-3-4b-pt` with `gemma-3-1b-pt`) is {NOT_ON_T4}: there are "
            "no results of the profiles `colab-t4` or `colab-t4-quick` here, so every number in "
            f"this chapter is {scope(p)}'s. Run `notebooks/00_quick.ipynb` in Colab on a T4 "
            "(it prints its estimated time before it starts), import the bundle it writes "
            "with `python -m specdec_lib import-bundle FILE.zip` (README, Colab results) and "
            "rebuild the book.",
            "note",
            "On a T4: not yet measured",
        )

    def cell(v: HypothesisVerdict) -> str:
        return f"{v.label}: {v.short()}" if v.numbers else v.label

    columns = [(p, {v.key: v for v in verdicts(p)})]
    columns += [(q, {v.key: v for v in verdicts(q)}) for q in found]
    rows = []
    for key, hypothesis in HYPOTHESES.items():
        row = {"hypothesis": f"{key}: {hypothesis}"}
        for q, vs in columns:
            row[f"`{q.name}` ({scope(q)})"] = cell(vs[key]) if key in vs else rules.NOT_TESTED
        rows.append(row)
    return (
        f"The same rules on the earlier study's pair, measured on a T4 "
        f"({', '.join(f'`{q.name}`' for q in found)}), beside `{p.name}`:\n\n" + md_table(rows)
    )


def verdicts_markdown(vs: Sequence[HypothesisVerdict]) -> str:
    """The verdicts as a Markdown list: key, hypothesis, label and reason."""
    return "\n".join(f"- **{v.key} ({v.hypothesis}): {v.label}.** {v.text}" for v in vs)


def rule_markdown(key: str) -> str:
    """The rule of hypothesis `key`, as the chapter prints it before the numbers."""
    return admonition(rules.RULES[key], "note", f"Rule for {key} (fixed before the runs)")


BOTTOM_LINE_CLAUSE = {  # the bottom line's clause for each hypothesis and label
    "H1": {
        rules.SUPPORTED: "Decoding without a KV cache makes long contexts much slower per token "
        "than decoding with one",
        rules.NOT_SUPPORTED: "Turning the KV cache off does not make long contexts materially "
        "slower per token",
        rules.INCONCLUSIVE: "Whether recomputation makes long contexts materially slower is not "
        "settled by these runs",
    },
    "H2": {
        rules.SUPPORTED: "the earlier study's speedups all divide one context-20 baseline, and a "
        "baseline's own time changes enough with context for that to misstate them",
        rules.NOT_SUPPORTED: "one divisor does not explain the published speedups here",
        rules.INCONCLUSIVE: "the published speedups all divide one context-20 baseline, but our "
        "baseline's growth with context is too uncertain to say how much that matters",
    },
    "H3": {
        rules.SUPPORTED: "a draft at the published level that computes apart from the target "
        "does lose a material share of its tokens per call between 10 and 100 tokens of context",
        rules.NOT_SUPPORTED: "a draft at the published level that computes apart from the target "
        "does not lose a material share of its tokens per call between 10 and 100 tokens",
        rules.INCONCLUSIVE: "whether a draft at the published level loses a material share of its "
        "tokens per call between 10 and 100 tokens is not settled by these runs",
    },
    "H4": {
        rules.SUPPORTED: "with the prompts held fixed, no material fall in tokens per call "
        "remains in timed runs",
        rules.NOT_SUPPORTED: "a material fall in tokens per call remains in timed runs with the "
        "prompts held fixed",
        rules.INCONCLUSIVE: "whether a fall in tokens per call remains in timed runs with the "
        "prompts fixed is not settled by these runs",
    },
}


def bottom_line(p: Profile, vs: Sequence[HypothesisVerdict] | None = None) -> str:
    """The chapter's plain-language bottom line, assembled from the verdicts' labels."""
    v = {x.key: x for x in (vs if vs is not None else verdicts(p))}
    parts = []
    for key in ("H1", "H2", "H3", "H4"):
        x = v.get(key)
        if x is None or x.label not in BOTTOM_LINE_CLAUSE[key]:
            parts.append(f"{key} was not tested with this profile's results")
        else:
            parts.append(f"{BOTTOM_LINE_CLAUSE[key][x.label]} ({key}: {x.label})")
    parts = [x[0].lower() + x[1:] if x[1:2].islower() else x for x in parts]
    return (
        f"On {scope(p)}: {parts[0]}; {parts[1]}; {parts[2]}; and {parts[3]}. "
        "None of this says what happened inside the earlier study's own runs, whose code, "
        "prompts and models we do not have; it says which of the four explanations can produce "
        "a fall of the published size in a setting we can measure."
    )


def _key_row(what: str, d: Any, n: Any, source: str, pts: bool = False, suffix: str = "x"):
    """One key-numbers row from an interval dict (a share in points when pts), or None."""
    if d is None or not finite(central(d)):
        return None
    scale, nd = (100.0, 1) if pts else (1.0, 2)
    lo, hi = d.get("ci_low"), d.get("ci_high")
    return {
        "figure": what,
        "value": num(scale * central(d), nd, suffix),
        "95% CI": f"[{num(scale * as_float(lo), nd)}, {num(scale * as_float(hi), nd)}]"
        if finite(lo)
        else "n/a",
        "n": n,
        "from": source,
    }


def _published_key_rows() -> list[dict[str, Any]]:
    e = earlier_drop()
    return [
        {
            "figure": f"earlier study: acceptance at context {c} (as reported)",
            "value": num(100 * a, 2, "%"),
            "95% CI": "not reported",
            "n": "not reported",
            "from": "book/data/earlier_study.csv",
        }
        for c, a in ((e["context_lo"], e["acc_lo"]), (e["context_hi"], e["acc_hi"]))
    ]


def _agreement_key_rows(agr: ExperimentResult) -> list[dict[str, Any] | None]:
    """Each test draft of the ladder: its level and its tokens-per-call ratio 10 -> 100."""
    rows: list[dict[str, Any] | None] = []
    cont = agr.summary.get("continuation") or {}
    for r in ladder(agr):
        if r["label"] is None:
            continue
        c0, c1 = r["change"]["contexts"]
        cell = (cont.get("by_draft") or {}).get(r["draft"], {}).get(str(c0)) or {}
        iv = {
            "value": cell.get("agreement"),
            **{
                k.removeprefix("agreement_"): v
                for k, v in cell.items()
                if k.startswith("agreement_ci")
            },
        }
        what = f"{r['draft']}: agreement at context {c0} on the target's continuation"
        rows.append(_key_row(what, iv, cell.get("n_documents"), "agreement", True, "%"))
        q = r["change"]["tokens_per_call"]
        what = f"{r['draft']}: tokens per call ratio {c1} / {c0}"
        rows.append(_key_row(what, q, q.get("n"), "agreement"))
    return rows


KEY_QUANTITY = {  # the verdict quantities the introduction shows: (what, source, in points)
    "H1": ("baseline slowdown, cache off / on", "context sweeps", False),
    "H2": ("baseline time at 100 / at 20", "context_sweep", False),
    "H4": ("tokens per call ratio 100 / 10, same prompts", "context_sweep", False),
}


def key_numbers(p: Profile) -> pd.DataFrame | None:
    """The introduction's key numbers, each with its interval and n, read from the results."""
    rows: list[dict[str, Any] | None] = list(_published_key_rows())
    if (agr := p.get("agreement")) is not None:
        rows += _agreement_key_rows(agr)
    for v in verdicts(p):
        if v.key in KEY_QUANTITY and v.quantity:
            what, source, pts = KEY_QUANTITY[v.key]
            n = v.quantity.get("n", v.quantity.get("n_prompts"))
            rows.append(
                _key_row(
                    f"{v.key} quantity: {what}", v.quantity, n, source, pts, " pts" if pts else "x"
                )  # fmt: skip
            )
    rows = [r for r in rows if r is not None]
    return pd.DataFrame(rows) if rows else None


def replay_check_sentence(p: Profile) -> str | None:
    """Whether the replay reproduced the real timed runs of the same drafts on the same
    documents and contexts (analysis.replay.replay_check), in one sentence; None without both."""
    agr, sweep = p.get("agreement"), p.get("context_sweep")
    if agr is None or sweep is None or not agr.summary.get("continuation"):
        return None
    k = int(agr.config.get("k", 4))
    rows = [r for r in records(agr.rows) if r.get("view") == "continuation"]
    timed = records(sweep.rows)
    chk = replay_check(rows, agr.config.get("arms") or {}, timed, sweep.config.get("arms") or {}, k)
    cont = chk["continuations"]
    parts = [
        f"`{m}`: {d['same']} of {d['compared']} runs"
        for m, d in chk["drafts"].items()
        if d["compared"]
    ]
    if not parts and not cont["compared"]:
        return (
            "No timed run shares a document, context, length and K with the replay, so the "
            "replay was not checked against timed runs here."
        )
    return (
        "Checked against the timed sweep on the documents and contexts both share: the "
        f"continuation the replay scored is the timed baseline's own output in {cont['same']} of "
        f"{cont['compared']} runs, and the replayed accepted / proposed equal the timed runs' "
        f"exactly for " + ("; ".join(parts) if parts else "no draft (none is in both)") + "."
    )
