"""The book's sampling tables and sentences, from a profile's results: speedup, acceptance and
the first-token distribution check per temperature, and the check of positions 1..m decided as
one family. Returns DataFrames of formatted strings (or None when the profile lacks sampling).
Knows nothing about decoding."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from specdec_study.experiments.speculative_sampling import family_size, sequence_family
from specdec_study.reporting.format import as_float, ci, finite, num, pct
from specdec_study.results.declare import BASELINE
from specdec_study.results.read import Profile, role_arm


def sampling_table(p: Profile) -> pd.DataFrame | None:
    """Per temperature and arm: the paired speedup, the acceptance rate, and the first-token
    distribution check (TVD, chi-square p, samples, and the smallest TVD the check detects)."""
    res = p.get("sampling")
    if res is None or not res.summary.get("table"):
        return None
    t = pd.DataFrame(res.summary["table"])
    dist = res.summary.get("distribution_check") or {}
    checked = role_arm(res, "transformer")  # results written before every arm was checked
    out = []
    for r in t.itertuples():
        d = by_float_key(dist, r.temperature) or {}
        is_spec = r.method != BASELINE
        chk = d.get(r.method) or (d.get("speculative") if r.method == checked else None) or {}
        n_samples = chk.get(
            "n_samples", as_float(d.get("n_samples_per_prompt")) * as_float(d.get("n_prompts"))
        )
        out.append(
            {
                "temperature": num(r.temperature, 1),
                "arm": r.method,
                "speedup (95% CI)": "-"
                if not is_spec
                else ci(
                    {
                        "value": r.speedup,
                        "ci_low": getattr(r, "speedup_ci_low", None),
                        "ci_high": getattr(r, "speedup_ci_high", None),
                    },
                    2,
                    suffix="x",
                    n=getattr(r, "n_prompts", res.config.get("n_prompts")),
                ),
                "acceptance rate": "-" if not is_spec else pct(r.acceptance_rate, 1),
                "first-token samples": num(n_samples, 0) if chk else "-",
                "first-token TVD": num(chk.get("tvd"), 3) if chk else "-",
                "chi-square p": num(chk.get("p_value"), 3) if chk else "-",
                "detectable TVD (80% power)": num(chk.get("detectable_tvd"), 3) if chk else "-",
                "TVD if unverified": num(chk.get("tvd_unverified"), 3) if chk and is_spec else "-",
            }
        )
    return pd.DataFrame(out)


PATH_LABELS = {
    "accept": "accepted drafts",
    "residual_first": "residual (first draft rejected)",
    "residual_later": "residual (after an accepted prefix)",
    "bonus": "bonus",
    "target": "target's own draw",
}


def sequence_table(p: Profile) -> pd.DataFrame | None:
    """Per temperature and method, the check of positions 1..m (`summary["sequence_check"]`):
    its verdict, the combined test, what it detects and the tested tokens of each path; None for
    a result written before the check existed."""
    res = p.get("sampling")
    checks = sequence_family((res.summary.get("sequence_check") or {}) if res is not None else {})
    if not checks:
        return None
    seq = res.config.get("sequence") or {}
    out = []
    for t, chk in checks.items():
        for m, c in chk.items():
            paths = c.get("paths_tested") or {}
            out.append(
                {
                    "temperature": num(as_float(t), 1),
                    "sampler": m,
                    "verdict": c.get("verdict"),
                    "runs x positions": f"{seq.get('n_samples')} x {seq.get('positions')}",
                    "tokens tested": num(c.get("n_tested"), 0),
                    "chi-square p": num(c.get("p_value"), 3),
                    "dof": num(c.get("dof"), 0),
                    "detectable TVD (80% power)": num(c.get("detectable_tvd"), 3),
                    **{lab: num(paths.get(k, 0), 0) for k, lab in PATH_LABELS.items()},
                }
            )
    return pd.DataFrame(out)


def sequence_sentence(p: Profile) -> str:
    """What the sampling experiment's empirical check covered and how its verdicts fell, in one
    paragraph read from the result file (each check's numbers are in `sequence_table`, not
    repeated here; the book states no verdict of its own)."""
    res = p.get("sampling")
    if res is None:
        return "The sampling experiment has no result in this profile."
    stored = res.summary.get("sequence_check") or {}
    checks = sequence_family(stored)
    if not checks:
        return (
            "This profile's sampling result predates the check of positions 1..m: it tested the "
            "first sampled token only, so the verifier's accept path, its bonus token and the "
            "residual after an accepted prefix were hardly exercised."
        )
    seq = res.config.get("sequence") or {}
    verdicts = [c.get("verdict") for chk in checks.values() for c in chk.values()]
    tally = ", ".join(f"{verdicts.count(v)} {v}" for v in dict.fromkeys(verdicts))
    return (
        f"The experiment `06_sampling` checks it empirically: {seq.get('n_samples')} decode runs "
        f"of {seq.get('positions')} tokens per method (K = {seq.get('k')}) on a looping prompt, "
        "every token tested against the target's exact conditional given the tokens before it; "
        f"verdicts by {family_history(stored)}, all temperatures and methods as one family "
        f"(Bonferroni: deviates if p < 0.05 / {family_size(checks)}; consistent if not, with a "
        f"detectable TVD at that level of at most {seq.get('tvd_target')} and at least "
        f"{seq.get('min_path')} tested tokens on every path; inconclusive otherwise). Of its "
        f"{len(verdicts)} checks: {tally}; the table gives each with its p, its tokens and the "
        "paths they took." + revised_verdicts(stored, checks)
    )


def family_history(stored: dict[str, Any]) -> str:
    """When the family rule was fixed, from the stored checks: a run decided as a family
    stores each check's `family_size`; an earlier run decided each check alone."""
    alone = [c for chk in stored.values() for c in chk.values() if isinstance(c, dict)]
    if alone and all("family_size" in c for c in alone):
        return "the rule fixed before the run"
    return (
        "a rule adopted after this run (the run itself decided each check alone at its own "
        "significance level, the rule fixed before it), applied when the stored result is read"
    )


def revised_verdicts(stored: dict[str, Any], checks: dict[str, Any]) -> str:
    """One sentence naming each stored verdict that the family rule changed, or nothing."""
    changed = [
        f"{m} at T = {num(as_float(t), 1)} (p = {num(c.get('p_value'), 3)}): "
        f"'{c.get('verdict')}' alone, '{checks[t][m].get('verdict')}' in the family"
        for t, chk in stored.items()
        for m, c in chk.items()
        if isinstance(c, dict) and c.get("verdict") != checks[t][m].get("verdict")
    ]
    if not changed:
        return ""
    alphas = [c["alpha"] for chk in stored.values() for c in chk.values() if isinstance(c, dict)]
    n = family_size(checks)
    false_alarm = 1 - (1 - max(alphas)) ** n
    return (
        f" The rule was revised after the run because {n} checks, each alone at significance level "
        f"{num(max(alphas), 2)}, call a false deviation somewhere among them with probability "
        f"{pct(false_alarm, 0)}; the verdicts it changed: " + "; ".join(changed) + "."
    )


def by_float_key(d: dict[str, Any], x: Any) -> Any:
    """d["0.7"] for x = 0.7 whatever the key's spelling ("0.7", "0.70")."""
    for k, v in d.items():
        if finite(k) and math.isclose(as_float(k), as_float(x)):
            return v
    return None
