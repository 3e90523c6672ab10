"""What the batch-invariant fast path costs: paired, interleaved timings of a one-token decode
step and a five-position verification of the embedded Gemma on the CPU, on the previous fast
path and the invariant one, per dtype this CPU serves. `python -m specdec_study.bench.fastpath_cost`
prints one JSON line (results/embedded/fastpath_measure.json is one).

Knows nothing about drafters, speculation or the bench's tables; how the view is built lives in
`core.fastpath`.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time

import torch

from specdec_lib.core.cache import CachedLM
from specdec_lib.core.fastpath import ROWS, fast_view, packing_available
from specdec_lib.models.loading import load_model


def _time_pair(lms: dict, ids: list[int], n: int, reps: int, warmup: int) -> dict:
    """Paired, interleaved timings (ms) of extending each CachedLM in lms by ids[:n] (then rolling
    back), alternating which path goes first; warm-up rounds are not kept."""
    times: dict[str, list[float]] = {name: [] for name in lms}
    names = list(lms)
    for rep in range(warmup + reps):
        for name in names if rep % 2 == 0 else names[::-1]:
            lm = lms[name]
            keep = len(lm)
            t0 = time.perf_counter()
            lm.extend(ids[:n], n)
            dt = time.perf_counter() - t0
            lm.rollback(keep)
            if rep >= warmup:
                times[name].append(dt * 1e3)
    out: dict = {
        name: {"median_ms": statistics.median(t), "min_ms": min(t), "n": len(t)}
        for name, t in times.items()
    }
    old, new = times[names[0]], times[names[1]]
    out["ratio_median"] = statistics.median(b / a for a, b in zip(old, new, strict=True))
    return out


def measure(
    reps: int = 20, warmup: int = 3, context: int = 128, threads: int | None = None
) -> dict:
    """Per dtype this CPU serves (float32; bfloat16 where oneDNN packs): a 1-token decode step
    and a 5-position verification of the embedded Gemma, after `context` cached tokens, on the
    old fast path and the invariant one. The old path: rows as given (float32: the stock
    kernels and SDPA; bfloat16: packed products over the call's rows with invariant attention,
    i.e. the previous view without the probe's few fixed-row shapes). Returns a dict."""
    if threads is not None:
        torch.set_num_threads(threads)
    dtypes = ["float32"] + (["bfloat16"] if packing_available(torch.bfloat16) else [])
    result: dict = {
        "measure": "fastpath",
        "rows": ROWS,
        "threads": torch.get_num_threads(),
        "machine": platform.machine(),
        "processor": platform.processor(),
        "torch": torch.__version__,
        "bfloat16_packing": packing_available(torch.bfloat16),
        "context": context,
        "reps": reps,
        "warmup": warmup,
        "dtypes": {},
    }
    for name in dtypes:
        loaded = load_model("embedded", dtype=name, device="cpu")
        pack = name != "float32"
        old = CachedLM(loaded.model, invariant=False)
        old._runner = fast_view(loaded.model, pack, invariant=False, attention=pack)
        new = CachedLM(loaded.model, invariant=True)
        g = torch.Generator().manual_seed(0)
        ids = torch.randint(3, int(loaded.vocab_size), (context + 5,), generator=g).tolist()
        with torch.inference_mode():
            for lm in (old, new):
                lm.reset()
                lm.extend(ids[:context], 1)
            tail = ids[context:]
            result["dtypes"][name] = {
                "decode_1": _time_pair({"old": old, "invariant": new}, tail, 1, reps, warmup),
                "verify_5": _time_pair({"old": old, "invariant": new}, tail, 5, reps, warmup),
            }
        del old, new, loaded
    return result


def main(argv: list[str] | None = None) -> int:
    """Time old vs invariant fast path per dtype and print one JSON line."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--context", type=int, default=128)
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args(argv)
    print(json.dumps(measure(args.reps, args.warmup, args.context, args.threads)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
