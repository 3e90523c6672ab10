"""The change of a one-divisor speedup between two contexts, written as three factors.

A row's speedup the earlier study's way is S(c) = (one baseline step at the reference context) /
(the row's time per token). With tau(c) tokens per target call, r(c) the cost of one call in
steps of the *paired* baseline at the same context, and D(c) that paired baseline's step over
the reference step (the divisor's error), S = tau / (r D) exactly, so

    ln S(c1) / S(c0) = ln tau1 / tau0  -  ln r1 / r0  -  ln D1 / D0.

Each term is one factor's contribution to the log change; its share is the term over the sum.
Leviathan's formula reads r as 1 + K c (the draft's cost c per token, one target call per
step), so c = (r - 1) / K.

The earlier study printed acceptance, time and one context-20 baseline, never a paired
baseline: for its rows r and D are not separable, and `published` reports r D (the cost of a
call against the one divisor) with D unknown. Its acceptance is read two ways: as a per-token
rate a (tau = (1 - a^(K+1)) / (1 - a)) and as accepted / proposed p (tau = 1 + K p). Ours
(`measured`) come from a sweep's per-prompt rows, pooled over the prompts an arm ran, paired
with the baseline on the same prompts. Point estimates only (no interval). Torch-free; knows
nothing about the book.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

PER_TOKEN, ACCEPTED_PROPOSED = "per-token rate", "accepted / proposed"
READINGS = (PER_TOKEN, ACCEPTED_PROPOSED)
FACTORS = ("tokens per call", "cost of a call", "divisor")


@dataclass(frozen=True)
class Decomposition:
    """One arm's factors at two contexts. `divisor` is None where it is unknown (the published
    rows): then `call_cost` is the cost of a call against the one divisor (r D)."""

    source: str
    c0: int
    c1: int
    tokens_per_call: tuple[float, float]
    call_cost: tuple[float, float]
    divisor: tuple[float, float] | None
    k: int = 4

    @property
    def speedup(self) -> tuple[float, float]:
        """The one-divisor speedup at c0 and c1: tau / (r D)."""
        d = self.divisor or (1.0, 1.0)
        return tuple(
            t / (r * x) for t, r, x in zip(self.tokens_per_call, self.call_cost, d, strict=True)
        )  # type: ignore[return-value]

    @property
    def draft_cost(self) -> tuple[float, float]:
        """Leviathan's c at c0 and c1: (r - 1) / K (against the one divisor when D is unknown)."""
        return tuple((r - 1.0) / self.k for r in self.call_cost)  # type: ignore[return-value]

    def contributions(self) -> dict[str, float]:
        """Each factor's term of ln S(c1) / S(c0); the divisor's is NaN when unknown."""
        t0, t1 = self.tokens_per_call
        r0, r1 = self.call_cost
        out = {"tokens per call": math.log(t1 / t0), "cost of a call": -math.log(r1 / r0)}
        out["divisor"] = -math.log(self.divisor[1] / self.divisor[0]) if self.divisor else math.nan
        return out

    def total(self) -> float:
        """ln S(c1) / S(c0)."""
        s0, s1 = self.speedup
        return math.log(s1 / s0)

    def shares(self) -> dict[str, float]:
        """Each factor's share of the log change (NaN when the change is zero or unknown)."""
        tot = self.total()
        return {
            k: (v / tot if tot != 0 and math.isfinite(v) else math.nan)
            for k, v in self.contributions().items()
        }


def tokens_per_call(acceptance: float, reading: str, k: int = 4) -> float:
    """Tokens per target call that a published acceptance implies under one reading."""
    if reading == PER_TOKEN:
        return k + 1.0 if acceptance >= 1 else (1 - acceptance ** (k + 1)) / (1 - acceptance)
    if reading == ACCEPTED_PROPOSED:
        return 1.0 + k * acceptance
    raise ValueError(f"unknown reading {reading!r}; expected one of {READINGS}")


def _published_rows(published: pd.DataFrame) -> tuple[pd.DataFrame, float]:
    t = published[published["strategy"] == "transformer draft"].set_index("context")
    base = float(
        published.loc[published["strategy"] == "baseline autoregressive", "time_s"].iloc[0]
    )
    return t, base


def published(
    published: pd.DataFrame, reading: str, c0: int = 10, c1: int = 100, k: int = 4
) -> Decomposition:
    """The earlier study's transformer-draft rows c0 -> c1 under one reading of acceptance: tau
    from acceptance, r D = tau x time / the one baseline time (S = base / time = tau / (r D))."""
    t, base = _published_rows(published)
    tau = tuple(
        tokens_per_call(float(t.loc[c, "acceptance_pct"]) / 100, reading, k) for c in (c0, c1)
    )
    rd = tuple(tau[i] * float(t.loc[c, "time_s"]) / base for i, c in enumerate((c0, c1)))
    return Decomposition(f"published ({reading})", c0, c1, tau, rd, None, k)  # type: ignore[arg-type]


def acceptance_only_speedup(d: Decomposition) -> float:
    """The speedup at c1 if only tokens per call had changed from c0 (call cost and divisor held
    at their c0 values): S(c0) tau1 / tau0."""
    return d.speedup[0] * d.tokens_per_call[1] / d.tokens_per_call[0]


def implied_divisor_growth(d: Decomposition) -> float:
    """For a published decomposition: how much the paired baseline's step must have grown from
    c0 to c1 if the cost of a call in its own baseline's steps stayed constant (r1 = r0), i.e.
    (r D)1 / (r D)0."""
    return d.call_cost[1] / d.call_cost[0]


def measured(
    rows: pd.DataFrame,
    method: str,
    c0: int,
    c1: int,
    ref: int,
    source: str,
    baseline: str = "baseline",
    k: int = 4,
) -> Decomposition | None:
    """One arm of a timed sweep (per-prompt rows with method, context, prompt, wall_s,
    new_tokens, target_calls) from c0 to c1, against the baseline at `ref`, pooled over the
    prompts the arm ran at both contexts (the baseline on the same prompts). The baseline arm
    itself is tau = r = 1 (one token per call, its own step). None when a context is missing."""
    col = "context" if "context" in rows.columns else "context_tokens"
    r = rows.copy()
    r[col] = r[col].astype(int)
    arm = r[(r["method"] == method) & r[col].isin([c0, c1])]
    prompts = set(arm["prompt"])
    for c in (c0, c1):
        prompts &= set(arm.loc[arm[col] == c, "prompt"])
    base = r[(r["method"] == baseline) & r["prompt"].isin(prompts)]
    if not prompts or not {c0, c1, ref} <= set(base[col]):
        return None

    def step(frame: pd.DataFrame, c: int) -> float:
        f = frame[frame[col] == c]
        return float(f["wall_s"].sum()) / float(f["new_tokens"].sum())

    b = {c: step(base, c) for c in (c0, c1, ref)}
    tau, cost = [], []
    for c in (c0, c1):
        if method == baseline:
            tau.append(1.0)
            cost.append(1.0)
            continue
        f = arm[arm[col] == c]
        calls = float(f["target_calls"].sum()) - len(f)  # minus each run's prefill
        tau.append(float(f["new_tokens"].sum()) / calls)
        cost.append(float(f["wall_s"].sum()) / calls / b[c])
    div = (b[c0] / b[ref], b[c1] / b[ref])
    return Decomposition(source, c0, c1, tuple(tau), tuple(cost), div, k)  # type: ignore[arg-type]


def table(ds: list[Decomposition]) -> pd.DataFrame:
    """One row per decomposition: the speedup at both contexts, each factor at both, Leviathan's
    c at both, and each factor's share of the log change (numbers, unformatted)."""
    out = []
    for d in ds:
        row = {
            "source": d.source,
            "contexts": f"{d.c0} -> {d.c1}",
            "speedup_c0": d.speedup[0],
            "speedup_c1": d.speedup[1],
            "tokens_per_call_c0": d.tokens_per_call[0],
            "tokens_per_call_c1": d.tokens_per_call[1],
            "c_c0": d.draft_cost[0],
            "c_c1": d.draft_cost[1],
            "divisor_c0": d.divisor[0] if d.divisor else math.nan,
            "divisor_c1": d.divisor[1] if d.divisor else math.nan,
            "log_change": d.total(),
        }
        row.update({f"share_{k}": v for k, v in d.shares().items()})
        out.append(row)
    return pd.DataFrame(out)
