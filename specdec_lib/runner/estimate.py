"""The time a notebook will take, printed before it starts: each experiment's target calls counted
from its config (prompts x tokens x arms x contexts, the same dict whose hash names its result),
priced by a few target calls timed on the loaded target.

`work(experiment, cfg)` is the count: a list of `Calls`, each between `low` and `high` target
calls of `tokens` tokens. A baseline token is one call of 1 token; a speculative arm with draft
length K makes between T / (K + 1) calls (every draft accepted) and T calls (none accepted) of
K + 1 tokens; every run starts with one call over its prompt (the prefill); a run without the KV
cache feeds its whole sequence at every call. The agreement pass is a greedy continuation per
(document, context) plus one teacher-forced forward of the target and of each draft that is a
model of its own; the sampling checks are between one call per (prompt or method) and
`DISTINCT` of them (seeds that propose the same draft share a call). `Costs` holds the
measured seconds of a call by tokens fed (a decode step, a K + 1 verification and one long
forward), interpolated linearly in between. `estimate_table` is the table
`print_estimate(study, experiments)` prints: minutes per experiment (low-high) and in total; the
measured costs are those of this machine as loaded now (another process's load slows them).

What it does not count: a draft model's own calls (except its teacher-forced forwards), the
drafters' CPU work, loading and downloading, figures and writing; so it is a floor for drafts
that cost much, and says so. Knows nothing about how the runs are measured or summarized.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

BASELINE_SPECS = ("none", "hf:greedy")  # arms that decode one token per target call
# drafts whose teacher-forced forward is a model of its own (an early exit, the self-draft and
# the table drafts read from the target's forward or cost nothing like a forward)
OWN_MODEL = ("model:", "quant:", "noise:", "distilled")
LONGEST = 1024  # the longest call timed (longer ones are extrapolated)
# the sampling checks make one target call per distinct draft (seeds proposing the same draft
# share it); the high end assumes at most this many distinct ones per prompt (or position) and
# method: an assumption, not a bound (one call per seed would be, and is far above what they make)
DISTINCT = 100


@dataclass(frozen=True)
class Calls:
    """Between `low` and `high` target calls of `tokens` tokens each."""

    low: float
    high: float
    tokens: int

    def times(self, n: float) -> Calls:
        """These calls n times over."""
        return Calls(self.low * n, self.high * n, self.tokens)


@dataclass(frozen=True)
class Costs:
    """Seconds of one target call by tokens fed ({1: a decode step, K + 1: a verification, ...}),
    measured on `device`."""

    seconds: dict[int, float]
    device: str = ""

    def of(self, tokens: int) -> float:
        """The cost of a call of `tokens` tokens: linear between the measured sizes, extended
        with the last segment's slope beyond them (never below the cheapest call)."""
        pts = sorted(self.seconds.items())
        if len(pts) == 1 or tokens <= pts[0][0]:
            return pts[0][1]
        for (n0, s0), (n1, s1) in zip(pts, pts[1:], strict=False):
            if tokens <= n1:
                return s0 + (s1 - s0) * (tokens - n0) / (n1 - n0)
        (n0, s0), (n1, s1) = pts[-2], pts[-1]
        return max(s1 + (s1 - s0) * (tokens - n1) / (n1 - n0), pts[0][1])


def _arm_k(name: str, spec: str, cfg: dict[str, Any]) -> int:
    """An arm's draft length (0: one token per call)."""
    if spec in BASELINE_SPECS:
        return 0
    if name.startswith("k") and name[1:].isdigit():  # the K sweep's k1, k2, ...
        return int(name[1:])
    if name == "adaptive" and cfg.get("adaptive"):
        return int(cfg["adaptive"]["k_start"])
    return int(cfg.get("k", 4))


def generation(context: int, new_tokens: int, k: int, *, use_cache: bool = True) -> list[Calls]:
    """The target calls of one run: its prefill and its decode (k = 0: the baseline)."""
    low = new_tokens if k == 0 else math.ceil(new_tokens / (k + 1))
    fed = 1 if k == 0 else k + 1
    if not use_cache:  # every call recomputes the prompt and what was generated so far
        fed += context + new_tokens // 2
    return [Calls(1, 1, max(context, 1)), Calls(low, new_tokens, fed)]


def _timed(cfg: dict[str, Any], contexts: Sequence[int], n_prompts: int) -> list[Calls]:
    """Every arm of a paired experiment on n_prompts prompts at each context (an arm the timed
    sweep runs on fewer prompts, `n_prompts_by_arm`, on those)."""
    out: list[Calls] = []
    fewer = cfg.get("n_prompts_by_arm") or {}
    for c in contexts:
        for name, spec in cfg["arms"].items():
            n = min(n_prompts, int(fewer.get(str(name), n_prompts)))
            k = _arm_k(str(name), str(spec), cfg)
            own = (cfg.get("arm_cache") or {}).get(str(name)) or {}  # per-arm caches (04's)
            runs = generation(
                c,
                int(cfg["max_new_tokens"]),
                k,
                use_cache=bool(own.get("target", cfg.get("use_cache", True))),
            )
            warm = int(cfg.get("warmup_tokens", 0))
            runs += [Calls(warm, warm, 1)] if warm else []
            out += [r.times(n) for r in runs]
    return out


def _agreement(cfg: dict[str, Any]) -> list[Calls]:
    T, k = int(cfg["continuation_tokens"]), int(cfg.get("continuation_k", cfg.get("k", 4)))
    models = 1 + sum(str(s).startswith(OWN_MODEL) for s in cfg["arms"].values())
    n, n_other = int(cfg["n_documents"]), int(cfg.get("n_documents_other", cfg["n_documents"]))
    n_text = int(cfg.get("n_documents_text", 0))
    out: list[Calls] = []
    for c in cfg["contexts"]:
        docs = n if c in cfg.get("test_range", cfg["contexts"]) else n_other
        cont = generation(c, T, k)
        cont[1] = Calls(cont[1].low, T, k + 1)  # a lossless greedy run: T steps at the most
        out += [x.times(docs) for x in cont]
        out.append(Calls(docs * models, docs * models, c + T))  # the continuation view
        if c in cfg.get("text_contexts", cfg["contexts"]):
            texts = min(docs, n_text)
            out.append(Calls(texts * models, texts * models, c + T))
    return out


def _sampling(cfg: dict[str, Any]) -> list[Calls]:
    temps = len(cfg["temperatures"])
    out = [x.times(temps) for x in _timed(cfg, [int(cfg["context_tokens"])], int(cfg["n_prompts"]))]
    dist = cfg.get("distribution") or {}
    if dist:
        nd, ns, kd = int(dist["n_prompts"]), int(dist["n_samples"]), int(dist.get("k", 1))
        out.append(Calls(temps * nd, temps * nd, 1))  # the baseline: one call per prompt
        arms = len(dist.get("arms", []))  # a draft: one call per distinct draft, at most per seed
        out.append(Calls(temps * nd * arms, temps * nd * arms * min(ns, DISTINCT), kd + 1))
    seq = cfg.get("sequence") or {}
    if seq:
        methods, m, ns = 1 + len(seq["drafts"]), int(seq["positions"]), int(seq["n_samples"])
        high = temps * methods * m * min(ns, DISTINCT)
        out.append(Calls(temps * methods * m, high, int(seq["k"]) + 1))
    return out


def work(experiment: str, cfg: dict[str, Any]) -> list[Calls]:
    """The target calls of one experiment, from its config."""
    if experiment == "agreement":
        return _agreement(cfg)
    if experiment == "sampling":
        return _sampling(cfg)
    if "contexts" in cfg:  # the timed sweep and its cache-off ablation
        by = cfg.get("n_prompts_by_context") or {}
        return [
            x
            for c in cfg["contexts"]
            for x in _timed(cfg, [int(c)], int(by.get(str(c), cfg["n_prompts"])))
        ]
    out = _timed(cfg, [int(cfg["context_tokens"])], int(cfg["n_prompts"]))
    ident = cfg.get("identity") or {}
    if ident.get("dtypes") and ident.get("n_prompts"):  # 03's token identity per dtype
        pair = {"arms": dict(list(cfg["arms"].items())[:2]), "k": cfg.get("k", 4)}
        pair["max_new_tokens"] = int(ident["max_new_tokens"])
        runs = _timed(pair, [int(cfg["context_tokens"])], int(ident["n_prompts"]))
        out += [x.times(len(ident["dtypes"])) for x in runs]
    return out


def minutes(calls: Sequence[Calls], costs: Costs) -> tuple[float, float]:
    """(low, high) minutes of these calls at these costs."""
    low = sum(c.low * costs.of(c.tokens) for c in calls)
    high = sum(c.high * costs.of(c.tokens) for c in calls)
    return low / 60, high / 60


def _span(lo: float, hi: float) -> str:
    fmt = (lambda x: f"{x:.1f}") if hi < 10 else (lambda x: f"{x:.0f}")
    return fmt(lo) if fmt(lo) == fmt(hi) else f"{fmt(lo)}-{fmt(hi)}"


def estimate_table(works: dict[str, list[Calls]], costs: Costs, k: int = 4) -> str:
    """The printed estimate: the measured costs in one line, then one row per experiment (its
    target calls and minutes, low-high) and the total."""
    head = (
        f"time estimate{' on ' + costs.device if costs.device else ''}: a decode step "
        f"{1000 * costs.of(1):.1f} ms, a verification of K + 1 = {k + 1} tokens "
        f"{1000 * costs.of(k + 1):.1f} ms (target calls only: not a draft model's own steps, "
        "loading or downloads)"
    )
    rows = [("experiment", "target calls", "minutes")]
    total = [0.0, 0.0]
    for name, calls in works.items():
        lo, hi = minutes(calls, costs)
        total[0] += lo
        total[1] += hi
        n_lo, n_hi = sum(c.low for c in calls), sum(c.high for c in calls)
        calls_text = f"{n_lo:.0f}" if round(n_lo) == round(n_hi) else f"{n_lo:.0f}-{n_hi:.0f}"
        rows.append((name, calls_text, _span(lo, hi)))
    rows.append(("total", "", _span(*total)))
    width = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = [f"  {r[0]:<{width[0]}}  {r[1]:>{width[1]}}  {r[2]:>{width[2]}}" for r in rows]
    return "\n".join([head, *lines])


def measure_costs(
    model: Any, k: int, longest: int, *, context: int = 100, repeats: int = 5
) -> dict[int, float]:
    """Seconds of a decode step, a K + 1 verification and one call of `longest` tokens on
    `model` (fastest of `repeats` each, after one warm call), at `context` tokens of context."""
    import torch

    from specdec_lib.core.cache import CachedLM
    from specdec_lib.core.decode import device_sync
    from specdec_lib.environment.runtime import _ids

    lm = CachedLM(model)
    ids = _ids(model, context + longest + k + 2)
    sizes = sorted({1, k + 1, max(min(longest, LONGEST), k + 2)})
    seconds: dict[int, float] = {}
    with torch.inference_mode():
        for n in sizes:
            lm.reset()
            lm.extend(ids[:context], 1)
            took = []
            for _ in range(repeats + 1):  # the first call warms the kernels for this size
                device_sync(lm.device)
                t0 = time.perf_counter()
                lm.extend(ids[context : context + n], n)
                device_sync(lm.device)
                took.append(time.perf_counter() - t0)
                lm.rollback(context)
            seconds[n] = min(took[1:])
    return seconds


def print_estimate(study: Any, experiments: Sequence[str]) -> str | None:
    """Print the estimate for the experiments of this notebook that will run (those without a
    stored result for their config, or all when forced) and return it; measures on the loaded
    target (loading it: the first experiment would). Prints one line and loads nothing when all
    are stored."""
    from specdec_lib.results.catalog import QUICK, STUDY
    from specdec_lib.results.declare import load
    from specdec_lib.runner.context import load_target

    refs = {load(r).name: load(r) for nb in (QUICK, *STUDY) for r in nb.experiments}
    works: dict[str, list[Calls]] = {}
    for name in experiments:
        if study.section(name) is None or name not in refs:
            continue
        cfg = load(refs[name].config)(study)
        if not study.force and study.store.done(name, cfg, study=True):
            continue
        works[name] = work(name, cfg)
    if not works:
        print("time estimate: every result here is stored for its config; nothing to run")
        return None
    loaded = load_target(study)
    k = int(study.profile.get("k", 4))
    longest = max(c.tokens for calls in works.values() for c in calls)
    device = str(next(loaded.model.parameters()).device)
    if device.startswith("cuda"):
        import torch

        device = torch.cuda.get_device_name(device)
    costs = Costs(measure_costs(loaded.model, k, longest), f"{device}, {loaded.dtype}")
    text = estimate_table(works, costs, k)
    print(text)
    return text
