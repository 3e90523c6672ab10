"""What the book's chapters call: read a profile's result files, build tables in the earlier
study's format, decide the context-length paradox's verdicts, and draw figures.

Every number the book prints passes through here from `results/<profile>/<experiment>/`
(layout in results/SCHEMA.md) or, for the earlier study's published table, from
`book/data/earlier_study.csv`. Functions return plain data, pandas DataFrames, Markdown strings or
matplotlib Figures, and return None (or a "not tested" verdict) when a profile lacks what they need,
so a chapter degrades to a note instead of raising. Reads files only: it imports no model code and
knows nothing about decoding (it does not import torch, so the chapter pages start quickly).

`python -m specdec_lib.report --profile embedded` prints the paradox verdicts with their numbers.
"""

from __future__ import annotations

import argparse
import json
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from specdec_lib.analysis import rules, stats
from specdec_lib.analysis.rules import INCONCLUSIVE as INCONCLUSIVE_
from specdec_lib.analysis.rules import NOT_SUPPORTED as NOT_SUPPORTED_
from specdec_lib.analysis.rules import NOT_TESTED
from specdec_lib.analysis.rules import SUPPORTED as SUPPORTED_
from specdec_lib.analysis.theory import a_from_rate, rate_from_a  # noqa: F401 - the book's math chapter
from specdec_lib.results.catalog import BASELINE, EXPERIMENTS, NOTEBOOKS  # noqa: F401
from specdec_lib.results.schema import result_problem

REPO_ROOT = Path(__file__).resolve().parents[1]
EARLIER_CSV = REPO_ROOT / "book" / "data" / "earlier_study.csv"
DEFAULT_PROFILE = "embedded"
REAL_PROFILES = ("embedded", "colab-t4")

N_BOOT = 2000
SEED = 0

EARLIER_WAY = "speedup (earlier study's way)"
LABELS = rules.LABELS


# --------------------------------------------------------------------------------------------
# where the results are


def book_profile() -> str:
    """The profile the book shows: $SPECDEC_BOOK_PROFILE, default embedded."""
    return os.environ.get("SPECDEC_BOOK_PROFILE") or DEFAULT_PROFILE


def results_root() -> Path:
    """$SPECDEC_RESULTS (default results/); relative paths are taken from the repository root."""
    p = Path(os.environ.get("SPECDEC_RESULTS") or "results")
    return p if p.is_absolute() else REPO_ROOT / p


@dataclass
class Result:
    """One experiment directory, read back (mirrors results.store.load_result)."""

    name: str
    path: Path
    config: dict[str, Any]
    env: dict[str, Any]
    summary: dict[str, Any]
    rows: pd.DataFrame

    @property
    def arms(self) -> dict[str, Any]:
        return self.summary.get("arms") or {}

    def role(self, role: str) -> str | None:
        """The arm that plays `role` (bigram, transformer, ngram), if any."""
        return (self.summary.get("roles") or {}).get(role)

    def extra_csv(self, name: str) -> pd.DataFrame | None:
        f = self.path / name
        return _read_csv(f) if f.is_file() else None

    def figures(self) -> list[Path]:
        d = self.path / "figures"
        return sorted(d.glob("*.png")) if d.is_dir() else []


LIST_COLUMNS = ("accepted_lengths", "proposed_lengths", "tokens", "matches")


def _read_csv(path: Path) -> pd.DataFrame:
    df = pd.read_csv(path, dtype={c: str for c in LIST_COLUMNS})
    for c in LIST_COLUMNS:
        if c in df.columns:
            df[c] = df[c].fillna("")
    return df


def load_result(path: Path) -> Result | None:
    """The experiment at `path`, or None when it is absent or damaged (schema.result_problem)."""
    path = Path(path)
    if result_problem(path, study=True) is not None:
        return None
    try:
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
        env = json.loads((path / "env.json").read_text(encoding="utf-8"))
        summary = json.loads((path / "summary.json").read_text(encoding="utf-8"))
        rows = _read_csv(path / "per_prompt.csv")
    except (OSError, ValueError, pd.errors.EmptyDataError):
        return None
    return Result(path.name, path, config, env, summary, rows)


@dataclass
class Profile:
    """The results of one profile: experiment name -> Result (absent experiments are missing)."""

    name: str
    root: Path
    results: dict[str, Result] = field(default_factory=dict)
    damaged: dict[str, str] = field(default_factory=dict)  # experiment -> what is wrong

    def get(self, experiment: str) -> Result | None:
        return self.results.get(experiment)

    def has(self, *experiments: str) -> bool:
        return all(e in self.results for e in experiments)

    def missing(self, *experiments: str) -> list[str]:
        return [e for e in (experiments or EXPERIMENTS) if e not in self.results]

    @property
    def empty(self) -> bool:
        return not self.results

    def notebook(self, name: str) -> Path:
        return self.root / self.name / "notebooks" / f"{name}.ipynb"

    def env(self) -> dict[str, Any]:
        """The environment of the first experiment that has one."""
        for e in EXPERIMENTS:
            if e in self.results:
                return self.results[e].env
        return {}


def load_profile(name: str | None = None, root: Path | None = None) -> Profile:
    name = name or book_profile()
    root = Path(root) if root is not None else results_root()
    prof = Profile(name, root)
    for e in EXPERIMENTS:
        d = root / name / e
        problem = result_problem(d, study=True) if d.exists() else None
        r = load_result(d) if d.exists() and problem is None else None
        if r is not None:
            prof.results[e] = r
        elif d.exists():
            prof.damaged[e] = problem or "unreadable"
    return prof


def damaged_results(name: str, root: Path) -> dict[str, str]:
    """Experiment -> what is wrong, for every result directory of the profile that exists but is
    damaged (the book refuses to build over these)."""
    out = {}
    for e in EXPERIMENTS:
        d = Path(root) / name / e
        if d.exists():
            problem = result_problem(d, study=True)
            if problem is not None:
                out[e] = problem
    return out


def profiles_with_results(root: Path | None = None, include: Iterable[str] = ()) -> list[str]:
    """Profiles under root with at least one experiment: the real ones, plus those in include."""
    root = Path(root) if root is not None else results_root()
    wanted = list(dict.fromkeys([*include, *REAL_PROFILES]))
    return [p for p in wanted if not load_profile(p, root).empty]


# --------------------------------------------------------------------------------------------
# formatting


def _f(x: Any) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return math.nan
    return v


def finite(x: Any) -> bool:
    return math.isfinite(_f(x))


def _r(x: float, nd: int) -> str:
    """Fixed decimals without a negative zero."""
    return f"{round(x, nd) + 0.0:.{nd}f}"


def num(x: Any, nd: int = 2, suffix: str = "") -> str:
    return f"{_r(_f(x), nd)}{suffix}" if finite(x) else "n/a"


def pct(x: Any, nd: int = 2) -> str:
    """A fraction as a percentage: 0.8945 -> '89.45%'."""
    return f"{_r(100 * _f(x), nd)}%" if finite(x) else "n/a"


def central(d: Any) -> float:
    """The point estimate of a {value|median, ci_low, ci_high} dict (or a bare number)."""
    if isinstance(d, dict):
        return _f(d.get("value", d.get("median")))
    return _f(d)


def interval_n(d: Any) -> int | None:
    """The n an interval dict rests on ("n", else the "n_prompts" written beside it)."""
    if not isinstance(d, dict):
        return None
    n = d.get("n", d.get("n_prompts"))
    return int(n) if finite(n) else None


def ci(d: Any, nd: int = 2, scale: float = 1.0, suffix: str = "", n: Any = None) -> str:
    """'1.23 [1.10, 1.35], n=20' from a {value|median, ci_low, ci_high[, n]} dict: the n beside
    the interval is the dict's own, else the n given (e.g. the arm's prompts, for result files
    written before intervals carried their n)."""
    if not isinstance(d, dict):
        return num(_f(d) * scale, nd, suffix)
    v, lo, hi = (central(d), _f(d.get("ci_low")), _f(d.get("ci_high")))
    if not finite(v):
        return "n/a"
    if not (finite(lo) and finite(hi)):
        return num(v * scale, nd, suffix)
    own = interval_n(d)
    n = own if own is not None else (int(_f(n)) if finite(n) else None)
    tail = f", n={n}" if n is not None else ""
    return f"{_r(v * scale, nd)}{suffix} [{_r(lo * scale, nd)}, {_r(hi * scale, nd)}]{tail}"


def ci_pct(d: Any, nd: int = 1, n: Any = None) -> str:
    return ci(d, nd, 100.0, "%", n)


def md_table(df: pd.DataFrame) -> str:
    """A DataFrame as a Markdown pipe table (cells as given; pre-format numbers as strings)."""

    def cell(v: Any) -> str:
        if v is None or (isinstance(v, float) and not math.isfinite(v)):
            return "n/a"
        return str(v).replace("|", "\\|").replace("\n", " ")

    head = "| " + " | ".join(cell(c) for c in df.columns) + " |"
    rule = "|" + "|".join("---" for _ in df.columns) + "|"
    body = ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join([head, rule, *body])


def admonition(text: str, kind: str = "note", title: str | None = None) -> str:
    if title:
        return f":::{{admonition}} {title}\n:class: {kind}\n{text}\n:::\n"
    return f":::{{{kind}}}\n{text}\n:::\n"


def missing_note(profile: Profile, *experiments: str) -> str:
    """Markdown saying which experiments this part needs and the profile lacks."""
    lacking = profile.missing(*experiments) if experiments else list(EXPERIMENTS)
    nbs = sorted({nb for nb, names in NOTEBOOKS.items() if set(names) & set(lacking)})
    damaged = [f"`{e}` ({profile.damaged[e]})" for e in lacking if e in profile.damaged]
    return admonition(
        f"The profile `{profile.name}` has no results for "
        f"{', '.join(f'`{e}`' for e in lacking)} (notebook{'s' if len(nbs) > 1 else ''} "
        f"{', '.join(f'`{n}`' for n in nbs)}), so this part is left out"
        + (f"; DAMAGED, not shown: {', '.join(damaged)}" if damaged else "")
        + f". Run `make evaluate PROFILE={profile.name}` and rebuild the book.",
        "warning" if damaged else "note",
    )


# --------------------------------------------------------------------------------------------
# the earlier study's published table (the one hand-typed data file)


def earlier_study(path: Path = EARLIER_CSV) -> pd.DataFrame:
    """The published table, as reported by the earlier study."""
    return pd.read_csv(path)


def earlier_baseline_time(df: pd.DataFrame | None = None) -> float:
    df = earlier_study() if df is None else df
    return float(df.loc[df["strategy"] == "baseline autoregressive", "time_s"].iloc[0])


def earlier_recomputed(df: pd.DataFrame | None = None) -> pd.DataFrame:
    """Adds `one_baseline_speedup` = the one context-20 baseline time / the row's time, and
    whether it reproduces the printed speedup to its two decimals."""
    df = (earlier_study() if df is None else df).copy()
    base = earlier_baseline_time(df)
    df["one_baseline_speedup"] = base / df["time_s"]
    df["matches_printed"] = (df["one_baseline_speedup"].round(2) - df["speedup"]).abs() < 0.0051
    return df


def earlier_table(df: pd.DataFrame | None = None) -> pd.DataFrame:
    """The published table in its own format, with the recomputation beside it."""
    df = earlier_recomputed(df)
    base = earlier_baseline_time(df)
    return pd.DataFrame(
        {
            "strategy": df["strategy"],
            "K": [("-" if not finite(k) else str(int(k))) for k in df["k"]],
            "context": df["context"].astype(int).astype(str),
            "acceptance": [("-" if not finite(a) else f"{a:.2f}%") for a in df["acceptance_pct"]],
            "time": [f"{t:.2f} s" for t in df["time_s"]],
            "speedup (as reported)": [f"{s:.2f}x" for s in df["speedup"]],
            f"{base:.2f} s / time (recomputed)": [f"{s:.4f}" for s in df["one_baseline_speedup"]],
        }
    )


def earlier_drop(df: pd.DataFrame | None = None, lo: int = 10, hi: int = 100) -> dict[str, float]:
    """The published transformer-draft acceptance fall between contexts lo and hi (fractions)."""
    df = earlier_study() if df is None else df
    t = df[df["strategy"] == "transformer draft"].set_index("context")
    a_lo, a_hi = float(t.loc[lo, "acceptance_pct"]) / 100, float(t.loc[hi, "acceptance_pct"]) / 100
    return {"context_lo": lo, "context_hi": hi, "acc_lo": a_lo, "acc_hi": a_hi, "drop": a_lo - a_hi}


# --------------------------------------------------------------------------------------------
# roles, sweeps and per-prompt statistics


def role_arm(res: Result | None, role: str) -> str | None:
    if res is None:
        return None
    arm = res.role(role)
    if arm:
        return arm
    drafts = {"bigram": "bigram", "ngram": "ngram"}
    for name, s in res.arms.items():
        if drafts.get(role) and s.get("draft") == drafts[role]:
            return name
    return None


def sweep_table(res: Result | None) -> pd.DataFrame | None:
    """The flat `table` of a context sweep (one row per context x arm)."""
    if res is None or not res.summary.get("table"):
        return None
    df = pd.DataFrame(res.summary["table"])
    df["context"] = df["context"].astype(int)
    return df.sort_values(["context", "method"]).reset_index(drop=True)


def sweep_contexts(res: Result | None) -> list[int]:
    if res is None:
        return []
    ctx = res.summary.get("contexts") or res.config.get("contexts") or []
    if not ctx and "context" in res.rows.columns:
        ctx = res.rows["context"].dropna().unique().tolist()
    return sorted(int(c) for c in ctx)


def _context_col(rows: pd.DataFrame) -> str:
    return "context" if "context" in rows.columns else "context_tokens"


def paired_frame(rows: pd.DataFrame, method: str, contexts: Sequence[int]) -> pd.DataFrame:
    """Per prompt (index) x context: wall_s, new_tokens, accepted, proposed for one arm, keeping
    only prompts present at every context (the sweep's prompts are the same documents)."""
    col = _context_col(rows)
    r = rows[rows["method"] == method].copy()
    r[col] = r[col].astype(int)
    r = r[r[col].isin(list(contexts))]
    keep = [c for c in ("wall_s", "new_tokens", "accepted", "proposed") if c in r.columns]
    wide = r.pivot_table(index="prompt", columns=col, values=keep, aggfunc="sum")
    return wide.dropna()


def _ratio_change(a_num, a_den, b_num, b_den, axis=-1):
    """(sum b_num / sum b_den) / (sum a_num / sum a_den), vectorised for the bootstrap."""
    return (b_num.sum(axis) / b_den.sum(axis)) / (a_num.sum(axis) / a_den.sum(axis))


def _rate_change(a_num, a_den, b_num, b_den, axis=-1):
    """(sum b_num / sum b_den) - (sum a_num / sum a_den), vectorised for the bootstrap."""
    return b_num.sum(axis) / b_den.sum(axis) - a_num.sum(axis) / a_den.sum(axis)


def _nan_interval(**extra: Any) -> dict[str, Any]:
    return {"value": math.nan, "ci_low": math.nan, "ci_high": math.nan, "n": 0, **extra}


def growth(rows: pd.DataFrame, method: str, c0: int, c1: int, per_token: bool = True) -> dict:
    """How much slower an arm is at context c1 than at c0: ratio of total seconds (per token if
    per_token), with a paired bootstrap CI resampling the same prompts at both contexts."""
    w = paired_frame(rows, method, [c0, c1])
    if w.empty:
        return _nan_interval(n_prompts=0)
    a, b = w["wall_s"][c0].to_numpy(float), w["wall_s"][c1].to_numpy(float)
    if per_token:
        ta, tb = w["new_tokens"][c0].to_numpy(float), w["new_tokens"][c1].to_numpy(float)
    else:
        ta = tb = np.ones_like(a)
    iv = stats.bootstrap([a, ta, b, tb], _ratio_change)
    return {**iv.as_dict(), "n_prompts": iv.n}


def acceptance_change(rows: pd.DataFrame, method: str, c0: int, c1: int) -> dict:
    """Pooled acceptance (accepted / proposed) at c1 minus at c0 on the same prompts, with a
    paired bootstrap CI; plus the two pooled values."""
    w = paired_frame(rows, method, [c0, c1])
    if w.empty or "proposed" not in w:
        return _nan_interval(n_prompts=0)
    acc0, acc1 = w["accepted"][c0].to_numpy(float), w["accepted"][c1].to_numpy(float)
    pr0, pr1 = w["proposed"][c0].to_numpy(float), w["proposed"][c1].to_numpy(float)
    iv = stats.bootstrap([acc0, pr0, acc1, pr1], _rate_change)
    with np.errstate(invalid="ignore", divide="ignore"):
        a0, a1 = acc0.sum() / pr0.sum(), acc1.sum() / pr1.sum()
    return {**iv.as_dict(), "at_c0": float(a0), "at_c1": float(a1), "n_prompts": iv.n}


def prompt_swap_change(rows: pd.DataFrame, method: str, c0: int, c1: int) -> dict:
    """The confound simulated: each context sees its own half of the prompts (disjoint random
    halves), as when prompts are drawn per context. Returns the 95% range of the acceptance
    change c0 -> c1 over random splits, and the largest fall seen in 2.5% of splits."""
    w = paired_frame(rows, method, [c0, c1])
    n = len(w)
    if n < 4 or "proposed" not in w:
        return {"value": math.nan, "ci_low": math.nan, "ci_high": math.nan, "n_half": 0}
    acc0, acc1 = w["accepted"][c0].to_numpy(float), w["accepted"][c1].to_numpy(float)
    pr0, pr1 = w["proposed"][c0].to_numpy(float), w["proposed"][c1].to_numpy(float)
    rng = np.random.default_rng(SEED)
    half = n // 2
    perms = np.argsort(rng.random((N_BOOT, n)), axis=1)
    a_idx, b_idx = perms[:, :half], perms[:, half : 2 * half]
    with np.errstate(invalid="ignore", divide="ignore"):
        d = acc1[b_idx].sum(1) / pr1[b_idx].sum(1) - acc0[a_idx].sum(1) / pr0[a_idx].sum(1)
    d = d[np.isfinite(d)]
    lo, hi = np.quantile(d, [0.025, 0.975])
    return {
        "value": float(np.median(d)),
        "ci_low": float(lo),
        "ci_high": float(hi),
        "n_half": int(half),
        "draws": d,
    }


def per_prompt_acceptance(rows: pd.DataFrame, method: str) -> pd.DataFrame:
    """prompt x context acceptance of one arm (for the spaghetti plot)."""
    col = _context_col(rows)
    r = rows[rows["method"] == method].copy()
    r[col] = r[col].astype(int)
    g = r.groupby(["prompt", col])[["accepted", "proposed"]].sum().reset_index()
    g["acceptance"] = g["accepted"] / g["proposed"].where(g["proposed"] > 0)
    return g.rename(columns={col: "context"})


def range_for_test(contexts: Sequence[int], lo: int = 10, hi: int = 100) -> tuple[int, int]:
    """The published range (10 -> 100) when the sweep has both ends, else its own extremes."""
    cs = sorted(contexts)
    if lo in cs and hi in cs:
        return lo, hi
    return cs[0], cs[-1]


# --------------------------------------------------------------------------------------------
# our results in the earlier study's format


def study_table(p: Profile) -> pd.DataFrame | None:
    """Our rows in the earlier study's format (strategy, K, context, acceptance, time, speedup as
    that study computed it), plus the paired speedup against the same context's own baseline.
    From the cached context sweep when present, else from the bigram / transformer experiments."""
    sweep = p.get("context_sweep")
    t = sweep_table(sweep)
    if t is not None:
        ref = int((sweep.summary.get("earlier_style") or {}).get("reference_context", 20))
        ref_wall = _f((sweep.summary.get("earlier_style") or {}).get("reference_total_wall_s"))
        bigram, trans = role_arm(sweep, "bigram"), role_arm(sweep, "transformer")
        out = []
        base_at = t[t["method"] == BASELINE].set_index("context")
        if ref in base_at.index:
            b = base_at.loc[ref]
            out.append(_study_row("baseline autoregressive", ref, b, ref_wall, True))
        for arm, label, contexts in (
            (bigram, "bigram", [ref]),
            (trans, f"transformer draft ({trans})", sorted(t["context"].unique())),
        ):
            if arm is None:
                continue
            rows = t[t["method"] == arm].set_index("context")
            for c in contexts:
                if c in rows.index:
                    out.append(_study_row(label, c, rows.loc[c], ref_wall, False))
        return pd.DataFrame(out) if out else None
    return _study_table_single(p)


def beside_published(p: Profile) -> pd.DataFrame | None:
    """study_table beside the published rows: each cell 'ours / reported' for the same strategy
    and context (reported '-' where the earlier study has no such row)."""
    ours = study_table(p)
    if ours is None:
        return None
    pub = earlier_table()
    pub_key = {(r["strategy"], r["context"]): r for r in pub.to_dict("records")}
    out = []
    for r in ours.to_dict("records"):
        kind = r["strategy"].split(" (")[0]
        q = pub_key.get((kind, r["context"]), {})
        out.append(
            {
                "strategy": r["strategy"],
                "K": r["K"],
                "context": r["context"],
                "acceptance: ours / reported": f"{r['acceptance']} / {q.get('acceptance', '-')}",
                "time: ours / reported": f"{r['time']} / {q.get('time', '-')}",
                "speedup, earlier way: ours / reported": (
                    f"{r[EARLIER_WAY]} / {q.get('speedup (as reported)', '-')}"
                ),
                "speedup, paired (ours, 95% CI)": r["speedup, paired (95% CI)"],
            }
        )
    return pd.DataFrame(out)


def _study_row(label: str, context: int, r: pd.Series, ref_wall: float, is_base: bool) -> dict:
    """One row of study_table from a row of the sweep's flat table."""
    k = None if is_base else r.get("k")
    es = _f(r.get("earlier_style_speedup"))
    if not finite(es) and finite(ref_wall):
        es = ref_wall / _f(r.get("total_wall_s"))
    paired = {
        "value": r.get("speedup"),
        "ci_low": r.get("speedup_ci_low"),
        "ci_high": r.get("speedup_ci_high"),
        "n": r.get("n_prompts"),
    }
    return {
        "strategy": label,
        "K": "-" if not k else str(int(k)),
        "context": str(int(context)),
        "acceptance": "-" if is_base else pct(r.get("acceptance_rate")),
        "time": num(r.get("total_wall_s"), 2, " s"),
        EARLIER_WAY: num(es, 2, "x"),
        "speedup, paired (95% CI)": "1.00x (reference)" if is_base else ci(paired, 2, suffix="x"),
        "baseline at this context": num(
            r.get("baseline_total_wall_s", r.get("total_wall_s")), 2, " s"
        ),
    }


def _study_table_single(p: Profile) -> pd.DataFrame | None:
    out = []
    for exp, role, label in (
        ("bigram", "bigram", "bigram"),
        ("transformer_draft", "transformer", "transformer draft"),
    ):
        res = p.get(exp)
        if res is None:
            continue
        arm = role_arm(res, role) or next((a for a in res.arms if a != BASELINE), None)
        if arm is None:
            continue
        s, b = res.arms[arm], res.arms.get(BASELINE, {})
        ctx = _median_context(res)
        if not out and b:
            out.append(
                {
                    "strategy": "baseline autoregressive",
                    "K": "-",
                    "context": ctx,
                    "acceptance": "-",
                    "time": num(b.get("total_wall_s"), 2, " s"),
                    EARLIER_WAY: "1.00x",
                    "speedup, paired (95% CI)": "1.00x (reference)",
                    "baseline at this context": num(b.get("total_wall_s"), 2, " s"),
                }
            )
        out.append(
            {
                "strategy": label if role == "bigram" else f"{label} ({arm})",
                "K": str(s.get("k", "-")),
                "context": ctx,
                "acceptance": pct(central(s.get("acceptance_rate"))),
                "time": num(s.get("total_wall_s"), 2, " s"),
                EARLIER_WAY: num(central(s.get("speedup")), 2, "x"),
                "speedup, paired (95% CI)": ci(
                    s.get("speedup"), 2, suffix="x", n=s.get("n_prompts")
                ),
                "baseline at this context": num(b.get("total_wall_s"), 2, " s"),
            }
        )
    return pd.DataFrame(out) if out else None


def _median_context(res: Result) -> str:
    for c in ("context", "context_tokens"):
        if c in res.rows.columns:
            v = pd.to_numeric(res.rows[c], errors="coerce").dropna()
            if len(v):
                return str(int(v.median()))
    return "n/a"


def headline_table(p: Profile) -> pd.DataFrame | None:
    """Speedup, acceptance rate, mean accepted length and identity per draft arm of the bigram and
    transformer-draft experiments."""
    out = []
    for exp in ("bigram", "transformer_draft"):
        res = p.get(exp)
        if res is None:
            continue
        for arm, s in res.arms.items():
            if arm == BASELINE:
                continue
            out.append(
                {
                    "arm (experiment)": f"{arm} ({exp})",
                    "K": str(s.get("k")),
                    "prompts": str(s.get("n_prompts")),
                    "speedup": ci(s.get("speedup"), 2, suffix="x", n=s.get("n_prompts")),
                    "acceptance rate": ci_pct(s.get("acceptance_rate"), n=s.get("n_prompts")),
                    "mean accepted length": ci(
                        s.get("mean_accepted_length"), 2, n=s.get("n_prompts")
                    ),
                    "c": num(s.get("cost_ratio"), 3),
                    "identical": pct(s.get("identical_fraction"), 0),
                }
            )
    return pd.DataFrame(out) if out else None


def k_sweep_table(p: Profile) -> pd.DataFrame | None:
    res = p.get("k_sweep")
    if res is None or not res.summary.get("table"):
        return None
    t = pd.DataFrame(res.summary["table"]).sort_values("k")
    return pd.DataFrame(
        {
            "K": t["k"].astype(int).astype(str),
            "arm": t["method"],
            "measured speedup (95% CI)": [
                ci(
                    {"value": r.speedup, "ci_low": r.speedup_ci_low, "ci_high": r.speedup_ci_high},
                    2,
                    suffix="x",
                    n=getattr(r, "n_prompts", res.config.get("n_prompts")),
                )
                for r in t.itertuples()
            ],
            "predicted (Leviathan)": [num(x, 2, "x") for x in t["predicted_speedup_leviathan"]],
            "predicted (calibrated)": [num(x, 2, "x") for x in t["predicted_speedup_calibrated"]],
            "acceptance rate": [pct(x, 1) for x in t["acceptance_rate"]],
            "a (i.i.d. fit)": [num(x, 3) for x in t["per_token_acceptance_iid"]],
            "c": [num(x, 3) for x in t["cost_ratio"]],
            "mean accepted length": [num(x, 2) for x in t["mean_accepted_length"]],
        }
    )


def sampling_table(p: Profile) -> pd.DataFrame | None:
    """Per temperature and arm: the paired speedup, the acceptance rate, and the first-token
    distribution check (TVD, chi-square p, samples, and the smallest TVD the check detects)."""
    res = p.get("sampling")
    if res is None or not res.summary.get("table"):
        return None
    t = pd.DataFrame(res.summary["table"])
    dist = res.summary.get("distribution_check") or {}
    checked = role_arm(res, "transformer")  # results written before every arm was checked
    out = []
    for r in t.itertuples():
        d = by_float_key(dist, r.temperature) or {}
        is_spec = r.method != BASELINE
        chk = d.get(r.method) or (d.get("speculative") if r.method == checked else None) or {}
        n_samples = chk.get("n_samples", _f(d.get("n_samples_per_prompt")) * _f(d.get("n_prompts")))
        out.append(
            {
                "temperature": num(r.temperature, 1),
                "arm": r.method,
                "speedup (95% CI)": "-"
                if not is_spec
                else ci(
                    {
                        "value": r.speedup,
                        "ci_low": getattr(r, "speedup_ci_low", None),
                        "ci_high": getattr(r, "speedup_ci_high", None),
                    },
                    2,
                    suffix="x",
                    n=getattr(r, "n_prompts", res.config.get("n_prompts")),
                ),
                "acceptance rate": "-" if not is_spec else pct(r.acceptance_rate, 1),
                "first-token samples": num(n_samples, 0) if chk else "-",
                "first-token TVD": num(chk.get("tvd"), 3) if chk else "-",
                "chi-square p": num(chk.get("p_value"), 3) if chk else "-",
                "detectable TVD (80% power)": num(chk.get("detectable_tvd"), 3) if chk else "-",
                "TVD if unverified": num(chk.get("tvd_unverified"), 3) if chk and is_spec else "-",
            }
        )
    return pd.DataFrame(out)


def by_float_key(d: dict[str, Any], x: Any) -> Any:
    """d["0.7"] for x = 0.7 whatever the key's spelling ("0.7", "0.70")."""
    for k, v in d.items():
        if finite(k) and math.isclose(_f(k), _f(x)):
            return v
    return None


def sampling_checks(p: Profile) -> dict[str, dict]:
    res = p.get("sampling")
    return (res.summary.get("distribution_check") or {}) if res else {}


def peers_table(p: Profile) -> pd.DataFrame | None:
    res = p.get("peers")
    if res is None or not res.summary.get("table"):
        return None
    t = pd.DataFrame(res.summary["table"])
    out = []
    for r in t.to_dict("records"):
        out.append(
            {
                "method": r.get("method"),
                "implementation": r.get("implementation"),
                "tokens/s (median, 95% CI)": ci(
                    {
                        "value": r.get("tokens_per_s"),
                        "ci_low": r.get("tokens_per_s_ci_low"),
                        "ci_high": r.get("tokens_per_s_ci_high"),
                    },
                    1,
                    n=r.get("n_prompts", res.config.get("n_prompts")),
                ),
                "speedup vs our baseline": ci(
                    {
                        "value": r.get("speedup"),
                        "ci_low": r.get("speedup_ci_low"),
                        "ci_high": r.get("speedup_ci_high"),
                    },
                    2,
                    suffix="x",
                    n=r.get("n_prompts", res.config.get("n_prompts")),
                ),
                "speedup vs HF greedy": num(r.get("speedup_vs_hf_greedy"), 2, "x"),
                "identical to our greedy": pct(r.get("identical_to_baseline"), 0),
                "identical to HF greedy": pct(r.get("identical_to_hf_greedy"), 0),
            }
        )
    return pd.DataFrame(out)


def identity_table(p: Profile) -> pd.DataFrame | None:
    res = p.get("transformer_draft")
    ident = (res.summary.get("identity_by_dtype") or {}) if res else {}
    if not ident:
        return None
    out = []
    for dt, d in ident.items():
        margins = [m for m in (d.get("divergence_margins") or []) if finite(m)]
        pos = [x for x in (d.get("divergence_positions") or []) if finite(x)]
        out.append(
            {
                "dtype": d.get("dtype", dt),
                "prompts": str(d.get("n_prompts")),
                "new tokens": str(d.get("max_new_tokens")),
                "identical to greedy baseline": pct(d.get("identical_fraction"), 0),
                "divergences": str(len(pos)),
                "median position of first difference": num(np.median(pos), 0) if pos else "-",
                "median top-2 margin there": num(np.median(margins), 3) if margins else "-",
                "largest margin there": num(max(margins), 3) if margins else "-",
            }
        )
    return pd.DataFrame(out)


def identity_sentence(p: Profile) -> str:
    """One sentence per dtype: how many outputs matched greedy decoding, and the margins."""
    res = p.get("transformer_draft")
    ident = (res.summary.get("identity_by_dtype") or {}) if res else {}
    parts = []
    for dt, d in ident.items():
        margins = [float(m) for m in (d.get("divergence_margins") or []) if finite(m)]
        s = (
            f"In `{d.get('dtype', dt)}`, {pct(d.get('identical_fraction'), 0)} of "
            f"{d.get('n_prompts')} outputs are token-identical to greedy decoding"
        )
        if margins:
            s += (
                f"; where they differ, the target's top-2 margin at the first differing token "
                f"has median {num(np.median(margins), 3)} (largest {num(max(margins), 3)})"
            )
        parts.append(s + ".")
    return " ".join(parts)


def identity_margins(p: Profile) -> dict[str, list[float]]:
    res = p.get("transformer_draft")
    ident = (res.summary.get("identity_by_dtype") or {}) if res else {}
    return {
        d.get("dtype", k): [float(m) for m in (d.get("divergence_margins") or []) if finite(m)]
        for k, d in ident.items()
    }


def env_table(p: Profile) -> pd.DataFrame | None:
    """One row per experiment: where and with what it ran."""
    if p.empty:
        return None
    keys = [
        "device",
        "dtype",
        "gpu",
        "cpu_model",
        "cpu_count",
        "torch_threads",
        "python",
        "torch",
        "transformers",
        "git_commit",
        "wall_s_experiment",
    ]
    out = []
    for e in EXPERIMENTS:
        r = p.get(e)
        if r is None:
            continue
        row = {"experiment": e}
        for k in keys:
            v = r.env.get(k)
            if k == "git_commit" and isinstance(v, str):
                v = v[:12]
            if k == "wall_s_experiment":
                v = num(v, 0, " s")
            row[k] = "-" if v is None else str(v)
        out.append(row)
    return pd.DataFrame(out)


def config_table(p: Profile) -> pd.DataFrame | None:
    if p.empty:
        return None
    keys = [
        "target",
        "dtype",
        "device",
        "data_source",
        "seed",
        "k",
        "max_new_tokens",
        "n_prompts",
        "config_hash",
    ]
    out = []
    for e in EXPERIMENTS:
        r = p.get(e)
        if r is None:
            continue
        row = {"experiment": e}
        for k in keys:
            v = r.config.get(k)
            row[k] = "-" if v is None else str(v)
        extra = {k: r.config[k] for k in ("contexts", "ks", "temperatures") if k in r.config}
        row["sweep"] = "; ".join(f"{k}={v}" for k, v in extra.items()) or "-"
        out.append(row)
    return pd.DataFrame(out)


def split_common(df: pd.DataFrame | None, key: str = "experiment") -> tuple[dict, pd.DataFrame]:
    """(columns whose value is the same in every row -> that value, the table of the others)."""
    if df is None or df.empty:
        return {}, pd.DataFrame()
    same = [c for c in df.columns if c != key and df[c].nunique(dropna=False) == 1]
    return {c: df[c].iloc[0] for c in same}, df[[c for c in df.columns if c not in same]]


def common_markdown(common: dict) -> str:
    return "\n".join(f"- **{k}**: `{v}`" for k, v in common.items())


def total_batch_seconds(p: Profile) -> float:
    return float(
        sum(
            _f(r.env.get("wall_s_experiment"))
            for r in p.results.values()
            if finite(r.env.get("wall_s_experiment"))
        )
    )


# --------------------------------------------------------------------------------------------
# the context-length paradox: one verdict per hypothesis, decided by comparing intervals


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


def ci_n(d: Any, nd: int = 2, scale: float = 1.0, suffix: str = "", n: Any = None) -> str:
    """'value [low, high] (n = N)': an interval with the number of units it resampled."""
    count = n if n is not None else (d or {}).get("n", (d or {}).get("n_prompts"))
    out = ci(d, nd, scale, suffix)
    return f"{out} (n = {count})" if count else out


def test_range(contexts: Sequence[int], lo: int = 10, hi: int = 100) -> tuple[int, int] | None:
    """(10, 100), the earlier study's range, when both were measured; else None."""
    return (lo, hi) if lo in contexts and hi in contexts else None


def extra_growth(on: pd.DataFrame, off: pd.DataFrame, c0: int, c1: int) -> dict:
    """H1's quantity: the baseline's per-token slowdown c0 -> c1 without the cache divided by
    the same with it, on the prompts both sweeps share, with a paired bootstrap over prompts."""
    a, b = paired_frame(on, BASELINE, [c0, c1]), paired_frame(off, BASELINE, [c0, c1])
    common = sorted(set(a.index) & set(b.index))
    if len(common) < 2:
        return {"value": math.nan, "ci_low": math.nan, "ci_high": math.nan, "n": len(common)}
    a, b = a.loc[common], b.loc[common]

    def per_token(w: pd.DataFrame, c: int) -> tuple[np.ndarray, np.ndarray]:
        return w["wall_s"][c].to_numpy(float), w["new_tokens"][c].to_numpy(float)

    (a0, n0), (a1, n1) = per_token(a, c0), per_token(a, c1)
    (b0, m0), (b1, m1) = per_token(b, c0), per_token(b, c1)

    def q(a0, n0, a1, n1, b0, m0, b1, m1, axis=-1):
        g_on = (a1.sum(axis) / n1.sum(axis)) / (a0.sum(axis) / n0.sum(axis))
        g_off = (b1.sum(axis) / m1.sum(axis)) / (b0.sum(axis) / m0.sum(axis))
        return g_off / g_on

    return stats.bootstrap([a0, n0, a1, n1, b0, m0, b1, m1], q).as_dict()


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


def agreement_primary(res: Result) -> str | None:
    """H3's primary draft: the one the profile named before the run."""
    head = res.summary.get("headline") or {}
    prim = res.summary.get("primary") or res.config.get("primary")
    return prim if prim in head else None


def divergent_drafts(res: Result) -> list[str]:
    """The agreement's drafts that do not share the target's hidden states (no bigram)."""
    kinds = res.summary.get("kinds") or {}
    return [d for d, k in kinds.items() if not k.startswith(("shares", "context-free", "control"))]


def h3_per_draft(res: Result) -> pd.DataFrame | None:
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


def sweep_primary(res: Result | None) -> str | None:
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


def _agreement_n(res: Result, arm: str) -> int | None:
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


def _same_docs(rows: pd.DataFrame, method: str) -> bool:
    """True when every prompt index has one (article, anchor) at every context."""
    if not {"article", "anchor"} <= set(rows.columns):
        return False
    r = rows[rows["method"] == method]
    return bool((r.groupby("prompt")[["article", "anchor"]].nunique() <= 1).all().all())


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


# --------------------------------------------------------------------------------------------
# figures (matplotlib Figures, no pyplot state; None when the data is missing)


def show(fig: Any, dpi: int = 110) -> Any:
    """A Figure as an IPython PNG image (independent of the kernel's matplotlib backend), or
    None, which a notebook cell renders as nothing."""
    if fig is None:
        return None
    import io

    from IPython.display import Image

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    return Image(data=buf.getvalue())


def new_figure(ncols: int = 1, width: float = 6.4, height: float = 3.8):
    import seaborn as sns
    from matplotlib.figure import Figure

    sns.set_theme(style="whitegrid", context="notebook", palette="colorblind")
    fig = Figure(figsize=(width, height), dpi=110, layout="constrained")
    axes = fig.subplots(1, ncols, squeeze=False)[0]
    return fig, axes


def _err(ax, x, v, lo, hi, label, marker="o", ls="-", color=None):
    v, lo, hi = (np.asarray(a, dtype=float) for a in (v, lo, hi))
    yerr = np.vstack([np.clip(v - lo, 0, None), np.clip(hi - v, 0, None)])
    yerr = np.where(np.isfinite(yerr), yerr, 0.0)
    return ax.errorbar(x, v, yerr=yerr, marker=marker, ls=ls, capsize=3, label=label, color=color)


def _labels(p: Profile, res: Result | None) -> dict[str, str]:
    names = {}
    if res is not None:
        for role in ("bigram", "transformer", "ngram"):
            a = role_arm(res, role)
            if a:
                names[a] = f"{role} ({a})" if a != role else role
    return names


def fig_earlier_study() -> Any:
    """The published table: acceptance and speedup vs context (transformer draft)."""
    er = earlier_recomputed()
    t = er[er["strategy"] == "transformer draft"].sort_values("context")
    fig, (a1, a2) = new_figure(2, 9.0, 3.4)
    a1.plot(t["context"], t["acceptance_pct"], "o-")
    a1.set(
        xlabel="context (tokens)",
        ylabel="acceptance (%)",
        xscale="log",
        title="acceptance, as reported",
    )
    a2.plot(t["context"], t["speedup"], "o-", label="speedup as reported")
    base = earlier_baseline_time(er)
    a2.plot(t["context"], t["one_baseline_speedup"], "x--", label=f"{base:.2f} s / time")
    a2.axhline(1.0, color="grey", lw=1)
    a2.set(xlabel="context (tokens)", ylabel="speedup", xscale="log", title="speedup")
    a2.legend()
    fig.suptitle("The earlier study (T4, gemma-3-4b-pt with gemma-3-1b-pt), as reported")
    return fig


def fig_acceptance_vs_context(p: Profile) -> Any:
    """Measured acceptance (accepted / proposed) vs context in the timed sweep, with CIs."""
    sweep = p.get("context_sweep")
    t = sweep_table(sweep)
    if t is None:
        return None
    fig, axes = new_figure(1, 6.4, 3.8)
    ax = axes[0]
    names = _labels(p, sweep)
    for arm, g in t[t["method"] != BASELINE].groupby("method"):
        g = g.sort_values("context")
        n = int(g["n_prompts"].min()) if "n_prompts" in g else None
        _err(
            ax,
            g["context"],
            100 * g["acceptance_rate"],
            100 * g["acceptance_rate_ci_low"],
            100 * g["acceptance_rate_ci_high"],
            f"{names.get(arm, arm)} (n = {n})" if n else names.get(arm, arm),
        )
    ax.set(
        xscale="log",
        xlabel="context (tokens)",
        ylabel="acceptance rate (%)",
        title="measured acceptance in the timed sweep (95% CI)",
    )
    ax.legend(fontsize="small")
    return fig


def fig_agreement_vs_context(p: Profile) -> Any:
    """Left: teacher-forced per-position agreement of every draft vs context. Right: the
    acceptance at K = 4 that agreement implies (book/math.md), beside the earlier study's
    reported acceptance. Two panels because they are different quantities."""
    agr = p.get("agreement")
    tab = pd.DataFrame((agr.summary.get("table") if agr is not None else None) or [])
    if agr is None or not len(tab) or "implied_acceptance" not in tab:
        return None
    fig, (a1, a2) = new_figure(2, 11.0, 4.0)
    names = _labels(p, agr)
    names.setdefault("target_vs_text", "target vs the real next token")
    n = agr.summary.get("n_documents")
    for d, g in tab.groupby("draft", sort=False):
        g = g.sort_values("context")
        ls = "--" if d == "target_vs_text" else "-"
        _err(
            a1,
            g["context"],
            100 * g["agreement"],
            100 * g["ci_low"],
            100 * g["ci_high"],
            names.get(d, d),
            ls=ls,
        )
        if d != "target_vs_text":
            _err(
                a2,
                g["context"],
                100 * g["implied_acceptance"],
                100 * g["implied_acceptance_ci_low"],
                100 * g["implied_acceptance_ci_high"],
                names.get(d, d),
            )
    e = earlier_recomputed()
    t = e[e["strategy"] == "transformer draft"].sort_values("context")
    a2.plot(
        t["context"], t["acceptance_pct"], "s:", color="tab:red", label="earlier study, as reported"
    )
    a1.set(
        xscale="log",
        xlabel="context (tokens)",
        ylabel="per-position agreement (%)",
        title=f"teacher-forced agreement (n = {n} documents)",
    )
    a2.set(
        xscale="log",
        xlabel="context (tokens)",
        ylabel="acceptance at K = 4 (%)",
        title="acceptance implied by agreement",
    )
    for ax in (a1, a2):
        ax.axvspan(10, 100, color="grey", alpha=0.08)
    a1.legend(fontsize="x-small")
    a2.legend(fontsize="x-small")
    return fig


def training_record(p: Profile) -> tuple[str, dict[str, Any]] | None:
    """(draft, record) of the first draft whose training record the agreement stored."""
    agr = p.get("agreement")
    recs = (agr.summary.get("draft_records") if agr is not None else None) or {}
    for name, rec in recs.items():
        if isinstance(rec, dict):
            return name, rec
    return None


def _curve(rec: dict[str, Any]) -> tuple[list[float], dict[str, list[float]]]:
    """(steps, {series: values}) from a training record: a `curve` list of per-step dicts, or
    parallel lists under `steps` and any other numeric list."""
    curve = rec.get("curve") or rec.get("history") or rec.get("log")
    if isinstance(curve, list) and curve and isinstance(curve[0], dict):
        df = pd.DataFrame(curve)
        xk = next((k for k in ("step", "steps", "iteration", "epoch") if k in df), None)
        x = df[xk].tolist() if xk else list(range(len(df)))
        return x, {c: df[c].tolist() for c in df.columns if c != xk and df[c].dtype.kind in "fi"}
    steps = rec.get("steps") if isinstance(rec.get("steps"), list) else None
    series = {
        k: v
        for k, v in rec.items()
        if isinstance(v, list)
        and v
        and all(isinstance(x, (int, float)) for x in v)
        and k != "steps"
    }
    n = max((len(v) for v in series.values()), default=0)
    return (steps or list(range(n))), series


def fig_training_curve(p: Profile) -> Any:
    """The distilled draft's training curve, from the record the agreement stored."""
    found = training_record(p)
    if found is None:
        return None
    name, rec = found
    x, series = _curve(rec)
    if not series:
        return None
    fig, axes = new_figure(1, 6.4, 3.6)
    ax = axes[0]
    for k, v in series.items():
        ax.plot(x[: len(v)], v, label=k)
    ax.set(xlabel="training step", ylabel="value", title=f"{name}: training curve")
    ax.legend(fontsize="small")
    return fig


def fig_speedup_vs_context(p: Profile) -> Any:
    """Paired speedup (each context's own baseline) and the one-baseline speedup, cache on/off."""
    sweeps = [(n, p.get(n)) for n in ("context_sweep", "context_sweep_nocache")]
    sweeps = [(n, r) for n, r in sweeps if r is not None and sweep_table(r) is not None]
    if not sweeps:
        return None
    fig, axes = new_figure(len(sweeps), 5.2 * len(sweeps), 3.9)
    for ax, (name, res) in zip(axes, sweeps, strict=True):
        t = sweep_table(res)
        names = _labels(p, res)
        ref = (res.summary.get("earlier_style") or {}).get("reference_context", 20)
        for arm, g in t[t["method"] != BASELINE].groupby("method"):
            g = g.sort_values("context")
            line = _err(
                ax,
                g["context"],
                g["speedup"],
                g["speedup_ci_low"],
                g["speedup_ci_high"],
                f"{names.get(arm, arm)}: paired",
            )
            col = line[0].get_color()
            if "earlier_style_speedup" in g:
                lo = g.get("earlier_style_speedup_ci_low", g["earlier_style_speedup"])
                hi = g.get("earlier_style_speedup_ci_high", g["earlier_style_speedup"])
                _err(
                    ax,
                    g["context"],
                    g["earlier_style_speedup"],
                    lo,
                    hi,
                    f"{names.get(arm, arm)}: / baseline at {ref}",
                    marker="x",
                    ls="--",
                    color=col,
                )
        ax.axhline(1.0, color="grey", lw=1)
        ax.set(
            xscale="log",
            xlabel="context (tokens)",
            ylabel="speedup",
            title="KV cache " + ("off" if name.endswith("nocache") else "on"),
        )
        ax.legend(fontsize="small")
    return fig


def fig_baseline_growth(p: Profile) -> Any:
    """Seconds per generated token of the baseline (and drafts) vs context, cache on and off."""
    found = [(n, p.get(n)) for n in ("context_sweep", "context_sweep_nocache")]
    found = [(n, r) for n, r in found if r is not None]
    if not found:
        return None
    fig, axes = new_figure(1, 6.4, 3.9)
    ax = axes[0]
    for name, res in found:
        rows = res.rows
        col = _context_col(rows)
        g = rows.groupby(["method", col])[["wall_s", "new_tokens"]].sum().reset_index()
        g["ms_per_token"] = 1000 * g["wall_s"] / g["new_tokens"]
        names = _labels(p, res)
        tag = "cache off" if name.endswith("nocache") else "cache on"
        for arm, h in g.groupby("method"):
            h = h.sort_values(col)
            ax.plot(
                h[col],
                h["ms_per_token"],
                "o" + ("--" if tag == "cache off" else "-"),
                label=f"{names.get(arm, arm)}, {tag}",
            )
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="context (tokens)",
        ylabel="ms per generated token",
        title="time per token vs context",
    )
    ax.legend(fontsize="x-small", ncol=2)
    return fig


def fig_prompt_confound(p: Profile) -> Any:
    """Per-prompt acceptance across contexts (same prompts) and the simulated confound."""
    sweep = p.get("context_sweep")
    arm = sweep_primary(sweep) or role_arm(sweep, "transformer")
    if sweep is None or arm is None or len(sweep_contexts(sweep)) < 2:
        return None
    pp = per_prompt_acceptance(sweep.rows, arm)
    c0, c1 = range_for_test(sweep_contexts(sweep))
    same = acceptance_change(sweep.rows, arm, c0, c1)
    swap = prompt_swap_change(sweep.rows, arm, c0, c1)
    drop = earlier_drop()["drop"]
    fig, (a1, a2) = new_figure(2, 10.0, 3.8)
    for _, g in pp.groupby("prompt"):
        g = g.sort_values("context")
        a1.plot(g["context"], 100 * g["acceptance"], color="tab:blue", alpha=0.25, lw=1)
    mean = pp.groupby("context")["acceptance"].mean()
    a1.plot(mean.index, 100 * mean.values, "o-", color="black", label="mean over prompts")
    a1.set(
        xscale="log",
        xlabel="context (tokens)",
        ylabel="acceptance rate (%)",
        title=f"{arm}: every prompt at every context",
    )
    a1.legend()
    if "draws" in swap:
        a2.hist(
            100 * swap["draws"],
            bins=40,
            color="tab:orange",
            alpha=0.7,
            label="own half of prompts per context",
        )
    a2.axvline(100 * central(same), color="black", label="same prompts")
    a2.axvspan(100 * _f(same["ci_low"]), 100 * _f(same["ci_high"]), color="black", alpha=0.15)
    a2.axvline(-100 * drop, color="tab:red", ls="--", label="published fall 10 -> 100")
    a2.set(
        xlabel=f"acceptance change {c0} -> {c1} (points)",
        ylabel="random splits",
        title="the prompt confound, simulated",
    )
    a2.legend(fontsize="small")
    return fig


def fig_measured_vs_predicted(p: Profile) -> Any:
    res = p.get("k_sweep")
    if res is None or not res.summary.get("table"):
        return None
    t = pd.DataFrame(res.summary["table"]).sort_values("k")
    fixed = t[t["method"] != "adaptive"]
    fig, axes = new_figure(1, 6.4, 3.9)
    ax = axes[0]
    _err(
        ax,
        fixed["k"],
        fixed["speedup"],
        fixed["speedup_ci_low"],
        fixed["speedup_ci_high"],
        "measured (95% CI)",
    )
    ax.plot(
        fixed["k"],
        fixed["predicted_speedup_leviathan"],
        "s--",
        label="predicted: Leviathan, (1-a^(K+1))/((1-a)(Kc+1))",
    )
    ax.plot(
        fixed["k"],
        fixed["predicted_speedup_calibrated"],
        "d:",
        label="predicted: measured verify cost",
    )
    ad = res.summary.get("adaptive") or {}
    if ad.get("speedup") is not None:
        ax.axhline(
            central(ad["speedup"]),
            color="tab:purple",
            lw=1,
            ls="-.",
            label=f"adaptive K (max {ad.get('k_max')})",
        )
    ax.axhline(1.0, color="grey", lw=1)
    ax.set(xlabel="draft length K", ylabel="speedup", title="measured vs predicted speedup")
    ax.legend(fontsize="small")
    return fig


def _draft_arms(p: Profile) -> list[tuple[str, str, dict]]:
    """(experiment, arm, ArmSummary) for the draft arms of the bigram / transformer runs."""
    out = []
    for exp in ("bigram", "transformer_draft"):
        res = p.get(exp)
        if res is None:
            continue
        for arm, s in res.arms.items():
            if arm != BASELINE and s.get("k"):
                out.append((exp, arm, s))
    return out


def fig_position_acceptance(p: Profile) -> Any:
    arms = [(e, a, s) for e, a, s in _draft_arms(p) if s.get("position_acceptance")]
    if not arms:
        return None
    fig, axes = new_figure(1, 6.4, 3.6)
    ax = axes[0]
    for _, arm, s in arms:
        pa = [math.nan if x is None else 100 * x for x in s["position_acceptance"]]
        ax.plot(range(1, len(pa) + 1), pa, "o-", label=arm)
        iid = s.get("per_token_acceptance_iid")
        if finite(iid):
            ax.axhline(100 * iid, ls=":", lw=1, color=ax.lines[-1].get_color())
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set(
        xlabel="draft position i",
        ylabel="P(accept i | 1..i-1 accepted) (%)",
        ylim=(0, 100),
        title="per-position conditional acceptance (dotted: i.i.d. fit a)",
    )
    ax.legend()
    return fig


def fig_accepted_histogram(p: Profile) -> Any:
    arms = [(e, a, s) for e, a, s in _draft_arms(p) if s.get("accepted_histogram")]
    if not arms:
        return None
    fig, axes = new_figure(len(arms), 4.2 * len(arms), 3.4)
    for ax, (_, arm, s) in zip(axes, arms, strict=True):
        h = np.asarray(s["accepted_histogram"], dtype=float)
        ax.bar(range(len(h)), h / h.sum() if h.sum() else h)
        ax.set(
            xlabel="drafts accepted per verification",
            ylabel="share of verifications",
            title=arm,
            xticks=range(len(h)),
        )
    return fig


def fig_time_split(p: Profile) -> Any:
    """Total seconds in prefill, drafting and verification per arm (bigram / transformer runs)."""
    parts = []
    for exp in ("bigram", "transformer_draft"):
        res = p.get(exp)
        if res is None:
            continue
        g = res.rows.groupby("method")[["prefill_s", "draft_s", "verify_s", "wall_s"]].sum()
        for arm, r in g.iterrows():
            if (
                exp == "transformer_draft"
                and arm == BASELINE
                and any(x[0] == BASELINE for x in parts)
            ):
                continue
            other = max(r["wall_s"] - r["prefill_s"] - r["draft_s"] - r["verify_s"], 0.0)
            parts.append((arm, r["prefill_s"], r["draft_s"], r["verify_s"], other))
    if not parts:
        return None
    fig, axes = new_figure(1, 6.4, 0.6 * len(parts) + 1.6)
    ax = axes[0]
    labels = [x[0] for x in parts]
    left = np.zeros(len(parts))
    for j, name in enumerate(["prefill", "draft", "verify", "other"]):
        vals = np.array([x[j + 1] for x in parts])
        ax.barh(labels, vals, left=left, label=name)
        left += vals
    ax.set(xlabel="seconds, summed over prompts", title="where the time goes")
    ax.legend(ncol=4, fontsize="small", loc="lower right")
    return fig


def fig_divergence_margins(p: Profile) -> Any:
    m = identity_margins(p)
    if not any(m.values()):
        return None
    fig, axes = new_figure(1, 6.4, 3.4)
    ax = axes[0]
    for dt, vals in m.items():
        if vals:
            ax.hist(vals, bins=20, alpha=0.6, label=f"{dt} ({len(vals)} divergences)")
    ax.set(
        xlabel="target's top-1 minus top-2 logit at the first differing token",
        ylabel="prompts",
        title="margins where outputs differ",
    )
    ax.legend()
    return fig


# --------------------------------------------------------------------------------------------
# command line: the verdicts for an issue note


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Print the paradox verdicts of one profile.")
    ap.add_argument("--profile", default=book_profile())
    ap.add_argument("--results", type=Path, default=None)
    args = ap.parse_args(argv)
    p = load_profile(args.profile, args.results)
    print(f"profile {p.name}: {len(p.results)} of {len(EXPERIMENTS)} result directories")
    for v in verdicts(p):
        print(f"\n{v.key} ({v.hypothesis}): {v.label}")
        for k, val in v.numbers.items():
            if isinstance(val, str):
                print(f"  {k}: {val}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
