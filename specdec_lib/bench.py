"""`python -m specdec_lib bench`: our decoders against Hugging Face `generate`, in one process.

Everything runs on the same loaded target, on a fixed set of held-out WikiText-2 prompts (the eval
half of `data.split_articles`; the same articles and anchors at both context lengths),
interleaved per prompt (`runner.paired.run_paired`, the order rotating with the prompt) after a
warm-up that also builds every kernel shape the run will use. Groups:

- `long_c100`, 128 new tokens: our baseline and HF greedy; our n-gram lookup and HF prompt
  lookup at K = 2, 4, 8; our best lossless configuration (`BEST_LONG`) and tree verification
  (`TREE_LONG`, in both long groups);
- `long_c20`, 128 new tokens: our baseline, HF prompt lookup at the K that was HF's best at
  context 100, `BEST_LONG` and `TREE_LONG` (the K sweep runs once, to keep the run short);
- `short_c100`, `short_c20`, 32 new tokens: our baseline, `BEST_SHORT`, HF prompt lookup at 4;
- identity: in float32 (unless the run is float32 already, or on a GPU, where a float32 copy
  of the target may not fit beside it: a T4 cannot) our n-gram at the largest K, both
  best configurations and HF greedy against our baseline, token for token (in bfloat16 our arms
  are compared too: the fast path is batch-invariant, so they must match there as well);
- memory: the bytes the target holds (weights, packed weights, KV cache) and those the
  self-draft adds (pruned head, its packed copy, its KV cache), with the process's RSS.

Measured against predicted (a check that can fail): per arm, the decode phase's speedup (after
the prefill, which every arm pays alike) against Leviathan et al.'s prediction E / (c_call + v).
E is the expected tokens per target call, (1 - a^(d+1)) / (1 - a) averaged over the run's calls
of draft length d, with the per-token acceptance a fitted from the acceptance counts alone
(accepted / positions reached); c_call (a draft call) and v (its verification) are timed on their
own, away from the runs, at fixed positions of the baseline's output, against a baseline step
timed the same way (`calibrate`); c = c_call per draft token is Leviathan's cost ratio. The
accounting identity (mean accepted length x baseline step / in-loop time per call) is kept as an
internal consistency check (`accounting_ratio`), not as a target. The thread count is chosen as
the CLI and the study choose it (`runtime.choose_threads`: 1 and torch's default probed in
alternation, each count's fastest step; `$SPECDEC_THREADS` overrides), with both figures in the
output.

It prints one table (tokens/s with 95% CIs, speedup over our baseline and over HF greedy,
acceptance, mean accepted length, cost ratio, measured/predicted speedup, share of repeated
4-grams, token identity), then the targets, and, as its last stdout line, one JSON object with
every figure and which targets were met. Every interval carries its n (prompts). `quick` runs
tiny settings (a smoke test).

Knows nothing about notebooks or result directories.
"""

from __future__ import annotations

import gc
import json
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

import numpy as np
import torch

from specdec_lib import runtime
from specdec_lib.analysis import stats
from specdec_lib.analysis.summary import summarize
from specdec_lib.config import SamplingConfig, SpecConfig
from specdec_lib.core.cache import CachedLM
from specdec_lib.drafters import SELF_KEEP, SELF_LAYERS, Drafter
from specdec_lib.drafters.registry import PRESETS, DraftContext, build
from specdec_lib.errors import SpecdecError
from specdec_lib.generate import Generator, fit_ids_for
from specdec_lib.models import LoadedModel, load_model
from specdec_lib.peers import HFGenerator
from specdec_lib.results.catalog import BASELINE
from specdec_lib.runner.paired import Arm, Method, run_paired

KS = (2, 4, 8)
CONTEXTS = (20, 100)
LONG_TOKENS = 128
SHORT_TOKENS = 32
IDENTITY_TOKENS = 64
TARGETS = {
    "baseline_vs_hf_greedy": 1.0,
    "ngram_vs_hf_prompt_lookup": 1.1,
    "best_vs_hf_best": 1.3,
    # 128 new tokens: our best lossless configuration over our own baseline, at each context
    "best_long_vs_baseline": 2.5,
    "short_best_vs_baseline": 1.3,
    # every arm's measured / predicted decode speedup within [1 / 1.25, 1.25]
    "prediction_agreement": 1.25,
    "self_draft_extra_memory": 0.25,
}


@dataclass(frozen=True)
class Config:
    """One of our configurations: a drafter spec (see `make_drafter`) and its K."""

    name: str
    draft: str
    k: int


# Our best lossless configurations on the embedded Gemma 3 270M (long: prompt lookup at the K
# whose verification fills one row chunk of the fast path; short: lookup, else the shared-body
# drafter): the registry's presets, so that `generate --draft best` runs what the bench measured.
BEST_LONG = Config("best", PRESETS["best"].spec, PRESETS["best"].k)
BEST_SHORT = Config("best_short", PRESETS["best_short"].spec, PRESETS["best_short"].k)
# Tree verification (`drafters.tree`): every earlier match of the suffix and the bigram's two top
# successors in one call of at most 16 nodes, the shared-body chain when nothing matches. Not
# yet measured on a quiet machine: an arm of its own beside `best`.
TREE_LONG = Config("tree", "tree+shared:16:4", 8)


def make_drafter(
    spec: str, loaded: LoadedModel, fit_ids: Callable[[], list[int]], k: int = 4
) -> Drafter:
    """A drafter by spec, through the one grammar (`drafters.registry`); k: the run's K."""
    return build(spec, DraftContext(loaded, fit_ids, k=k))


# ----------------------------------------------------------------------------- arms


def _ours(loaded: LoadedModel, cfg: Config, fit_ids) -> Arm:
    drafter = make_drafter(cfg.draft, loaded, fit_ids, cfg.k)
    return Arm(Method(cfg.name, cfg.draft, cfg.k), Generator.from_loaded(loaded, drafter))


def _hf(loaded: LoadedModel, mode: str, k: int | None, assistant=None) -> Arm:
    name = "hf_greedy" if mode == "greedy" else f"hf_{mode}_k{k}"
    return Arm(Method(name, f"hf:{mode}", k or 1), HFGenerator(loaded, mode, k, assistant))


def _is_hf(method: str) -> bool:
    return method.startswith("hf_")


# ----------------------------------------------------------------------------- warm-up


def warm_kernels(loaded: LoadedModel, max_rows: int, prompt_lengths: Sequence[int]) -> float:
    """Every shape the benchmark will use, once, on our fast path and on the stock model that
    Hugging Face `generate` runs (`runtime.warm_kernels`)."""
    return runtime.warm_kernels(loaded.model, max_rows, prompt_lengths, stock=True)


def choose_threads(loaded: LoadedModel) -> dict[str, Any]:
    """The run's thread count, chosen as the CLI and the study choose it."""
    return runtime.choose_threads(loaded.model)


@torch.inference_mode()
def calibrate(
    arms: Sequence[Arm], seqs: Sequence[list[int]], repeats: int = 3
) -> dict[str, dict[str, float]]:
    """Per arm of ours: a draft call and its verification, each timed on its own (fastest of
    `repeats`, arms alternating within a repeat) at each sequence in `seqs`, as ratios to the
    baseline's step timed the same way (the `none` arm's verification is that step).

    Returns {arm: {"c_call", "v", "d", "c"}}: c_call / v the mean draft / verification cost per
    call over the sequences in baseline steps, d the mean draft length, c = c_call / d."""
    from specdec_lib.core.decode import clip_draft, prefill, verify_step
    from specdec_lib.core.sampling import make_generator

    ours = [a for a in arms if isinstance(a.generator, Generator)]
    if not ours or not seqs:
        return {}
    lm = ours[0].generator.lm
    greedy, gen = SamplingConfig(), make_generator(0)
    draft_t = {a.method.name: [] for a in ours}  # per seq: fastest time
    verify_t = {a.method.name: [] for a in ours}
    lengths = {a.method.name: [] for a in ours}
    for seq in seqs:
        prefill(lm, seq)
        best_d = {a.method.name: math.inf for a in ours}
        best_v = {a.method.name: math.inf for a in ours}
        d_len: dict[str, int] = {}
        for a in ours:
            a.generator.drafter.attach(lm)
            a.generator.drafter.begin(list(seq))
        for _ in range(repeats):
            for a in ours:
                name, k = a.method.name, a.method.k
                t0 = time.perf_counter()
                draft = clip_draft(a.generator.drafter.propose(list(seq), k, greedy, gen), k)
                t1 = time.perf_counter()
                verify_step(lm, list(seq), draft, greedy, gen)
                t2 = time.perf_counter()
                lm.rollback(len(seq) - 1)
                best_d[name] = min(best_d[name], t1 - t0)
                best_v[name] = min(best_v[name], t2 - t1)
                d_len[name] = len(draft.tokens)
        for a in ours:
            draft_t[a.method.name].append(best_d[a.method.name])
            verify_t[a.method.name].append(best_v[a.method.name])
            lengths[a.method.name].append(d_len[a.method.name])
    step = float(np.mean(verify_t.get(BASELINE, []))) if BASELINE in verify_t else None
    if not step:
        return {}
    out: dict[str, dict[str, float]] = {}
    for a in ours:
        name = a.method.name
        if name == BASELINE:
            continue
        c_call = float(np.mean(draft_t[name])) / step
        d = float(np.mean(lengths[name]))
        out[name] = {
            "c_call": c_call,
            "v": float(np.mean(verify_t[name])) / step,
            "d": d,
            "c": c_call / d if d else None,
            "n_positions": len(seqs),
            "baseline_step_s": step,
        }
    return out


def calibration_seqs(rows: list[dict], prompts, n_prompts: int, n_positions: int):
    """Prompt + the baseline's first j tokens, at n_positions evenly spaced j, for the first
    n_prompts prompts: where the costs are timed."""
    seqs = []
    for r in sorted((r for r in rows if r["method"] == BASELINE), key=lambda r: r["prompt"]):
        if r["prompt"] >= n_prompts:
            break
        toks = [int(t) for t in str(r["tokens"]).split()]
        ids = list(prompts[r["prompt"]].ids)
        for i in range(n_positions):
            seqs.append(ids + toks[: i * len(toks) // n_positions])
    return seqs


CEILING_KS = (1, 2, 4, 8, 16)


@torch.inference_mode()
def ceiling(
    lm: CachedLM, rows: list[dict], prompts, n_prompts: int, n_positions: int, repeats: int = 3
) -> dict[str, Any]:
    """The speedup a perfect, free draft would give: per K, a verification of the baseline's own
    next K tokens (all accepted: K + 1 tokens per call) timed against a one-position call at the
    same sequences (fastest of `repeats`, K alternating), so ceiling_K = (K + 1) / v_K with v_K
    that call's cost in baseline steps. Bounds every chain drafter at that K on this machine."""
    from specdec_lib.core.decode import prefill, verify_step
    from specdec_lib.core.sampling import make_generator
    from specdec_lib.drafters.base import Draft

    greedy, gen = SamplingConfig(), make_generator(0)
    ks = (0, *CEILING_KS)
    best: dict[int, list[float]] = {k: [] for k in ks}
    all_accepted = True
    base = sorted((r for r in rows if r["method"] == BASELINE), key=lambda r: r["prompt"])
    for r in base[:n_prompts]:
        toks = [int(x) for x in str(r["tokens"]).split()]
        ids = list(prompts[r["prompt"]].ids)
        for i in range(n_positions):
            j = i * max(len(toks) - max(ks), 0) // max(n_positions, 1)
            seq = ids + toks[:j]
            prefill(lm, seq)
            fastest = dict.fromkeys(ks, math.inf)
            for _ in range(repeats):
                for k in ks:
                    draft = Draft(toks[j : j + k])
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


# ----------------------------------------------------------------------------- memory


def rss_bytes() -> int | None:
    """Resident memory of this process now (Linux /proc), or None."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _tensor_bytes(tensors) -> int:
    seen: set[int] = set()
    total = 0
    for t in tensors:
        if t is None:
            continue
        try:
            key = t.untyped_storage().data_ptr()
            size = t.untyped_storage().nbytes()
        except (RuntimeError, NotImplementedError):  # mkldnn tensors have no storage
            key, size = id(t), t.element_size() * t.numel()
        if key not in seen:
            seen.add(key)
            total += size
    return total


def _packed_bytes(model: torch.nn.Module) -> int:
    from specdec_lib.core.fastpath import _PACKED

    return sum(
        v[1].element_size() * v[1].numel()
        for m in model.modules()
        if isinstance(m, torch.nn.Linear) and (v := _PACKED.get(m)) is not None
    )


def _cache_bytes(lm: CachedLM) -> int:
    layers = getattr(lm.cache, "layers", []) if lm.cache is not None else []
    bufs = []
    for layer in layers:
        bufs += [getattr(layer, "_kbuf", None), getattr(layer, "_vbuf", None)]
        if getattr(layer, "_kbuf", None) is None:
            bufs += [getattr(layer, "keys", None), getattr(layer, "values", None)]
    return _tensor_bytes(bufs)


def _peak_cuda(device: torch.device) -> int | None:
    return torch.cuda.max_memory_allocated(device) if device.type == "cuda" else None


def measure_memory(
    loaded: LoadedModel, fit_ids, prompt: list[int], max_new_tokens: int, self_spec: str
) -> dict[str, Any]:
    """Target alone, then target + self-draft: RSS (CPU) or peak allocated (CUDA), and the
    bytes each holds. The self-draft's extra is its own tensors: pruned head (and its packed
    copy) and its KV cache; everything else it shares with the target."""
    device = loaded.device
    gc.collect()
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    spec = SpecConfig(4, max_new_tokens)
    base = Generator.from_loaded(loaded, "none")
    base.generate_ids(prompt, spec, SamplingConfig())
    params = _tensor_bytes(loaded.model.parameters())
    target_bytes = params + _packed_bytes(loaded.model) + _cache_bytes(base.lm)
    rss_target = rss_bytes()
    cuda_target = _peak_cuda(device)
    drafter = make_drafter(self_spec, loaded, fit_ids)
    gen = Generator.from_loaded(loaded, drafter)
    gen.generate_ids(prompt, spec, SamplingConfig())
    rss_both = rss_bytes()
    cuda_both = _peak_cuda(device)
    own = [p for p in drafter.lm.model.parameters()]
    shared = {p.untyped_storage().data_ptr() for p in loaded.model.parameters()}
    own = [p for p in own if p.untyped_storage().data_ptr() not in shared]
    draft_bytes = _tensor_bytes(own) + _cache_bytes(drafter.lm)
    head = getattr(drafter.lm.model, "lm_head", None)
    if head is not None and head not in set(loaded.model.modules()):
        from specdec_lib.core.fastpath import _PACKED

        packed = _PACKED.get(head)
        draft_bytes += packed[1].element_size() * packed[1].numel() if packed else 0
    out: dict[str, Any] = {
        "self_draft": self_spec,
        "target_bytes": target_bytes,
        "target_param_bytes": params,
        "self_draft_extra_bytes": draft_bytes,
        "self_draft_extra_fraction": draft_bytes / target_bytes if target_bytes else None,
        "rss_target_bytes": rss_target,
        "rss_target_plus_self_bytes": rss_both,
    }
    if rss_target and rss_both:
        out["rss_self_draft_extra_bytes"] = rss_both - rss_target
    if cuda_target is not None:
        out["cuda_peak_target_bytes"] = cuda_target
        out["cuda_peak_target_plus_self_bytes"] = cuda_both
    return out


def _self_spec(loaded: LoadedModel) -> str:
    """The library's self-draft, scaled down for models smaller than the embedded one."""
    cfg = loaded.model.config
    cfg = cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg
    layers = max(1, min(SELF_LAYERS, int(cfg.num_hidden_layers)))
    keep = min(SELF_KEEP, max(loaded.vocab_size // 2, 1))
    return f"self:{layers}:{keep}"


# ----------------------------------------------------------------------------- figures


def _walls(rows, method: str) -> np.ndarray:
    rs = sorted((r for r in rows if r["method"] == method), key=lambda r: r["prompt"])
    return np.array([r["wall_s"] for r in rs], dtype=float)


def _ratio(rows, slow: str, fast: str) -> dict[str, Any]:
    """How many times faster `fast` is than `slow` (ratio of total times, paired CI)."""
    return stats.paired_speedup(_walls(rows, slow), _walls(rows, fast)).as_dict()


def _with_n(o: Any, n: int) -> Any:
    """Every interval (a dict with ci_low) in o gets its n beside it."""
    if isinstance(o, dict):
        o = {k: _with_n(v, n) for k, v in o.items()}
        if "ci_low" in o:
            o["n"] = n
    return o


def _figures(
    rows: list[dict], summary: dict[str, Any], costs: dict[str, dict[str, float]] | None = None
) -> dict[str, Any]:
    """Per arm: the numbers a reader compares, flattened; every interval with its n."""
    arms: dict[str, Any] = {}
    has_hf = "hf_greedy" in summary
    for name, s in summary.items():
        a: dict[str, Any] = {
            "implementation": "hf" if _is_hf(name) else "ours",
            "draft": s["draft"],
            "k": s["k"],
            "tokens_per_s": s["tokens_per_s"],
            "speedup": s.get("speedup", {"value": 1.0, "ci_low": 1.0, "ci_high": 1.0}),
            "identical_to_baseline": s["identical_fraction"],
            "repetition_4gram": s["repetition_4gram"],
            "new_tokens": s["new_tokens"],
        }
        if has_hf and name != "hf_greedy":
            a["speedup_vs_hf_greedy"] = _ratio(rows, "hf_greedy", name)
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


def fitted_acceptance(accepted: list[int], proposed: list[int]) -> float | None:
    """Per-token acceptance a of the i.i.d. model fitted to the counts (maximum likelihood):
    accepted drafts / draft positions reached (a call of d drafts accepting n reached
    min(d, n + 1) positions). None when nothing was drafted."""
    reached = sum(min(d, n + 1) for n, d in zip(accepted, proposed, strict=True))
    return sum(accepted) / reached if reached else None


def _calls(rows, name: str) -> tuple[list[int], list[int]]:
    arm = [r for r in rows if r["method"] == name]
    acc = [int(x) for r in arm for x in str(r["accepted_lengths"]).split()]
    prop = [int(x) for r in arm for x in str(r["proposed_lengths"]).split()]
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
    from specdec_lib.analysis import theory

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


def _best(summary: dict[str, Any], hf: bool) -> str | None:
    """The fastest arm of ours (hf=False) or of HF's. Ours must be lossless in this run: every
    output token-identical to our baseline's (an arm that is not, such as tree verification in
    bfloat16, where its one call is not batch-invariant, is shown but never called best)."""
    names = [
        n
        for n in summary
        if _is_hf(n) == hf
        and n != BASELINE
        and "speedup" in summary[n]
        and (hf or summary[n]["identical_fraction"] == 1.0)
    ]
    return max(names, key=lambda n: summary[n]["speedup"]["value"]) if names else None


# ----------------------------------------------------------------------------- printing


def _fmt(x: Any, spec: str = ".2f") -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    return format(x, spec)


COLUMNS = (
    ("group", 10),
    ("arm", 22),
    ("n", 3),
    ("tok/s", 6),
    ("95% CI", 13),
    ("x base", 6),
    ("95% CI", 11),
    ("x HFgr", 6),
    ("acc", 5),
    ("MAL", 5),
    ("c", 5),
    ("m/pred", 6),
    ("rep4", 5),
    ("ident", 5),
)


def _row_cells(gname: str, name: str, a: dict[str, Any]) -> list[str]:
    tps, sp = a["tokens_per_s"], a["speedup"]
    return [
        gname,
        name,
        str(tps.get("n", "-")),
        _fmt(tps["median"], ".1f"),
        f"[{_fmt(tps['ci_low'], '.1f')},{_fmt(tps['ci_high'], '.1f')}]",
        _fmt(sp["value"]),
        f"[{_fmt(sp['ci_low'])},{_fmt(sp['ci_high'])}]",
        _fmt(a.get("speedup_vs_hf_greedy", {}).get("value")),
        _fmt(a.get("acceptance_rate", {}).get("value")),
        _fmt(a.get("mean_accepted_length", {}).get("value")),
        _fmt(a.get("cost_ratio"), ".3f"),
        _fmt(a.get("measured_over_predicted")),
        _fmt(a["repetition_4gram"]["median"]),
        _fmt(a["identical_to_baseline"]),
    ]


def print_table(groups: dict[str, dict[str, Any]], out: TextIO) -> None:
    """One line per group and arm; x base: speedup over our baseline, x HFgr: over HF greedy,
    n: prompts behind every interval of the line, acc: acceptance, MAL: mean accepted length,
    c: Leviathan's cost ratio (a draft token timed apart, in baseline steps), m/pred: measured
    over predicted decode speedup, rep4: share of repeated 4-grams, ident: share identical to
    baseline."""

    def line(cells: Sequence[str]) -> str:
        widths = [w for _, w in COLUMNS]
        pairs = enumerate(zip(cells, widths, strict=True))
        return " ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in pairs)

    head = line([c for c, _ in COLUMNS])
    print(head, file=out)
    print("-" * len(head), file=out)
    for gname, g in groups.items():
        for name, a in g["arms"].items():
            print(line(_row_cells(gname, name, a)), file=out)
    out.flush()


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
    result = _clean(result)
    _print_summary(targets, out, bound)
    print(json.dumps(result, sort_keys=True, allow_nan=False), file=out, flush=True)
    return result


def _target(value: float | None, threshold: float, *, at_most: bool = False, **extra) -> dict:
    met = None if value is None else (value <= threshold if at_most else value >= threshold)
    return {"value": value, "threshold": threshold, "met": met, **extra}


def _targets(groups, all_rows, memory, contexts, quick) -> dict[str, Any]:
    t: dict[str, Any] = {}
    worst_pred: list[tuple[float, str]] = []
    for c in contexts:
        g, rows = groups[f"long_c{c}"], all_rows[f"long_c{c}"]
        arms = g["arms"]
        if "hf_greedy" in arms:
            r = _ratio(rows, "hf_greedy", BASELINE)
            t[f"baseline_vs_hf_greedy_c{c}"] = _target(
                r["value"], TARGETS["baseline_vs_hf_greedy"], ci=r
            )
        for name in arms:
            if name.startswith("ngram_k"):
                k = name.removeprefix("ngram_k")
                hf = f"hf_prompt_lookup_k{k}"
                if hf in arms:
                    r = _ratio(rows, hf, name)
                    t[f"ngram_vs_hf_prompt_lookup_k{k}_c{c}"] = _target(
                        r["value"], TARGETS["ngram_vs_hf_prompt_lookup"], ci=r
                    )
        if g["best_ours"]:
            r = _ratio(rows, BASELINE, g["best_ours"])
            t[f"best_long_vs_baseline_c{c}"] = _target(
                r["value"], TARGETS["best_long_vs_baseline"], ci=r, ours=g["best_ours"]
            )
        if g["best_ours"] and g["best_hf"]:
            r = _ratio(rows, g["best_hf"], g["best_ours"])
            t[f"best_vs_hf_best_c{c}"] = _target(
                r["value"],
                TARGETS["best_vs_hf_best"],
                ci=r,
                ours=g["best_ours"],
                hf=g["best_hf"],
                ours_speedup_over_baseline=arms[g["best_ours"]]["speedup"]["value"],
                hf_speedup_over_baseline=arms[g["best_hf"]]["speedup"]["value"],
            )
    for c in contexts:
        rows = all_rows[f"short_c{c}"]
        r = _ratio(rows, BASELINE, BEST_SHORT.name)
        t[f"short_best_vs_baseline_c{c}"] = _target(
            r["value"], TARGETS["short_best_vs_baseline"], ci=r, ours=BEST_SHORT.name
        )
    for gname, g in groups.items():
        for name, a in g["arms"].items():
            if a.get("measured_over_predicted") is not None:
                worst_pred.append((a["measured_over_predicted"], f"{gname}/{name}"))
    # the largest factor by which measurement and prediction differ, either way
    spread = [(max(v, 1.0 / v), k) for v, k in worst_pred if v > 0]
    worst = max(spread) if spread else None
    t["prediction_agreement"] = _target(
        worst[0] if worst else None,
        TARGETS["prediction_agreement"],
        at_most=True,
        arm=worst[1] if worst else None,
        measured_over_predicted={k: v for v, k in worst_pred},
    )
    t["self_draft_extra_memory"] = _target(
        memory.get("self_draft_extra_fraction"),
        TARGETS["self_draft_extra_memory"],
        at_most=True,
    )
    return t


def _print_summary(targets: dict[str, Any], out: TextIO, bound: dict[str, Any]) -> None:
    print("", file=out)
    if bound:
        cells = ", ".join(f"K={k} {c['ceiling']:.2f}x" for k, c in bound["by_k"].items())
        print(
            f"  ceiling (a perfect, free draft; n={bound['n_positions']} positions): {cells}",
            file=out,
        )
    for name, t in targets.items():
        mark = {True: "met", False: "MISSED", None: "n/a"}[t["met"]]
        sense = "<=" if name in ("self_draft_extra_memory", "prediction_agreement") else ">="
        print(
            f"  {name:<40} {_fmt(t['value'], '.3f'):>7} ({sense} {t['threshold']}) {mark}", file=out
        )
    out.flush()


def _clean(o: Any) -> Any:
    if isinstance(o, float) and not math.isfinite(o):
        return None
    if isinstance(o, dict):
        return {str(k): _clean(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_clean(v) for v in o]
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return _clean(float(o))
    return o
