"""analysis.summary.summarize by hand: the per-arm numbers behind every speedup, acceptance and
prediction the book prints (the smoke batch only asked them to be positive). Three prompts,
a baseline and one K = 3 arm, each expected number worked out in the comments from the rows.
Every docstring names the planted bugs the test was seen to catch.
"""

from __future__ import annotations

import pytest

from specdec_study.analysis.summary import summarize
from specdec_study.results.declare import BASELINE


def row(method: str, prompt: int, wall: float, tokens: int, **kw) -> dict:
    base = {
        "method": method,
        "prompt": prompt,
        "wall_s": wall,
        "new_tokens": tokens,
        "tokens_per_s": tokens / wall,
        "k": 0,
        "draft": method,
        "identical": True,
        "repetition_4gram": 0.0,
    }
    return {**base, **kw}


def drafted(prompt: int, wall: float, tokens: int, acc: str, prop: str, draft_s, verify_s, ok):
    a, p = [int(x) for x in acc.split()], [int(x) for x in prop.split()]
    return row(
        "ngram",
        prompt,
        wall,
        tokens,
        k=3,
        accepted=sum(a),
        proposed=sum(p),
        accepted_lengths=a,
        proposed_lengths=p,
        draft_s=draft_s,
        verify_s=verify_s,
        identical=ok,
    )


# Baseline: 2, 4, 6 s for 10, 20, 30 tokens -> 12 s for 60 tokens, 0.2 s per token.
# ngram, K = 3 (stored out of prompt order: summarize pairs by prompt):
#   prompt  wall  calls: accepted / proposed   draft_s  verify_s
#     0     1 s   2 1 / 3 3                    0.3      0.6
#     1     1 s   3 2 1 / 3 3 3                0.45     0.9
#     2     3 s   0 / 3                        0.15     0.3
ROWS = [
    drafted(2, 3.0, 30, "0", "3", 0.15, 0.3, False),
    row(BASELINE, 0, 2.0, 10),
    row(BASELINE, 1, 4.0, 20),
    row(BASELINE, 2, 6.0, 30),
    drafted(0, 1.0, 10, "2 1", "3 3", 0.3, 0.6, True),
    drafted(1, 1.0, 20, "3 2 1", "3 3 3", 0.45, 0.9, True),
]
# speedup: pooled 12 / 5 = 2.4 (per-prompt ratios 2, 4, 2: mean 2.67, median 2; inverted 0.417)
# acceptance: (3 + 6 + 0) / (6 + 9 + 3) = 0.5 (per-prompt mean (0.5 + 0.667 + 0) / 3 = 0.389)
# calls 2 + 3 + 1 = 6; mean accepted length (accepted + one target token per call):
#   (9 + 6) / 6 = 2.5 (accepted per call alone: 1.5)
# c: draft seconds per proposed token over the baseline's seconds per token:
#   (0.9 / 18) / 0.2 = 0.25 (per call instead: (0.9 / 6) / 0.2 = 0.75)
# v: verify seconds per call over the baseline's per token: (1.8 / 6) / 0.2 = 1.5
# a (i.i.d. fit, maximum likelihood): accepted / positions reached; the calls accept 2 1 3 2 1 0
#   of 3 each, reaching min(3, n + 1) = 3 2 3 3 2 1 positions: a = 9 / 14
# Leviathan: E[tokens per call] at a = 9 / 14, K = 3, over (K c + 1) = 1.75; calibrated (the
#   measured mean accepted length and verify cost): 2.5 / 2.25 = 1.1111


def test_paired_speedup_is_the_ratio_of_total_seconds_paired_by_prompt():
    """Planted bugs it catches (each seen failing): the ratio inverted (method / baseline), the
    mean of per-prompt ratios, rows paired in stored order instead of by prompt."""
    s = summarize(ROWS)["ngram"]
    assert s["speedup"]["value"] == pytest.approx(2.4)
    assert s["speedup"]["ci_low"] <= 2.4 <= s["speedup"]["ci_high"] and s["speedup"]["n"] == 3
    assert s["speedup_per_prompt"]["median"] == pytest.approx(2.0)
    assert s["baseline_s_per_token"] == pytest.approx(0.2)
    assert "speedup" not in summarize(ROWS)[BASELINE]


def test_acceptance_and_mean_accepted_length_are_pooled_over_calls():
    """Planted bugs: acceptance as the mean of per-prompt rates, the mean accepted length
    without the target's own token per call (1.5), calls counted from proposed tokens."""
    s = summarize(ROWS)["ngram"]
    assert s["acceptance_rate"]["value"] == pytest.approx(0.5)
    assert s["mean_accepted_length"]["value"] == pytest.approx(2.5)
    assert s["total_wall_s"] == pytest.approx(5.0) and s["new_tokens"] == 60
    assert s["identical_fraction"] == pytest.approx(2 / 3)


def test_position_acceptance_and_histogram_by_hand():
    """Per position, accepted / reached over the six calls: a call with n accepted of d reaches
    positions 0..min(d, n + 1, K) - 1 and takes 0..n - 1.
      reached: pos 0 by all 6 calls; pos 1 by the calls with n >= 1 (5); pos 2 by n >= 2 (3)
      taken:   pos 0 by n >= 1 (5);   pos 1 by n >= 2 (3);            pos 2 by n = 3 (1)
    -> [5/6, 3/5, 1/3]; histogram of n: 0 once, 1 twice, 2 twice, 3 once.
    Planted bugs: every position counted as reached by every call ([5/6, 3/6, 1/6]), the
    rejected position not counted as reached ([1, 1, 1])."""
    s = summarize(ROWS)["ngram"]
    assert s["position_acceptance"] == pytest.approx([5 / 6, 3 / 5, 1 / 3])
    assert s["accepted_histogram"] == [1, 2, 2, 1]


def test_cost_ratio_and_predicted_speedups_by_hand():
    """Planted bugs: c per draft call instead of per drafted token (0.75), the calibrated
    prediction with the 1 of the Leviathan formula instead of the measured v, a fitted from the
    acceptance rate or by inverting the mean accepted length (the root of
    1 + a + a^2 + a^3 = 2.5) instead of the calls' counts."""
    s = summarize(ROWS)["ngram"]
    assert s["cost_ratio"] == pytest.approx(0.25)
    assert s["draft_s_per_token"] == pytest.approx(0.05)
    assert s["verify_s_per_call"] == pytest.approx(0.3)
    assert s["verify_cost_ratio"] == pytest.approx(1.5)
    assert s["draft_share_of_time"] == pytest.approx(0.9 / 5.0)
    a = 9 / 14
    assert s["per_token_acceptance_iid"] == pytest.approx(a, abs=1e-12)
    assert s["predicted_speedup_leviathan"] == pytest.approx((1 + a + a**2 + a**3) / 1.75)
    assert s["predicted_speedup_calibrated"] == pytest.approx(2.5 / 2.25)


def test_scaled_copies_give_a_point_interval():
    """Prompt 1 is prompt 0 doubled (seconds, tokens, proposals): every bootstrap resample
    gives the same pooled ratios, so each interval is its point: speedup [2, 2], acceptance
    [0.25, 0.25], mean accepted length [1.5, 1.5]. Planted bug: the speedup's interval taken
    from the inverted ratio ([0.5, 0.5])."""
    rows = [
        row(BASELINE, 0, 2.0, 10),
        row(BASELINE, 1, 4.0, 20),
        drafted(0, 1.0, 10, "1 0", "2 2", 0.1, 0.2, True),
        drafted(1, 2.0, 20, "2 0 0 0", "2 2 2 2", 0.2, 0.4, True),
    ]
    s = summarize(rows)["ngram"]
    for key, v in (("speedup", 2.0), ("acceptance_rate", 0.25), ("mean_accepted_length", 1.5)):
        iv = s[key]
        assert (iv["value"], iv["ci_low"], iv["ci_high"]) == pytest.approx((v, v, v)), key


def test_no_speedup_without_a_baseline_for_every_prompt():
    """An arm with more prompts than the baseline gets no speedup (nothing to pair with)."""
    s = summarize(ROWS[1:3] + ROWS[4:] + [ROWS[0]])  # baseline on prompts 0 and 1 only
    assert "speedup" not in s["ngram"] and s["ngram"]["acceptance_rate"]["value"] == 0.5
