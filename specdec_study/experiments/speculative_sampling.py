"""06: speculative sampling at each temperature (acceptance, speedup), and the empirical check
that the first sampled token follows the target's exact distribution, through the library's own
drafter and verifier, for the baseline and every checked draft arm (and, where the profile asks,
the check of positions 1..m on a looping prompt).

The whole experiment: its notebook, its declaration, the shapes of its config.json and
summary.json, its config and run (given a `runner.lab.Lab`; the samples and exact distributions,
which need torch, are drawn by the runner's `runner.distribution` through
`Lab.distribution_checks` and `Lab.sequence_checks`), its summaries (per temperature the arms'
speedup and acceptance; the first-token distribution check per method: the tests of its prompts
combined, with the smallest total-variation distance (TVD) they detect, beside the TVD between
the target's exact next-token distribution and a draft's, what a verifier that accepted every
draft would emit; the checks of positions 1..m decided as one family) and its figures. Both
parts of the run resume: the timed runs per prompt, the distribution check per (temperature,
method, prompt). Imports no runner and no torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np

from specdec_lib.config import SamplingConfig
from specdec_lib.errors import SpecdecError
from specdec_study.analysis import stats
from specdec_study.analysis.summary import (
    AcceptanceColumns,
    ArmsCell,
    Num,
    PointCI,
    SpeedupColumns,
    point,
    summarize,
)
from specdec_study.reporting.figures import arms as arm_figures
from specdec_study.reporting.number_format import fmt, interval
from specdec_study.results.declare import (
    BASELINE,
    Experiment,
    Figure,
    Notebook,
    SingleContextConfig,
    StudySummary,
)

if TYPE_CHECKING:
    from specdec_lib.measure.paired import Arm
    from specdec_study.results.store import Checkpoint, ExperimentResult
    from specdec_study.runner.execute import Progress, Run
    from specdec_study.runner.lab import Lab


# --------------------------------------------------------------------------- shapes


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
    """06's check of positions 1..m (`sequence_config`)."""

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


# --------------------------------------------------------------------------- config and run


def sampling_specs(lab: Lab) -> dict[str, str]:
    """The transformer draft (the headline's) and the bigram."""
    d = lab.profile["drafts"]
    return {
        lab.arm_name(d["transformer"]): d["transformer"],
        lab.arm_name(d["bigram"]): d["bigram"],
    }


def config(lab: Lab) -> dict[str, Any]:
    """06's config: temperatures, the paired runs and the distribution and sequence checks."""
    e = lab.section()
    specs = sampling_specs(lab)
    dist = e.get("distribution", {}) or {}
    checked = [str(a) for a in dist.get("arms", list(specs))]
    if not set(checked) <= set(specs):
        raise SpecdecError(
            f"sampling.distribution.arms {checked} must name arms of this experiment: "
            f"{', '.join(specs)}"
        )
    return {
        **lab.base_config(),
        "temperatures": [float(t) for t in e["temperatures"]],
        "n_prompts": int(e["n_prompts"]),
        "context_tokens": int(e["context_tokens"]),
        "max_new_tokens": int(e["max_new_tokens"]),
        "distribution": {
            "n_prompts": int(dist.get("n_prompts", 2)),
            "n_samples": int(dist.get("n_samples", 200)),
            "arms": checked,
            # the first emitted token depends only on the first draft position: one drafted
            # token exercises accept, reject and residual at the lowest cost per sample
            "k": 1,
        },
        "sequence": sequence_config(lab, e.get("sequence")),
        "arms": {BASELINE: "none", **specs},
    }


def sequence_config(lab: Lab, seq: dict[str, Any] | None) -> dict[str, Any] | None:
    """The check of positions 1..m (`runner.distribution.sequence_checks`), from the profile's
    `sampling.sequence` (None when it has none): the drafts it runs (names in the profile's
    `drafts`: a high-acceptance one such as the n-gram copy and a low one such as the bigram),
    their K, the positions, the seeds per method, the looping prompt (the first prompt's
    `loop_tokens` tokens after its first, repeated `repeats` times, so that copying drafts are
    accepted), and the verdict's thresholds (`sequence_verdict`)."""
    if not seq:
        return None
    drafts = lab.profile["drafts"]
    names = [str(a) for a in seq.get("drafts", ["ngram", "bigram"])]
    if missing := [a for a in names if a not in drafts]:
        raise SpecdecError(
            f"sampling.sequence.drafts {missing} are not in the profile's drafts: "
            f"{', '.join(drafts)}"
        )
    return {
        "drafts": {lab.arm_name(drafts[a]): drafts[a] for a in names},
        "k": int(seq.get("k", 2)),
        "positions": int(seq.get("positions", 3)),
        "n_samples": int(seq["n_samples"]),
        "loop_tokens": int(seq.get("loop_tokens", 16)),
        "repeats": int(seq.get("repeats", 4)),
        "tvd_target": float(seq.get("tvd_target", 0.05)),
        "min_path": int(seq.get("min_path", 50)),
    }


def looping_prompt(ids: list[int], loop_tokens: int, repeats: int) -> list[int]:
    """ids[0], then ids[1 : 1 + loop_tokens] repeated: a prompt whose continuation repeats."""
    if len(ids) < 1 + loop_tokens:
        raise SpecdecError(f"a looping prompt needs {1 + loop_tokens} tokens, got {len(ids)}")
    return ids[:1] + ids[1 : 1 + loop_tokens] * repeats


def run(lab: Lab) -> ExperimentResult:
    """06: speculative sampling at each temperature (acceptance, speedup), and an empirical
    check that the first sampled token follows the target's exact distribution, for the
    baseline and every speculative arm, with the smallest TVD the check detects."""
    cfg = config(lab)
    return lab.execute(cfg, lambda on_row: _measure(lab, cfg, on_row))


def _measure(lab: Lab, cfg: dict[str, Any], on_row: Progress) -> Run:
    loaded = lab.load_target()
    specs = sampling_specs(lab)
    main = next(iter(specs))
    arms = lab.arms(loaded, specs, cfg["k"])
    prompts = lab.prompts(loaded, cfg["n_prompts"], cfg["context_tokens"])
    seq_cfg = cfg["sequence"]
    seq_gens: dict[str, tuple[Any, int]] = {}
    if seq_cfg:
        seq_arms = lab.arms(loaded, seq_cfg["drafts"], seq_cfg["k"])
        seq_gens = {
            a.method.name: (a.generator, seq_cfg["k"] if i else 0) for i, a in enumerate(seq_arms)
        }
        loop = looping_prompt(list(prompts[0].ids), seq_cfg["loop_tokens"], seq_cfg["repeats"])
    rows: list[dict[str, Any]] = []
    by_t, table, dist_rows, checks, headline = {}, [], [], {}, {}
    seq_checks, seq_rows = {}, []
    for t in cfg["temperatures"]:
        samp = SamplingConfig(temperature=t, seed=cfg["seed"])
        rs = lab.paired(
            arms,
            prompts,
            cfg,
            sampling=samp,
            warmup=cfg["warmup"] if t == cfg["temperatures"][0] else 0,
            progress=f"sampling T={t}",
            on_row=on_row,
            extra_cols={"temperature": t},
        )
        rows += rs
        sm = summarize(rs)
        by_t[str(t)] = {"arms": sm}
        table += temperature_rows(t, sm)
        check, drows = _check(lab, cfg, arms, prompts, samp, t, getattr(on_row, "checkpoint", None))
        dist_rows += drows
        checks[str(t)] = check
        headline[str(t)] = temperature_headline(sm, check, main, cfg["distribution"]["arms"])
        if seq_cfg:
            seq_checks[str(t)], srows = lab.sequence_checks(seq_gens, loop, samp, seq_cfg, t)
            seq_rows += srows
    summary = {
        "temperatures": cfg["temperatures"],
        "by_temperature": by_t,
        "table": table,
        "distribution_check": checks,
        "headline": headline,
    }
    extra = {"distribution.csv": dist_rows}
    if seq_cfg:
        summary["sequence_check"] = sequence_family(seq_checks)  # one family: all of them
        extra["sequence.csv"] = seq_rows
    return lab.result(rows, summary, extra)


def _check(
    lab: Lab,
    cfg: dict[str, Any],
    arms: list[Arm],
    prompts: list[Any],
    samp: SamplingConfig,
    t: float,
    checkpoint: Checkpoint | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The distribution check at one temperature: the baseline (a control for the test itself)
    and the profile's checked arms (default: every draft arm), each on its own seeds."""
    dist = cfg["distribution"]
    nd, ns = dist["n_prompts"], dist["n_samples"]
    gens = {BASELINE: (arms[0].generator, 0)}
    gens.update(
        {a.method.name: (a.generator, dist["k"]) for a in arms[1:] if a.method.name in dist["arms"]}
    )
    by_method, drows = lab.distribution_checks(gens, prompts[:nd], samp, ns, t, checkpoint)
    return {"n_samples_per_prompt": ns, "n_prompts": nd, **by_method}, drows


# --------------------------------------------------------------------------- summary


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


def from_rows(
    rows: list[dict[str, Any]], cfg: dict[str, Any], stated: dict[str, Any]
) -> dict[str, Any]:
    """The summary sections the stored rows give (`analysis.from_rows`): the arms and the
    headline per temperature; the distribution check is taken from the summary as stated (its
    samples are not in per_prompt.csv)."""
    by_t, headline = {}, {}
    checks = stated.get("distribution_check") or {}
    main = (stated.get("roles") or {}).get("transformer") or next(
        a for a in cfg.get("arms") or {} if a != BASELINE
    )
    for t in cfg["temperatures"]:
        arms = summarize([r for r in rows if float(r["temperature"]) == float(t)])
        by_t[str(t)] = {"arms": arms}
        checked = cfg["distribution"]["arms"]
        headline[str(t)] = temperature_headline(arms, checks.get(str(t)) or {}, main, checked)
    return {"by_temperature": by_t, "headline": headline}


# --------------------------------------------------------------------------- the checks


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


# --------------------------------------------------------------------------- figures


def sampling_speedup(summary: dict[str, Any], rows: Sequence[dict[str, Any]]) -> Any:
    """Bar charts of each sampler's speedup and acceptance rate at each temperature."""
    return arm_figures.sampling_speedup(summary)


def distribution_check(summary: dict[str, Any], rows: Sequence[dict[str, Any]]) -> Any:
    """Bar chart of the distance between each sampler's first tokens and the target's exact
    distribution, per temperature, with the smallest distance the check detects."""
    return arm_figures.distribution_check(summary)


# --------------------------------------------------------------------------- declaration

# this result directory's section of results/SCHEMA.md (`make notebooks` writes it there)
SCHEMA = """\
Temperatures `temperatures` (config, e.g. [0.7, 1.0]) with lossless speculative sampling.
- `by_temperature`: `"<T>"` -> `{"arms": {"baseline", <transformer arm>, "bigram"}}`.
- `table`: rows `temperature`, `method`, `n_prompts`, `speedup`, `speedup_ci_low`,
  `speedup_ci_high`, `acceptance_rate`, `acceptance_rate_ci_low`, `acceptance_rate_ci_high`,
  `mean_accepted_length`, `tokens_per_s` (median).
- `distribution_check`: `"<T>"` -> `{"n_samples_per_prompt", "n_prompts", "baseline": Check,
  <arm>: Check for every arm in `config.distribution.arms`}` (the profile's choice; default
  every draft arm): the first generated token over many seeds (each method
  and prompt on its own seeds; the check drafts `config.distribution.k` = 1 token, as the first
  token depends only on the first draft position) against the target's exact p at that position.
  Check = `{"tvd", "tvd_mean_per_prompt"` (mean over prompts of the empirical TVD, which is > 0
  for any finite sample), `"chi2", "dof", "p_value", "n_samples"` (`scipy.stats.chisquare` per
  prompt over bins of expected count >= 5, the rest pooled; prompts combined by summing chi2 and
  dof), `"alpha", "power", "detectable_tvd"` (the smallest TVD between the binned distributions
  the combined test detects with 80% power at alpha 0.05: sqrt(lambda / (4 n)), lambda the
  noncentral chi-square parameter; a deviation inside the pooled bin is invisible to it),
  `"tvd_target", "samples_for_target"` (samples that would detect 0.05 at this dof), and for
  speculative arms `"tvd_unverified"` (the TVD of the draft's own first-token distribution from
  p: what a verifier accepting every draft would emit) and `"detects_unverified"` (true when
  that TVD exceeds detectable_tvd on every tested prompt)}`; `"n_tested"` counts the samples of
  prompts with two bins or more (a prompt whose p sits on one token tests nothing), and
  detectable_tvd rests on them. Results written before this layout have
  `"speculative"` (the transformer arm) instead of per-arm keys, and no power fields.
- `sequence_check` (when `config.sequence` is set): `"<T>"` -> `{<method>: SeqCheck}` for
  `baseline` and each of `config.sequence.drafts`: `config.sequence.n_samples` decode runs of
  `positions` tokens (K = `config.sequence.k`) from a prompt that ends in the target's own greedy
  loop (`loop_tokens` tokens, `repeats` times), every emitted token tested against the target's
  exact conditional given the tokens before it, one test per (position, prefix) group.
  SeqCheck = the first-token Check's test and power fields, plus `"n_groups"`,
  `"n_groups_tested"` (groups with two bins or more), `"paths_tested"` (`{"accept",
  "residual_first", "residual_later", "bonus", "target"}`: tested tokens by the verifier path
  that emitted them), `"paths_by_position"` (`"<position>"` -> the same counts),
  `"needed_paths"` (the paths the method can take), `"min_path"` and `"verdict"`
  (`analysis.sampling.sequence_verdict`: `deviates`, `consistent` or `inconclusive`). A run
  decided as one family (`analysis.sampling.sequence_family`) also stores `"family_size"`,
  `"alpha_family"` (alpha / family_size) and `"detectable_tvd_family"`, and its verdict uses
  them; a result without them decided each check alone, and the readers re-decide it as a
  family on read.
- extra file `sequence.csv` (with `sequence_check`): `temperature`, `method`, `position`,
  `prefix` (the emitted token ids before it, space-separated), `tvd`, `n_samples`, `n_bins`,
  `chi2`, `dof`, `p_value`, and the tested tokens by path: `accept`, `residual_first`,
  `residual_later`, `bonus`, `target`.
- extra file `distribution.csv`: `temperature`, `prompt`, `method`, `tvd`, `n_samples`,
  `n_bins`, `chi2`, `dof`, `p_value`, `tvd_unverified` (speculative arms).
- `headline`: `"<T>"` -> `{speedup, acceptance_rate, p_value_speculative, p_value_baseline,
  tvd_speculative, tvd_baseline, detectable_tvd}` (the transformer arm).
"""


def reading_headline(summary: dict[str, Any], config: dict[str, Any]) -> list[str]:
    """The reading's headline: per speculative arm and temperature, its speedup and acceptance."""
    return [
        f"`{t['method']}` at T = {t['temperature']}: speedup "
        f"{interval(t.get('speedup'), t.get('speedup_ci_low'), t.get('speedup_ci_high'), 'x')}"
        f", acceptance {interval(t.get('acceptance_rate'), t.get('acceptance_rate_ci_low'), t.get('acceptance_rate_ci_high'), '%')}"  # noqa: E501
        for t in summary.get("table", [])
        if t.get("method") != "baseline"
    ]


def reading_showed(summary: dict[str, Any]) -> list[str]:
    """What the reading says it showed: each sampling check's outcome, per temperature."""
    out = []
    for t, chk in sequence_family(summary.get("sequence_check") or {}).items():
        said = ", ".join(
            f"`{m}` {c.get('verdict')} (p = {fmt(c.get('p_value'))}, "
            f"{fmt(c.get('n_tested'), 'n')} tokens)"
            for m, c in chk.items()
        )
        out.append(f"at T = {t}, tokens 1..m against the target's exact conditionals: {said}")
    for t, chk in (summary.get("distribution_check") or {}).items():
        said = ", ".join(f"`{m}` p = {fmt(c.get('p_value'))} (detects TVD "
                         f"{fmt(c.get('detectable_tvd'))}, n = {fmt(c.get('n_samples'), 'n')})"
                         for m, c in chk.items() if isinstance(c, dict))  # fmt: skip
        out.append(f"at T = {t}, the first sampled token against the target's: {said}")
    return out


sampling = Experiment(
    "sampling",
    "lossless speculative sampling at temperature > 0",
    schema=SCHEMA,
    summary=SamplingSummary,
    config_shape=SamplingExperimentConfig,
    figures=(
        Figure(
            "sampling_speedup.png",
            "Speedup (left) and acceptance (right) of speculative sampling per "
            "temperature, with 95% intervals.",
            draw=sampling_speedup,
        ),
        Figure(
            "distribution_check.png",
            "Total variation distance between the empirical distribution of the "
            "first sampled token and the target's exact one, for speculative and plain sampling, "
            "with chi-square p-values. Speculative sampling is lossless when its bar looks like "
            "plain sampling's: both are sampling noise at this n.",
            draw=distribution_check,
        ),
    ),
    build_config=config,
    run=run,
    summarize=from_rows,
    headline=reading_headline,
    showed=reading_showed,
)

NOTEBOOK = Notebook(
    "06_sampling",
    "Speculative sampling",
    "Temperatures 0.7 and 1.0 with lossless speculative sampling: acceptance and speedup, "
    "and an empirical check that the first sampled token follows the target's exact "
    "distribution (total variation distance and a chi-square test over many seeds, beside "
    "the same for plain sampling). Writes `sampling/`.",
    (sampling,),
)
