"""Process-wide runtime choices that the CLI, the study and the bench make the same way: the
intra-op thread count, and one warm-up of the kernel shapes a run will use.

Threads: `$SPECDEC_THREADS` if set; else, on a CPU whose torch default is more than one thread,
1 and the default are probed in alternation for several rounds, each round timing a few KV-cached
1-row decode steps and, when the caller names its widest call (`rows`, K + 1 for a chain of K
drafts), as many verification calls of that width; each count keeps its fastest call of each
width, so that a burst of other work during one round cannot decide the choice. The count whose
step plus verification is cheapest wins (fewer threads on a tie): a speculative call pays one
verification, while the baseline and a drafter that runs the target's own layers pay 1-row steps,
and more threads help a wide call more than a 1-row one. Every figure is returned with the choice,
for the run's record (`env.json`, the bench's JSON). On a small machine that other work shares,
threads that wait for each other at every kernel can be several times slower than one; idle, two
are faster.

Warm-up: oneDNN builds a kernel per (shape, thread count) on first use, and the fast path probes
each linear layer's shape once (`fastpath`); `warm_kernels` runs a prefill and every verification
width 1..max_rows once, so that the first real call of a process pays none of it.

Knows nothing about drafters, results or notebooks.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import torch

from specdec_lib.errors import SpecdecError

if TYPE_CHECKING:
    from specdec_lib.core.cache import CachedLM

ROUNDS = 3  # alternations of the thread probe
STEPS = 4  # timed decode steps per probe

_CHOICE: dict[str, Any] | None = None  # this process's choice, made once
_WARM: dict[int, int] = {}  # id(model) -> widest call warmed


def _ids(model: torch.nn.Module, n: int) -> list[int]:
    cfg = model.config
    cfg = cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg
    vocab = min(int(getattr(cfg, "vocab_size", 1000)), 1000)
    return [3 + i % max(vocab - 3, 1) for i in range(n)]


def env_threads() -> int | None:
    """$SPECDEC_THREADS as a positive int, None when unset; a bad value is a SpecdecError."""
    env = os.environ.get("SPECDEC_THREADS", "").strip()
    if not env:
        return None
    if not env.isdigit() or int(env) < 1:
        raise SpecdecError(f"SPECDEC_THREADS must be a positive integer, got {env!r}")
    return int(env)


@torch.inference_mode()
def probe_threads(
    model: torch.nn.Module,
    counts: Sequence[int],
    rounds: int = ROUNDS,
    steps: int = STEPS,
    rows: int = 1,
) -> dict[int, dict[int, float]]:
    """Fastest call (seconds) per thread count and call width, {count: {1: step, rows: call}}:
    each round sets each count in turn (in alternation, not one count then the other), prefills
    16 tokens, times `steps` 1-row steps and, with rows > 1, `steps` calls of `rows` rows, each
    rolled back after it is timed (a verification)."""
    from specdec_lib.core.cache import CachedLM

    before = torch.get_num_threads()
    lm = CachedLM(model)
    ids = _ids(model, 16 + steps + rows)
    widths = (1, rows) if rows > 1 else (1,)
    best = {n: {w: math.inf for w in widths} for n in counts}
    try:
        for _ in range(rounds):
            for n in counts:
                torch.set_num_threads(n)
                lm.reset()
                lm.extend(ids[:16], 1)
                for i in range(16, 16 + steps):
                    t0 = time.perf_counter()
                    lm.extend([ids[i]], 1)
                    best[n][1] = min(best[n][1], time.perf_counter() - t0)
                if rows > 1:
                    wide = _verifications(lm, ids, 16 + steps, rows, steps)
                    best[n][rows] = min(best[n][rows], wide)
    finally:
        torch.set_num_threads(before)
    return best


def _verifications(lm: CachedLM, ids: list[int], start: int, rows: int, times: int) -> float:
    """The fastest of `times` calls on ids[start : start + rows], each rolled back to start."""
    fastest = math.inf
    for _ in range(times):
        t0 = time.perf_counter()
        lm.extend(ids[start : start + rows], rows)
        fastest = min(fastest, time.perf_counter() - t0)
        lm.rollback(start)
    return fastest


Probe = Callable[[torch.nn.Module, Sequence[int], int, int], dict[int, dict[int, float]]]


def choose_threads(
    model: torch.nn.Module, *, rows: int = 1, rounds: int = ROUNDS, probe: Probe | None = None
) -> dict[str, Any]:
    """Set torch's intra-op thread count for this process and return how it was chosen:
    {"threads", "chosen_by" ("SPECDEC_THREADS" | "default" | "timing"), "step_s" per count}, and
    after a timing "rounds", "verify_rows" and, with rows > 1, "verify_s" (the fastest call of
    `rows` rows) and "cost_s" (step + verification) per count.

    The rule: the count with the least step_s + verify_s (step_s alone when rows is 1), fewer
    threads on a tie. `rows` is the run's widest chain call, K + 1; `probe` (tests) replaces
    `probe_threads`, called as probe(model, counts, rounds, rows)."""
    forced = env_threads()
    default = torch.get_num_threads()
    if forced is not None:
        torch.set_num_threads(forced)
        return {"threads": forced, "chosen_by": "SPECDEC_THREADS", "step_s": None}
    device = next(model.parameters()).device
    if device.type != "cpu" or default == 1:
        return {"threads": default, "chosen_by": "default", "step_s": None}
    if probe is None:
        timed = probe_threads(model, (1, default), rounds=rounds, rows=rows)
    else:
        timed = probe(model, (1, default), rounds, rows)
    cost = {n: sum(by_width.values()) for n, by_width in timed.items()}
    best = min(cost, key=lambda n: (cost[n], n))
    torch.set_num_threads(best)
    choice: dict[str, Any] = {
        "threads": best,
        "chosen_by": "timing",
        "rounds": rounds,
        "verify_rows": rows,
        "step_s": {str(n): t[1] for n, t in timed.items()},
    }
    if rows > 1:
        choice["verify_s"] = {str(n): t[rows] for n, t in timed.items()}
        choice["cost_s"] = {str(n): c for n, c in cost.items()}
    return choice


@torch.inference_mode()
def warm_kernels(
    model: torch.nn.Module, max_rows: int, prompt_lengths: Sequence[int] = (), stock: bool = False
) -> float:
    """Run each shape once on the fast path (and on the stock model with `stock`): a prefill
    per prompt length and every call width 1..max_rows. Returns the seconds it took."""
    from specdec_lib.core.cache import CachedLM

    t0 = time.perf_counter()
    ids = _ids(model, max(prompt_lengths, default=8) + max_rows + 10)
    lms = [CachedLM(model)] + ([CachedLM(model, fast=False)] if stock else [])
    for cached in lms:
        for n in sorted(set(prompt_lengths)):
            cached.reset()
            cached.extend(ids[:n], 1)
        cached.reset()
        cached.extend(ids[:8], 1)
        for m in range(1, max_rows + 1):
            cached.extend(ids[8 : 8 + m], m)
            cached.rollback(8)
    return time.perf_counter() - t0


def setup(model: torch.nn.Module, max_rows: int = 1) -> dict[str, Any]:
    """Once per process: choose the thread count (`choose_threads`, its verification probe
    max_rows wide) and warm the call widths 1..max_rows at that count. Later calls return the
    first choice (and warm wider calls)."""
    global _CHOICE
    if _CHOICE is None:
        _CHOICE = choose_threads(model, rows=max_rows)
    else:
        torch.set_num_threads(_CHOICE["threads"])
    if max_rows > _WARM.get(id(model), 0):
        _CHOICE["warm_s"] = warm_kernels(model, max_rows)
        _WARM[id(model)] = max_rows
    return dict(_CHOICE)


def current() -> dict[str, Any] | None:
    """This process's thread choice, if `setup` made one."""
    return None if _CHOICE is None else dict(_CHOICE)
