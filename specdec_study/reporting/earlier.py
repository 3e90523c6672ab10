"""The earlier study's published table (book/data/earlier_study.csv, the one hand-typed data
file) and its recomputation: every published speedup is one context-20 baseline / the row's time.
Knows nothing about our results."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from specdec_lib import ROOT
from specdec_study.reporting.number_format import finite

EARLIER_CSV = ROOT / "book" / "data" / "earlier_study.csv"


def earlier_study(path: Path = EARLIER_CSV) -> pd.DataFrame:
    """The published table, as reported by the earlier study."""
    return pd.read_csv(path)


def earlier_baseline_time(df: pd.DataFrame | None = None) -> float:
    """The published baseline's time in seconds (the one context-20 divisor)."""
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
