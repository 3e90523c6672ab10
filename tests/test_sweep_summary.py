"""The context sweep's table (`experiments.context_sweep`) on hand-built arms: the earlier
study's style divides the reference context's baseline time by an arm's, prompt by prompt over
the prompts both have; the same-context speedup and acceptance are copied from the arm's
summary; the baseline's growth is its time per new token at each context."""

from __future__ import annotations

import numpy as np
import pytest

from specdec_study.experiments.context_sweep import baseline_growth, sweep_headline, sweep_table


def arm(total: float, new_tokens: int, speedup: float | None = None) -> dict:
    out = {
        "draft": "x",
        "k": 4,
        "n_prompts": 2,
        "total_wall_s": total,
        "new_tokens": new_tokens,
        "tokens_per_s": {"median": 1.0, "ci_low": 0.5, "ci_high": 1.5},
        "acceptance_rate": {"value": 0.4, "ci_low": 0.3, "ci_high": 0.5},
    }
    if speedup is not None:
        out["speedup"] = {"value": speedup, "ci_low": speedup - 0.1, "ci_high": speedup + 0.1}
    return out


def row(context: int, method: str, prompt: int, wall: float) -> dict:
    return {"context": context, "method": method, "prompt": prompt, "wall_s": wall}


ROWS = [
    row(20, "baseline", 1, 2.0),
    row(20, "baseline", 0, 1.0),
    row(20, "ngram", 0, 0.5),
    row(20, "ngram", 1, 1.5),
    row(100, "baseline", 0, 4.0),
    row(100, "ngram", 0, 0.5),  # context 100 has one prompt: the first
]
BY_CONTEXT = {
    "20": {"arms": {"baseline": arm(3.0, 20), "ngram": arm(2.0, 20, 1.5)}},
    "100": {"arms": {"baseline": arm(4.0, 8), "ngram": arm(0.5, 8, 8.0)}},
}


def test_earlier_style_speedup_and_growth_by_hand():
    """By hand, with the context-20 baseline [1, 2] s as the one reference: ngram at 20,
    (1 + 2) / (0.5 + 1.5) = 1.5; ngram at 100 over the first prompt only, 1 / 0.5 = 2.0; the
    baseline at 100, 1 / 4 = 0.25; the baseline's time per token 3 / 20 = 0.15 and 4 / 8 = 0.5.
    Planted bugs it catches (each seen failing): the earlier-style ratio inverted (arm /
    reference), the time per token divided by anything but the context's new tokens; by
    construction also each context's own baseline as the reference (8.0, not 2.0, at 100)."""
    ref = np.array([1.0, 2.0])
    table = sweep_table(ROWS, BY_CONTEXT, [20, 100], ref, True)
    got = {(t["context"], t["method"]): t for t in table}
    assert got[(20, "ngram")]["earlier_style_speedup"] == pytest.approx(1.5)
    assert got[(100, "ngram")]["earlier_style_speedup"] == pytest.approx(2.0)
    assert got[(100, "baseline")]["earlier_style_speedup"] == pytest.approx(0.25)
    assert got[(20, "baseline")]["earlier_style_speedup"] == pytest.approx(1.0)
    assert got[(100, "ngram")]["speedup"] == 8.0 and got[(100, "ngram")]["acceptance_rate"] == 0.4
    assert got[(100, "ngram")]["baseline_total_wall_s"] == 4.0
    growth = baseline_growth(table, BY_CONTEXT)
    assert growth["context"] == [20, 100] and growth["total_wall_s"] == [3.0, 4.0]
    assert growth["s_per_token"] == pytest.approx([0.15, 0.5])
    head = sweep_headline(table, ["ngram"])
    assert head["speedup_at"] == {"ngram": {"20": 1.5, "100": 8.0}}
    assert head["earlier_style_speedup_at"]["baseline"]["100"] == pytest.approx(0.25)
