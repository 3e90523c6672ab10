"""`python -m specdec_lib calibrate`: the short calibration that chooses what `best` and
`best_short` run on this machine and dtype (`drafters.presets`, whose rule it applies and whose
cache it writes).

Per preset, our baseline and every candidate (`presets.candidates_for`) run on the same few
prompts, paired and interleaved by the project's timing code (`measure.paired.run_paired`, after
its warm-up), at the preset's length (`presets.PRESET_TOKENS`: 128 new tokens for `best`, 32 for
`best_short`). The prompts come from the fit half of the articles (`data.split_articles`), so
the bench's held-out prompts are never the ones a preset was chosen on. The thread count is
chosen and the kernels warmed as `generate` does (`environment.runtime.setup`).

Knows nothing about printing beyond its one-line progress, or about the bench.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import torch

from specdec_lib import generate
from specdec_lib.drafters import presets as P
from specdec_lib.measure.paired import Arm, Method, run_paired
from specdec_lib.models import LoadedModel
from specdec_study.environment.tracking import git_commit

CONTEXT_TOKENS = 100  # the bench's longest context
N_PROMPTS = {"best": 1, "best_short": 1}  # per preset: about a minute on 2 cores (bfloat16)
RULE = (
    "the fastest candidate (baseline's total time over its own, paired on the same prompts) "
    "among those whose every output equals the baseline's; ties to the earlier candidate; the "
    f"static table's configuration stays unless a challenger is {P.MARGIN:.0%} faster or more"
)

Runner = Callable[..., list[dict[str, Any]]]


def key_for(loaded: LoadedModel) -> str:
    """The cache key of this loaded target on this machine (`presets.cache_key`)."""
    device = loaded.device.type
    gpu = torch.cuda.get_device_name(loaded.device) if device == "cuda" else None
    return P.cache_key(P.machine_key(device, gpu), dtype_name(loaded), loaded.name)


def dtype_name(loaded: LoadedModel) -> str:
    """'bfloat16', 'float32', ...: the dtype the target computes in."""
    return str(loaded.dtype).removeprefix("torch.")


def calibration_prompts(loaded: LoadedModel, n: int, seed: int = 0, source: str = "auto"):
    """n prompts of CONTEXT_TOKENS tokens from the fit articles, room for 128 new tokens."""
    from specdec_lib.data import load_wikitext, make_prompts, split_articles

    fit, _ = split_articles(load_wikitext(source), seed=seed)
    return make_prompts(
        loaded.tokenizer,
        fit,
        n,
        CONTEXT_TOKENS,
        seed=seed,
        anchor_min=CONTEXT_TOKENS,
        continuation_tokens=max(P.PRESET_TOKENS.values()),
    )


def _arms(loaded: LoadedModel, candidates: Sequence[P.Candidate], source: str) -> list[Arm]:
    """Our baseline, then one arm per candidate (named spec@K), on the one loaded target."""
    make = generate.Generator.from_loaded  # looked up at call time
    arms = [Arm(Method(P.BASELINE_ARM, "none", 1), make(loaded, "none"))]
    for c in candidates:
        gen = make(loaded, c.spec, k=c.k, data_source=source)
        arms.append(Arm(Method(c.name, c.spec, c.k), gen))
    return arms


def calibrate_presets(
    loaded: LoadedModel,
    *,
    seed: int = 0,
    source: str = "auto",
    prompts: Sequence[Any] | None = None,
    candidates: Sequence[P.Candidate] | None = None,
    n_prompts: dict[str, int] | None = None,
    run: Runner = run_paired,
    warm: bool = True,
) -> dict[str, Any]:
    """The calibration record of this target on this machine (what `presets.write_cache`
    stores): per preset the candidates' speedups and identical shares and the choice, with the
    machine, dtype, thread count, date, commit and wall time. `prompts`, `candidates`, `run` and
    `warm` are for tests (fake rows instead of timed ones)."""
    t0 = time.perf_counter()
    candidates = list(candidates or P.candidates_for(loaded.device.type))
    counts = n_prompts or N_PROMPTS
    threads: dict[str, Any] = {}
    if warm:
        from specdec_study.environment.runtime import setup

        threads = setup(loaded.model, max(c.k for c in candidates) + 1)
    t_setup = time.perf_counter()
    if prompts is None:
        prompts = calibration_prompts(loaded, max(counts.values()), seed, source)
    arms = _arms(loaded, candidates, source)
    t_built = time.perf_counter()
    groups: dict[str, Any] = {}
    runs_s: dict[str, float] = {}
    for i, (preset, tokens) in enumerate(P.PRESET_TOKENS.items()):
        ps = list(prompts)[: counts[preset]]
        t = time.perf_counter()
        rows = run(arms, ps, max_new_tokens=tokens, warmup=int(i == 0))  # one warm-up is enough
        runs_s[preset] = time.perf_counter() - t
        groups[preset] = {
            "max_new_tokens": tokens,
            "n_prompts": len(ps),
            "context_tokens": CONTEXT_TOKENS,
            **P.choose(rows, candidates, incumbent=P.static_candidate(preset)),
        }
    device = loaded.device.type
    return {
        "key": key_for(loaded),
        "machine": P.cpu_kind() if device == "cpu" else {"gpu": torch.cuda.get_device_name()},
        "dtype": dtype_name(loaded),
        "target": loaded.name,
        "threads": threads.get("threads", torch.get_num_threads()),
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "commit": (git_commit() or "unknown")[:7],
        "rule": RULE,
        "wall_s": time.perf_counter() - t0,
        "phases_s": {"threads_and_warm": t_setup - t0, "prompts_and_drafts": t_built - t_setup}
        | {f"run_{p}": v for p, v in runs_s.items()},
        "presets": groups,
    }
