"""Every number the book states from result files, as a registry of claims: each with its value,
interval, n, the file it is read from and a Python expression that recomputes it.

`CLAIMS` maps a group name to a function `(Profile) -> list[Claim]`: the introduction's key numbers
(`reporting.hypotheses_summary.key_numbers`), each verdict's Q (`analysis.verdicts.findings`), the
headline and every arm of every experiment's summary (what `reporting.tables` formats), and the
performance chapter's bench runs (`reporting.performance`). `claims(p)` runs them all;
`recompute(claim, p)` evaluates a claim's expression against the profile (what `python -m
specdec_lib claims` prints beside each number; `--check` and the tests evaluate them all);
`claims_markdown` and `claims_json` format them. A headline or arm claim states the number of
summary.json and recomputes it from per_prompt.csv (`rows(p, experiment)`: the summary its rows
give, `analysis.from_rows`), so an edited summary differs from its rows; a number the rows do
not give (the sampling's distribution check) is read back as written.

Torch-free; decides nothing and computes no statistic: every value comes from a function the
book's pages already call, or from a result file read as written.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from specdec_study.analysis.from_rows import summary_from_rows
from specdec_study.analysis.verdicts import Finding, findings, ladder
from specdec_study.reporting.earlier import earlier_drop, earlier_recomputed
from specdec_study.reporting.format import as_float, central, finite, interval_n, md_table, num
from specdec_study.reporting.hypotheses_summary import KEY_QUANTITY
from specdec_study.reporting.performance import BENCH_RUN, BENCH_RUNS, read_bench
from specdec_study.results.read import Profile

# keys of a headline that describe the run rather than state a result
SETTING_KEYS = frozenset(
    {"n", "n_prompts", "n_documents", "context_tokens", "max_new_tokens", "k", "threshold"}
)


# the result files each hypothesis's Q is computed from (analysis.verdicts)
VERDICT_SOURCES = {
    "H1": ("context_sweep/per_prompt.csv", "context_sweep_nocache/per_prompt.csv"),
    "H2": ("context_sweep/per_prompt.csv", "context_sweep_nocache/per_prompt.csv"),
    "H3": ("agreement/summary.json",),
    "H4": ("context_sweep/per_prompt.csv",),
}


@dataclass(frozen=True)
class Claim:
    """One number the book states: its value (a share as a fraction, a ratio as a ratio), its
    95% interval and n where it has them, the file it is read from (relative to the results
    root's parent) and `recompute`, a Python expression over `p` (the Profile) that gives it."""

    group: str
    name: str
    value: float
    ci_low: float | None
    ci_high: float | None
    n: int | None
    source: str
    recompute: str

    def row(self) -> dict[str, str]:
        """The claim as a table row of formatted strings."""
        interval = (
            f"[{num(self.ci_low, 4)}, {num(self.ci_high, 4)}]" if finite(self.ci_low) else "-"
        )
        return {
            "claim": self.name,
            "value": num(self.value, 4),
            "95% CI": interval,
            "n": "-" if self.n is None else str(self.n),
            "source": f"`{self.source}`",
            "recompute": f"`{self.recompute}`",
        }


# ------------------------------------------------------------------ helpers the expressions use


def finding(p: Profile, key: str) -> Finding:
    """The finding of hypothesis `key` (H1..H4) on profile p."""
    return next(f for f in findings(p, earlier_recomputed()) if f.key == key)


def draft_ratio(p: Profile, draft: str) -> dict[str, Any]:
    """H3's quantity for one draft of the ladder: its tokens-per-call ratio, 100 over 10."""
    ladder_ = finding(p, "H3").inputs["ladder"]
    return next(r for r in ladder_ if r["draft"] == draft)["change"]["tokens_per_call"]


def summary(p: Profile, experiment: str) -> dict[str, Any]:
    """The summary.json of one experiment of p."""
    res = p.get(experiment)
    return res.summary if res is not None else {}


def rows(p: Profile, experiment: str) -> dict[str, Any]:
    """The summary sections (arms, headline) that the per_prompt.csv of one experiment of p
    gives, as its runner computed them (analysis.from_rows)."""
    return summary_from_rows(p.get(experiment), experiment)


def _in_rows(p: Profile, experiment: str, path: tuple[str, ...]) -> bool:
    """Whether the rows of the experiment give the number at path of its summary."""
    obj: Any = rows(p, experiment)
    for key in path:
        if not isinstance(obj, dict) or key not in obj:
            return False
        obj = obj[key]
    return True


def _read(p: Profile, experiment: str, path: tuple[str, ...]) -> str:
    """The expression that recomputes the summary's number at path: from the rows where they
    give it, else read from the summary."""
    source = f"rows(p, {experiment!r})" if _in_rows(p, experiment, path) else None
    return f"at({source or f'summary(p, {experiment!r})'}, {_args(path)})"


def bench(p: Profile, run: str = BENCH_RUN) -> dict[str, Any]:
    """A bench run of p (results/<profile>/bench/, or the loop-free run's folder) read by
    reporting.performance."""
    return read_bench(bench_path(p, run))


def bench_path(p: Profile, run: str = BENCH_RUN) -> Path:
    """Where a bench run of p lives: results/<profile>/<run>/."""
    return Path(p.root) / p.name / run


def at(obj: Any, *path: str) -> Any:
    """obj[path[0]][path[1]]...: one entry of a nested summary."""
    for key in path:
        obj = obj[key]
    return obj


def namespace(p: Profile) -> dict[str, Any]:
    """What a claim's expression may name: p and this module's helpers."""
    return {
        "p": p,
        "finding": finding,
        "draft_ratio": draft_ratio,
        "summary": summary,
        "rows": rows,
        "bench": bench,
        "at": at,
        "central": central,
        "earlier_drop": earlier_drop,
    }


def evaluate(expr: str, p: Profile) -> float:
    """A claim expression's number on profile p (an interval dict gives its point estimate)."""
    return as_float(central(eval(expr, namespace(p))))  # noqa: S307 - our own text


def recompute(claim: Claim, p: Profile) -> float:
    """The claim's value, recomputed from the files by evaluating its expression."""
    return evaluate(claim.recompute, p)


HOW = (
    "Every `recompute` is a Python expression over `p`, the results of profile `{name}` "
    "(`specdec_study.reporting.claims.evaluate(expr, p)` evaluates one); "
    "`python -m specdec_lib claims --profile {name} --check` recomputes them all from the files."
)


def differing(cs: list[Claim], p: Profile) -> list[str]:
    """'name: stated -> recomputed' for each claim whose expression does not give its value."""
    out = []
    for c in cs:
        again = recompute(c, p)
        if again != c.value:
            out.append(f"{c.name}: {c.value!r} -> {again!r}")
    return out


# ------------------------------------------------------------------ building claims


def _source(p: Profile, *parts: str) -> str:
    return "/".join([Path(p.root).name, p.name, *parts])


def _claim(group: str, name: str, d: Any, source: str, expr: str) -> Claim | None:
    """A Claim from an interval dict or a bare number (None when it has no finite value)."""
    value = central(d)
    if not finite(value):
        return None
    lo, hi = (d.get("ci_low"), d.get("ci_high")) if isinstance(d, dict) else (None, None)
    return Claim(
        group,
        name,
        value,
        as_float(lo) if finite(lo) else None,
        as_float(hi) if finite(hi) else None,
        interval_n(d),
        source,
        expr,
    )


def _walk(obj: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every stated number under obj: interval dicts (with a value or median) and finite bare
    numbers, with their key paths; settings (SETTING_KEYS) and lists are not claims."""
    if isinstance(obj, dict):
        if "ci_low" in obj and ("value" in obj or "median" in obj):
            yield path, obj
            return
        for k, v in obj.items():
            if str(k) not in SETTING_KEYS and not str(k).startswith("_"):
                yield from _walk(v, (*path, str(k)))
    elif isinstance(obj, int | float) and not isinstance(obj, bool) and math.isfinite(obj):
        yield path, obj


def _args(path: tuple[str, ...]) -> str:
    return ", ".join(repr(k) for k in path)


def headline_claims(p: Profile) -> list[Claim]:
    """Every number of each experiment's summary headline (speedups, acceptances, identity)."""
    out = []
    for exp in p.results:
        head = summary(p, exp).get("headline") or {}
        for path, d in _walk(head):
            expr = _read(p, exp, ("headline", *path))
            src = _source(p, exp, "summary.json")
            c = _claim("headline", f"{exp}: {' / '.join(path)}", d, src, expr)
            out.append(c)
    return [c for c in out if c is not None]


def _arm_sections(obj: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every `arms` mapping in a summary, at any depth (per context, per temperature), with
    its key path."""
    if not isinstance(obj, dict):
        return
    for k, v in obj.items():
        if k == "arms" and isinstance(v, dict):
            yield (*path, k), v
        else:
            yield from _arm_sections(v, (*path, str(k)))


def arm_claims(p: Profile) -> list[Claim]:
    """Every number of every arm of each experiment's summary (the tables' speedups,
    acceptances, accepted lengths, cost ratios, identity), per context or temperature where the
    summary splits them so."""
    out = []
    for exp in p.results:
        src = _source(p, exp, "summary.json")
        for where, arms in _arm_sections(summary(p, exp)):
            for path, d in _walk(arms, where):
                expr = _read(p, exp, path)
                out.append(_claim("arms", f"{exp}: {' / '.join(path)}", d, src, expr))
    return [c for c in out if c is not None]


def verdict_claims(p: Profile) -> list[Claim]:
    """Each hypothesis's Q with its interval and n (the number its rule compares)."""
    out = []
    for f in findings(p, earlier_recomputed()):
        span = f", contexts {f.contexts[0]} -> {f.contexts[1]}" if f.contexts else ""
        what = f"{f.key}: Q ({f.label}{span})"
        src = ", ".join(_source(p, x) for x in VERDICT_SOURCES[f.key])
        if f.key == "H3" and f.label != "not tested":  # no single Q: each draft of the ladder
            for r in f.inputs["ladder"]:
                if r["label"] is None:
                    continue
                name = f"H3: Q of {r['draft']} ({r['label']}{span})"
                expr = f"draft_ratio(p, {r['draft']!r})"
                out.append(_claim("verdicts", name, r["change"]["tokens_per_call"], src, expr))
            continue
        out.append(_claim("verdicts", what, f.q, src, f"finding(p, {f.key!r}).q"))
    return [c for c in out if c is not None]


def key_number_claims(p: Profile) -> list[Claim]:
    """The introduction's key numbers (reporting.hypotheses_summary.key_numbers): the earlier
    study's reported acceptances, per-position agreement at both ends of the test range and the
    implied acceptance change of each draft that computes apart from the target, and the verdict
    quantities it shows; each named as that table names it."""
    e = earlier_drop()
    out = [
        _claim(
            "key numbers",
            f"earlier study: acceptance at context {e[ctx]} (as reported)",
            e[acc],
            "book/data/earlier_study.csv",
            f"earlier_drop()[{acc!r}]",
        )
        for ctx, acc in (("context_lo", "acc_lo"), ("context_hi", "acc_hi"))
    ]
    agr = p.get("agreement")
    if agr is not None:
        out += _agreement_claims(p, agr.summary)
    out += _quantity_claims(p)
    return [c for c in out if c is not None]


def _agreement_claims(p: Profile, s: dict[str, Any]) -> list[Claim | None]:
    """As reporting.hypotheses_summary._agreement_key_rows: each draft of the ladder that is a
    test of H3, its level (agreement at the range's first context on the target's own
    continuation) and its tokens-per-call ratio over the range."""
    res = p.get("agreement")
    out: list[Claim | None] = []
    src = _source(p, "agreement", "summary.json")
    for r in ladder(res):
        if r["label"] is None:
            continue
        d = r["draft"]
        c0, c1 = r["change"]["contexts"]
        raw = ((s.get("continuation") or {}).get("by_draft") or {}).get(d, {}).get(str(c0)) or {}
        cell = {
            "value": raw.get("agreement"),
            "ci_low": raw.get("agreement_ci_low"),
            "ci_high": raw.get("agreement_ci_high"),
            "n": raw.get("n_documents"),
        }
        expr = _read(p, "agreement", ("continuation", "by_draft", d, str(c0), "agreement"))
        what = f"{d}: agreement at context {c0} on the target's continuation"
        out.append(_claim("key numbers", what, cell, src, expr))
        expr = _read(p, "agreement", ("continuation", "changes", d, "tokens_per_call"))
        what = f"{d}: tokens per call ratio {c1} / {c0}"
        out.append(_claim("key numbers", what, r["change"]["tokens_per_call"], src, expr))
    return out


def _quantity_claims(p: Profile) -> list[Claim | None]:
    """The verdict quantities the introduction shows (reporting.hypotheses_summary.KEY_QUANTITY),
    named as its key-numbers table names them."""
    out: list[Claim | None] = []
    for key, (what, _, _) in KEY_QUANTITY.items():
        f = finding(p, key)
        if f.q:
            src = ", ".join(_source(p, x) for x in VERDICT_SOURCES[key])
            expr = f"finding(p, {key!r}).q"
            out.append(_claim("key numbers", f"{key} quantity: {what}", f.q, src, expr))
    return out


def performance_claims(p: Profile) -> list[Claim]:
    """The performance chapter's numbers: every arm of every group of each bench run (the main
    run's and the loop-free run's), the ceiling per K and the bench's targets (an absent run
    gives none)."""
    out = []
    for run in BENCH_RUNS:
        if not bench_path(p, run).is_dir():
            continue
        b, src = bench(p, run), _source(p, run, "summary.json")
        read = "bench(p)" if run == BENCH_RUN else f"bench(p, {run!r})"
        for section in ("groups", "ceiling", "targets"):
            for path, d in _walk(b.get(section) or {}, (section,)):
                name = f"{run}: " + " / ".join(path)
                out.append(_claim("performance", name, d, src, f"at({read}, {_args(path)})"))
    return [c for c in out if c is not None]


CHECK_NUMBERS = ("p_value", "detectable_tvd", "tvd", "tvd_unverified", "n_tested", "chi2", "dof")


def sampling_check_claims(p: Profile) -> list[Claim]:
    """The sampling experiment's distribution checks as the book states them: per temperature
    and sampler the test's p, what it detects, the samples tested, and for the check of
    positions 1..m the tested tokens of each verifier path."""
    s = summary(p, "sampling")
    src = _source(p, "sampling", "summary.json")
    out = []
    for section in ("distribution_check", "sequence_check"):
        for path, d in _walk(s.get(section) or {}, (section,)):
            if path[-1] in CHECK_NUMBERS or (len(path) > 1 and path[-2] == "paths_tested"):
                expr = f"at(summary(p, 'sampling'), {_args(path)})"
                out.append(_claim("sampling checks", f"sampling: {' / '.join(path)}", d, src, expr))
    return [c for c in out if c is not None]


CLAIMS: dict[str, Callable[[Profile], list[Claim]]] = {
    "key numbers": key_number_claims,
    "verdicts": verdict_claims,
    "headline": headline_claims,
    "arms": arm_claims,
    "performance": performance_claims,
    "sampling checks": sampling_check_claims,
}


def claims(p: Profile) -> list[Claim]:
    """Every claim of the registry on profile p, group by group."""
    return [c for fn in CLAIMS.values() for c in fn(p)]


def claims_markdown(cs: list[Claim], profile: str) -> str:
    """How to recompute a claim, then the claims as one Markdown table per group."""
    parts = [HOW.format(name=profile)]
    for group in dict.fromkeys(c.group for c in cs):
        rows = [c.row() for c in cs if c.group == group]
        parts.append(f"### {group} ({len(rows)})\n\n" + md_table(rows))
    return "\n\n".join(parts)


def claims_json(cs: list[Claim]) -> list[dict[str, Any]]:
    """The claims as JSON-ready dicts (NaN-free: an absent interval is null)."""
    return [asdict(c) for c in cs]
