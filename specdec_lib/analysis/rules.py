"""The verdict rules of the context-length paradox (H1..H4), as pure functions of intervals.

Every rule reduces its hypothesis to one measured quantity Q with a 95% interval [lo, hi] and one
threshold t fixed before any number was seen (the constants below), and decides by where t lies
relative to the interval. `classify` is the only place a label is chosen:

- "supported" when the whole interval lies on the hypothesis' side of t,
- "not supported" when the whole interval lies on the other side,
- "inconclusive" when the interval contains t, or when Q or its interval is missing.

The three cases partition every input (a strict inequality, its mirror and the rest), so no
interval can satisfy two labels; tests/test_rules.py reaches each one for every rule. The rule
texts (RULES) are what the book prints before the numbers.

Knows nothing about torch, result files or the book: inputs are plain numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

SUPPORTED = "supported"
NOT_SUPPORTED = "not supported"
INCONCLUSIVE = "inconclusive"
NOT_TESTED = "not tested"
LABELS = (SUPPORTED, NOT_SUPPORTED, INCONCLUSIVE, NOT_TESTED)

# Thresholds, fixed before the runs (the book prints them with the rules).
H1_EXTRA_GROWTH = 1.10  # recomputation: cache-off per-token slowdown / cache-on slowdown
H2_BASELINE_GROWTH = 1.10  # the one-divisor arithmetic matters: baseline time c_hi / c_ref
MATERIAL_FALL = 0.05  # H3 and H4: a fall of 5 points of acceptance at K = 4 (a third of 14.85)

Side = Literal["above", "below"]


@dataclass(frozen=True)
class Interval:
    """A point estimate with its 95% interval and the number of units (documents, prompts)
    it was resampled over."""

    value: float
    lo: float
    hi: float
    n: int = 0

    @classmethod
    def of(cls, d: dict | None, n: int | None = None) -> Interval:
        """From a {value|median|mean, ci_low, ci_high[, n...]} dict; NaN where missing."""
        d = d or {}
        v = d.get("value", d.get("median", d.get("mean")))
        count = n if n is not None else d.get("n", d.get("n_prompts", d.get("n_documents", 0)))
        return cls(
            _float_or_nan(v),
            _float_or_nan(d.get("ci_low")),
            _float_or_nan(d.get("ci_high")),
            int(count or 0),
        )

    @property
    def finite(self) -> bool:
        """Whether the value and both ends of its interval are finite numbers."""
        return all(math.isfinite(x) for x in (self.value, self.lo, self.hi))


def _float_or_nan(x: object) -> float:
    try:
        return float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan


def classify(q: Interval, threshold: float, supported_side: Side) -> str:
    """The one three-way rule: where `threshold` lies relative to q's interval."""
    if not q.finite or q.lo > q.hi:
        return INCONCLUSIVE
    above, below = q.lo > threshold, q.hi < threshold  # never both, since lo <= hi
    if supported_side == "above":
        return SUPPORTED if above else NOT_SUPPORTED if below else INCONCLUSIVE
    return SUPPORTED if below else NOT_SUPPORTED if above else INCONCLUSIVE


RULES = {
    "H1": (
        "Q = (baseline time per token at the largest / the smallest shared context, KV cache "
        "off) divided by (the same ratio with the cache on), on the same prompts, contexts and "
        f"token counts, with a paired 95% interval over prompts. Supported when the whole "
        f"interval lies above {H1_EXTRA_GROWTH:.2f} (recomputation adds at least "
        f"{100 * (H1_EXTRA_GROWTH - 1):.0f}% to the growth); not supported when it lies below "
        f"{H1_EXTRA_GROWTH:.2f}; inconclusive when it contains {H1_EXTRA_GROWTH:.2f}."
    ),
    "H2": (
        "First, every published speedup must equal the one context-20 baseline divided by the "
        "row's time (to its printed two decimals); if not, not supported. Then Q = our "
        "baseline's time at context 100 / at context 20 on the same prompts, with a paired 95% "
        f"interval: supported when the whole interval lies above {H2_BASELINE_GROWTH:.2f} (one "
        "divisor then misstates the speedup by more than 10%); not supported when it lies below; "
        "inconclusive when it contains it."
    ),
    "H3": (
        "Q = the change from context 10 to 100 of the acceptance at K = 4 implied by "
        "teacher-forced per-position agreement, (a - a^5) / (4 (1 - a)), for the primary draft "
        "that does not share the target's hidden states, on the same documents and positions, "
        "with a paired 95% interval over documents. Supported when the whole interval lies below "
        f"-{100 * MATERIAL_FALL:.0f} points (a material fall); not supported when it lies above "
        f"-{100 * MATERIAL_FALL:.0f} points; inconclusive when it contains -"
        f"{100 * MATERIAL_FALL:.0f}. The other drafts get the same rule, shown beside it."
    ),
    "H4": (
        "Q = the change in measured acceptance from context 10 to 100 of the timed sweep's "
        "draft that does not share the target's hidden states, on the same prompts at every "
        "context, with a paired 95% interval. Supported (a fall needs prompts that differ "
        f"across contexts) when the whole interval lies above -{100 * MATERIAL_FALL:.0f} "
        f"points; not supported (a material fall remains with the prompts fixed) when it lies "
        f"below -{100 * MATERIAL_FALL:.0f} points; inconclusive when it contains it."
    ),
}


def h1_rule(extra_growth: Interval) -> str:
    """H1's label: supported when the extra growth's interval lies above H1_EXTRA_GROWTH."""
    return classify(extra_growth, H1_EXTRA_GROWTH, "above")


def h2_rule(published_one_divisor: bool, baseline_growth: Interval) -> str:
    """H2's label: not supported unless one divisor reproduces every row, then the growth rule."""
    if not published_one_divisor:
        return NOT_SUPPORTED
    return classify(baseline_growth, H2_BASELINE_GROWTH, "above")


def h3_rule(implied_acceptance_change: Interval) -> str:
    """H3's label: supported when the implied acceptance change lies below -MATERIAL_FALL."""
    return classify(implied_acceptance_change, -MATERIAL_FALL, "below")


def h4_rule(acceptance_change_same_prompts: Interval) -> str:
    """H4's label: supported when the same-prompt acceptance change lies above -MATERIAL_FALL."""
    return classify(acceptance_change_same_prompts, -MATERIAL_FALL, "above")


def implied_acceptance(a: float, k: int = 4) -> float:
    """The acceptance rate accepted/proposed that i.i.d. per-token acceptance a gives when every
    call drafts K (book/math.md): (a - a^(K+1)) / (K (1 - a)); 1 at a = 1."""
    if not math.isfinite(a):
        return math.nan
    if a >= 1.0:
        return 1.0
    return (a - a ** (k + 1)) / (k * (1.0 - a))
