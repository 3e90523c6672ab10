"""06: speculative sampling at each temperature (acceptance, speedup), and the empirical check
that the first sampled token follows the target's exact distribution, through the library's own
drafter and verifier, for the baseline and every checked speculative arm.

Builds the config, arms and rows; the statistics are `analysis.stats`'.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from specdec_lib.analysis import stats
from specdec_lib.analysis.sampling import tvd_between
from specdec_lib.analysis.summary import point, summarize
from specdec_lib.errors import SpecdecError
from specdec_lib.results.catalog import BASELINE
from specdec_lib.results.store import ExperimentResult
from specdec_lib.runner.context import Study, arm_name, base_config, build_arms, load_target
from specdec_lib.runner.execute import Run, execute, paired
from specdec_lib.runner.prompts import prompts_for


class _Recording:
    """A target that remembers the logits of its last call (for `first_token_samples`)."""

    def __init__(self, lm) -> None:
        self.lm, self.logits = lm, None

    def extend(self, ids, n):
        self.logits = self.lm.extend(ids, n)
        return self.logits

    def head(self, hidden):
        self.logits = self.lm.head(hidden)
        return self.logits

    def rollback(self, n: int) -> None:
        self.lm.rollback(n)


def first_token_samples(generator, prompt: Sequence[int], k: int, sampling, seeds) -> list[int]:
    """The first token the generator emits after prompt, once per seed, through the library's
    own drafter and verifier, with the prompt prefilled once.

    For every seed the drafter proposes and the verifier (`verify.speculative_verify`) decides
    with that seed's generator. The target's call on [seq[-1]] + draft is deterministic, so it
    runs through `decode.verify_step` once per distinct draft; later seeds that propose the same
    draft are verified on that call's probabilities (a deterministic draft, or the baseline's
    empty one, then costs one target call in all instead of one per seed)."""
    from specdec_lib.core import decode
    from specdec_lib.core.sampling import logits_to_probs, make_generator
    from specdec_lib.core.verify import pad_vocab
    from specdec_lib.drafters.base import Draft

    lm, drafter = generator.lm, generator.drafter
    seq = list(prompt)
    decode.prefill(lm, seq)
    drafter.begin(seq)
    seen: dict[tuple[int, ...], Any] = {}  # draft -> the target's p [d + 1, V] for it
    out = []
    for s in seeds:
        g = make_generator(int(s))
        lm.rollback(len(seq) - 1)
        draft = drafter.propose(seq, k, sampling, g) if k > 0 else Draft([])
        key = tuple(draft.tokens)
        if sampling.greedy or key not in seen:
            rec = _Recording(lm)
            verdict = decode.verify_step(rec, seq, draft, sampling, g)
            seen[key] = logits_to_probs(rec.logits, sampling)
        else:
            p = seen[key]
            q = pad_vocab(draft.q, p.shape[-1]) if draft.q is not None else None
            verdict = decode.speculative_verify(draft.tokens, q, p, g)
        out.append(draft.tokens[0] if verdict.n_accepted > 0 else verdict.next_token)
    lm.rollback(len(seq) - 1)
    return out


def exact_next_probs(generator, prompt: Sequence[int], sampling) -> np.ndarray:
    """The target's exact p for the token after prompt (after temperature/top-k/top-p)."""
    from specdec_lib.core.decode import prefill
    from specdec_lib.core.sampling import logits_to_probs

    lm = generator.lm
    prefill(lm, list(prompt))
    logits = lm.extend([prompt[-1]], 1)
    lm.rollback(len(prompt) - 1)
    return logits_to_probs(logits, sampling)[0].double().cpu().numpy()


def draft_first_probs(generator, prompt: Sequence[int], k: int, sampling) -> np.ndarray:
    """[V] the distribution the drafter draws its first token after prompt from (a point mass
    for a deterministic drafter): what a verifier that accepted every draft would emit."""
    from specdec_lib.core.decode import prefill
    from specdec_lib.core.sampling import make_generator

    lm, drafter = generator.lm, generator.drafter
    seq = list(prompt)
    prefill(lm, seq)
    drafter.begin(seq)
    lm.rollback(len(seq) - 1)
    draft = drafter.propose(seq, k, sampling, make_generator(0))
    lm.rollback(len(seq) - 1)
    if not draft.tokens:
        return np.zeros(0)  # no draft: the target emits the first token itself
    if draft.q is not None:
        return draft.q[0].double().cpu().numpy()
    q = np.zeros(draft.tokens[0] + 1)
    q[draft.tokens[0]] = 1.0
    return q


def distribution_checks(
    gens: dict[str, tuple[Any, int]], prompts, sampling, n_samples: int, t: float
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Per method (baseline and speculative arms): n_samples first tokens per prompt through the
    library's drafter and verifier, tested against the target's exact p (chi-square over pooled
    bins, prompts combined), with the smallest TVD the combined test detects (80% power, alpha
    0.05) and, for speculative arms, the TVD a verifier that accepted every draft would produce.
    Every method and prompt gets its own seeds, so no two methods share random draws."""
    out: dict[str, Any] = {}
    rows: list[dict[str, Any]] = []
    for j, (mname, (gen, k)) in enumerate(gens.items()):
        tests, unverified = [], []
        for i, p in enumerate(tqdm(prompts, desc=f"distribution T={t} {mname}")):
            start = 1_000_000 * (j + 1) + 10_000 * i
            seeds = range(start, start + n_samples)
            samples = first_token_samples(gen, list(p.ids), k, sampling, seeds)
            probs = exact_next_probs(gen, list(p.ids), sampling)
            r = stats.goodness_of_fit(samples, probs)
            r["tvd_unverified"] = None  # the baseline drafts nothing
            if k:
                r["tvd_unverified"] = tvd_between(
                    probs, draft_first_probs(gen, list(p.ids), k, sampling)
                )
                if r["dof"]:  # a prompt with one bin tests nothing
                    unverified.append(r["tvd_unverified"])
            tests.append(r)
            rows.append({"temperature": t, "prompt": i, "method": mname, **r})
        chk = stats.power_summary(tests)
        chk["tvd"] = float(np.mean([r["tvd"] for r in tests])) if tests else None
        chk["tvd_mean_per_prompt"] = chk["tvd"]
        if k:
            seen = [u for u in unverified if u is not None]
            chk["tvd_unverified"] = float(np.mean(seen)) if seen else None
            chk["detects_unverified"] = bool(
                seen
                and len(seen) == len(unverified)
                and chk["detectable_tvd"] is not None
                and min(seen) > chk["detectable_tvd"]
            )
        out[mname] = chk
    return out, rows


def run_sampling(S: Study) -> ExperimentResult:
    """06: speculative sampling at each temperature (acceptance, speedup), and an empirical
    check that the first sampled token follows the target's exact distribution, for the
    baseline and every speculative arm, with the smallest TVD the check detects."""
    e = S.exp("sampling")
    d = S.profile["drafts"]
    tname = arm_name(d["transformer"])
    specs = {tname: d["transformer"], arm_name(d["bigram"]): d["bigram"]}
    dist = e.get("distribution", {}) or {}
    checked = [str(a) for a in dist.get("arms", list(specs))]
    if not set(checked) <= set(specs):
        raise SpecdecError(
            f"sampling.distribution.arms {checked} must name arms of this experiment: "
            f"{', '.join(specs)}"
        )
    cfg = {
        **base_config(S, "sampling"),
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
        "arms": {BASELINE: "none", **specs},
    }

    def compute(on_row):
        from specdec_lib import plots
        from specdec_lib.config import SamplingConfig

        loaded = load_target(S)
        arms = build_arms(S, loaded, specs, cfg["k"])
        prompts = prompts_for(S, loaded, cfg["n_prompts"], cfg["context_tokens"])
        rows: list[dict[str, Any]] = []
        by_t, table, dist_rows, checks, headline = {}, [], [], {}, {}
        nd, ns = cfg["distribution"]["n_prompts"], cfg["distribution"]["n_samples"]
        seed = cfg["seed"]
        for t in cfg["temperatures"]:
            samp = SamplingConfig(temperature=t, seed=seed)
            rs = paired(
                arms,
                prompts,
                max_new_tokens=cfg["max_new_tokens"],
                sampling=samp,
                warmup=cfg["warmup"] if t == cfg["temperatures"][0] else 0,
                progress=f"sampling T={t}",
                on_row=on_row,
                extra_cols={"temperature": t},
            )
            rows += rs
            sm = summarize(rs)
            by_t[str(t)] = {"arms": sm}
            for m, s in sm.items():
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
            # the distribution check: the baseline (a control for the test itself) and the
            # profile's checked arms (default: every draft arm), each on its own seeds
            gens = {BASELINE: (arms[0].generator, 0)}
            gens.update(
                {
                    a.method.name: (a.generator, cfg["distribution"]["k"])
                    for a in arms[1:]
                    if a.method.name in checked
                }
            )
            by_method, drows = distribution_checks(gens, prompts[:nd], samp, ns, t)
            dist_rows += drows
            check: dict[str, Any] = {"n_samples_per_prompt": ns, "n_prompts": nd, **by_method}
            checks[str(t)] = check
            first = checked[0] if checked else None
            headline[str(t)] = {
                "speedup": sm[tname].get("speedup"),
                "acceptance_rate": sm[tname].get("acceptance_rate"),
                "checked_arm": first,
                "p_value_speculative": check[first]["p_value"] if first else None,
                "p_value_baseline": check[BASELINE]["p_value"],
                "tvd_speculative": check[first]["tvd"] if first else None,
                "tvd_baseline": check[BASELINE]["tvd"],
                "detectable_tvd": check[first]["detectable_tvd"] if first else None,
            }
        summary = {
            "temperatures": cfg["temperatures"],
            "by_temperature": by_t,
            "table": table,
            "distribution_check": checks,
            "headline": headline,
        }

        def figs(dd: Path) -> None:
            plots.sampling_speedup(summary, dd / "sampling_speedup.png")
            plots.distribution_check(summary, dd / "distribution_check.png")

        return Run(rows, summary, figs, {"distribution.csv": dist_rows})

    return execute(S, "sampling", cfg, compute)
