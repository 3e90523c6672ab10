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

REPO_ROOT = Path(__file__).resolve().parents[1]
EARLIER_CSV = REPO_ROOT / "book" / "data" / "earlier_study.csv"
DEFAULT_PROFILE = "embedded"
REAL_PROFILES = ("embedded", "colab-t4")

# notebook -> the result directories it writes (results/SCHEMA.md)
NOTEBOOKS: dict[str, tuple[str, ...]] = {
    "01_baseline": ("baseline",),
    "02_bigram": ("bigram",),
    "03_transformer_draft": ("transformer_draft",),
    "04_context_sweep": ("context_sweep", "context_sweep_nocache", "agreement"),
    "05_k_sweep": ("k_sweep",),
    "06_sampling": ("sampling",),
    "07_peers": ("peers",),
}
EXPERIMENTS: tuple[str, ...] = tuple(e for names in NOTEBOOKS.values() for e in names)
BASELINE = "baseline"
N_BOOT = 2000
SEED = 0

EARLIER_WAY = "speedup (earlier study's way)"
LABELS = ("supported", "not supported", "inconclusive", "not tested")


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
    """One experiment directory, read back (mirrors experiments.load_result without torch)."""

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


LIST_COLUMNS = ("accepted_lengths", "proposed_lengths", "tokens")


def _read_csv(path: Path) -> pd.DataFrame:
    df = pd.read_csv(path, dtype={c: str for c in LIST_COLUMNS})
    for c in LIST_COLUMNS:
        if c in df.columns:
            df[c] = df[c].fillna("")
    return df


def load_result(path: Path) -> Result | None:
    """The experiment at `path`, or None when any of its four files is missing or unreadable."""
    path = Path(path)
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
        r = load_result(root / name / e)
        if r is not None:
            prof.results[e] = r
    return prof


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


def ci(d: Any, nd: int = 2, scale: float = 1.0, suffix: str = "") -> str:
    """'1.23 [1.10, 1.35]' from a {value|median, ci_low, ci_high} dict."""
    if not isinstance(d, dict):
        return num(_f(d) * scale, nd, suffix)
    v, lo, hi = (central(d), _f(d.get("ci_low")), _f(d.get("ci_high")))
    if not finite(v):
        return "n/a"
    if not (finite(lo) and finite(hi)):
        return num(v * scale, nd, suffix)
    return f"{_r(v * scale, nd)}{suffix} [{_r(lo * scale, nd)}, {_r(hi * scale, nd)}]"


def ci_pct(d: Any, nd: int = 1) -> str:
    return ci(d, nd, 100.0, "%")


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
    return admonition(
        f"The profile `{profile.name}` has no results for "
        f"{', '.join(f'`{e}`' for e in lacking)} (notebook{'s' if len(nbs) > 1 else ''} "
        f"{', '.join(f'`{n}`' for n in nbs)}), so this part is left out. Run "
        f"`make evaluate PROFILE={profile.name}` and rebuild the book.",
        "note",
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


def rate_from_a(a: float, k: int) -> float:
    """The acceptance rate accepted/proposed that i.i.d. per-token acceptance a gives when every
    call drafts K: E[accepted]/K = (a - a^(K+1)) / (K (1 - a))."""
    if a >= 1.0:
        return 1.0
    return (a - a ** (k + 1)) / (k * (1.0 - a))


def a_from_rate(rate: float, k: int) -> float:
    """Invert rate_from_a by bisection (it increases with a)."""
    lo, hi = 0.0, 1.0
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if rate_from_a(mid, k) < rate else (lo, mid)
    return (lo + hi) / 2


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


def _boot_idx(n: int, seed: int = SEED) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, n, size=(N_BOOT, n))


def _interval(point: float, boots: np.ndarray) -> dict[str, float]:
    boots = boots[np.isfinite(boots)]
    if boots.size == 0 or not math.isfinite(point):
        return {"value": point, "ci_low": math.nan, "ci_high": math.nan}
    lo, hi = np.quantile(boots, [0.025, 0.975])
    return {"value": float(point), "ci_low": float(lo), "ci_high": float(hi)}


def growth(rows: pd.DataFrame, method: str, c0: int, c1: int, per_token: bool = True) -> dict:
    """How much slower an arm is at context c1 than at c0: ratio of total seconds (per token if
    per_token), with a bootstrap CI resampling the same prompts at both contexts."""
    w = paired_frame(rows, method, [c0, c1])
    if w.empty:
        return {"value": math.nan, "ci_low": math.nan, "ci_high": math.nan, "n_prompts": 0}
    a, b = w["wall_s"][c0].to_numpy(float), w["wall_s"][c1].to_numpy(float)
    if per_token:
        ta, tb = w["new_tokens"][c0].to_numpy(float), w["new_tokens"][c1].to_numpy(float)
    else:
        ta = tb = np.ones_like(a)
    idx = _boot_idx(a.size)
    with np.errstate(invalid="ignore", divide="ignore"):
        boots = (b[idx].sum(1) / tb[idx].sum(1)) / (a[idx].sum(1) / ta[idx].sum(1))
    point = (b.sum() / tb.sum()) / (a.sum() / ta.sum())
    return {**_interval(point, boots), "n_prompts": int(a.size)}


def acceptance_change(rows: pd.DataFrame, method: str, c0: int, c1: int) -> dict:
    """Pooled acceptance (accepted / proposed) at c1 minus at c0 on the same prompts, with a
    paired bootstrap CI; plus the two pooled values."""
    w = paired_frame(rows, method, [c0, c1])
    if w.empty or "proposed" not in w:
        return {"value": math.nan, "ci_low": math.nan, "ci_high": math.nan, "n_prompts": 0}
    acc0, acc1 = w["accepted"][c0].to_numpy(float), w["accepted"][c1].to_numpy(float)
    pr0, pr1 = w["proposed"][c0].to_numpy(float), w["proposed"][c1].to_numpy(float)
    idx = _boot_idx(acc0.size)
    with np.errstate(invalid="ignore", divide="ignore"):
        boots = acc1[idx].sum(1) / pr1[idx].sum(1) - acc0[idx].sum(1) / pr0[idx].sum(1)
        a0, a1 = acc0.sum() / pr0.sum(), acc1.sum() / pr1.sum()
    return {
        **_interval(a1 - a0, boots),
        "at_c0": float(a0),
        "at_c1": float(a1),
        "n_prompts": int(acc0.size),
    }


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
                "speedup, paired (95% CI)": ci(s.get("speedup"), 2, suffix="x"),
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
                    "speedup": ci(s.get("speedup"), 2, suffix="x"),
                    "acceptance rate": ci_pct(s.get("acceptance_rate")),
                    "mean accepted length": ci(s.get("mean_accepted_length"), 2),
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
    res = p.get("sampling")
    if res is None or not res.summary.get("table"):
        return None
    t = pd.DataFrame(res.summary["table"])
    dist = res.summary.get("distribution_check") or {}
    checked = role_arm(res, "transformer")  # the arm whose distribution is checked
    out = []
    for r in t.itertuples():
        d = by_float_key(dist, r.temperature) or {}
        is_spec = r.method != BASELINE
        if not is_spec:
            chk = d.get("baseline", {})
        elif r.method == checked:
            chk = d.get("speculative", {})
        else:
            chk = {}
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
                ),
                "acceptance rate": "-" if not is_spec else pct(r.acceptance_rate, 1),
                "first-token TVD": num(chk.get("tvd"), 3) if chk else "-",
                "chi-square p": num(chk.get("p_value"), 3) if chk else "-",
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
                ),
                "speedup vs our baseline": ci(
                    {
                        "value": r.get("speedup"),
                        "ci_low": r.get("speedup_ci_low"),
                        "ci_high": r.get("speedup_ci_high"),
                    },
                    2,
                    suffix="x",
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

    def row(self) -> dict[str, str]:
        return {
            "hypothesis": f"{self.key}: {self.hypothesis}",
            "verdict": self.label,
            "key numbers": self.short(),
        }

    def short(self) -> str:
        return "; ".join(f"{k}: {v}" for k, v in self.numbers.items() if isinstance(v, str))


HYPOTHESES = {
    "H1": "recomputation without a KV cache makes long contexts slow",
    "H2": "every speedup divides the one context-20 baseline",
    "H3": "draft and target genuinely diverge as context grows",
    "H4": "which prompts each context sees is a confound",
}


def _not_tested(key: str, p: Profile, *needs: str) -> Verdict:
    return Verdict(
        key,
        HYPOTHESES[key],
        "not tested",
        f"The profile `{p.name}` lacks {', '.join(f'`{n}`' for n in needs)}.",
    )


def _above(a: dict, b: dict) -> bool:
    """a's CI lies entirely above b's."""
    return _f(a.get("ci_low")) > _f(b.get("ci_high"))


def h1_recomputation(p: Profile) -> Verdict:
    """Compare the baseline's slowdown from the smallest to the largest context with the KV
    cache on and off (per generated token, same prompts). Supported when the no-cache slowdown's
    CI lies above the cached one's and above 1; not supported when it lies at or below the
    cached one's (or below 1); otherwise inconclusive."""
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
    c0, c1 = common[0], common[-1]
    g_on = growth(on.rows, BASELINE, c0, c1)
    g_off = growth(off.rows, BASELINE, c0, c1)
    trans = role_arm(off, "transformer")
    t_on = sweep_table(on)
    t_off = sweep_table(off)
    sp = {}
    for name, t, res in (("cache on", t_on, on), ("cache off", t_off, off)):
        arm = role_arm(res, "transformer")
        r = t[(t["method"] == arm) & (t["context"] == c1)] if t is not None else None
        if r is not None and len(r):
            r = r.iloc[0]
            sp[name] = {
                "value": r["speedup"],
                "ci_low": r["speedup_ci_low"],
                "ci_high": r["speedup_ci_high"],
            }
    nums = {
        "contexts": f"{c0} -> {c1}",
        "baseline slowdown per token, cache off": ci(g_off, 2, suffix="x"),
        "baseline slowdown per token, cache on": ci(g_on, 2, suffix="x"),
    }
    for name, d in sp.items():
        nums[f"paired speedup at {c1}, {name}"] = ci(d, 2, suffix="x")
    if _above(g_off, g_on) and _f(g_off["ci_low"]) > 1.0:
        label = "supported"
        why = (
            f"Without the KV cache the baseline's time per token grows by "
            f"{ci(g_off, 2, suffix='x')} from context {c0} to {c1}; with the cache by "
            f"{ci(g_on, 2, suffix='x')}. The intervals do not overlap: recomputation, not the "
            f"context itself, is what makes long contexts slow."
        )
    elif _f(g_off["ci_high"]) <= _f(g_on["ci_low"]) or _f(g_off["ci_high"]) < 1.0:
        label = "not supported"
        why = (
            f"Turning the KV cache off does not make long contexts slower here: the baseline's "
            f"slowdown per token from context {c0} to {c1} is {ci(g_off, 2, suffix='x')} without "
            f"the cache and {ci(g_on, 2, suffix='x')} with it."
        )
    else:
        label = "inconclusive"
        why = (
            f"The baseline's slowdown per token from context {c0} to {c1} is "
            f"{ci(g_off, 2, suffix='x')} without the cache and {ci(g_on, 2, suffix='x')} with "
            f"it; the intervals overlap."
        )
    if trans and "cache off" in sp and "cache on" in sp:
        why += (
            f" The transformer draft's paired speedup at context {c1} is "
            f"{ci(sp['cache off'], 2, suffix='x')} without the cache and "
            f"{ci(sp['cache on'], 2, suffix='x')} with it."
        )
    return Verdict(
        "H1", HYPOTHESES["H1"], label, why, {**nums, "_g_on": g_on, "_g_off": g_off, "_c": (c0, c1)}
    )


def h2_single_baseline(p: Profile) -> Verdict:
    """The published arithmetic (every speedup = 273.80 s / the row's time) checked from the CSV,
    then our own speedups both ways at the largest context: supported when the arithmetic holds
    and our paired speedup's CI lies above the one-baseline speedup's CI (the baseline's own
    growth with context, ignored by one divisor, changes the answer)."""
    er = earlier_recomputed()
    base = earlier_baseline_time(er)
    all_match = bool(er["matches_printed"].all())
    t10 = er[(er["strategy"] == "transformer draft") & (er["context"] == 10)]
    t100 = er[(er["strategy"] == "transformer draft") & (er["context"] == 100)]
    nums: dict[str, Any] = {
        "published rows reproduced by one divisor": f"{int(er['matches_printed'].sum())} of "
        f"{len(er)}",
    }
    if len(t10) and len(t100):
        for tt in (t10, t100):
            nums[f"{base:.2f} s / {tt['time_s'].iloc[0]:.2f} s"] = num(
                tt["one_baseline_speedup"].iloc[0], 2
            )
        s10 = float(t10["one_baseline_speedup"].iloc[0])
        need = s10 * float(t100["time_s"].iloc[0])
        nums[f"published baseline at context 100 needed for a paired {s10:.2f}x"] = num(
            need, 2, " s"
        )
    sweep = p.get("context_sweep")
    t = sweep_table(sweep)
    if t is None:
        v = _not_tested("H2", p, "context_sweep")
        v.text = (
            f"The published arithmetic holds ({nums['published rows reproduced by one divisor']}"
            f" rows equal {base:.2f} s / time), but " + v.text[0].lower() + v.text[1:]
        )
        v.numbers = nums
        return v
    arm = role_arm(sweep, "transformer")
    tr = t[t["method"] == arm].sort_values("context")
    ref = int((sweep.summary.get("earlier_style") or {}).get("reference_context", 20))
    c1 = int(tr["context"].max())
    r1 = tr[tr["context"] == c1].iloc[0]
    paired = {
        "value": r1["speedup"],
        "ci_low": r1["speedup_ci_low"],
        "ci_high": r1["speedup_ci_high"],
    }
    one = {
        "value": r1["earlier_style_speedup"],
        "ci_low": r1.get("earlier_style_speedup_ci_low"),
        "ci_high": r1.get("earlier_style_speedup_ci_high"),
    }
    g = (
        growth(sweep.rows, BASELINE, ref, c1, per_token=False)
        if ref in sweep_contexts(sweep)
        else {"value": math.nan, "ci_low": math.nan, "ci_high": math.nan}
    )
    nums.update(
        {
            f"ours at {c1}: paired": ci(paired, 2, suffix="x"),
            f"ours at {c1}: one context-{ref} baseline": ci(one, 2, suffix="x"),
            f"our baseline time, context {c1} / {ref}": ci(g, 2, suffix="x"),
        }
    )
    gap = _above(paired, one)
    if all_match and gap:
        label = "supported"
        why = (
            f"All {len(er)} published speedups equal {base:.2f} s divided by the row's time "
            f"({num(t10['one_baseline_speedup'].iloc[0], 2)} and "
            f"{num(t100['one_baseline_speedup'].iloc[0], 2)} at contexts 10 and 100). "
            f"In our sweep the baseline itself takes {ci(g, 2, suffix='x')} as long at "
            f"context {c1} as at {ref}, so dividing by the context-{ref} baseline gives "
            f"{ci(one, 2, suffix='x')} at context {c1} where the paired speedup (the same "
            f"context's baseline) is {ci(paired, 2, suffix='x')}: the intervals do not overlap."
        )
    elif all_match:
        label = "inconclusive"
        why = (
            f"All {len(er)} published speedups equal {base:.2f} s / time, but in our sweep the "
            f"one-baseline speedup at context {c1} ({ci(one, 2, suffix='x')}) and the paired one "
            f"({ci(paired, 2, suffix='x')}) overlap: our baseline grows too little "
            f"({ci(g, 2, suffix='x')}) for the divisor to matter here."
        )
    else:
        label = "not supported"
        why = (
            f"Only {nums['published rows reproduced by one divisor']} published speedups are "
            f"{base:.2f} s / time, so the table does not use one divisor."
        )
    return Verdict(
        "H2", HYPOTHESES["H2"], label, why, {**nums, "_paired": paired, "_one": one, "_growth": g}
    )


def h3_divergence(p: Profile) -> Verdict:
    """Teacher-forced agreement of the transformer draft with the target, on the same documents
    and positions, from the smallest to the largest context (timing-free). Supported when the
    change's CI lies below 0; not supported when it excludes a fall as large as the published
    acceptance fall (10 -> 100); otherwise inconclusive."""
    res = p.get("agreement")
    if res is None:
        return _not_tested("H3", p, "agreement")
    head = res.summary.get("headline") or {}
    sweep = p.get("context_sweep")
    arm = role_arm(res, "transformer") or role_arm(sweep, "transformer")
    if arm not in head:
        arm = next((a for a in head if a not in ("target_vs_reference", "bigram")), None)
    if arm is None:
        return _not_tested("H3", p, "a transformer arm in agreement")
    h = head[arm]
    change = {
        "value": h.get("change"),
        "ci_low": h.get("change_ci_low"),
        "ci_high": h.get("change_ci_high"),
    }
    ctx = sorted(int(c) for c in (res.summary.get("contexts") or []))
    drop = earlier_drop()["drop"]
    nums = {
        "contexts": f"{ctx[0]} -> {ctx[-1]}" if ctx else "n/a",
        f"agreement of {arm}, first": pct(h.get("first"), 1),
        f"agreement of {arm}, last": pct(h.get("last"), 1),
        "change (95% CI)": ci(change, 1, 100.0, " pts"),
        "published acceptance fall 10 -> 100": num(100 * drop, 2, " pts"),
    }
    acc = None
    if sweep is not None:
        a_arm = role_arm(sweep, "transformer")
        c0, c1 = range_for_test(sweep_contexts(sweep))
        acc = acceptance_change(sweep.rows, a_arm, c0, c1) if a_arm else None
        if acc is not None and finite(acc["value"]):
            nums[f"measured acceptance change {c0} -> {c1}"] = ci(acc, 1, 100.0, " pts")
    if _f(change["ci_high"]) < 0:
        label = "supported"
        why = (
            f"Teacher-forced agreement of `{arm}` with the target falls from "
            f"{pct(h.get('first'), 1)} to {pct(h.get('last'), 1)} (change "
            f"{ci(change, 1, 100.0, ' points')}); the interval lies below zero."
        )
    elif _f(change["ci_low"]) > -drop:
        label = "not supported"
        why = (
            f"Teacher-forced agreement of `{arm}` goes from {pct(h.get('first'), 1)} to "
            f"{pct(h.get('last'), 1)} (change {ci(change, 1, 100.0, ' points')}): the "
            f"interval excludes a fall as large as the published "
            f"{100 * drop:.2f} points, so the draft does not diverge from the target as "
            f"context grows."
        )
    else:
        label = "inconclusive"
        why = (
            f"Teacher-forced agreement changes by {ci(change, 1, 100.0, ' points')}: the "
            f"interval contains both zero and the published fall of {100 * drop:.2f} points."
        )
    if acc is not None and finite(acc["value"]):
        why += (
            f" The acceptance measured in the timed sweep changes by "
            f"{ci(acc, 1, 100.0, ' points')} over contexts {c0} -> {c1}."
        )
    return Verdict("H3", HYPOTHESES["H3"], label, why, {**nums, "_change": change})


def h4_prompt_confound(p: Profile) -> Verdict:
    """Same prompts at every context (controlled) vs each context drawing its own half of the
    prompts (the confound simulated). Supported when the controlled change excludes the published
    fall while the simulated draws reach it; not supported when the fall persists with the same
    prompts; otherwise inconclusive."""
    sweep = p.get("context_sweep")
    if sweep is None:
        return _not_tested("H4", p, "context_sweep")
    arm = role_arm(sweep, "transformer")
    ctx = sweep_contexts(sweep)
    if arm is None or len(ctx) < 2:
        return _not_tested("H4", p, "a transformer arm at two contexts")
    c0, c1 = range_for_test(ctx)
    same = acceptance_change(sweep.rows, arm, c0, c1)
    swap = prompt_swap_change(sweep.rows, arm, c0, c1)
    drop = earlier_drop()["drop"]
    docs = (
        "same documents and anchors at every context"
        if _same_docs(sweep.rows, arm)
        else "prompts that differ across contexts (check the sweep)"
    )
    nums = {
        "contexts": f"{c0} -> {c1}",
        "acceptance change, same prompts": ci(same, 1, 100.0, " pts"),
        "acceptance change, own half per context (95% range)": (
            f"[{100 * _f(swap['ci_low']):.1f}, {100 * _f(swap['ci_high']):.1f}] pts"
            if finite(swap["ci_low"])
            else "n/a"
        ),
        "prompts": str(same.get("n_prompts")),
        "published fall 10 -> 100": num(100 * drop, 2, " pts"),
    }
    excludes_fall = _f(same["ci_low"]) > -drop
    swap_reaches = _f(swap["ci_low"]) <= -drop
    if excludes_fall and swap_reaches:
        label = "supported"
        why = (
            f"With the {docs}, acceptance changes by {ci(same, 1, 100.0, ' points')} from "
            f"context {c0} to {c1}, which excludes the published fall of {100 * drop:.2f} "
            f"points; when each context sees its own half of the prompts instead, the change "
            f"ranges over {nums['acceptance change, own half per context (95% range)']}, which "
            f"reaches it. Prompt choice alone can produce a fall of the published size."
        )
    elif _f(same["ci_high"]) < 0 and not excludes_fall:
        label = "not supported"
        why = (
            f"With the {docs}, acceptance still falls by {ci(same, 1, 100.0, ' points')} from "
            f"context {c0} to {c1}: the fall does not need a prompt confound."
        )
    else:
        label = "inconclusive"
        why = (
            f"With the {docs}, acceptance changes by {ci(same, 1, 100.0, ' points')} from "
            f"context {c0} to {c1}"
        )
        if not finite(swap["ci_low"]):
            why += (
                f"; with {same.get('n_prompts')} prompts there are too few to give each "
                "context its own half, so the confound cannot be simulated."
            )
        elif excludes_fall:
            why += (
                f"; with its own half of the prompts per context the change ranges over "
                f"{nums['acceptance change, own half per context (95% range)']}, which does "
                f"not reach the published fall of {100 * drop:.2f} points either. Neither "
                "the context nor a random choice of prompts produces a fall of that size "
                "here; a systematic difference between the prompt sets of the earlier study "
                "cannot be ruled out from our data."
            )
        else:
            why += (
                f"; with its own half of the prompts per context the change ranges over "
                f"{nums['acceptance change, own half per context (95% range)']}. Neither "
                "interval excludes the published fall."
            )
    return Verdict(
        "H4", HYPOTHESES["H4"], label, why, {**nums, "_same": same, "_swap": swap, "_c": (c0, c1)}
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
    """Measured acceptance vs context (cached sweep) with CIs, and teacher-forced agreement."""
    sweep, agr = p.get("context_sweep"), p.get("agreement")
    t = sweep_table(sweep)
    if t is None and agr is None:
        return None
    fig, axes = new_figure(2 if agr is not None and t is not None else 1, 10.0, 3.8)
    i = 0
    if t is not None:
        ax = axes[i]
        i += 1
        names = _labels(p, sweep)
        for arm, g in t[t["method"] != BASELINE].groupby("method"):
            g = g.sort_values("context")
            _err(
                ax,
                g["context"],
                100 * g["acceptance_rate"],
                100 * g["acceptance_rate_ci_low"],
                100 * g["acceptance_rate_ci_high"],
                names.get(arm, arm),
            )
        ax.set(
            xscale="log",
            xlabel="context (tokens)",
            ylabel="acceptance rate (%)",
            title="acceptance in the timed sweep (95% CI)",
        )
        ax.legend()
    if agr is not None:
        ax = axes[i]
        tab = pd.DataFrame(agr.summary.get("table") or [])
        if len(tab):
            names = _labels(p, agr)
            names.setdefault("target_vs_reference", "target vs its own largest-context output")
            for d, g in tab.groupby("draft"):
                g = g.sort_values("context")
                _err(
                    ax,
                    g["context"],
                    100 * g["agreement"],
                    100 * g["ci_low"],
                    100 * g["ci_high"],
                    names.get(d, d),
                    ls="--" if d == "target_vs_reference" else "-",
                )
        ax.set(
            xscale="log",
            xlabel="context (tokens)",
            ylabel="agreement with target (%)",
            title="teacher-forced agreement (no timing)",
        )
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
    arm = role_arm(sweep, "transformer")
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
