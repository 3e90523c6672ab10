"""The run: load, choose threads, warm up, the groups of paired arms, calibration, ceiling,
memory, identity, targets; prints the table and, last, one JSON line (`run_bench`). Knows
nothing about notebooks or result directories."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, TextIO

import numpy as np
import torch

from specdec_lib import runtime
from specdec_lib.analysis.summary import summarize
from specdec_lib.bench.calibrate import calibrate, calibration_seqs, ceiling
from specdec_lib.bench.configs import (
    BEST_LONG,
    BEST_SHORT,
    CONTEXTS,
    IDENTITY_TOKENS,
    KS,
    LONG_TOKENS,
    SHORT_TOKENS,
    TREE_LONG,
    Config,
    _self_spec,
    make_drafter,
)
from specdec_lib.bench.figures import _best, _figures
from specdec_lib.bench.memory import measure_memory
from specdec_lib.bench.table import _print_summary, print_table
from specdec_lib.bench.targets import _targets
from specdec_lib.errors import SpecdecError
from specdec_lib.generate import Generator, fit_ids_for
from specdec_lib.models import LoadedModel, load_model
from specdec_lib.peers import HFGenerator
from specdec_lib.results.catalog import BASELINE
from specdec_lib.results.store import clean
from specdec_lib.runner.paired import Arm, Method, run_paired

# ----------------------------------------------------------------------------- arms


def _ours(loaded: LoadedModel, cfg: Config, fit_ids) -> Arm:
    drafter = make_drafter(cfg.draft, loaded, fit_ids, cfg.k)
    return Arm(Method(cfg.name, cfg.draft, cfg.k), Generator.from_loaded(loaded, drafter))


def _hf(loaded: LoadedModel, mode: str, k: int | None, assistant=None) -> Arm:
    name = "hf_greedy" if mode == "greedy" else f"hf_{mode}_k{k}"
    return Arm(Method(name, f"hf:{mode}", k or 1), HFGenerator(loaded, mode, k, assistant))


# ----------------------------------------------------------------------------- warm-up


def warm_kernels(loaded: LoadedModel, max_rows: int, prompt_lengths: Sequence[int]) -> float:
    """Every shape the benchmark will use, once, on our fast path and on the stock model that
    Hugging Face `generate` runs (`runtime.warm_kernels`)."""
    return runtime.warm_kernels(loaded.model, max_rows, prompt_lengths, stock=True)


def choose_threads(loaded: LoadedModel) -> dict[str, Any]:
    """The run's thread count, chosen as the CLI and the study choose it."""
    return runtime.choose_threads(loaded.model)


# ----------------------------------------------------------------------------- the run


def _prompts(loaded: LoadedModel, n: int, context: int, seed: int, anchor_min: int, articles):
    from specdec_lib.data import load_wikitext, make_prompts, split_articles

    if articles is None:
        _, articles = split_articles(load_wikitext(), seed=seed)
    return make_prompts(
        loaded.tokenizer,
        articles,
        n,
        context,
        seed=seed,
        anchor_min=anchor_min,
        continuation_tokens=LONG_TOKENS,
    )


def _group(
    name: str,
    arms: list[Arm],
    prompts,
    max_new_tokens: int,
    warmup: int,
) -> tuple[list[dict], dict[str, Any]]:
    rows = run_paired(arms, prompts, max_new_tokens=max_new_tokens, warmup=warmup, progress=name)
    return rows, summarize(rows)


def fp32_identity_wanted(loaded: LoadedModel, loaded_fp32: LoadedModel | None) -> bool:
    """Whether to load a float32 twin for the identity check: given one, or the run is in a
    reduced precision on a CPU (on a GPU a float32 copy beside the target may not fit: a T4)."""
    if loaded_fp32 is not None:
        return True
    return loaded.dtype != torch.float32 and loaded.device.type != "cuda"


def _identity(
    target: str,
    device: str,
    configs: Sequence[Config],
    prompts,
    max_new_tokens: int,
    fit_ids_of: Callable[[LoadedModel], Callable[[], list[int]]],
    loaded32: LoadedModel | None,
) -> dict[str, Any]:
    """Token identity in float32: each configuration and HF greedy against our baseline."""
    t0 = time.perf_counter()
    if loaded32 is None:
        loaded32 = load_model(target, dtype="float32", device=device)
    fit = fit_ids_of(loaded32)
    arms = [Arm(Method(BASELINE, "none", 1), Generator.from_loaded(loaded32, "none"))]
    arms += [_ours(loaded32, c, fit) for c in configs]
    arms.append(_hf(loaded32, "greedy", None))
    rows = run_paired(
        arms, prompts, max_new_tokens=max_new_tokens, warmup=0, progress="identity fp32"
    )
    out = {
        "dtype": "float32",
        "prompts": len(prompts),
        "max_new_tokens": max_new_tokens,
        "identical_fraction": {
            a.method.name: float(
                np.mean([bool(r["identical"]) for r in rows if r["method"] == a.method.name])
            )
            for a in arms[1:]
        },
        "wall_s": time.perf_counter() - t0,
    }
    out["all_identical"] = all(v == 1.0 for v in out["identical_fraction"].values())
    return out


def run_bench(
    target: str = "embedded",
    dtype: str = "auto",
    device: str = "auto",
    n_prompts: int = 10,
    max_new_tokens: int | None = None,
    seed: int = 0,
    quick: bool = False,
    *,
    loaded: LoadedModel | None = None,
    loaded_fp32: LoadedModel | None = None,
    articles=None,
    out: TextIO | None = None,
) -> dict[str, Any]:
    """Run the benchmark; print the table and, last, one JSON line; return that JSON's dict.

    `loaded` / `loaded_fp32` / `articles` inject a preloaded target (and its float32 twin for the
    identity check) and the held-out articles, for tests on tiny models."""
    threads_before = torch.get_num_threads()
    try:
        return _run_bench(
            target,
            dtype,
            device,
            n_prompts,
            max_new_tokens,
            seed,
            quick,
            loaded,
            loaded_fp32,
            articles,
            out if out is not None else sys.stdout,
        )
    finally:
        torch.set_num_threads(threads_before)


def _run_bench(
    target,
    dtype,
    device,
    n_prompts,
    max_new_tokens,
    seed,
    quick,
    loaded,
    loaded_fp32,
    articles,
    out,
) -> dict[str, Any]:
    t_start = time.perf_counter()
    if n_prompts < 1:
        raise SpecdecError(f"--prompts must be at least 1, got {n_prompts}")
    if max_new_tokens is not None and max_new_tokens < 1:
        raise SpecdecError(f"--max-new-tokens must be at least 1, got {max_new_tokens}")
    long_tokens = max_new_tokens or (16 if quick else LONG_TOKENS)
    short_tokens = min(SHORT_TOKENS, long_tokens) if not quick else min(8, long_tokens)
    n = min(n_prompts, 2) if quick else n_prompts
    ks = (4,) if quick else KS
    contexts = CONTEXTS[:1] if quick else CONTEXTS
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if loaded is None:
        loaded = load_model(target, dtype=dtype, device=device)
    t_loaded = time.perf_counter()

    def fit_ids_of(lm: LoadedModel) -> Callable[[], list[int]]:
        if articles is not None:  # injected corpus: fit on the same articles (tests only)
            from specdec_lib.data import fit_token_ids

            return lambda: fit_token_ids(lm.tokenizer, articles)
        return lambda: fit_ids_for(lm.tokenizer, "auto", seed)

    fit_ids = fit_ids_of(loaded)
    anchor_min = max(contexts)
    prompts = {c: _prompts(loaded, n, c, seed, anchor_min, articles) for c in contexts}
    max_k = max(*ks, BEST_LONG.k, BEST_SHORT.k)
    threads = choose_threads(loaded)  # first: kernels are built per thread count
    warm_s = warm_kernels(loaded, max_k + 1, [c + 1 for c in contexts] + [c for c in contexts])
    ngram_cfgs = [Config(f"ngram_k{k}", "ngram", k) for k in ks]
    best_long = BEST_LONG
    best_short = BEST_SHORT
    groups: dict[str, dict[str, Any]] = {}
    all_rows: dict[str, list[dict]] = {}

    def add(gname: str, arms: list[Arm], ps, tokens: int) -> dict[str, Any]:
        rows, summary = _group(gname, arms, ps, tokens, warmup=1)
        all_rows[gname] = rows
        seqs = calibration_seqs(rows, ps, 1 if quick else 2, 2 if quick else 4)
        costs = calibrate(arms, seqs)
        groups[gname] = {
            "context_tokens": ps[0].context_tokens,
            "max_new_tokens": tokens,
            "n_prompts": len(ps),
            "calibration_positions": len(seqs),
            "arms": _figures(rows, summary, costs),
            "best_ours": _best(summary, hf=False),
            "best_hf": _best(summary, hf=True),
        }
        return groups[gname]

    # The K sweep (ours against HF at every K, and HF greedy) runs at one context, the longest;
    # at the other HF's prompt lookup runs at the K that was its best there, beside our best.
    sweep_context = max(contexts)
    hf_ks: list[int] = list(ks)
    for c in sorted(contexts, reverse=True):
        arms = [_ours(loaded, Config(BASELINE, "none", 1), fit_ids)]
        if c == sweep_context:
            arms.append(_hf(loaded, "greedy", None))
            arms += [_ours(loaded, cfg, fit_ids) for cfg in ngram_cfgs]
        arms += [_hf(loaded, "prompt_lookup", k) for k in (ks if c == sweep_context else hf_ks)]
        arms.append(_ours(loaded, best_long, fit_ids))
        arms.append(_ours(loaded, TREE_LONG, fit_ids))
        g = add(f"long_c{c}", arms, prompts[c], long_tokens)
        if c == sweep_context:  # the other context runs HF's prompt lookup at its best K only
            lookups = {n: a for n, a in g["arms"].items() if n.startswith("hf_prompt_lookup_k")}
            top = max(lookups, key=lambda n: lookups[n]["speedup"]["value"], default=None)
            hf_ks = [lookups[top]["k"]] if top else list(ks)

    for c in sorted(contexts, reverse=True):
        arms = [_ours(loaded, Config(BASELINE, "none", 1), fit_ids)]
        arms.append(_ours(loaded, best_short, fit_ids))
        arms.append(_hf(loaded, "prompt_lookup", 4 if 4 in ks else ks[0]))
        add(f"short_c{c}", arms, prompts[c], short_tokens)

    first = f"long_c{max(contexts)}"
    base_lm = _ours(loaded, Config(BASELINE, "none", 1), fit_ids).generator.lm
    n_cal = (1, 2) if quick else (2, 4)
    bound = ceiling(base_lm, all_rows[first], prompts[max(contexts)], *n_cal)
    self_spec = _self_spec(loaded)
    memory = measure_memory(loaded, fit_ids, list(prompts[contexts[0]][0].ids), 16, self_spec)

    identity: dict[str, Any] | None = None
    configs = [ngram_cfgs[-1], best_long, best_short, TREE_LONG]
    id_prompts = prompts[contexts[0]][: 1 if quick else 2]
    id_tokens = min(IDENTITY_TOKENS, long_tokens)
    if fp32_identity_wanted(loaded, loaded_fp32):
        identity = _identity(
            target, device, configs, id_prompts, id_tokens, fit_ids_of, loaded_fp32
        )
    elif loaded.dtype == torch.float32:
        identity = {
            "dtype": "float32",
            "note": "the run itself is float32: see identical_to_baseline",
        }
    else:
        identity = {
            "dtype": "float32",
            "note": "skipped on a GPU: a float32 copy of the target may not fit beside it",
        }

    targets = _targets(groups, all_rows, memory, contexts, quick)
    print_table(groups, out)
    result = {
        "bench": "specdec",
        "target": loaded.name,
        "dtype": str(loaded.dtype).removeprefix("torch."),
        "device": str(loaded.device),
        "threads": threads,
        "seed": seed,
        "quick": quick,
        "n_prompts": n,
        "ks": list(ks),
        "contexts": list(contexts),
        "long_tokens": long_tokens,
        "short_tokens": short_tokens,
        "best_long": vars(best_long),
        "best_short": vars(best_short),
        "tree": vars(TREE_LONG),
        "groups": groups,
        "memory": memory,
        "identity": identity,
        "ceiling": bound,
        "targets": targets,
        "targets_met": all(t["met"] for t in targets.values() if t["met"] is not None),
        "timing_s": {
            "load": t_loaded - t_start,
            "warm_kernels": warm_s,
            "total": time.perf_counter() - t_start,
        },
    }
    result = clean(result)
    _print_summary(targets, out, bound)
    print(json.dumps(result, sort_keys=True, allow_nan=False), file=out, flush=True)
    return result
