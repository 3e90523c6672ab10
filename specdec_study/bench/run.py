"""The run: load, choose threads, warm up, the groups of paired arms, calibration, ceiling,
memory, identity, targets; prints the table and, last, one JSON line, and writes the run's
result folder (`run_bench`; the folder's files are `record`'s). Knows nothing about notebooks."""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import torch

from specdec_lib.config import SamplingConfig
from specdec_lib.core.processors import NO_CONTROL, RepetitionControl
from specdec_lib.drafters import presets as P
from specdec_lib.errors import SpecdecError
from specdec_lib.generate import Generator, fit_ids_for
from specdec_lib.measure.huggingface import HFGenerator
from specdec_lib.measure.paired import Arm, Method, run_paired
from specdec_lib.models import LoadedModel
from specdec_lib.models.loading import load_model
from specdec_study.analysis.summary import summarize
from specdec_study.bench import record
from specdec_study.bench.calibrate import calibrate, calibration_seqs, ceiling
from specdec_study.bench.calibrate_presets import calibrate_presets, key_for
from specdec_study.bench.configs import (
    BASELINE_CONFIG,
    BEST_LONG,
    BEST_SHORT,
    CONTEXTS,
    GROUP_KINDS,
    IDENTITY_TOKENS,
    INT8W_LOOPFREE,
    KS,
    LONG_TOKENS,
    LOOPFREE,
    SHORT_TOKENS,
    TREE_LONG,
    Config,
    Decoding,
    _self_spec,
    make_drafter,
    ngram_configs,
)
from specdec_study.bench.configs import (
    GREEDY as GREEDY_DECODING,
)
from specdec_study.bench.memory import measure_memory
from specdec_study.bench.numbers import _arm_numbers, _best
from specdec_study.bench.strata import print_strata, repetition_strata
from specdec_study.bench.table import _print_summary, print_identity, print_table
from specdec_study.bench.targets import _targets
from specdec_study.environment import runtime, tracking
from specdec_study.results.declare import BASELINE
from specdec_study.results.store import clean

# ----------------------------------------------------------------------------- arms


def _ours(
    loaded: LoadedModel, cfg: Config, fit_ids, control: RepetitionControl = NO_CONTROL
) -> Arm:
    drafter = make_drafter(cfg.draft, loaded, fit_ids, cfg.k)
    gen = Generator.from_loaded(loaded, drafter, control=control)
    return Arm(Method(cfg.name, cfg.draft, cfg.k), gen)


def _hf(
    loaded: LoadedModel,
    mode: str,
    k: int | None,
    assistant=None,
    control: RepetitionControl = NO_CONTROL,
    sampled: bool = False,
) -> Arm:
    """An HF peer; its autoregressive arm is `hf_greedy` (`hf_sample` in a sampling group)."""
    plain = "hf_sample" if sampled else "hf_greedy"
    name = plain if mode == "greedy" else f"hf_{mode}_k{k}"
    gen = HFGenerator(loaded, mode, k, assistant, control=control)
    return Arm(Method(name, f"hf:{mode}", k or 1), gen)


# ----------------------------------------------------------------------------- warm-up


def warm_kernels(loaded: LoadedModel, max_rows: int, prompt_lengths: Sequence[int]) -> float:
    """Every shape the benchmark will use, once, on our fast path and on the stock model that
    Hugging Face `generate` runs (`runtime.warm_kernels`)."""
    return runtime.warm_kernels(loaded.model, max_rows, prompt_lengths, stock=True)


def choose_threads(loaded: LoadedModel, rows: int) -> dict[str, Any]:
    """The run's thread count, chosen as the CLI and the study choose it: a 1-row step plus a
    verification of `rows` rows (the bench's largest K + 1) per count."""
    return runtime.choose_threads(loaded.model, rows=rows)


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
    sampling: SamplingConfig = SamplingConfig(),
) -> tuple[list[dict], dict[str, Any]]:
    rows = run_paired(
        arms,
        prompts,
        max_new_tokens=max_new_tokens,
        warmup=warmup,
        progress=name,
        sampling=sampling,
    )
    return rows, summarize(rows)


def fp32_identity_wanted(loaded: LoadedModel, loaded_fp32: LoadedModel | None) -> bool:
    """Whether to load a float32 twin for the identity check: given one, or the run is in a
    reduced precision on a CPU (on a GPU a float32 copy beside the target may not fit: a T4)."""
    if loaded_fp32 is not None:
        return True
    return loaded.dtype != torch.float32 and loaded.device.type != "cuda"


def _identical_fractions(rows: list[dict], arms: Sequence[Arm]) -> dict[str, float]:
    """Per arm but the first (the reference): the share of prompts identical to it."""
    return {
        a.method.name: float(
            np.mean([bool(r["identical"]) for r in rows if r["method"] == a.method.name])
        )
        for a in arms[1:]
    }


def _identity(
    target: str,
    device: str,
    configs: Sequence[Config],
    prompts,
    max_new_tokens: int,
    fit_ids_of: Callable[[LoadedModel], Callable[[], list[int]]],
    loaded32: LoadedModel | None,
    control: RepetitionControl | None = None,
) -> dict[str, Any]:
    """Token identity in float32: each configuration and HF greedy against our baseline; with
    `control`, HF greedy under HF's own repetition processor against our baseline under ours."""
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
    fractions = _identical_fractions(rows, arms)
    if control is not None and control.active:  # HF's own processor against ours, in float32
        base = Generator.from_loaded(loaded32, "none", control=control)
        hf = HFGenerator(loaded32, "greedy", control=control)
        pair = [
            Arm(Method(f"{BASELINE}_rp", "none", 1), base),
            Arm(Method("hf_greedy_rp", "hf:greedy", 1), hf),
        ]
        rp_rows = run_paired(pair, prompts, max_new_tokens=max_new_tokens, warmup=0)
        fractions.update(_identical_fractions(rp_rows, pair))
    out = {
        "dtype": "float32",
        "prompts": len(prompts),
        "max_new_tokens": max_new_tokens,
        "identical_fraction": fractions,
        "wall_s": time.perf_counter() - t0,
    }
    out["all_identical"] = all(v == 1.0 for v in out["identical_fraction"].values())
    return out


@dataclass(frozen=True)
class Settings:
    """What a run measures, from its arguments (`quick`: tiny settings, a smoke test)."""

    quick: bool
    n_prompts: int  # per group
    ks: tuple[int, ...]  # the K sweep
    contexts: tuple[int, ...]
    long_tokens: int
    short_tokens: int
    calibration: tuple[int, int]  # (prompts, positions per prompt) where costs are timed
    groups: tuple[str, ...] = GROUP_KINDS  # which kinds of group run (`bench --groups`)
    arms: tuple[str, ...] = ()  # `bench --arms`: the arms kept besides the baseline (): all

    def keeps(self, name: str) -> bool:
        """Whether an arm runs: every arm without `--arms`, else the baseline, the arms named
        and, with `hf` named, every Hugging Face arm."""
        if not self.arms or name == BASELINE or name in self.arms:
            return True
        return "hf" in self.arms and name.startswith("hf_")

    @classmethod
    def of(
        cls,
        n_prompts: int,
        max_new_tokens: int | None,
        quick: bool,
        groups: str | Sequence[str] = GROUP_KINDS,
        arms: str | Sequence[str] = (),
    ) -> Settings:
        """The settings of a run from its CLI arguments, checked (a bad one is a SpecdecError)."""
        kinds = parse_groups(groups)
        names = arms.split(",") if isinstance(arms, str) else list(arms)
        if n_prompts < 1:
            raise SpecdecError(f"--prompts must be at least 1, got {n_prompts}")
        if max_new_tokens is not None and max_new_tokens < 1:
            raise SpecdecError(f"--max-new-tokens must be at least 1, got {max_new_tokens}")
        long_tokens = max_new_tokens or (16 if quick else LONG_TOKENS)
        return cls(
            quick=quick,
            n_prompts=min(n_prompts, 2) if quick else n_prompts,
            ks=(4,) if quick else KS,
            contexts=CONTEXTS[:1] if quick else CONTEXTS,
            long_tokens=long_tokens,
            short_tokens=min(SHORT_TOKENS, long_tokens) if not quick else min(8, long_tokens),
            calibration=(1, 2) if quick else (2, 4),
            groups=kinds,
            arms=tuple(n.strip() for n in names if n.strip()),
        )


def parse_groups(groups: str | Sequence[str]) -> tuple[str, ...]:
    """`long,short,loopfree` (any non-empty subset, any order) -> the kinds in run order."""
    names = groups.split(",") if isinstance(groups, str) else list(groups)
    names = [n.strip() for n in names if n.strip()]
    bad = [n for n in names if n not in GROUP_KINDS]
    if bad or not names:
        raise SpecdecError(
            f"--groups takes a comma-separated subset of {','.join(GROUP_KINDS)}, got {groups!r}"
        )
    return tuple(k for k in GROUP_KINDS if k in names)


@dataclass
class BenchSession:
    """One run's target, prompts per context and the groups measured so far (in order)."""

    settings: Settings
    loaded: LoadedModel
    fit_ids: Callable[[], list[int]]
    prompts: dict[int, list]
    groups: dict[str, dict[str, Any]] = field(default_factory=dict)
    rows: dict[str, list[dict]] = field(default_factory=dict)
    best_long: Config = BEST_LONG  # what the presets resolved to (`resolve_presets`)
    best_short: Config = BEST_SHORT

    def ours(self, cfg: Config, how: Decoding = GREEDY_DECODING) -> Arm:
        """An arm of our generator with cfg's drafter and K on this session's target."""
        return _ours(self.loaded, cfg, self.fit_ids, how.control)

    def hf(self, mode: str, k: int | None, how: Decoding = GREEDY_DECODING) -> Arm:
        """An arm of Hugging Face's `generate` in `mode` (K: its draft length) on this target."""
        return _hf(self.loaded, mode, k, control=how.control, sampled=not how.sampling.greedy)

    def add(
        self, gname: str, arms: list[Arm], ps, tokens: int, how: Decoding = GREEDY_DECODING
    ) -> dict[str, Any]:
        """Run one group (paired, interleaved), time its costs apart, keep its numbers. In a
        sampling group our arms are lossless in distribution, not token for token, so the best
        of ours need not match the baseline's draws. `--arms` drops the arms it does not keep."""
        arms = [a for a in arms if self.settings.keeps(a.method.name)]
        rows, summary = _group(gname, arms, ps, tokens, warmup=1, sampling=how.sampling)
        self.rows[gname] = rows
        seqs = calibration_seqs(rows, ps, *self.settings.calibration)
        costs = calibrate(arms, seqs)
        self.groups[gname] = {
            "context_tokens": ps[0].context_tokens,
            "max_new_tokens": tokens,
            "n_prompts": len(ps),
            "sampling": vars(how.sampling),
            "repetition_control": how.control.describe(),
            "loop_free": how.tag != GREEDY_DECODING.tag,
            "calibration_positions": len(seqs),
            "arms": _arm_numbers(rows, summary, costs, by_tokens=how.sampling.greedy),
            "best_ours": _best(summary, hf=False, by_tokens=how.sampling.greedy),
            "best_hf": _best(summary, hf=True),
        }
        return self.groups[gname]


@contextlib.contextmanager
def _threads_kept() -> Iterator[None]:
    """Torch's thread count as it was before, whatever the block set."""
    before = torch.get_num_threads()
    try:
        yield
    finally:
        torch.set_num_threads(before)


def run_bench(
    target: str = "embedded",
    dtype: str = "auto",
    device: str = "auto",
    n_prompts: int = 10,
    max_new_tokens: int | None = None,
    seed: int = 0,
    quick: bool = False,
    groups: str | Sequence[str] = GROUP_KINDS,
    arms: str | Sequence[str] = (),
    presets: str = "static",
    *,
    loaded: LoadedModel | None = None,
    loaded_fp32: LoadedModel | None = None,
    articles=None,
    out: TextIO | None = None,
    result_dir: Path | None = None,
) -> dict[str, Any]:
    """Run the benchmark; print the table and, last, one JSON line; return that JSON's dict.
    With `result_dir`, also write the run's folder there (`record.write_run`: summary.json,
    config.json, env.json and bench.log, at once; the CLI's `--out`).

    `presets` (`PRESET_MODES`): what `best` and `best_short` run: "auto", the calibration cached
    for this machine and dtype, else one run now and cached (a `quick` run falls back to the
    static table instead); "cached", the cached one else the static table; "static", the static
    table. `loaded` / `loaded_fp32` / `articles` inject a preloaded target (and its float32 twin
    for the identity check) and the held-out articles, for tests on tiny models."""
    out = out if out is not None else sys.stdout
    with _threads_kept():
        t_start = time.perf_counter()
        s = Settings.of(n_prompts, max_new_tokens, quick, groups, arms)
        entries = _preset_entries(presets)
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        if loaded is None:
            loaded = load_model(target, dtype=dtype, device=device)
        t_loaded = time.perf_counter()
        fit_ids_of = _fit_ids_of(articles, seed)
        anchor_min = max(s.contexts)
        prompts = {
            c: _prompts(loaded, s.n_prompts, c, seed, anchor_min, articles) for c in s.contexts
        }
        run = BenchSession(s, loaded, fit_ids_of(loaded), prompts)
        max_k = max(*s.ks, BEST_LONG.k, BEST_SHORT.k, *(c.k for c in P.CANDIDATES))
        threads = choose_threads(loaded, max_k + 1)  # first: kernels are built per count
        warm_s = warm_kernels(loaded, max_k + 1, [c + 1 for c in s.contexts] + list(s.contexts))
        resolved = resolve_presets(loaded, presets, entries, quick, seed)
        run.best_long = preset_config(BEST_LONG.name, resolved["best"])
        run.best_short = preset_config(BEST_SHORT.name, resolved["best_short"])
        if "long" in s.groups:
            _long_groups(run)
        if "short" in s.groups:
            _short_groups(run)
        if "loopfree" in s.groups:
            _loopfree_groups(run)
        first = max(s.contexts)
        bound: dict[str, Any] = {}
        if f"long_c{first}" in run.rows:  # the baseline's own greedy tokens, verified K at once
            base_lm = run.ours(BASELINE_CONFIG).generator.lm
            bound = ceiling(base_lm, run.rows[f"long_c{first}"], prompts[first], *s.calibration)
        self_spec = _self_spec(loaded)
        memory = measure_memory(
            loaded, run.fit_ids, list(prompts[s.contexts[0]][0].ids), 16, self_spec
        )
        identity = _identity_check(run, target, device, fit_ids_of, loaded_fp32)
        targets = _targets(run.groups, run.rows, memory, s.contexts, quick)
        strata = repetition_strata(run.groups, run.rows)
        log = io.StringIO()  # what stdout shows before the JSON line, kept for bench.log
        print_table(run.groups, log)
        print_strata(strata, log)
        print_identity(identity, log)
        for r in resolved.values():
            print(f"preset {r.line()}", file=log)
        result = _result(run, seed, threads, memory, identity, bound, targets)
        result["presets"] = {name: r.as_dict() for name, r in resolved.items()}
        result["machine_key"] = key_for(loaded)
        result["cpu"] = P.cpu_kind() if loaded.device.type == "cpu" else None
        result["repetition_strata"] = strata
        result["timing_s"] = {
            "load": t_loaded - t_start,
            "warm_kernels": warm_s,
            "total": time.perf_counter() - t_start,
        }
        result = clean(result)
        _print_summary(targets, log, bound)
        out.write(log.getvalue())
        print(json.dumps(result, sort_keys=True, allow_nan=False), file=out, flush=True)
        if result_dir is not None:
            config = bench_config(s, target, dtype, device, seed, presets, max_new_tokens)
            env = bench_env(loaded, dtype, result)
            env["header"] = record.header(config, result, env)
            record.write_run(
                result_dir, config, env, result, f"# {env['header']}\n{log.getvalue()}"
            )
            print(f"bench: wrote {result_dir}", file=sys.stderr)
        return result


def bench_config(
    s: Settings,
    target: str,
    dtype: str,
    device: str,
    seed: int,
    presets: str,
    max_new_tokens: int | None,
) -> dict[str, Any]:
    """The run's options as typed (target, dtype, device, seed, presets, groups, arms) and the
    settings they resolved to (prompts per group, K sweep, contexts, lengths, calibration)."""
    return {
        "experiment": record.BENCH_RUN,
        "target": target,
        "dtype": dtype,
        "device": device,
        "seed": seed,
        "presets": presets,
        "quick": s.quick,
        "groups": list(s.groups),
        "arms": list(s.arms),
        "n_prompts": s.n_prompts,
        "max_new_tokens": max_new_tokens,
        "ks": list(s.ks),
        "contexts": list(s.contexts),
        "long_tokens": s.long_tokens,
        "short_tokens": s.short_tokens,
        "calibration": {"prompts": s.calibration[0], "positions": s.calibration[1]},
    }


def bench_env(loaded: LoadedModel, dtype: str, result: dict[str, Any]) -> dict[str, Any]:
    """The machine the run measured on: the study's environment record (versions, hardware,
    commit), the day, the dtype asked for, the CPU kind, the presets' machine key, the thread
    choice and the process's memory peaks."""
    device = str(loaded.device)
    env = tracking.environment(device, result.get("dtype"))
    env.update(tracking.memory_peaks(device))
    env.update(
        {
            "date": record.today(),
            "profile_dtype": dtype,
            "cpu": result.get("cpu"),
            "machine_key": result.get("machine_key"),
            "threads": result.get("threads"),
        }
    )
    return env


PRESET_MODES = ("auto", "cached", "static")


def _preset_entries(mode: str) -> dict[str, dict[str, Any]]:
    """The calibration cache's entries for a presets mode ({} for "static"), read before the
    target loads: a bad mode or a broken cache is one line."""
    if mode not in PRESET_MODES:
        raise SpecdecError(f"--presets takes one of {', '.join(PRESET_MODES)}, got {mode!r}")
    return {} if mode == "static" else P.read_cache()


def resolve_presets(
    loaded: LoadedModel,
    mode: str,
    entries: dict[str, dict[str, Any]],
    quick: bool = False,
    seed: int = 0,
) -> dict[str, P.Resolution]:
    """What `best` and `best_short` run in this bench (`run_bench`'s `presets`): in "auto" mode
    a missing calibration is run now (after the threads are chosen and the kernels warm) and
    stored in the cache."""
    key = key_for(loaded)
    if mode == "static":
        return {n: P.static(n, key, "the bench was run with --presets static") for n in P.PRESETS}
    if mode == "auto" and key not in entries and not quick:
        record = calibrate_presets(loaded, seed=seed, warm=False)
        P.write_cache(key, record)
        entries = {**entries, key: record}
    return {n: P.resolve(n, key, entries) for n in P.PRESETS}


def preset_config(name: str, r: P.Resolution) -> Config:
    """The bench's arm for a preset: named as the preset, running what it resolved to."""
    return Config(name, r.spec, int(r.k or 4))


def _fit_ids_of(articles, seed: int) -> Callable[[LoadedModel], Callable[[], list[int]]]:
    """How a loaded model gets the fit split's ids (the bigram's, the pruned heads')."""

    def fit_ids_of(lm: LoadedModel) -> Callable[[], list[int]]:
        if articles is not None:  # injected corpus: fit on the same articles (tests only)
            from specdec_lib.data import fit_token_ids

            return lambda: fit_token_ids(lm.tokenizer, articles)
        return lambda: fit_ids_for(lm.tokenizer, "auto", seed)

    return fit_ids_of


def _long_groups(run: BenchSession) -> None:
    """128 new tokens at each context, the longest first. The K sweep (ours against HF at every
    K, and HF greedy) runs at the longest context; at the other HF's prompt lookup runs at the
    K that was its best there, beside our best."""
    ks = run.settings.ks
    sweep_context = max(run.settings.contexts)
    hf_ks: list[int] = list(ks)
    for c in sorted(run.settings.contexts, reverse=True):
        sweep = c == sweep_context
        arms = [run.ours(BASELINE_CONFIG)]
        if sweep:
            arms.append(run.hf("greedy", None))
            arms += [run.ours(cfg) for cfg in ngram_configs(ks)]
        arms += [run.hf("prompt_lookup", k) for k in (ks if sweep else hf_ks)]
        arms.append(run.ours(run.best_long))
        arms.append(run.ours(TREE_LONG))
        g = run.add(f"long_c{c}", arms, run.prompts[c], run.settings.long_tokens)
        if sweep:
            hf_ks = _hf_best_k(g, ks)


def _hf_best_k(group: dict[str, Any], ks: Sequence[int]) -> list[int]:
    """HF prompt lookup's fastest K in a group (all of ks where it ran none)."""
    lookups = {n: a for n, a in group["arms"].items() if n.startswith("hf_prompt_lookup_k")}
    top = max(lookups, key=lambda n: lookups[n]["speedup"]["value"], default=None)
    return [lookups[top]["k"]] if top else list(ks)


def _short_groups(run: BenchSession) -> None:
    """32 new tokens at each context: our baseline, `BEST_SHORT` and HF prompt lookup at K=4."""
    ks = run.settings.ks
    for c in sorted(run.settings.contexts, reverse=True):
        arms = [run.ours(BASELINE_CONFIG)]
        arms.append(run.ours(run.best_short))
        arms.append(run.hf("prompt_lookup", 4 if 4 in ks else ks[0]))
        run.add(f"short_c{c}", arms, run.prompts[c], run.settings.short_tokens)


def _loopfree_groups(run: BenchSession) -> None:
    """At the longest context, 128 new tokens, once per loop-free decoding (`configs.LOOPFREE`):
    our baseline, HF's autoregressive peer and prompt lookup at each K, our best chains and, on a
    CPU (its kernel's device), the int8 copy of the target as draft (`INT8W_LOOPFREE`), every arm
    under the group's sampling settings and repetition control."""
    c = max(run.settings.contexts)
    computed = [INT8W_LOOPFREE] if run.loaded.device.type == "cpu" else []
    for how in LOOPFREE:
        arms = [run.ours(BASELINE_CONFIG, how), run.hf("greedy", None, how)]
        arms += [run.hf("prompt_lookup", k, how) for k in run.settings.ks]
        arms += [run.ours(run.best_long, how), run.ours(run.best_short, how)]
        arms += [run.ours(cfg, how) for cfg in computed if run.settings.keeps(cfg.name)]
        run.add(f"{how.tag}_c{c}", arms, run.prompts[c], run.settings.long_tokens, how)


def _identity_check(
    run: BenchSession,
    target: str,
    device: str,
    fit_ids_of: Callable[[LoadedModel], Callable[[], list[int]]],
    loaded_fp32: LoadedModel | None,
) -> dict[str, Any]:
    """Token identity in float32 where the run is in a reduced precision on a CPU (or given a
    float32 twin), else a note saying why not."""
    s = run.settings
    if fp32_identity_wanted(run.loaded, loaded_fp32):
        configs = [ngram_configs(s.ks)[-1], run.best_long, run.best_short, TREE_LONG]
        id_prompts = run.prompts[s.contexts[0]][: 1 if s.quick else 2]
        id_tokens = min(IDENTITY_TOKENS, s.long_tokens)
        control = LOOPFREE[0].control if "loopfree" in s.groups else None
        return _identity(
            target, device, configs, id_prompts, id_tokens, fit_ids_of, loaded_fp32, control
        )
    if run.loaded.dtype == torch.float32:
        return {"dtype": "float32", "note": "the run itself is float32: see identical_to_baseline"}
    return {
        "dtype": "float32",
        "note": "skipped on a GPU: a float32 copy of the target may not fit beside it",
    }


def _result(
    run: BenchSession,
    seed: int,
    threads: dict[str, Any],
    memory: dict[str, Any],
    identity: dict[str, Any],
    bound: dict[str, Any],
    targets: dict[str, Any],
) -> dict[str, Any]:
    """The run's JSON object (before `timing_s`), in the order of its keys."""
    s, loaded = run.settings, run.loaded
    return {
        "bench": "specdec",
        "target": loaded.name,
        "dtype": str(loaded.dtype).removeprefix("torch."),
        "device": str(loaded.device),
        "threads": threads,
        "seed": seed,
        "quick": s.quick,
        "n_prompts": s.n_prompts,
        "ks": list(s.ks),
        "groups_run": list(s.groups),
        "contexts": list(s.contexts),
        "long_tokens": s.long_tokens,
        "short_tokens": s.short_tokens,
        "best_long": vars(run.best_long),
        "best_short": vars(run.best_short),
        "tree": vars(TREE_LONG),
        "int8w": vars(INT8W_LOOPFREE),
        "arms_kept": list(s.arms),  # `--arms`; empty: every arm ran
        "groups": run.groups,
        "memory": memory,
        "identity": identity,
        "ceiling": bound,
        "targets": targets,
        "targets_met": all(t["met"] for t in targets.values() if t["met"] is not None),
    }
