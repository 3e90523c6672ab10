"""What the chapters build from the hypotheses' verdicts (reporting.hypotheses): the key
numbers, the earlier study's own pair measured on a T4 beside them (`t4_beside`) and whether the
replay reproduced the timed runs. The bottom line is the paradox chapter's own text. Decides
nothing: labels come from the findings, numbers from results.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from specdec_study.analysis import rules
from specdec_study.analysis.replay import replay_check
from specdec_study.analysis.verdicts import ladder
from specdec_study.reporting.earlier import earlier_drop
from specdec_study.reporting.figures.style import records
from specdec_study.reporting.format import admonition, as_float, central, finite, md_table, num
from specdec_study.reporting.hypotheses import HYPOTHESES, HypothesisVerdict, scope, verdicts
from specdec_study.results.read import Profile, load_results
from specdec_study.results.store import ExperimentResult

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
        return f"{v.verdict}: {v.short()}" if v.numbers else v.verdict

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


KEY_QUANTITY = {  # the verdict quantities the key numbers show: (what, source, in points)
    "H1": ("baseline slowdown, cache off / on", "context sweeps", False),
    "H2": ("baseline time at 100 / at 20, cache off", "context_sweep_nocache", False),
    "H4": ("acceptance fall 2.5% of random prompt halves reach", "context_sweep", True),
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
