"""Per arm, the numbers a reader compares, flattened from the rows and the summary: tokens/s,
paired speedups, acceptance, the prediction; every interval with its n. Knows nothing about
printing or targets."""

from __future__ import annotations

from typing import Any

from specdec_study.analysis import stats
from specdec_study.analysis.summary import arm_walls
from specdec_study.bench.calibrate import _decode_prediction
from specdec_study.results.declare import BASELINE

HF_PLAIN = ("hf_greedy", "hf_sample")  # HF's autoregressive arm in a greedy / sampling group


def _is_hf(method: str) -> bool:
    return method.startswith("hf_")


# ----------------------------------------------------------------------------- numbers


def _ratio(rows, slow: str, fast: str) -> dict[str, Any]:
    """How many times faster `fast` is than `slow` (ratio of total times, paired CI)."""
    return stats.paired_speedup(arm_walls(rows, slow), arm_walls(rows, fast)).as_dict()


def _with_n(o: Any, n: int) -> Any:
    """Every interval (a dict with ci_low) in o gets its n beside it."""
    if isinstance(o, dict):
        o = {k: _with_n(v, n) for k, v in o.items()}
        if "ci_low" in o:
            o["n"] = n
    return o


def _arm_numbers(
    rows: list[dict],
    summary: dict[str, Any],
    costs: dict[str, dict[str, float]] | None = None,
    by_tokens: bool = True,
) -> dict[str, Any]:
    """Per arm: the numbers a reader compares, flattened; every interval with its n. Without
    `by_tokens` (a sampling group) token identity is None: draws differ by construction."""
    arms: dict[str, Any] = {}
    plain = next((n for n in HF_PLAIN if n in summary), None)  # HF's autoregressive arm
    for name, s in summary.items():
        a: dict[str, Any] = {
            "implementation": "hf" if _is_hf(name) else "ours",
            "draft": s["draft"],
            "k": s["k"],
            "tokens_per_s": s["tokens_per_s"],
            "speedup": s.get("speedup", {"value": 1.0, "ci_low": 1.0, "ci_high": 1.0}),
            "identical_to_baseline": s["identical_fraction"] if by_tokens else None,
            "repetition_4gram": s["repetition_4gram"],
            "new_tokens": s["new_tokens"],
        }
        if plain is not None and name != plain:
            a["speedup_vs_hf_greedy"] = _ratio(rows, plain, name)
        if not _is_hf(name) and name != BASELINE and "acceptance_rate" in s:
            a.update(
                {
                    "acceptance_rate": s["acceptance_rate"],
                    "mean_accepted_length": s["mean_accepted_length"],
                    "cost_ratio": None,
                    **_decode_prediction(rows, name, (costs or {}).get(name)),
                }
            )
        arms[name] = _with_n(a, s["n_prompts"])
    return arms


def _best(summary: dict[str, Any], hf: bool, by_tokens: bool = True) -> str | None:
    """The fastest arm of ours (hf=False) or of HF's. With `by_tokens` (greedy groups) ours must
    be lossless in this run: every output token-identical to our baseline's (an arm that is not,
    such as tree verification in bfloat16, where its one call is not batch-invariant, is shown
    but never called best). A sampling group's arms draw differently from the baseline by
    construction (lossless in distribution: tests/test_processors.py, tests/test_verify.py)."""
    names = [
        n
        for n in summary
        if _is_hf(n) == hf
        and n != BASELINE
        and "speedup" in summary[n]
        and (hf or not by_tokens or summary[n]["identical_fraction"] == 1.0)
    ]
    return max(names, key=lambda n: summary[n]["speedup"]["value"]) if names else None
