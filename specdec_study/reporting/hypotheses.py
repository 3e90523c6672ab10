"""The context-length paradox's verdicts for the book: each finding of analysis.verdicts (H1..H4)
with its label, what the label names, its formatted numbers and where it was measured; the
numbers and labels the chapter glues into its own sentences (`verdict_glue`); the ladder behind
H3 and each rule's box with its revisions. Writes no argument (book/paradox.md does) and decides
nothing: labels come from the findings, numbers from results. What the chapters build from the
verdicts (the introduction's key numbers, the T4 pair) is reporting.hypotheses_summary.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from specdec_study.analysis import rules
from specdec_study.analysis.verdicts import Finding, findings, ladder
from specdec_study.reporting.earlier import earlier_recomputed
from specdec_study.reporting.format import admonition, ci, finite, md_text, num, pct
from specdec_study.results.read import Profile
from specdec_study.results.store import ExperimentResult

LABELS = rules.LABELS
HYPOTHESES = {  # what each label is about: "supported" = this explanation accounts for it
    "H1": "recomputing the prefix makes each call cost more as the context grows",
    "H2": "one context-20 divisor turns the baseline's own growth into a fall",
    "H3": "a draft that computes apart from the target loses tokens per call as context grows",
    "H4": "prompt sets that differ across contexts produce the published fall",
}
STALE = "`{exp}` predates the current schema (it lacks `{key}`): re-run it"


@dataclass
class HypothesisVerdict:
    """One hypothesis's verdict: label, what it names (H2's regimes, H3's drafts that fall),
    its numbers (formatted, for the tables and the chapter's glue), Q and scope. `text` is the
    numbers as one line, or what is missing when not tested; the chapter writes the sentences."""

    key: str  # H1..H4
    hypothesis: str
    label: str  # one of LABELS
    text: str
    numbers: dict[str, str] = field(default_factory=dict)
    quantity: dict[str, Any] = field(default_factory=dict)  # Q, the rule's interval
    scope: str = ""  # where it was measured ("Gemma 3 270M on a CPU")
    named: tuple[str, ...] = ()

    @property
    def verdict(self) -> str:
        """The label with what it names: 'supported (cache off)'."""
        return f"{self.label} ({', '.join(self.named)})" if self.named else self.label

    def row(self) -> dict[str, str]:
        """The verdict table's row, one value per cell."""
        return {
            "hypothesis": f"{self.key}: {self.hypothesis}",
            "verdict": self.verdict,
            "measured on": self.scope,
            "Q": self.numbers.get("Q", "-"),
        }

    def short(self) -> str:
        """The key numbers as 'name: value; ...'."""
        return "; ".join(f"{k}: {v}" for k, v in self.numbers.items())


def scope(p: Profile) -> str:
    """Where the profile's numbers come from: 'Gemma 3 270M on a CPU', 'gemma-3-4b-pt on a GPU'."""
    cfg = next((r.config for r in p.results.values()), {})
    target = str(cfg.get("target", "?"))
    model = "Gemma 3 270M" if target == "embedded" else target.rsplit("/", 1)[-1]
    env = p.env()
    where = "a GPU" if env.get("cuda") or str(env.get("device", "")).startswith("cuda") else "a CPU"
    return f"{md_text(model)} on {where}"  # Markdown: the target's name is literal text


def _missing(f: Finding) -> str:
    if f.stale:
        return STALE.format(exp=f.stale[0], key=f.stale[1])
    return "lacks " + ", ".join(f"`{n}`" for n in f.missing)


def _power(f: Finding) -> dict[str, str]:
    pw = f.power
    if pw is None or not finite(pw.detectable):
        return {}
    out = {"n": str(pw.n), "detectable at 80% power": num(pw.detectable, 3)}
    if f.label == rules.INCONCLUSIVE and pw.units_to_decide:
        out["units that would decide it"] = str(pw.units_to_decide)
    return out


def h1_numbers(f: Finding) -> dict[str, str]:
    """H1: the baseline's growth per token with and without the cache, Q, and the published
    table's own arithmetic (the cost of a call grew at least this much from 10 to 100)."""
    (c0, c1), pub = f.contexts, f.inputs.get("published") or {}
    out = {
        "contexts": f"{c0} -> {c1}",
        "growth off": ci(f.inputs["growth_off"], 2, suffix="x"),
        "growth on": ci(f.inputs["growth_on"], 2, suffix="x"),
        "Q": ci(f.q, 2, suffix="x"),
    }
    if pub:
        out["published time ratio"] = num(pub["time_ratio"], 2, "x")
        out["published tokens per call"] = (
            f"{pub['tokens_per_call_10']:.2f} -> {pub['tokens_per_call_100']:.2f}"
        )
        out["published call cost growth"] = num(pub["call_cost_growth"], 2, "x")
    return out


def h2_numbers(f: Finding) -> dict[str, str]:
    """H2: published rows one divisor reproduces, and the baseline's growth 20 -> 100 in each
    cache regime (Q is the cache-off one when measured)."""
    a = f.inputs
    out = {"published rows reproduced": f"{a['matching']} of {a['rows']}"}
    if "baseline_100_needed_s" in a:
        out["published baseline needed at 100"] = num(a["baseline_100_needed_s"], 2, " s")
    for regime, g in (a.get("growth") or {}).items():
        out[f"growth {regime}"] = ci(g, 2, suffix="x")
    if f.q:
        out["Q"] = ci(f.q, 2, suffix="x")
    return out


def h3_numbers(f: Finding) -> dict[str, str]:
    """H3: the drafts that fall, hold and are undecided, and the draft nearest the published
    level with its tokens per call and ratio."""
    a = f.inputs
    names = {
        k: ", ".join(f"`{d}`" for d in a.get(k, ())) or "none"
        for k in ("falls", "holds", "undecided")
    }
    out = {
        "published level": num(a.get("published_level"), 3),
        "published ratio": num(a.get("published_ratio"), 3),
        "drafts that fall": names["falls"],
        "drafts that hold": names["holds"],
        "undecided": names["undecided"],
    }
    falls = [r for r in a.get("ladder", ()) if r["draft"] in a.get("falls", ())]
    out["Q"] = "; ".join(f"`{r['draft']}` {ci(r['change']['tokens_per_call'], 3)}" for r in falls)
    out["Q"] = out["Q"] or "no draft falls"
    if "draft" in a:
        t0, t1 = a["at"]
        out["nearest the published level"] = f"`{a['draft']}` ({pct(a['level'], 1)})"
        out["its tokens per call"] = f"{t0:.2f} -> {t1:.2f}"
        out["its ratio"] = ci(a["nearest_q"], 3)
        out["its acceptance change"] = ci(a["scales"]["acceptance"], 1, 100.0, " pts")
    return out


def h4_numbers(f: Finding) -> dict[str, str]:
    """H4: the fall 2.5% of random half-prompt splits reach against the published fall, and
    the change on fixed prompts beside it."""
    a, swap = f.inputs, f.inputs["swap"]
    return {
        "draft": f"`{a['draft']}`",
        "Q": num(100 * f.q["value"], 1, " pts"),
        "published fall": num(100 * a["published_fall"], 2, " pts"),
        "random halves, 95% range": (
            f"[{100 * swap['ci_low']:.1f}, {100 * swap['ci_high']:.1f}] pts"
            if finite(swap["ci_low"])
            else "n/a"
        ),
        "prompts per half": str(swap["n_half"]),
        "acceptance change, fixed prompts": ci(a["acceptance_change"], 1, 100.0, " pts"),
    }


NUMBERS = {"H1": h1_numbers, "H2": h2_numbers, "H3": h3_numbers, "H4": h4_numbers}


def verdict_of(f: Finding, p: Profile) -> HypothesisVerdict:
    """One finding as a verdict: its numbers (none when not tested) and its scope."""
    if f.label == rules.NOT_TESTED:
        return HypothesisVerdict(f.key, HYPOTHESES[f.key], f.label, _missing(f), scope=scope(p))
    nums = {**NUMBERS[f.key](f), **_power(f)}
    text = "; ".join(f"{k}: {v}" for k, v in nums.items())
    return HypothesisVerdict(
        f.key, HYPOTHESES[f.key], f.label, text, nums, f.q, scope(p), named=f.named
    )


def verdicts(p: Profile) -> list[HypothesisVerdict]:
    """The profile's verdicts on H1..H4."""
    return [verdict_of(f, p) for f in findings(p, earlier_recomputed())]


GLUE_KEYS = {  # glue name -> (hypothesis, number) that the chapter cites
    "h1_off": ("H1", "growth off"),
    "h1_on": ("H1", "growth on"),
    "h1_q": ("H1", "Q"),
    "h1_pub_time": ("H1", "published time ratio"),
    "h1_pub_tpc": ("H1", "published tokens per call"),
    "h1_pub_cost": ("H1", "published call cost growth"),
    "h2_off": ("H2", "growth cache off"),
    "h2_on": ("H2", "growth cache on"),
    "h2_matching": ("H2", "published rows reproduced"),
    "h2_needed": ("H2", "published baseline needed at 100"),
    "h3_falls": ("H3", "drafts that fall"),
    "h3_holds": ("H3", "drafts that hold"),
    "h3_undecided": ("H3", "undecided"),
    "h3_nearest": ("H3", "nearest the published level"),
    "h3_nearest_tpc": ("H3", "its tokens per call"),
    "h3_q": ("H3", "its ratio"),
    "h3_nearest_acc": ("H3", "its acceptance change"),
    "h4_q": ("H4", "Q"),
    "h4_pub": ("H4", "published fall"),
    "h4_range": ("H4", "random halves, 95% range"),
    "h4_half": ("H4", "prompts per half"),
    "h4_draft": ("H4", "draft"),
    "h4_fixed": ("H4", "acceptance change, fixed prompts"),
}


def verdict_glue(vs: Sequence[HypothesisVerdict]) -> dict[str, str]:
    """Every number and label the chapter cites, by glue name ('n/a' where a verdict lacks it,
    so a partial profile still builds): GLUE_KEYS, each hypothesis's label (`h1_label`), its
    label with what it names (`h1_verdict`) and what a not-tested one lacks (`h1_missing`)."""
    by = {v.key: v for v in vs}
    out = {g: by[h].numbers.get(n, "n/a") if h in by else "n/a" for g, (h, n) in GLUE_KEYS.items()}
    for key in HYPOTHESES:
        v = by.get(key)
        out[f"{key.lower()}_label"] = v.label if v else rules.NOT_TESTED
        out[f"{key.lower()}_verdict"] = v.verdict if v else rules.NOT_TESTED
        out[f"{key.lower()}_missing"] = v.text if v and v.label == rules.NOT_TESTED else ""
    return out


DRAFT_WORD = {  # one draft under H3's rule (rules.h3_draft_rule)
    rules.SUPPORTED: "falls",
    rules.NOT_SUPPORTED: "holds",
    rules.INCONCLUSIVE: "undecided",
}


def ratio(d: dict | None, digits: int = 3) -> str:
    """An interval dict on a ratio scale: 'value [lo, hi]'."""
    return ci(d or {}, digits)


def h3_per_draft(res: ExperimentResult) -> pd.DataFrame | None:
    """The ladder: every draft of the replay, by level, with its 10 -> 100 change on each scale
    and what H3's rule says of it alone: falls, holds, undecided, or no test of H3."""
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
                "under H3's rule": DRAFT_WORD.get(r["label"], "not a test of H3"),
            }
        )
    return pd.DataFrame(rows) if rows else None


def verdict_table(vs: Sequence[HypothesisVerdict]) -> pd.DataFrame:
    """The verdicts as a table, one row each."""
    return pd.DataFrame([v.row() for v in vs])


def rule_markdown(key: str) -> str:
    """The rule of hypothesis `key` as the chapter prints it before the numbers: the rule, then
    each revision with its date and reason (rules.REVISIONS)."""
    revs = rules.revisions(key)
    text = rules.RULES[key]
    for r in revs:
        when = "after the numbers it decides existed" if r.after_numbers else "before the runs"
        text += f"\n\n*Revised {r.date}, {when}.* {r.reason}"
    title = f"Rule for {key}" + (
        f" (revised {revs[-1].date})" if revs else " (fixed before the runs)"
    )
    return admonition(text, "note", title)
