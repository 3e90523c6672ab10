"""The quantities behind the verdicts, by hand: each test writes out a small table of per-prompt
rows, works its expected numbers out in comments, and compares analysis.changes (and, end to end,
the H1 and H2 findings of analysis.verdicts) with them. Every docstring names the planted bug
the test catches; a formula that stays on the same side of a threshold cannot pass here.

Tables whose prompts are scaled copies of each other (prompt 1 = 2 x prompt 0 in every column)
give the same ratio on every bootstrap resample, so their interval is known by hand too: [Q, Q].
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from specdec_study.analysis import changes, rules, verdicts
from specdec_study.analysis.changes import (
    acceptance_change,
    extra_growth,
    growth,
    prompt_swap_change,
    same_documents,
)
from specdec_study.results.declare import BASELINE
from specdec_study.results.read import Profile
from specdec_study.results.store import ExperimentResult


def timed(rows: list[tuple[str, int, int, float, int]]) -> pd.DataFrame:
    """(method, prompt, context, wall_s, new_tokens) rows."""
    return pd.DataFrame(rows, columns=["method", "prompt", "context", "wall_s", "new_tokens"])


def accepts(rows: list[tuple[str, int, int, int, int]]) -> pd.DataFrame:
    """(method, prompt, context, accepted, proposed) rows."""
    return pd.DataFrame(rows, columns=["method", "prompt", "context", "accepted", "proposed"])


# ---------------------------------------------------------------------------- extra_growth (H1)

# Cached sweep: prompt 1 is prompt 0 doubled; prompt 2 is only here (dropped: not shared).
ON = timed(
    [
        (BASELINE, 0, 10, 1.0, 10),
        (BASELINE, 0, 100, 2.0, 10),
        (BASELINE, 1, 10, 2.0, 20),
        (BASELINE, 1, 100, 4.0, 20),
        (BASELINE, 2, 10, 1.0, 10),
        (BASELINE, 2, 100, 90.0, 10),
        ("ngram", 0, 10, 1.0, 10),  # another arm: not the baseline, ignored
        ("ngram", 0, 100, 50.0, 10),
    ]
)
# Uncached sweep: prompt 1 is prompt 0 doubled; prompt 3 is only here (dropped).
OFF = timed(
    [
        (BASELINE, 0, 10, 1.0, 10),
        (BASELINE, 0, 100, 16.0, 20),
        (BASELINE, 1, 10, 2.0, 20),
        (BASELINE, 1, 100, 32.0, 40),
        (BASELINE, 3, 10, 1.0, 10),
        (BASELINE, 3, 100, 1.0, 10),
    ]
)
# Shared prompts 0 and 1:
#   cache on : per token at 10 = (1 + 2) / (10 + 20) = 0.1 s, at 100 = (2 + 4) / (10 + 20) = 0.2 s
#              growth_on  = 0.2 / 0.1 = 2
#   cache off: per token at 10 = (1 + 2) / (10 + 20) = 0.1 s, at 100 = (16 + 32) / (20 + 40) = 0.8 s
#              growth_off = 0.8 / 0.1 = 8
#   Q = growth_off / growth_on = 8 / 2 = 4
# Wrong variants: inverted 2 / 8 = 0.25; per run (48 / 3) / (6 / 3) = 16 / 2 = 8; with prompt 2
# or 3 kept, the pooled sums change (0.2 -> (6 + 90) / 40 = 2.4 at 100 with the cache on).
Q_H1 = 4.0


def test_extra_growth_is_uncached_per_token_growth_over_cached_on_shared_prompts():
    """Catches: the ratio inverted (on / off), per-run instead of per-token seconds, prompts
    outside the shared set kept, another arm's rows mixed into the baseline's."""
    q = extra_growth(ON, OFF, 10, 100)
    assert q["value"] == pytest.approx(Q_H1)
    assert q["n"] == 2


def test_extra_growth_interval_of_scaled_copies_is_the_point():
    """Catches: an interval that is not Q's (left NaN, or one sweep's growth: [8, 8]); with
    prompt 1 = 2 x prompt 0 every resample of the shared prompts gives Q = 4."""
    q = extra_growth(ON, OFF, 10, 100)
    assert q["ci_low"] == pytest.approx(Q_H1) and q["ci_high"] == pytest.approx(Q_H1)


def test_extra_growth_needs_two_shared_prompts():
    """Catches: a Q computed from one prompt (no interval possible) instead of NaN."""
    q = extra_growth(ON[ON["prompt"] == 0], OFF, 10, 100)
    assert math.isnan(q["value"]) and q["n"] == 1


# ---------------------------------------------------------------------------------- growth

GROWTH_ROWS = timed(
    [
        ("ngram", 0, 10, 1.0, 10),
        ("ngram", 0, 50, 4.0, 10),
        ("ngram", 1, 10, 3.0, 10),
        ("ngram", 1, 50, 8.0, 30),
        ("ngram", 2, 10, 5.0, 10),  # no context-50 row: not paired, dropped
        (BASELINE, 0, 10, 1.0, 10),  # another arm, ignored
        (BASELINE, 0, 50, 100.0, 10),
    ]
)
# Prompts 0 and 1:
#   per token: at 10 (1 + 3) / (10 + 10) = 0.2 s, at 50 (4 + 8) / (10 + 30) = 0.3 s -> 1.5
#   per run:   at 10 1 + 3 = 4 s,             at 50 4 + 8 = 12 s             -> 3.0
# Wrong variants: inverted 0.2 / 0.3 = 0.667; the mean of per-prompt per-token ratios
# ((4 / 10) / (1 / 10) + (8 / 30) / (3 / 10)) / 2 = (4 + 0.889) / 2 = 2.44; per run for per
# token (3.0) and per token for per run (1.5).


def test_growth_per_token_pools_seconds_and_tokens_over_prompts():
    """Catches: ratio inverted (c0 / c1), per-run instead of per-token, a mean of per-prompt
    ratios instead of the ratio of pooled sums, unpaired prompts kept."""
    g = growth(GROWTH_ROWS, "ngram", 10, 50)
    assert g["value"] == pytest.approx(1.5)
    assert g["n_prompts"] == 2
    assert g["ci_low"] <= g["value"] <= g["ci_high"]


def test_growth_per_run_ignores_token_counts():
    """Catches: per_token=False still dividing by tokens (per-token vs per-run swapped)."""
    assert growth(GROWTH_ROWS, "ngram", 10, 50, per_token=False)["value"] == pytest.approx(3.0)


def test_growth_of_an_absent_arm_is_nan():
    """Catches: an arm with no rows giving a number (0 or 1) instead of NaN."""
    g = growth(GROWTH_ROWS, "self", 10, 50)
    assert math.isnan(g["value"]) and g["n_prompts"] == 0 and g["n"] == 0


# -------------------------------------------------------------------------- acceptance_change

ACCEPT_ROWS = accepts(
    [
        ("ngram", 0, 10, 1, 4),
        ("ngram", 0, 100, 2, 2),
        ("ngram", 1, 10, 3, 4),
        ("ngram", 1, 100, 0, 6),
        (BASELINE, 0, 10, 0, 0),  # the baseline proposes nothing; ignored
        (BASELINE, 0, 100, 0, 0),
    ]
)
# pooled at 10: (1 + 3) / (4 + 4) = 0.5; at 100: (2 + 0) / (2 + 6) = 0.25; change = -0.25
# Wrong variants: mean of per-prompt rates (0.25 + 0.75) / 2 = 0.5 and (1 + 0) / 2 = 0.5 -> 0;
# c0 and c1 swapped -> +0.25; a ratio instead of a difference -> 0.5.


def test_acceptance_change_is_pooled_acceptance_at_c1_minus_at_c0():
    """Catches: per-prompt rates averaged instead of pooled (accepted / proposed over prompts),
    the sign flipped (c0 - c1), a ratio instead of a difference."""
    ch = acceptance_change(ACCEPT_ROWS, "ngram", 10, 100)
    assert ch["value"] == pytest.approx(-0.25)
    assert ch["at_c0"] == pytest.approx(0.5) and ch["at_c1"] == pytest.approx(0.25)
    assert ch["n_prompts"] == 2
    assert ch["ci_low"] <= ch["value"] <= ch["ci_high"]


def test_acceptance_change_without_proposals_is_nan_on_zero_prompts():
    """Catches: a NaN result that claims prompts (n_prompts 1 instead of 0) when the rows carry
    no proposals (a timing-only table) or the arm is absent."""
    for rows, arm in ((ACCEPT_ROWS.drop(columns=["proposed"]), "ngram"), (ACCEPT_ROWS, "self")):
        ch = acceptance_change(rows, arm, 10, 100)
        assert math.isnan(ch["value"]) and ch["n_prompts"] == 0


def test_per_prompt_acceptance_is_accepted_over_proposed_and_nan_without_proposals():
    """prompt 0: 1 / 4 = 0.25 at 10, 0 / 0 -> NaN at 100; prompt 1: 1 / 1 = 1.0 at 10 (one
    proposal is enough); the baseline's rows are not the arm's.
    Catches: the ratio inverted or multiplied, "proposed > 1" for "> 0", the method filter
    dropped or negated."""
    rows = accepts(
        [
            ("ngram", 0, 10, 1, 4),
            ("ngram", 0, 100, 0, 0),
            ("ngram", 1, 10, 1, 1),
            (BASELINE, 0, 10, 0, 0),
        ]
    )
    got = changes.per_prompt_acceptance(rows, "ngram").set_index(["prompt", "context"])
    assert sorted(got.index) == [(0, 10), (0, 100), (1, 10)]
    assert got.loc[(0, 10), "acceptance"] == pytest.approx(0.25)
    assert math.isnan(got.loc[(0, 100), "acceptance"])
    assert got.loc[(1, 10), "acceptance"] == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("contexts", "published", "own"),
    [
        ([10, 50, 100], (10, 100), (10, 100)),
        ([10, 100, 200], (10, 100), (10, 100)),  # both ends measured: 10 -> 100, not 10 -> 200
        ([20, 50, 200], None, (20, 200)),  # without them: None, or the sweep's own extremes
        ([10, 50], None, (10, 50)),
    ],
)
def test_the_tested_range_is_10_to_100_when_measured(contexts, published, own):
    """Catches: the earlier study's 10 and 100 moved (10 -> 11, 100 -> 101), the sweep's own
    extremes not its first and last contexts (cs[1] or cs[-2])."""
    assert changes.test_range(contexts) == published
    assert changes.range_for_test(contexts) == own


# ------------------------------------------------------------------- tokens_per_call_change (H4)

CALL_ROWS = pd.DataFrame(
    [
        ("ngram", 0, 10, 12, 5),
        ("ngram", 0, 100, 12, 7),
        ("ngram", 1, 10, 24, 9),
        ("ngram", 1, 100, 24, 13),
        ("ngram", 2, 10, 50, 2),  # no context-100 row: not paired, dropped
        (BASELINE, 0, 10, 12, 13),  # another arm, ignored
        (BASELINE, 0, 100, 12, 13),
    ],
    columns=["method", "prompt", "context", "new_tokens", "target_calls"],
)
# Verification calls are target calls minus the prefill; prompt 1 is prompt 0 doubled:
#   at 10:  (12 + 24) / ((5 - 1) + (9 - 1)) = 36 / 12 = 3 tokens per call
#   at 100: (12 + 24) / ((7 - 1) + (13 - 1)) = 36 / 18 = 2 tokens per call  -> 2 / 3, [2/3, 2/3]
# Wrong variants: the prefill counted (36 / 14) / (36 / 20) -> 0.7; inverted 1.5; a difference
# -1; prompt 2 kept: 86 / 13 at 10.


def test_tokens_per_call_change_is_pooled_tokens_per_verification_call_ratio():
    """H4's quantity. Catches: the prefill counted as a verification call (0.7), the ratio
    inverted (1.5), a difference instead of a ratio, unpaired prompts or another arm kept."""
    ch = changes.tokens_per_call_change(CALL_ROWS, "ngram", 10, 100)
    assert ch["at_c0"] == pytest.approx(3.0) and ch["at_c1"] == pytest.approx(2.0)
    assert ch["value"] == pytest.approx(2 / 3)
    assert ch["ci_low"] == pytest.approx(2 / 3) and ch["ci_high"] == pytest.approx(2 / 3)
    assert ch["n_prompts"] == 2


def test_tokens_per_call_change_without_call_counts_is_nan_on_zero_prompts():
    """Catches: a number (or prompts claimed) from rows that carry no target calls, or for an
    absent arm."""
    for rows, arm in ((CALL_ROWS.drop(columns=["target_calls"]), "ngram"), (CALL_ROWS, "self")):
        ch = changes.tokens_per_call_change(rows, arm, 10, 100)
        assert math.isnan(ch["value"]) and ch["n_prompts"] == 0


# ------------------------------------------------------------------------- prompt_swap_change

# Four prompts, 10 proposed each; acceptance at 10: 0.2, 0.4, 0.6, 0.8; at 100: each + 0.1.
SWAP_ROWS = accepts(
    [("ngram", i, 10, 2 * i + 2, 10) for i in range(4)]
    + [("ngram", i, 100, 2 * i + 3, 10) for i in range(4)]
)
# A split gives context 10 a half S and context 100 the other half; the change is
# mean(at 100 over the other half) - mean(at 10 over S). The six halves S (each 1/6 of the splits):
#   S = {0,1}: 0.8 - 0.3 = +0.5     S = {0,2}: 0.7 - 0.4 = +0.3     S = {0,3}: 0.6 - 0.5 = +0.1
#   S = {1,2}: 0.6 - 0.5 = +0.1     S = {1,3}: 0.5 - 0.6 = -0.1     S = {2,3}: 0.4 - 0.7 = -0.3
# Over 2000 splits each value appears ~333 times, so the 2.5% and 97.5% quantiles are the
# extremes -0.3 and +0.5, and the median is +0.1 (two of the six values, a third of the splits
# below it and a third above). The same halves at both contexts (no swap) would give +0.1 always;
# c0 and c1 swapped would give the mirror, median -0.1.
SWAP_VALUES = (-0.3, -0.1, 0.1, 0.3, 0.5)


def test_prompt_swap_change_uses_disjoint_halves_per_context():
    """Catches: the same half at both contexts (the swap not simulated: the range collapses to
    +0.1), c0 and c1 swapped (median -0.1), halves that overlap or are not the floor of n / 2."""
    sw = prompt_swap_change(SWAP_ROWS, "ngram", 10, 100)
    assert sw["value"] == pytest.approx(0.1)
    assert sw["ci_low"] == pytest.approx(-0.3) and sw["ci_high"] == pytest.approx(0.5)
    assert sw["n_half"] == 2
    draws = sw["draws"]
    assert len(draws) == changes.SPLITS
    assert all(min(abs(d - v) for v in SWAP_VALUES) < 1e-9 for d in draws)


def test_prompt_swap_change_halves_leave_the_odd_prompt_out():
    """Five prompts: halves of 2 (n // 2), one prompt unused per split. Acceptance is 0.5 for
    every prompt at both contexts except prompt 4 at 100 (1.0). Context 100's half holds prompt 4
    or not: its mean is (0.5 + 1.0) / 2 = 0.75 or 0.5, so every change is +0.25 or 0.
    Catches: a context-100 half that takes the rest (3 prompts: (0.5 + 0.5 + 1.0) / 3 - 0.5 =
    +0.167)."""
    rows = accepts(
        [("ngram", i, 10, 5, 10) for i in range(5)]
        + [("ngram", i, 100, 10 if i == 4 else 5, 10) for i in range(5)]
    )
    sw = prompt_swap_change(rows, "ngram", 10, 100)
    assert sw["n_half"] == 2
    assert {round(float(d), 9) for d in sw["draws"]} == {0.0, 0.25}


def test_prompt_swap_change_needs_four_prompts():
    """Catches: the simulation run on three prompts (halves of one prompt) instead of NaN."""
    sw = prompt_swap_change(SWAP_ROWS[SWAP_ROWS["prompt"] < 3], "ngram", 10, 100)
    assert math.isnan(sw["value"]) and sw["n_half"] == 0


# ---------------------------------------------------------------------------- same_documents


def documents(pairs: list[tuple[str, int, int, str, int]]) -> pd.DataFrame:
    """(method, prompt, context, article, anchor) rows."""
    return pd.DataFrame(pairs, columns=["method", "prompt", "context", "article", "anchor"])


SAME = [
    ("ngram", 0, 10, "A", 5),
    ("ngram", 0, 100, "A", 5),
    ("ngram", 1, 10, "B", 7),
    ("ngram", 1, 100, "B", 7),
]


def test_same_documents_when_every_prompt_keeps_its_article_and_anchor():
    """Catches: a check that always says False, or one that reads another arm's rows (the
    baseline below moves its prompt 0 to another article; only ngram's rows count)."""
    other_arm = [(BASELINE, 0, 10, "A", 5), (BASELINE, 0, 100, "Z", 9)]
    assert same_documents(documents(SAME + other_arm), "ngram") is True


@pytest.mark.parametrize(
    ("changed", "what"),
    [(("ngram", 1, 100, "B", 8), "anchor"), (("ngram", 1, 100, "C", 7), "article")],
)
def test_same_documents_is_false_when_a_prompt_moves(changed, what):
    """Catches: the anchor or the article ignored, or the comparison loosened (nunique <= 2)."""
    rows = documents(SAME[:3] + [changed])
    assert same_documents(rows, "ngram") is False, what


def test_same_documents_is_false_without_document_columns():
    """Catches: True claimed for rows that cannot show which documents they used."""
    rows = documents(SAME).drop(columns=["anchor"])
    assert same_documents(rows, "ngram") is False


# ------------------------------------------------------------------ H1 and H2 labels end to end


def sweep(rows: pd.DataFrame, contexts: list[int], **summary) -> ExperimentResult:
    config = {"contexts": contexts, "n_prompts": 2, "max_new_tokens": 32}
    return ExperimentResult(config, {}, {"contexts": contexts, **summary}, rows)


def profile(**results: ExperimentResult) -> Profile:
    return Profile("hand", Path("."), dict(results))


def scaled_off(factor: float) -> pd.DataFrame:
    """OFF with its context-100 seconds scaled: Q = 4 x factor (still a constant interval)."""
    off = OFF.copy()
    off.loc[off["context"] == 100, "wall_s"] *= factor
    return off


@pytest.mark.parametrize(("factor", "label"), [(1.0, rules.SUPPORTED), (0.1, rules.NOT_SUPPORTED)])
def test_h1_label_end_to_end_from_hand_made_sweeps(factor, label):
    """H1 from two hand-made sweeps: Q = 4 (interval [4, 4]) lies above any threshold near 1 ->
    supported; with the uncached context-100 seconds x 0.1, Q = 0.4 -> not supported.
    Catches: Q inverted (0.25 or 2.5 would swap the labels), the sweeps swapped, the contexts
    not the shared 10 -> 100, Q taken as the ratio of the two sweeps' own growths."""
    p = profile(
        context_sweep=sweep(ON, [10, 100]),
        context_sweep_nocache=sweep(scaled_off(factor), [10, 100]),
    )
    f = verdicts.h1_recomputation(p)
    assert f.contexts == (10, 100)
    assert f.q["value"] == pytest.approx(Q_H1 * factor)
    assert f.label == label
    # The cited growths are each sweep's own, over all its prompts (prompt 2 or 3 included):
    #   on : (1 + 2 + 1) / 40 = 0.1 s at 10, (2 + 4 + 90) / 40 = 2.4 s at 100 -> 24
    #   off: (1 + 2 + 1) / 40 = 0.1 s at 10, f x (16 + 32 + 1) / 70 = f x 0.7 s -> 7 f (f: factor)
    # so Q (4 x factor, shared prompts only) is not growth_off / growth_on (7 / 24 x factor).
    assert f.inputs["growth_on"]["value"] == pytest.approx(24.0)
    assert f.inputs["growth_off"]["value"] == pytest.approx(7.0 * factor)


def test_h1_without_the_uncached_sweep_is_not_tested():
    """Catches: a label given without the uncached sweep."""
    f = verdicts.h1_recomputation(profile(context_sweep=sweep(ON, [10, 100])))
    assert f.label == rules.NOT_TESTED and f.missing == ("context_sweep_nocache",)


PUBLISHED = pd.DataFrame(
    {
        "strategy": ["baseline autoregressive", "transformer draft"],
        "context": [20, 20],
        "time_s": [2.0, 1.0],
        "one_baseline_speedup": [1.0, 2.0],
        "matches_printed": [True, True],
    }
)
# The baseline at reference context 20 and at 100, two prompts (prompt 1 = 3 x prompt 0):
#   per run   : (1 + 3) s at 20, (2 + 6) s at 100 -> growth 8 / 4 = 2.0, every resample too
#   per token : (1 + 3) / (10 + 30) = 0.1 s at 20, (2 + 6) / (40 + 120) = 0.05 s at 100 -> 0.5
# H2 uses the per-run growth (one divisor for a whole run): 2.0 -> supported; per token (0.5)
# would say not supported.
H2_ROWS = timed(
    [
        (BASELINE, 0, 20, 1.0, 10),
        (BASELINE, 0, 100, 2.0, 40),
        (BASELINE, 1, 20, 3.0, 30),
        (BASELINE, 1, 100, 6.0, 120),
    ]
)


def h2_sweep(rows: pd.DataFrame) -> ExperimentResult:
    table = [{"context": c, "method": BASELINE} for c in (20, 100)]
    return sweep(rows, [20, 100], table=table, earlier_style={"reference_context": 20})


def test_h2_label_end_to_end_uses_per_run_growth_from_the_reference_context():
    """H2 on a hand-made sweep: per-run growth 20 -> 100 is 2.0 ([2, 2]) -> supported.
    Catches: per-token instead of per-run growth (0.5: not supported), the ratio inverted (0.5),
    the reference context ignored."""
    f = verdicts.h2_single_baseline(profile(context_sweep=h2_sweep(H2_ROWS)), PUBLISHED)
    assert f.contexts == (20, 100)
    assert f.q["value"] == pytest.approx(2.0)
    assert f.q["ci_low"] == pytest.approx(2.0) and f.q["ci_high"] == pytest.approx(2.0)
    assert f.label == rules.SUPPORTED


def test_h2_is_not_supported_when_the_published_arithmetic_does_not_match():
    """Catches: the growth alone deciding H2 when one divisor does not reproduce the table."""
    published = PUBLISHED.assign(matches_printed=[True, False])
    f = verdicts.h2_single_baseline(profile(context_sweep=h2_sweep(H2_ROWS)), published)
    assert f.inputs["matching"] == 1 and f.inputs["all_match"] is False
    assert f.label == rules.NOT_SUPPORTED


def test_h2_is_not_supported_when_the_baseline_does_not_grow():
    """A flat baseline (growth 1.0: the same seconds at 20 and 100) -> not supported.
    Catches: a growth that ignores the context-100 rows (e.g. c1 read as c0)."""
    flat = H2_ROWS.copy()
    flat.loc[flat["context"] == 100, "wall_s"] = flat.loc[
        flat["context"] == 20, "wall_s"
    ].to_numpy()
    f = verdicts.h2_single_baseline(profile(context_sweep=h2_sweep(flat)), PUBLISHED)
    assert f.q["value"] == pytest.approx(1.0)
    assert f.label == rules.NOT_SUPPORTED
