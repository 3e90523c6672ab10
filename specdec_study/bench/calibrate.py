"""Costs timed apart from the runs, and the decode speedup they predict: per arm a draft call and
its verification against a baseline step (`calibrate`), the ceiling a perfect, free draft would
give (`ceiling`), the per-token acceptance fitted from the counts (`fitted_acceptance`) and
measured against predicted speedup (`_decode_prediction`). Knows nothing about printing, targets
or memory."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from specdec_lib.config import SamplingConfig
from specdec_lib.core.cache import CachedLM
from specdec_lib.core.decode import clip_draft, prefill, verify_step
from specdec_lib.core.draft import Draft
from specdec_lib.core.sampling import make_generator
from specdec_lib.generate import Generator
from specdec_lib.measure.paired import Arm
from specdec_study.analysis import theory
from specdec_study.analysis.summary import arm_rows
from specdec_study.results.declare import BASELINE


@torch.inference_mode()
def calibrate(
    arms: Sequence[Arm], seqs: Sequence[list[int]], repeats: int = 3
) -> dict[str, dict[str, float]]:
    """Per arm of ours: a draft call and its verification, each timed on its own (fastest of
    `repeats`, arms alternating within a repeat) at each sequence in `seqs`, as ratios to the
    baseline's step timed the same way (the `none` arm's verification is that step).

    Returns {arm: {"c_call", "v", "d", "c"}}: c_call / v the mean draft / verification cost per
    call over the sequences in baseline steps, d the mean draft length, c = c_call / d."""
    ours = [a for a in arms if isinstance(a.generator, Generator)]
    if not ours or not seqs:
        return {}
    lm = ours[0].generator.lm
    greedy, gen = SamplingConfig(), make_generator(0)
    per_seq = [_fastest_calls(lm, ours, seq, repeats, greedy, gen) for seq in seqs]
    if BASELINE not in per_seq[0]:
        return {}
    step = float(np.mean([t[BASELINE][1] for t in per_seq]))
    if not step:
        return {}
    out: dict[str, dict[str, float]] = {}
    for name in (a.method.name for a in ours if a.method.name != BASELINE):
        c_call = float(np.mean([t[name][0] for t in per_seq])) / step
        d = float(np.mean([t[name][2] for t in per_seq]))
        out[name] = {
            "c_call": c_call,
            "v": float(np.mean([t[name][1] for t in per_seq])) / step,
            "d": d,
            "c": c_call / d if d else None,
            "n_positions": len(seqs),
            "baseline_step_s": step,
        }
    return out


def _fastest_calls(
    lm: CachedLM,
    ours: Sequence[Arm],
    seq: list[int],
    repeats: int,
    greedy: SamplingConfig,
    gen: torch.Generator,
) -> dict[str, tuple[float, float, int]]:
    """At one sequence, per arm: the fastest draft call and the fastest verification of its
    draft over `repeats` (arms alternating within a repeat), and the draft's length. The
    verification processes the logits with the arm's repetition control, as its decode loop
    does: under a penalty that processing is part of every call's cost."""
    prefill(lm, seq)
    for a in ours:
        a.generator.drafter.attach(lm)
        a.generator.drafter.process_with(a.generator.control)
        a.generator.drafter.begin(list(seq))
    fastest = {a.method.name: (math.inf, math.inf, 0) for a in ours}
    for _ in range(repeats):
        for a in ours:
            name, k = a.method.name, a.method.k
            t0 = time.perf_counter()
            draft = clip_draft(a.generator.drafter.propose(list(seq), k, greedy, gen), k)
            t1 = time.perf_counter()
            verify_step(lm, list(seq), draft, greedy, gen, a.generator.control)
            t2 = time.perf_counter()
            lm.rollback(len(seq) - 1)
            d_s, v_s, _ = fastest[name]
            fastest[name] = (min(d_s, t1 - t0), min(v_s, t2 - t1), len(draft.tokens))
    return fastest


def baseline_prefixes(
    rows: list[dict], prompts, n_prompts: int, n_positions: int, room: int = 0
) -> list[tuple[list[int], list[int]]]:
    """(prompt + the baseline's first j tokens, the baseline's tokens after them) at n_positions
    evenly spaced j that leave at least `room` tokens after them, for the first n_prompts
    prompts."""
    out = []
    for r in arm_rows(rows, BASELINE):
        if r["prompt"] >= n_prompts:
            break
        toks = list(r["tokens"])
        ids = list(prompts[r["prompt"]].ids)
        for i in range(n_positions):
            j = i * max(len(toks) - room, 0) // n_positions
            out.append((ids + toks[:j], toks[j:]))
    return out


def calibration_seqs(rows: list[dict], prompts, n_prompts: int, n_positions: int):
    """Prompt + the baseline's first j tokens, at n_positions evenly spaced j, for the first
    n_prompts prompts: where the costs are timed."""
    return [seq for seq, _ in baseline_prefixes(rows, prompts, n_prompts, n_positions)]


CEILING_KS = (1, 2, 4, 8, 16)


@torch.inference_mode()
def ceiling(
    lm: CachedLM, rows: list[dict], prompts, n_prompts: int, n_positions: int, repeats: int = 3
) -> dict[str, Any]:
    """The speedup a perfect, free draft would give: per K, a verification of the baseline's own
    next K tokens (all accepted: K + 1 tokens per call) timed against a one-position call at the
    same sequences (fastest of `repeats`, K alternating), so ceiling_K = (K + 1) / v_K with v_K
    that call's cost in baseline steps. Bounds every chain drafter at that K on this machine."""
    greedy, gen = SamplingConfig(), make_generator(0)
    ks = (0, *CEILING_KS)
    best: dict[int, list[float]] = {k: [] for k in ks}
    all_accepted = True
    for seq, after in baseline_prefixes(rows, prompts, n_prompts, n_positions, max(ks)):
        prefill(lm, seq)
        fastest = dict.fromkeys(ks, math.inf)
        for _ in range(repeats):
            for k in ks:
                draft = Draft(after[:k])
                t0 = time.perf_counter()
                verdict = verify_step(lm, seq, draft, greedy, gen)
                fastest[k] = min(fastest[k], time.perf_counter() - t0)
                all_accepted &= verdict.n_accepted == len(draft.tokens)
                lm.rollback(len(seq) - 1)
        for k in ks:
            best[k].append(fastest[k])
    if not best[0]:
        return {}
    step = float(np.mean(best[0]))
    out: dict[str, Any] = {
        "baseline_step_s": step,
        "n_positions": len(best[0]),
        "all_accepted": all_accepted,
        "by_k": {},
    }
    for k in CEILING_KS:
        v = float(np.mean(best[k])) / step
        out["by_k"][str(k)] = {"verify_cost": v, "ceiling": (k + 1) / v}
    return out


def fitted_acceptance(accepted: list[int], proposed: list[int]) -> float | None:
    """Per-token acceptance a of the i.i.d. model fitted to the counts (maximum likelihood):
    accepted drafts / draft positions reached (`analysis.theory.fitted_acceptance`, the fit
    every summary uses). None when nothing was drafted."""
    return theory.fitted_acceptance(accepted, proposed)


def _calls(rows, name: str) -> tuple[list[int], list[int]]:
    arm = [r for r in rows if r["method"] == name]
    acc = [x for r in arm for x in r["accepted_lengths"]]
    prop = [x for r in arm for x in r["proposed_lengths"]]
    return acc, prop


def _decode_prediction(rows, name: str, costs: dict[str, float] | None) -> dict[str, Any]:
    """Measured against predicted speedup of the decode phase (after the prefill, which both
    pay), and the accounting identity.

    measured = (baseline decode time / token) / (decode time / token), from the run;
    predicted = E / (c_call + v): E = mean over calls of (1 - a^(d+1)) / (1 - a) with a fitted
    from the acceptance counts (`fitted_acceptance`), c_call and v from `calibrate` (timed
    apart). accounting_ratio = measured / (mean accepted length x baseline step / in-loop time
    per call): about 1 by construction (a consistency check of the loop's timers, not a test of
    the model); loop_overhead_share: the loop's time outside draft and verification."""
    base = [r for r in rows if r["method"] == BASELINE]
    arm = [r for r in rows if r["method"] == name]
    b_decode = sum(r["wall_s"] - r["prefill_s"] for r in base)
    b_tokens = sum(r["new_tokens"] for r in base)
    decode = sum(r["wall_s"] - r["prefill_s"] for r in arm)
    tokens = sum(r["new_tokens"] for r in arm)
    busy = sum(r["draft_s"] + r["verify_s"] for r in arm)
    acc, prop = _calls(rows, name)
    out: dict[str, Any] = {
        "decode_speedup": None,
        "fitted_acceptance": fitted_acceptance(acc, prop),
        "predicted_speedup": None,
        "measured_over_predicted": None,
        "accounting_ratio": None,
    }
    if not (b_decode > 0 and b_tokens and decode > 0 and tokens and acc):
        return out
    step = b_decode / b_tokens
    measured = step / (decode / tokens)
    out["decode_speedup"] = measured
    if busy > 0:
        out["accounting_ratio"] = measured / ((tokens / len(acc)) * step / (busy / len(acc)))
        out["loop_overhead_share"] = 1.0 - busy / decode
    a = out["fitted_acceptance"]
    if costs and a is not None and costs["c_call"] + costs["v"] > 0:
        e = float(np.mean([theory.expected_tokens(a, d) for d in prop]))
        predicted = e / (costs["c_call"] + costs["v"])
        out.update(
            expected_tokens_per_call=e,
            predicted_speedup=predicted,
            measured_over_predicted=measured / predicted,
            cost_ratio=costs["c"],
            draft_call_cost=costs["c_call"],
            verify_cost=costs["v"],
            calibration_positions=costs["n_positions"],
        )
    return out
