"""The time a notebook will take, printed before it starts: each experiment's calls counted from
its config (prompts x tokens x arms x contexts, the same dict whose hash names its result),
priced by a few calls timed on the loaded models (`measured_costs`), or by stated costs
(`t4.t4_costs`, printed offline by `t4.print_t4_estimate`).

`work(experiment, cfg)` is the count: a list of `Calls`, each between `low` and `high` calls of
`tokens` tokens per row and `batch` rows, of the target or of a draft model (`Calls.model`). A
baseline token is one call of 1 token; a speculative arm with draft length K makes between
T / (K + 1) calls (every draft accepted) and T calls (none accepted) of K + 1 tokens; every run
starts with one call over its prompt (the prefill); a run without the KV cache feeds its whole
sequence at every call. A `model:` draft makes its own prefill and K decode steps per
verification call (`draft_steps`), priced at its own step. The agreement pass is a greedy
continuation per (document, context), or with `continuation_batch` B, ceil(documents / B)
batches of a prefill and T - 1 steps of B rows; plus one teacher-forced forward of the target and
of each draft that is a model of its own; the sampling checks are between one call per (prompt
or method) and `DISTINCT` of them (seeds that propose the same draft share a call). `Costs`
holds the seconds of a call by tokens fed (a decode step, a K + 1 verification and one long
forward), interpolated linearly in between, of a decode step of B rows (`Costs.step`), and each
draft model's own `Costs`. `estimate_table` is the table `print_estimate(study, experiments)`
prints: minutes per experiment (low-high) and in total; the measured costs are those of this
machine as loaded now (another process's load slows them).

What it does not count: the drafters' CPU work (tables, n-grams), the decode steps of drafts
that are not `model:` drafts (quantized, noisy and distilled copies: their teacher-forced
forwards only, at the target's cost), a draft's extra token fed after a rejection, rows of a
batch that stopped early at an EOS, loading and downloading, figures and writing; so it is a
floor for drafts that cost much, and says so. Knows nothing about how the runs are measured or
summarized.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
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


TARGET = ""  # `Calls.model` of the target's own calls
# drafts that make decode steps of their own model, K per verification call (priced at the
# draft's measured step: `Costs.drafts`); the other drafts' work is not counted
STEPPED = ("model:",)


@dataclass(frozen=True)
class Calls:
    """Between `low` and `high` calls of `tokens` tokens per row and `batch` rows each, of the
    target (`model` TARGET) or of the draft model whose spec `model` is."""

    low: float
    high: float
    tokens: int
    batch: int = 1
    model: str = TARGET

    def times(self, n: float) -> Calls:
        """These calls n times over."""
        return replace(self, low=self.low * n, high=self.high * n)


@dataclass(frozen=True)
class Costs:
    """Seconds of one target call by tokens fed ({1: a decode step, K + 1: a verification, ...}),
    measured (or stated) on `device`; `batched`: seconds of one decode step of B rows by B;
    `drafts`: a draft model's own costs by its spec."""

    seconds: dict[int, float]
    device: str = ""
    batched: dict[int, float] = field(default_factory=dict)
    drafts: dict[str, Costs] = field(default_factory=dict)

    def step(self, batch: int) -> float:
        """A decode step of `batch` rows of one token: measured at that batch, else linear
        between the measured batches (batch 1 is `of(1)`), else, beyond them or with none
        measured, priced as one call of `batch` tokens (the same weights read and the same
        products; only the attention over each row's cache differs)."""
        if batch <= 1:
            return self.of(1)
        pts = sorted({1: self.of(1), **self.batched}.items())
        if batch in self.batched:
            return self.batched[batch]
        for (n0, s0), (n1, s1) in zip(pts, pts[1:], strict=False):
            if n0 < batch < n1:
                return s0 + (s1 - s0) * (batch - n0) / (n1 - n0)
        return max(self.of(batch), pts[-1][1])

    def price(self, calls: Calls) -> float | None:
        """Seconds of one of these calls; None for a draft model's calls without its costs. A
        batched call of several tokens per row (a batch's prefill) is priced as one call of
        batch x tokens tokens."""
        own = self if calls.model == TARGET else self.drafts.get(calls.model)
        if own is None:
            return None
        if calls.tokens == 1:
            return own.step(calls.batch)
        return own.of(calls.tokens * calls.batch)

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


def draft_steps(spec: str, context: int, new_tokens: int, k: int, use_cache: bool) -> list[Calls]:
    """A model draft's own calls in one run: its prefill, then K decode steps per verification
    call (as many calls as `generation` counts), each recomputing its whole sequence without a
    cache."""
    target = generation(context, new_tokens, k, use_cache=True)[1]
    fed = 1 if use_cache else context + new_tokens // 2
    prefill = Calls(1, 1, max(context, 1), model=spec)
    return [prefill, Calls(target.low * k, target.high * k, fed, model=spec)]


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
            if k and str(spec).startswith(STEPPED):
                draft_cache = own.get("draft", own.get("target", cfg.get("use_cache", True)))
                runs += draft_steps(str(spec), c, int(cfg["max_new_tokens"]), k, bool(draft_cache))
            warm = int(cfg.get("warmup_tokens", 0))
            runs += [Calls(warm, warm, 1)] if warm else []
            out += [r.times(n) for r in runs]
    return out


def _agreement(cfg: dict[str, Any]) -> list[Calls]:
    """Per context: the continuations (one lossless greedy run per document, or with
    `continuation_batch` B, ceil(documents / B) batches of a prefill and T - 1 batched steps),
    then one teacher-forced forward per view of the target and of each draft that is a model of
    its own (a `model:` draft's priced at its own costs, the others' at the target's)."""
    T, k = int(cfg["continuation_tokens"]), int(cfg.get("continuation_k", cfg.get("k", 4)))
    specs = [str(s) for s in cfg["arms"].values()]
    own = 1 + sum(s.startswith(OWN_MODEL) and not s.startswith(STEPPED) for s in specs)
    stepped = [s for s in specs if s.startswith(STEPPED)]
    n, n_other = int(cfg["n_documents"]), int(cfg.get("n_documents_other", cfg["n_documents"]))
    n_text = int(cfg.get("n_documents_text", 0))
    batch = int(cfg.get("continuation_batch", 1))
    out: list[Calls] = []
    for c in cfg["contexts"]:
        docs = n if c in cfg.get("test_range", cfg["contexts"]) else n_other
        if batch > 1:
            runs = math.ceil(docs / batch)
            out += [
                Calls(runs, runs, c + 1, batch),
                Calls(runs * (T - 1), runs * (T - 1), 1, batch),
            ]
        else:
            cont = generation(c, T, k)
            cont[1] = Calls(cont[1].low, T, k + 1)  # a lossless greedy run: T steps at the most
            out += [x.times(docs) for x in cont]
        views = docs + (min(docs, n_text) if c in cfg.get("text_contexts", cfg["contexts"]) else 0)
        out.append(Calls(views * own, views * own, c + T))  # the target (and drafts like it)
        out += [Calls(views, views, c + T, model=s) for s in stepped]
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
    """(low, high) minutes of these calls at these costs (a draft model's calls without its
    costs count nothing: `unpriced` names them)."""
    low = sum(c.low * (costs.price(c) or 0.0) for c in calls)
    high = sum(c.high * (costs.price(c) or 0.0) for c in calls)
    return low / 60, high / 60


def unpriced(works: dict[str, list[Calls]], costs: Costs) -> list[str]:
    """The draft models whose calls these works count but these costs cannot price."""
    return sorted({c.model for w in works.values() for c in w if costs.price(c) is None})


def _span(lo: float, hi: float) -> str:
    fmt = (lambda x: f"{x:.1f}") if hi < 10 else (lambda x: f"{x:.0f}")
    return fmt(lo) if fmt(lo) == fmt(hi) else f"{fmt(lo)}-{fmt(hi)}"


def cost_line(works: dict[str, list[Calls]], costs: Costs, k: int = 4) -> str:
    """The costs the estimate uses, in one line: the target's decode step and K + 1
    verification, its batched step at each batch the works use, each draft model's step, and
    what is not counted."""
    parts = [
        f"a decode step {1000 * costs.of(1):.1f} ms",
        f"a verification of K + 1 = {k + 1} tokens {1000 * costs.of(k + 1):.1f} ms",
    ]
    batches = sorted({c.batch for w in works.values() for c in w if c.batch > 1})
    parts += [f"a step of {b} rows {1000 * costs.step(b):.1f} ms" for b in batches]
    for spec, own in sorted(costs.drafts.items()):
        parts.append(f"a step of draft {spec} {1000 * own.of(1):.1f} ms")
    missing = unpriced(works, costs)
    skipped = f"; not priced: the steps of {', '.join(missing)}" if missing else ""
    return (
        f"time estimate{' on ' + costs.device if costs.device else ''}: {', '.join(parts)} "
        f"(target and model-draft calls: not the drafters' CPU work, loading or downloads"
        f"{skipped})"
    )


def estimate_table(works: dict[str, list[Calls]], costs: Costs, k: int = 4) -> str:
    """The printed estimate: the costs in one line (`cost_line`), then one row per experiment
    (its calls, target and draft, and minutes, low-high) and the total."""
    rows = [("experiment", "calls", "minutes")]
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
    return "\n".join([cost_line(works, costs, k), *lines])


def measure_costs(
    model: Any, k: int, longest: int, *, context: int = 100, repeats: int = 5
) -> dict[int, float]:
    """Seconds of a decode step, a K + 1 verification and one call of `longest` tokens on
    `model` (fastest of `repeats` each, after one warm call), at `context` tokens of context."""
    import torch

    from specdec_lib.core.cache import CachedLM
    from specdec_lib.core.decode import device_sync
    from specdec_study.environment.runtime import _ids

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


def measure_batched_step(
    model: Any, batch: int, *, context: int = 100, steps: int = 8, repeats: int = 3
) -> float:
    """Seconds of one decode step of `batch` rows (`core.batched.greedy_batch`, the agreement's
    batched continuation) at `context` tokens: (a prefill and `steps` steps, less the prefill
    alone) / steps, the fastest of `repeats` each after one warm run."""
    from specdec_lib.core.batched import greedy_batch
    from specdec_study.environment.runtime import _ids

    prompts = [_ids(model, context)] * batch

    def run(n: int) -> float:
        t0 = time.perf_counter()
        greedy_batch(model, prompts, n, pad_id=0)  # its token lists wait for the device
        return time.perf_counter() - t0

    run(2)
    prefill = min(run(1) for _ in range(repeats))
    whole = min(run(1 + steps) for _ in range(repeats))
    return max(whole - prefill, 0.0) / steps


def measured_costs(study: Any, loaded: Any, works: dict[str, list[Calls]], k: int) -> Costs:
    """The costs of these works on the loaded target: its calls (`measure_costs`), its batched
    step at each batch they use, and each model draft's own calls on that draft's model (loaded
    as the experiment will load it); a draft without a model of its own stays unpriced."""
    from specdec_study.runner.session import get_drafter

    calls = [c for w in works.values() for c in w]
    longest = max(c.tokens * c.batch for c in calls if c.model == TARGET)  # a batch's prefill
    batches = sorted({c.batch for c in calls if c.batch > 1})
    batched = {b: measure_batched_step(loaded.model, b) for b in batches}
    drafts: dict[str, Costs] = {}
    for spec in sorted({c.model for c in calls if c.model != TARGET}):
        model = getattr(getattr(get_drafter(study, loaded, spec), "lm", None), "model", None)
        if model is not None:
            own = max(c.tokens for c in calls if c.model == spec)
            drafts[spec] = Costs(measure_costs(model, k, own))
    device = str(next(loaded.model.parameters()).device)
    if device.startswith("cuda"):
        import torch

        device = torch.cuda.get_device_name(device)
    seconds = measure_costs(loaded.model, k, longest)
    return Costs(seconds, f"{device}, {loaded.dtype}", batched, drafts)


def print_estimate(study: Any, experiments: Sequence[str]) -> str | None:
    """Print the estimate for the experiments of this notebook that will run (those without a
    stored result for their config, or all when forced) and return it; measures on the loaded
    target (loading it: the first experiment would). Prints one line and loads nothing when all
    are stored."""
    from specdec_study.runner.experiments import RUNNERS
    from specdec_study.runner.session import load_target

    works: dict[str, list[Calls]] = {}
    for name in experiments:
        if study.section(name) is None or name not in RUNNERS:
            continue
        cfg = RUNNERS[name].config(study)
        if not study.force and study.store.done(name, cfg, study=True):
            continue
        works[name] = work(name, cfg)
    if not works:
        print("time estimate: every result here is stored for its config; nothing to run")
        return None
    loaded = load_target(study)
    k = int(study.profile.get("k", 4))
    text = estimate_table(works, measured_costs(study, loaded, works, k), k)
    print(text)
    return text
