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

import hashlib
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

SUPPORTED = "supported"
NOT_SUPPORTED = "not supported"
INCONCLUSIVE = "inconclusive"
NOT_TESTED = "not tested"
LABELS = (SUPPORTED, NOT_SUPPORTED, INCONCLUSIVE, NOT_TESTED)

# Thresholds, fixed before the runs (the book prints them with the rules). This is the rules'
# second round: H3 and H4 moved to tokens per call on the target's own continuation, decided on
# the draft nearest the published level, committed before the batch that the book shows (the
# first round's H3 rule was revised after a batch existed: the book says so).
H1_EXTRA_GROWTH = 1.10  # recomputation: cache-off per-token slowdown / cache-on slowdown
H2_BASELINE_GROWTH = 1.10  # the one-divisor arithmetic matters: baseline time c_hi / c_ref
# H3 and H4: tokens per call at K = 4, context 100 over context 10. Below 0.95 is a material
# fall: at a fixed cost per call, 5% more time per token. The published rows fall to 0.87.
MATERIAL_RATIO = 0.95
PUBLISHED_ACCEPTANCE = (0.8944, 0.7459)  # the earlier study's acceptance at contexts 10, 100
PUBLISHED_K = 4
# H3 is decided on the divergent draft whose agreement at context 10 (on the target's own
# continuation) is nearest the published level, if one lies within LEVEL_BAND of it; chosen by
# its level at context 10 alone, never by its change.
LEVEL_BAND = 0.05
POWER_Z = (1.959963984540054, 0.8416212335729143)  # z at alpha = 0.05 two-sided, 80% power

Side = Literal["above", "below"]


@dataclass(frozen=True)
class Quantity:
    """A rule's measured quantity Q: a point estimate with its 95% interval and the number of
    units (documents, prompts) it was resampled over, read back from a stored summary (`of`).
    Not `stats.Interval`, which the bootstrap computes with its method and level: this one is
    what a rule reads, NaN where the summary lacks a number, and keeps rules free of scipy."""

    value: float
    lo: float
    hi: float
    n: int = 0

    @classmethod
    def of(cls, d: dict | None, n: int | None = None) -> Quantity:
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


def classify(q: Quantity, threshold: float, supported_side: Side) -> str:
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
        "Q = tokens per target call at K = 4 at context 100 divided by the same at context 10, "
        "replayed on the target's own greedy continuation (what a greedy run emits), same "
        "documents at both contexts, with a paired 95% interval over documents. It is decided "
        "on the draft that computes apart from the target whose agreement at context 10 is "
        "nearest the earlier study's implied level, when one lies within "
        f"{LEVEL_BAND:.2f} of it (not tested otherwise). Supported when the whole interval lies "
        f"below {MATERIAL_RATIO:.2f} (a material fall: 5% more time per token at a fixed cost "
        f"per call); not supported when it lies above {MATERIAL_RATIO:.2f}; inconclusive when it "
        f"contains {MATERIAL_RATIO:.2f}. Every other draft of the ladder gets the same rule, "
        "shown beside it as a dose-response."
    ),
    "H4": (
        "Q = the same ratio measured in the timed sweep (real runs, tokens per call) for its "
        "primary draft, on the same prompts at every context, with a paired 95% interval. "
        "Supported (a fall needs prompts that differ across contexts) when the whole interval "
        f"lies above {MATERIAL_RATIO:.2f}; not supported (a material fall remains with the "
        f"prompts fixed) when it lies below {MATERIAL_RATIO:.2f}; inconclusive when it contains "
        "it."
    ),
}


def h1_rule(extra_growth: Quantity) -> str:
    """H1's label: supported when the extra growth's interval lies above H1_EXTRA_GROWTH."""
    return classify(extra_growth, H1_EXTRA_GROWTH, "above")


def h2_rule(published_one_divisor: bool, baseline_growth: Quantity) -> str:
    """H2's label: not supported unless one divisor reproduces every row, then the growth rule."""
    if not published_one_divisor:
        return NOT_SUPPORTED
    return classify(baseline_growth, H2_BASELINE_GROWTH, "above")


def h3_rule(tokens_per_call_ratio: Quantity) -> str:
    """H3's label: supported when the replayed tokens-per-call ratio lies below MATERIAL_RATIO."""
    return classify(tokens_per_call_ratio, MATERIAL_RATIO, "below")


def h4_rule(tokens_per_call_ratio_same_prompts: Quantity) -> str:
    """H4's label: supported when the timed same-prompt ratio lies above MATERIAL_RATIO."""
    return classify(tokens_per_call_ratio_same_prompts, MATERIAL_RATIO, "above")


THRESHOLDS = {
    "H1": H1_EXTRA_GROWTH,
    "H2": H2_BASELINE_GROWTH,
    "H3": MATERIAL_RATIO,
    "H4": MATERIAL_RATIO,
}


@dataclass(frozen=True)
class Power:
    """What a verdict's design can detect: the smallest distance from the threshold that its
    interval would exclude 80% of the time (normal approximation, the interval's own standard
    error), and for an undecided verdict the units (prompts, documents) that would decide it
    if the estimate stayed where it is (None when it sits on the threshold)."""

    n: int
    detectable: float
    units_to_decide: int | None


def power(q: Quantity, threshold: float) -> Power:
    """Power of a rule's design at n = q.n from q's 95% interval: se = width / (2 z_0.975),
    detectable = (z_0.975 + z_0.8) se; units to decide = n (detectable / |Q - t|)^2."""
    za, zb = POWER_Z
    if not q.finite or q.n < 2:
        return Power(q.n, math.nan, None)
    se = (q.hi - q.lo) / (2 * za)
    detectable = (za + zb) * se
    gap = abs(q.value - threshold)
    if classify(q, threshold, "above") != INCONCLUSIVE:
        return Power(q.n, detectable, None)
    need = math.ceil(q.n * (detectable / gap) ** 2) if gap > 0 else None
    return Power(q.n, detectable, need)


def published_tokens_per_call(acceptance: float, k: int = PUBLISHED_K) -> float:
    """Tokens per call of a run whose every call drafts k at this acceptance: 1 + k acceptance."""
    return 1.0 + k * acceptance


def published_ratio() -> float:
    """The earlier study's tokens-per-call ratio, context 100 over 10 (H3's scale)."""
    a10, a100 = PUBLISHED_ACCEPTANCE
    return published_tokens_per_call(a100) / published_tokens_per_call(a10)


def agreement_for_acceptance(acceptance: float, k: int = PUBLISHED_K) -> float:
    """The per-token agreement a whose implied acceptance at k is `acceptance` (bisection;
    implied_acceptance rises with a)."""
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if implied_acceptance(mid, k) < acceptance else (lo, mid)
    return (lo + hi) / 2


def published_level() -> float:
    """The per-token agreement the earlier study's draft implies at context 10."""
    return agreement_for_acceptance(PUBLISHED_ACCEPTANCE[0])


def decisive_draft(levels: dict[str, float | None]) -> str | None:
    """H3's draft: the one whose level (agreement at context 10) is nearest the published
    level, when within LEVEL_BAND of it; None when no draft is that close. Ties: first listed."""
    target = published_level()
    near = [
        (abs(a - target), i, d)
        for i, (d, a) in enumerate(levels.items())
        if a is not None and math.isfinite(a) and abs(a - target) <= LEVEL_BAND
    ]
    return min(near)[2] if near else None


def implied_acceptance(a: float, k: int = 4) -> float:
    """The acceptance rate accepted/proposed that i.i.d. per-token acceptance a gives when every
    call drafts K (book/math.md): (a - a^(K+1)) / (K (1 - a)); 1 at a = 1."""
    if not math.isfinite(a):
        return math.nan
    if a >= 1.0:
        return 1.0
    return (a - a ** (k + 1)) / (k * (1.0 - a))


def rules_sha256() -> str:
    """The hash of this file: each result records the rules in force when it was measured, so
    the book can say whether its verdicts were decided by rules older than the numbers."""
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()
