"""The peers' summary (`experiments.peers`) on a hand-built world: speed against Hugging Face
greedy as the ratio of total times paired by prompt, identity with each greedy reference as the
share of prompts whose tokens match, and HF's arms stripped of acceptance statistics."""

from __future__ import annotations

import pytest

from specdec_study.experiments.peers import drop_acceptance, peers_summary

# two prompts; rows listed out of prompt order on purpose
ROWS = [
    {"method": "baseline", "prompt": 1, "wall_s": 3.0, "tokens": [5, 6]},
    {"method": "baseline", "prompt": 0, "wall_s": 1.0, "tokens": [1, 2]},
    {"method": "hf-greedy", "prompt": 0, "wall_s": 2.0, "tokens": [1, 2]},
    {"method": "hf-greedy", "prompt": 1, "wall_s": 6.0, "tokens": [5, 7]},
    {"method": "ngram", "prompt": 0, "wall_s": 1.0, "tokens": [1, 2]},
    {"method": "ngram", "prompt": 1, "wall_s": 3.0, "tokens": [5, 6]},
]


def arm(median: float, identical: float, speedup: float | None = None) -> dict:
    out = {
        "tokens_per_s": {"median": median, "ci_low": median - 1, "ci_high": median + 1},
        "identical_fraction": identical,
        "acceptance_rate": 0.5,
    }
    if speedup is not None:
        out["speedup"] = {"value": speedup, "ci_low": speedup - 0.1, "ci_high": speedup + 0.1}
    return out


def test_peers_table_by_hand():
    """By hand: ngram's speed over HF greedy = (2 + 6) / (1 + 3) = 2.0; HF greedy's over itself
    1.0; baseline's 2.0. Identity with HF greedy: prompt 0 matches everywhere, prompt 1 only HF
    with itself, so 0.5 for baseline and ngram, 1.0 for HF. Planted bugs it catches (each seen
    failing): the speedup inverted (method / HF greedy), identity compared with our baseline
    instead of HF greedy."""
    arms = {"baseline": arm(10, 1.0), "hf-greedy": arm(5, 0.5, 0.5), "ngram": arm(10, 1.0, 1.0)}
    summary = peers_summary(ROWS, arms, 2, None)
    t = {r["method"]: r for r in summary["table"]}
    assert t["ngram"]["speedup_vs_hf_greedy"] == pytest.approx(2.0)
    assert t["hf-greedy"]["speedup_vs_hf_greedy"] == pytest.approx(1.0)
    assert t["baseline"]["speedup_vs_hf_greedy"] == pytest.approx(2.0)
    assert [t[m]["identical_to_hf_greedy"] for m in ("baseline", "hf-greedy", "ngram")] == [
        0.5,
        1.0,
        0.5,
    ]
    assert t["baseline"]["speedup"] == 1.0 and t["ngram"]["speedup"] == 1.0
    assert t["hf-greedy"]["implementation"] == "hf" and t["ngram"]["implementation"] == "ours"
    assert summary["peers_available"] and summary["headline"]["hf-greedy"]["speedup"] == 0.5


def test_without_hf_greedy_no_hf_comparison_and_the_error_is_kept():
    arms = {"baseline": arm(10, 1.0), "ngram": arm(10, 1.0, 1.0)}
    rows = [r for r in ROWS if r["method"] != "hf-greedy"]
    summary = peers_summary(rows, arms, 2, "transformers too old")
    assert all(r["speedup_vs_hf_greedy"] is None for r in summary["table"])
    assert all(r["identical_to_hf_greedy"] is None for r in summary["table"])
    assert summary["peers_available"] is False and summary["peers_error"] == "transformers too old"


def test_drop_acceptance_strips_only_hf_arms():
    """Planted bug it catches: dropping the acceptance of every arm (ours keep theirs)."""
    arms = {"hf-assisted": arm(5, 1.0), "ngram": arm(10, 1.0)}
    drop_acceptance(arms)
    assert "acceptance_rate" not in arms["hf-assisted"]
    assert arms["ngram"]["acceptance_rate"] == 0.5
