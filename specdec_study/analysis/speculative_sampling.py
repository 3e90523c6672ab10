"""The sampling experiment's summaries (06): per temperature the arms' speedup and acceptance, and
the first-token distribution check per method: the tests of its prompts combined, with the
smallest total-variation distance (TVD) they detect, beside the TVD between the target's exact
next-token distribution and a draft's (what a verifier that accepted every draft would emit).

Torch-free; knows nothing about models or how the samples and distributions were obtained.
"""

from __future__ import annotations

from typing import Any, TypedDict

import numpy as np

from specdec_study.analysis import stats
from specdec_study.analysis.summary import (
    AcceptanceColumns,
    ArmsCell,
    Num,
    PointCI,
    SpeedupColumns,
    point,
)
from specdec_study.results.declare import (
    BASELINE,
    Experiment,
    Figure,
    SingleContextConfig,
    StudySummary,
)


def tvd_between(p: np.ndarray, q: np.ndarray) -> float | None:
    """TVD of two distributions over ids, the shorter padded with zeros (a draft's vocabulary
    can be narrower than the target's)."""
    if not q.sum():
        return None  # the drafter proposed nothing: every first token comes from the target
    v = max(p.size, q.size)
    pp, qq = np.zeros(v), np.zeros(v)
    pp[: p.size], qq[: q.size] = p, q
    return float(0.5 * np.abs(pp - qq).sum())


def method_check(
    tests: list[dict[str, Any]], unverified: list[float | None], drafts: bool
) -> dict[str, Any]:
    """One method's check from its per-prompt goodness-of-fit tests (`stats.goodness_of_fit`):
    the combined test and its power, the mean TVD, and for a method that drafts the mean TVD of
    its unverified drafts and whether the test detects every one of them (`unverified`: one per
    prompt with more than one bin)."""
    chk = stats.power_summary(tests)
    chk["tvd"] = float(np.mean([r["tvd"] for r in tests])) if tests else None
    chk["tvd_mean_per_prompt"] = chk["tvd"]
    if drafts:
        seen = [u for u in unverified if u is not None]
        chk["tvd_unverified"] = float(np.mean(seen)) if seen else None
        chk["detects_unverified"] = bool(
            seen
            and len(seen) == len(unverified)
            and chk["detectable_tvd"] is not None
            and min(seen) > chk["detectable_tvd"]
        )
    return chk


SEQUENCE_OUTCOMES = ("deviates", "consistent", "inconclusive")


def sequence_check(
    tests: list[dict[str, Any]],
    by_position: dict[str, dict[str, int]],
    needed_paths: tuple[str, ...],
    tvd_target: float,
    min_path: int,
) -> dict[str, Any]:
    """One method's check of positions 1..m (`runner.distribution.sequence_tests`): the
    per-prefix tests combined (`stats.power_summary`), the tested tokens per path (over the
    positions), and the verdict under the rule fixed before any run (`sequence_verdict`)."""
    chk = stats.power_summary(tests, tvd_target)
    paths: dict[str, int] = {}
    for counts in by_position.values():
        for path, c in counts.items():
            paths[path] = paths.get(path, 0) + c
    chk.update(
        {
            "n_groups": len(tests),
            "n_groups_tested": sum(1 for t in tests if t["dof"]),
            "paths_tested": paths,
            "paths_by_position": by_position,
            "needed_paths": list(needed_paths),
            "min_path": min_path,
        }
    )
    chk["verdict"] = sequence_verdict(chk)
    return chk


def sequence_verdict(chk: dict[str, Any]) -> str:
    """The rule, fixed before any number was seen; its three outcomes cannot overlap:

    - "deviates": the combined test rejects (p < alpha): the emitted tokens do not follow the
      target's exact conditionals;
    - "consistent": it does not reject, it detects a TVD of `tvd_target` with 80% power, and
      every path the method can take (for a draft: accept, the residual after a rejected first
      draft and after an accepted prefix, the bonus; for the baseline: the target's own draw)
      produced at least `min_path` tested tokens;
    - "inconclusive": it does not reject (or had nothing to test), but its power or the tokens of
      some path fall short, so a pass would say little about the verifier.

    alpha and the detectable TVD are the family's (`family_alpha`, `sequence_family`) where the
    check carries them, else its own."""
    p = chk.get("p_value")
    if p is not None and p < chk.get("alpha_family", chk["alpha"]):
        return "deviates"
    d = chk.get("detectable_tvd_family", chk.get("detectable_tvd"))
    covered = all(chk["paths_tested"].get(x, 0) >= chk["min_path"] for x in chk["needed_paths"])
    if p is not None and d is not None and d <= chk["tvd_target"] and covered:
        return "consistent"
    return "inconclusive"


def family_alpha(alpha: float, n_checks: int) -> float:
    """Bonferroni: each of n checks at alpha / n keeps the chance that any of them rejects by
    chance (when every sampler is exact) at most alpha."""
    return alpha / max(n_checks, 1)


def family_size(checks: dict[str, dict[str, Any]]) -> int:
    """How many (temperature, method) checks of positions 1..m a run made."""
    return sum(1 for chk in checks.values() for c in chk.values() if isinstance(c, dict))


def sequence_family(checks: dict[str, dict[str, dict[str, Any]]]) -> dict[str, Any]:
    """The checks of positions 1..m of one run ({temperature: {method: check}}) decided as one
    family: every (temperature, method) check tested at `family_alpha` over all of them (the
    baseline's included), its detectable TVD at that level, and its verdict again
    (`sequence_verdict`). Each check alone at alpha = 0.05 gave a false "deviates" somewhere
    in a run of 3 methods x 2 temperatures with probability 1 - 0.95^6 = 26%. Reads only the
    stored fields, so it decides a stored result the same way (idempotent)."""
    n = family_size(checks)
    out: dict[str, Any] = {}
    for t, chk in checks.items():
        out[t] = {}
        for m, c in chk.items():
            if not isinstance(c, dict):
                out[t][m] = c
                continue
            a = family_alpha(c["alpha"], n)
            dof, n_tested = c.get("dof") or 0, c.get("n_tested") or 0
            d = stats.detectable_tvd(n_tested, dof, a) if dof and n_tested else None
            fam = {**c, "family_size": n, "alpha_family": a, "detectable_tvd_family": d}
            out[t][m] = {**fam, "verdict": sequence_verdict(fam)}
    return out


class SamplingRow(SpeedupColumns, AcceptanceColumns):
    """One (temperature, arm) row of the flat table (`temperature_rows`)."""

    temperature: float
    method: str
    n_prompts: int
    mean_accepted_length: Num
    tokens_per_s: Num


class TemperatureHeadline(TypedDict):
    """One temperature's headline (`temperature_headline`)."""

    speedup: PointCI | None
    acceptance_rate: PointCI | None
    checked_arm: str | None
    p_value_speculative: Num
    p_value_baseline: Num
    tvd_speculative: Num
    tvd_baseline: Num
    detectable_tvd: Num


class _SamplingKeys(StudySummary):
    temperatures: list[float]
    by_temperature: dict[str, ArmsCell]
    table: list[SamplingRow]
    distribution_check: dict[str, dict[str, Any]]
    headline: dict[str, TemperatureHeadline]


class SamplingSummary(_SamplingKeys, total=False):
    """06's summary.json; `sequence_check` where the config checks positions 1..m."""

    sequence_check: dict[str, dict[str, Any]]


class DistributionCheckConfig(TypedDict):
    """06's check that the first sampled token follows the target's distribution."""

    n_prompts: int
    n_samples: int
    arms: list[str]
    k: int


class SequenceCheckConfig(TypedDict):
    """06's check of positions 1..m (`runner.speculative_sampling.sequence_config`)."""

    drafts: dict[str, str]
    k: int
    positions: int
    n_samples: int
    loop_tokens: int
    repeats: int
    tvd_target: float
    min_path: int


class SamplingExperimentConfig(SingleContextConfig):
    """06's config: the temperatures and the distribution checks (`sequence`: None where the
    profile runs no sequence check)."""

    temperatures: list[float]
    distribution: DistributionCheckConfig
    sequence: SequenceCheckConfig | None


def temperature_rows(t: float, arms: dict[str, Any]) -> list[dict[str, Any]]:
    """The flat table's rows of one temperature, one per arm."""
    table = []
    for m, s in arms.items():
        sp, acc = s.get("speedup") or {}, s.get("acceptance_rate") or {}
        table.append(
            {
                "temperature": t,
                "method": m,
                "n_prompts": s["n_prompts"],
                "speedup": sp.get("value"),
                "speedup_ci_low": sp.get("ci_low"),
                "speedup_ci_high": sp.get("ci_high"),
                "acceptance_rate": acc.get("value"),
                "acceptance_rate_ci_low": acc.get("ci_low"),
                "acceptance_rate_ci_high": acc.get("ci_high"),
                "mean_accepted_length": point(s.get("mean_accepted_length")),
                "tokens_per_s": s["tokens_per_s"]["median"],
            }
        )
    return table


def temperature_headline(
    arms: dict[str, Any], check: dict[str, Any], main: str, checked: list[str]
) -> dict[str, Any]:
    """One temperature's headline: the main draft's speedup and acceptance, and the check of
    the first checked arm beside the baseline's."""
    first = checked[0] if checked else None
    return {
        "speedup": arms[main].get("speedup"),
        "acceptance_rate": arms[main].get("acceptance_rate"),
        "checked_arm": first,
        "p_value_speculative": check[first]["p_value"] if first else None,
        "p_value_baseline": check[BASELINE]["p_value"],
        "tvd_speculative": check[first]["tvd"] if first else None,
        "tvd_baseline": check[BASELINE]["tvd"],
        "detectable_tvd": check[first]["detectable_tvd"] if first else None,
    }


# --------------------------------------------------------------------------- declaration

sampling = Experiment(
    "sampling",
    "lossless speculative sampling at temperature > 0",
    call="study.run_sampling(study_run)",
    summary=SamplingSummary,
    config_shape=SamplingExperimentConfig,
    figures=(
        Figure(
            "sampling_speedup.png",
            "Speedup (left) and acceptance (right) of speculative sampling per "
            "temperature, with 95% intervals.",
        ),
        Figure(
            "distribution_check.png",
            "Total variation distance between the empirical distribution of the "
            "first sampled token and the target's exact one, for speculative and plain sampling, "
            "with chi-square p-values. Speculative sampling is lossless when its bar looks like "
            "plain sampling's: both are sampling noise at this n.",
        ),
    ),
)
