"""The study's experiments, as functions the notebooks call: profile -> arms -> result files.

A notebook does `S = study.setup(profile, results_dir=..., force=...)` and then one of the
`run_*` functions, each of which builds its config from the profile alone, returns the stored
result when one exists for the same config hash (unless forced or FORCE=1), and otherwise loads
the target (once per process), builds the arms, runs them paired and interleaved per prompt
(`runner.paired.run_paired`), summarizes, draws the figures (`plots`) and publishes the directory
atomically (`results.store.publish`). The layout and every key are documented in
`results/SCHEMA.md`.

The target named `tiny-random` is a tiny random-init Gemma 3 with a word-level tokenizer built
offline from the bundled WikiText-2, so the smoke profile runs the real pipeline on real text in
seconds without any download.
"""

from __future__ import annotations

import copy
import os
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from specdec_lib.analysis import stats
from specdec_lib.analysis.summary import ci_dict, summarize
from specdec_lib.errors import SpecdecError
from specdec_lib.results.catalog import BASELINE, NOTEBOOKS
from specdec_lib.results.store import ExperimentResult, ResultStore, load_result, publish
from specdec_lib.runner.paired import Arm, Method, run_paired
from specdec_lib.runtime import current as current_runtime
from specdec_lib.runtime import env_threads
from specdec_lib.runtime import setup as setup_runtime

ROOT = Path(__file__).resolve().parents[1]
PROFILES = ROOT / "profiles"
SPLIT_SEED = 0  # the fit/eval article split; generate.fit_ids_for fits the bigram on seed 0 too
WANDB_PROJECT = "specdec"
TINY = "tiny-random"
TINY_DRAFT = "tiny-random-draft"  # `model:tiny-random-draft`: the smoke-pair's draft

EXPERIMENTS = NOTEBOOKS  # notebook -> the result directories it writes (results.catalog)


# --------------------------------------------------------------------------- profiles and setup


def load_profile(name: str) -> dict[str, Any]:
    """profiles/<name>.yaml (or a path to a YAML file) as a dict, checked against the typed
    schema of `specdec_lib.profiles` (a bad value is a one-line SpecdecError, never coerced)."""
    from specdec_lib import profiles

    return profiles.load_profile(name)


@dataclass
class Study:
    profile: dict[str, Any]
    results_dir: Path
    force: bool = False
    overrides: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return str(self.profile["name"])

    @property
    def store(self) -> ResultStore:
        return ResultStore(self.results_dir, self.name)

    def exp(self, experiment: str) -> dict[str, Any]:
        """The profile's section for an experiment, with the notebook's overrides applied."""
        known = self.profile.get("experiments", {})
        if experiment not in known:
            raise SpecdecError(
                f"unknown experiment {experiment!r} for profile {self.name!r}; "
                f"known: {', '.join(sorted(known))}"
            )
        sec = dict(known[experiment])
        for key, value in self.overrides.items():
            if value not in (None, 0, "") and key in sec:
                sec[key] = value
        return sec


def resolve_profile(name: str) -> str:
    """ "auto" -> colab-t4 on a Colab GPU runtime, else embedded; any other name as given."""
    if name != "auto":
        return name
    from specdec_lib.colab import auto_profile

    return auto_profile()


def setup(
    profile: str = "auto",
    *,
    results_dir: str = "results",
    force: bool = False,
    overrides: dict[str, Any] | None = None,
    dtype: str = "",
) -> Study:
    """The study context of a notebook. A relative results_dir is relative to the repository;
    `profile="auto"` picks colab-t4 on a Colab GPU, else embedded; a non-empty `dtype` replaces
    the profile's."""
    prof = load_profile(resolve_profile(profile))
    if dtype:
        from specdec_lib.models import DTYPES

        if dtype != "auto" and dtype not in DTYPES and dtype != "float64":
            raise SpecdecError(f"unknown dtype {dtype!r}; use auto, {', '.join(DTYPES)}")
        prof["dtype"] = dtype
    from specdec_lib.colab import ensure_target

    ensure_target(str(prof.get("target", "")))
    rd = Path(results_dir)
    if not rd.is_absolute():
        rd = ROOT / rd
    force = bool(force) or os.environ.get("FORCE", "0") not in ("", "0", "false", "False")
    torch.manual_seed(int(prof.get("seed", 0)))
    if prof.get("threads") and env_threads() is None:  # $SPECDEC_THREADS overrides the profile
        torch.set_num_threads(int(prof["threads"]))
    return Study(prof, rd, force, dict(overrides or {}))


def base_config(S: Study, experiment: str) -> dict[str, Any]:
    p = S.profile
    return {
        "experiment": experiment,
        "profile": S.name,
        "target": p["target"],
        "dtype": p.get("dtype", "auto"),
        "device": p.get("device", "auto"),
        "data_source": p.get("data_source", "auto"),
        "seed": int(p.get("seed", 0)),
        "split_seed": SPLIT_SEED,
        "k": int(p.get("k", 4)),
        "warmup": int(p.get("warmup", 1)),
    }


def arm_name(spec: str) -> str:
    """A short arm name for a drafter spec: model:google/gemma-3-1b-pt -> gemma-3-1b-pt."""
    if spec.startswith("model:"):
        return Path(spec.split(":", 1)[1].rstrip("/")).name
    return spec.split(":", 1)[0]  # self:L:KEEP -> self (the spec stays in the arm's "draft")


def roles(S: Study) -> dict[str, str]:
    d = S.profile["drafts"]
    return {role: arm_name(spec) for role, spec in d.items() if isinstance(spec, str)}


def transformer_specs(S: Study) -> dict[str, str]:
    """Arm name -> spec of the transformer drafts of 03 (the main one first)."""
    d = S.profile["drafts"]
    out = {arm_name(d["transformer"]): d["transformer"]}
    for spec in d.get("extra_transformers", []) or []:
        out[arm_name(spec)] = spec
    return out


# --------------------------------------------------------------------------- models and drafters

_MODELS: dict[tuple[str, str, str], Any] = {}
_DRAFTERS: dict[tuple[Any, ...], Any] = {}


def load_target(S: Study, dtype: str | None = None):
    """The profile's target as a LoadedModel, loaded once per process per dtype."""
    name = S.profile["target"]
    dtype = dtype or S.profile.get("dtype", "auto")
    device = S.profile.get("device", "auto")
    key = (name, dtype, device)
    if key not in _MODELS:
        if name == TINY:
            _MODELS[key] = tiny_random_model(dtype, device=device, **S.profile.get("tiny", {}))
        else:
            from specdec_lib.models import load_model

            _MODELS[key] = load_model(name, dtype=dtype, device=device)
            if not S.profile.get("threads") or env_threads() is not None:
                # the thread count chosen as the CLI and the bench choose it (runtime.setup)
                setup_runtime(_MODELS[key].model, int(S.profile.get("k", 4)) + 1)
    return _MODELS[key]


def thread_choice(S: Study) -> dict[str, Any]:
    """How this process's thread count was chosen, for env.json."""
    choice = current_runtime()
    if choice is not None:
        return choice
    how = "profile" if S.profile.get("threads") else "default"
    return {"threads": torch.get_num_threads(), "chosen_by": how, "step_s": None}


def _recached(drafter, use_cache: bool):
    """A model drafter sharing the same weights with a KV cache on or off."""
    from specdec_lib.core.cache import CachedLM
    from specdec_lib.drafters import ModelDrafter

    if not isinstance(drafter, ModelDrafter) or drafter.lm.use_cache == use_cache:
        return drafter
    new = copy.copy(drafter)
    new.lm = CachedLM(drafter.lm.model, use_cache=use_cache, vocab_size=drafter.lm.vocab_size)
    return new


def get_drafter(S: Study, loaded, spec: str, *, use_cache: bool = True, k_max: int = 8):
    """A drafter for spec (cached per target, spec and cache setting), through the one grammar
    (`drafters.registry`); `adaptive:SPEC` takes its schedule from the profile, capped by k_max."""
    from specdec_lib.drafters.registry import DraftContext, build
    from specdec_lib.generate import fit_ids_for

    key = (id(loaded), spec, use_cache, k_max if spec.startswith("adaptive:") else None)
    if key in _DRAFTERS:
        return _DRAFTERS[key]
    base_key = (id(loaded), spec, True, None)
    if not use_cache and base_key in _DRAFTERS:
        d = _recached(_DRAFTERS[base_key], False)
    elif spec == f"model:{TINY_DRAFT}":
        from specdec_lib.drafters import ModelDrafter
        from specdec_lib.models import shared_vocab_size

        draft = tiny_draft(S, loaded)
        d = ModelDrafter(
            draft.model,
            vocab_size=shared_vocab_size(loaded, draft),
            use_cache=use_cache,
            tokenizer=draft.tokenizer,
        )
    else:
        ad = S.profile.get("experiments", {}).get("k_sweep", {}).get("adaptive", {})
        ctx = DraftContext(
            loaded,
            lambda: fit_ids_for(loaded.tokenizer, S.profile.get("data_source", "auto"), SPLIT_SEED),
            dtype=S.profile.get("dtype", "auto"),
            device=S.profile.get("device", "auto"),
            use_cache=use_cache,
            k=k_max,
            k_start=int(ad.get("k_start", 4)),
            k_min=int(ad.get("k_min", 1)),
            build_inner=lambda inner: get_drafter(S, loaded, inner, use_cache=use_cache),
        )
        d = build(spec, ctx)
    _DRAFTERS[key] = d
    return d


def make_arm(S: Study, loaded, name: str, spec: str, k: int, *, use_cache: bool = True) -> Arm:
    from specdec_lib.generate import Generator

    drafter = get_drafter(S, loaded, spec, use_cache=use_cache, k_max=k)
    gen = Generator.from_loaded(
        loaded,
        drafter,
        dtype=S.profile.get("dtype", "auto"),
        device=S.profile.get("device", "auto"),
        use_cache=use_cache,
        data_source=S.profile.get("data_source", "auto"),
    )
    return Arm(Method(name, spec, k, use_cache), gen)


def build_arms(
    S: Study, loaded, specs: dict[str, str], k: int, *, use_cache: bool = True
) -> list[Arm]:
    """The baseline first, then one arm per (name -> spec)."""
    arms = [make_arm(S, loaded, BASELINE, "none", k, use_cache=use_cache)]
    for name, spec in specs.items():
        arms.append(make_arm(S, loaded, name, spec, k, use_cache=use_cache))
    return arms


# --------------------------------------------------------------------------- tiny random target


_TINY_TOKENIZERS: dict[int, Any] = {}


def tiny_tokenizer(vocab: int = 2048):
    """A word-level tokenizer over the `vocab` - 4 most frequent words of the bundled WikiText-2
    test split plus <pad> <eos> <bos> <unk>; one object per size, so a tiny target and its tiny
    draft share it."""
    if vocab in _TINY_TOKENIZERS:
        return _TINY_TOKENIZERS[vocab]
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    text = (ROOT / "data" / "wikitext-2-raw" / "wiki.test.raw").read_text(encoding="utf-8")
    specials = ["<pad>", "<eos>", "<bos>", "<unk>"]
    words = [w for w, _ in Counter(text.split()).most_common(vocab - len(specials))]
    table = {w: i for i, w in enumerate(specials + words)}
    tok = Tokenizer(models.WordLevel(table, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.post_processor = processors.TemplateProcessing(
        single="<bos> $A", special_tokens=[("<bos>", table["<bos>"])]
    )
    _TINY_TOKENIZERS[vocab] = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<bos>",
        eos_token="<eos>",
        unk_token="<unk>",
        pad_token="<pad>",
    )
    return _TINY_TOKENIZERS[vocab]


def tiny_random_model(
    dtype: str = "float64",
    *,
    vocab: int = 2048,
    hidden: int = 64,
    layers: int = 4,
    heads: int = 2,
    seed: int = 0,
    extra_vocab: int = 0,
    conditional: bool = False,
    device: str = "cpu",
):
    """A random-init Gemma 3 (a few layers, 64 wide) with a word-level tokenizer over the most
    frequent words of the bundled WikiText-2 test split; offline and instant.

    `extra_vocab` rows beyond the tokenizer's ids imitate Gemma 3 4B's larger vocabulary (262,208
    ids beside the 1B's 262,144); `conditional` builds a `Gemma3ForConditionalGeneration` (the
    class Gemma 3 4B loads as, with a tiny vision tower) instead of a `Gemma3ForCausalLM`."""
    from transformers import (
        Gemma3Config,
        Gemma3ForCausalLM,
        Gemma3ForConditionalGeneration,
        Gemma3TextConfig,
        SiglipVisionConfig,
    )

    from specdec_lib.models import LoadedModel, resolve_device

    tokenizer = tiny_tokenizer(vocab)
    n_ids = len(tokenizer) + int(extra_vocab)
    kinds = ["sliding_attention", "full_attention"]
    cfg = Gemma3TextConfig(
        vocab_size=n_ids,
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=1,
        head_dim=hidden // heads,
        query_pre_attn_scalar=hidden // heads,
        sliding_window=32,
        layer_types=[kinds[i % 2] for i in range(layers)],
        max_position_embeddings=4096,
        initializer_range=0.2,  # with untied embeddings: continuations that vary
        tie_word_embeddings=False,
        pad_token_id=0,
        eos_token_id=1,
        bos_token_id=2,
        attn_implementation="sdpa",  # eager softmaxes in float32 even for float64 weights
    )
    torch.manual_seed(seed)
    tdtype = {"float64": torch.float64, "float32": torch.float32, "auto": torch.float64}.get(
        dtype, torch.float64
    )
    if conditional:
        vision = SiglipVisionConfig(
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            image_size=28,
            patch_size=14,
        )
        top = Gemma3Config(
            text_config=cfg,
            vision_config=vision,
            mm_tokens_per_image=4,
            boi_token_index=n_ids - 3,
            eoi_token_index=n_ids - 2,
            image_token_index=n_ids - 1,
            tie_word_embeddings=False,
            attn_implementation="sdpa",
        )
        model = Gemma3ForConditionalGeneration(top)
        model.generation_config.eos_token_id = 1
    else:
        model = Gemma3ForCausalLM(cfg)
    dev = resolve_device(device)
    model = model.to(device=dev, dtype=tdtype).eval()
    model.requires_grad_(False)
    return LoadedModel(
        model=model,
        tokenizer=tokenizer,
        name=TINY,
        dtype=tdtype,
        device=dev,
        vocab_size=int(model.get_output_embeddings().weight.shape[0]),
    )


def tiny_draft(S: Study, loaded):
    """The smoke-pair's draft (`model:tiny-random-draft`): a tiny Gemma3ForCausalLM over the
    target's tokenizer without its extra ids, in the target's dtype and device (profile
    `tiny_draft`: layers, hidden, heads, seed)."""
    opts = {**S.profile.get("tiny", {}), **S.profile.get("tiny_draft", {})}
    opts.pop("extra_vocab", None)
    opts.pop("conditional", None)
    dtype = str(loaded.dtype).removeprefix("torch.")
    key = (TINY_DRAFT, dtype, str(loaded.device))
    if key not in _MODELS:
        _MODELS[key] = tiny_random_model(dtype, device=loaded.device.type, **opts)
    return _MODELS[key]


# --------------------------------------------------------------------------- data and prompts

_CORPUS: dict[str, Any] = {}


def eval_articles(S: Study):
    from specdec_lib.data import load_wikitext, split_articles

    src = S.profile.get("data_source", "auto")
    if src not in _CORPUS:
        _CORPUS[src] = split_articles(load_wikitext(src), seed=SPLIT_SEED)[1]
    return _CORPUS[src]


def prompts_for(
    S: Study,
    loaded,
    n: int,
    context: int,
    *,
    anchor_min: int | None = None,
    continuation_tokens: int = 0,
):
    from specdec_lib.data import make_prompts

    return make_prompts(
        loaded.tokenizer,
        eval_articles(S),
        n,
        context,
        int(S.profile.get("seed", 0)),
        anchor_min=anchor_min,
        continuation_tokens=continuation_tokens,
    )


# --------------------------------------------------------------------------- running, publishing


@dataclass
class Run:
    """What one experiment function hands to `_publish`."""

    rows: list[dict[str, Any]]
    summary: dict[str, Any]
    figures: Callable[[Path], None] | None = None
    extra: dict[str, Any] | None = None


_CHECKPOINT = None  # the results.store.Checkpoint of the experiment `execute` is computing


def cached(S: Study, experiment: str, config: dict[str, Any]) -> ExperimentResult | None:
    """The stored result for this config when it is whole; a damaged one is said and redone."""
    d = S.store.dir(experiment)
    if S.force or not d.exists():
        return None
    problem = S.store.problem(experiment, study=True)
    if problem is not None:
        print(f"{experiment}: stored result {rel(d)} is damaged ({problem}); recomputing it")
        return None
    if S.store.done(experiment, config, study=True):
        print(f"{experiment}: reusing {rel(d)} (same config; force to redo)")
        res = load_result(d)
        if note := reuse_note(S, res.env):
            print(f"{experiment}: {note}")
        return res
    return None


def reuse_note(S: Study, env: dict[str, Any]) -> str | None:
    """When a reused result was measured on another CPU or in another dtype than this machine
    would use for the same config (dtype auto), say so and how long re-measuring took there."""
    import torch

    from specdec_lib.models import resolve_device, resolve_dtype
    from specdec_lib.tracking import cpu_model

    try:
        device = resolve_device(str(S.profile.get("device", "auto")))
        dtype = str(resolve_dtype(str(S.profile.get("dtype", "auto")), device)).removeprefix(
            "torch."
        )
    except Exception:  # noqa: BLE001 - a note, never a failure
        return None
    here = cpu_model() if device.type == "cpu" else torch.cuda.get_device_name(device)
    there = env.get("cpu_model") if device.type == "cpu" else env.get("gpu")
    diffs = []
    if env.get("dtype") and env["dtype"] != dtype:
        diffs.append(f"dtype {env['dtype']} (here: {dtype})")
    if here and there and here != there:
        diffs.append(f"{there} (here: {here})")
    if not diffs:
        return None
    took = env.get("wall_s_experiment")
    return (
        "measured with "
        + " on ".join(diffs)
        + "; FORCE=1 re-measures it here"
        + (f" (it took {took / 60:.1f} min there)" if isinstance(took, (int, float)) else "")
    )


def execute(
    S: Study,
    experiment: str,
    config: dict[str, Any],
    compute: Callable[[Callable[[dict[str, Any]], None]], Run],
) -> ExperimentResult:
    """Reuse the stored result for this config, or compute, track and publish it."""
    hit = cached(S, experiment, config)
    if hit is not None:
        return hit
    from specdec_lib.tracking import Tracker, environment

    wandb_dir = Path(os.environ["WANDB_DIR"]) if os.environ.get("WANDB_DIR") else ROOT
    tracker = Tracker(
        WANDB_PROJECT,
        f"{S.name}/{experiment}",
        config,
        dir=wandb_dir,
        group=wandb_group(S),
        job_type=experiment,
        tags=[S.name, f"dtype={config['dtype']}", f"device={config['device']}"],
    )
    from specdec_lib.results.store import Checkpoint

    global _CHECKPOINT
    checkpoint = _CHECKPOINT = Checkpoint(S.store, experiment, config, fresh=S.force)
    t0 = time.perf_counter()
    try:
        run = compute(tracker.log_row)
        wall = time.perf_counter() - t0
        summary = {
            "experiment": experiment,
            "profile": S.name,
            "roles": roles(S),
            **run.summary,
        }
        loaded = load_target(S)
        env = environment(
            device=str(next(loaded.model.parameters()).device),
            dtype=str(loaded.dtype).removeprefix("torch."),
        )
        env["profile_dtype"] = config["dtype"]
        env["threads"] = thread_choice(S)
        env["wall_s_experiment"] = wall  # this process's share when prompts were resumed
        env["resumed_prompts"] = checkpoint.resumed  # rows measured by an interrupted run
        path = publish(S.store, experiment, config, env, run.rows, summary, run.figures, run.extra)
        checkpoint.remove()
        tracker.publish(path, f"{S.name}-{experiment}", _flat(summary.get("headline", {})))
    finally:
        tracker.finish()
        _CHECKPOINT = None
    print(f"{experiment}: {wall:.1f} s, written to {rel(path)}")
    return load_result(path)


def wandb_group(S: Study) -> str:
    """One W&B group per batch: SPECDEC_BATCH (set by `make evaluate`), else profile@commit."""
    from specdec_lib.tracking import git_commit

    return os.environ.get("SPECDEC_BATCH") or f"{S.name}@{(git_commit(ROOT) or 'nogit')[:8]}"


def _flat(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flat(v, key + "/"))
        elif isinstance(v, (int, float, str, bool)) or v is None:
            out[key] = v
    return out


def _v(x: Any) -> float | None:
    """The point value of a {value|median, ci_low, ci_high} dict (or a plain number)."""
    if isinstance(x, dict):
        return x.get("value", x.get("median"))
    return x


def headline_pair(arms: dict[str, Any], arm: str) -> dict[str, Any]:
    s = arms[arm]
    return {
        "arm": arm,
        "speedup": s.get("speedup"),
        "acceptance_rate": s.get("acceptance_rate"),
        "mean_accepted_length": s.get("mean_accepted_length"),
        "identical_fraction": s.get("identical_fraction"),
        "tokens_per_s": s.get("tokens_per_s"),
        "baseline_tokens_per_s": arms[BASELINE]["tokens_per_s"],
        "n_prompts": s.get("n_prompts"),
    }


def paired(
    arms: list[Arm],
    prompts: Sequence[Any],
    *,
    max_new_tokens: int,
    warmup: int,
    sampling=None,
    progress: str,
    on_row: Callable[[dict[str, Any]], None],
    extra_cols: dict[str, Any] | None = None,
    checkpoint=None,
) -> list[dict[str, Any]]:
    """run_paired with extra columns per row. With a checkpoint (results.store.Checkpoint; by
    default the one `execute` holds for the experiment being computed) the prompts an
    interrupted run finished are taken from it and each new prompt is saved to it (the segment
    is `progress`, unique per call within an experiment)."""
    from specdec_lib.config import SamplingConfig

    checkpoint = checkpoint if checkpoint is not None else _CHECKPOINT

    def hook(row: dict[str, Any]) -> None:
        if extra_cols:
            for key, value in extra_cols.items():
                row[key] = value
        on_row(row)

    done = checkpoint.done(progress, prompts) if checkpoint is not None else None
    return run_paired(
        arms,
        prompts,
        max_new_tokens=max_new_tokens,
        sampling=sampling or SamplingConfig(),
        warmup=warmup,
        progress=progress,
        on_row=hook,
        done=done,
        on_prompt=(lambda i, ids, rows: checkpoint.add(progress, i, ids, rows))
        if checkpoint is not None
        else None,
    )


def pair_figures(summary_arms: dict[str, Any], rows: list[dict[str, Any]]):
    from specdec_lib import plots

    def draw(d: Path) -> None:
        plots.speedup_bars(summary_arms, d / "speedup.png")
        plots.position_acceptance(summary_arms, d / "position_acceptance.png")
        plots.accepted_histogram(summary_arms, d / "accepted_histogram.png")
        plots.time_split(rows, d / "time_split.png")

    return draw


# --------------------------------------------------------------------------- 01 .. 03


def single_config(S: Study, experiment: str, arms: dict[str, str]) -> dict[str, Any]:
    e = S.exp(experiment)
    return {
        **base_config(S, experiment),
        "n_prompts": int(e["n_prompts"]),
        "context_tokens": int(e["context_tokens"]),
        "max_new_tokens": int(e["max_new_tokens"]),
        "arms": {BASELINE: "none", **arms},
    }


def run_baseline(S: Study) -> ExperimentResult:
    """01: the KV-cached autoregressive baseline: tokens/s and time per prompt."""
    cfg = single_config(S, "baseline", {})

    def compute(on_row):
        from specdec_lib import plots

        loaded = load_target(S)
        arms = build_arms(S, loaded, {}, cfg["k"])
        prompts = prompts_for(S, loaded, cfg["n_prompts"], cfg["context_tokens"])
        rows = paired(
            arms,
            prompts,
            max_new_tokens=cfg["max_new_tokens"],
            warmup=cfg["warmup"],
            progress="baseline",
            on_row=on_row,
        )
        sm = summarize(rows)
        b = sm[BASELINE]
        headline = {
            "tokens_per_s": b["tokens_per_s"],
            "wall_s": b["wall_s"],
            "s_per_token": b["total_wall_s"] / b["new_tokens"] if b["new_tokens"] else None,
            "n_prompts": b["n_prompts"],
            "max_new_tokens": cfg["max_new_tokens"],
            "context_tokens": cfg["context_tokens"],
        }
        return Run(
            rows,
            {"arms": sm, "headline": headline},
            lambda d: plots.tokens_per_s(rows, d / "tokens_per_s.png"),
        )

    return execute(S, "baseline", cfg, compute)


def run_pair(S: Study, experiment: str, specs: dict[str, str]) -> ExperimentResult:
    cfg = single_config(S, experiment, specs)
    return execute(S, experiment, cfg, lambda on_row: _pair(S, cfg, specs, on_row))


def _pair(S: Study, cfg: dict[str, Any], specs: dict[str, str], on_row) -> Run:
    loaded = load_target(S)
    arms = build_arms(S, loaded, specs, cfg["k"])
    prompts = prompts_for(S, loaded, cfg["n_prompts"], cfg["context_tokens"])
    rows = paired(
        arms,
        prompts,
        max_new_tokens=cfg["max_new_tokens"],
        warmup=cfg["warmup"],
        progress=cfg["experiment"],
        on_row=on_row,
    )
    sm = summarize(rows)
    main = next(iter(specs))
    return Run(rows, {"arms": sm, "headline": headline_pair(sm, main)}, pair_figures(sm, rows))


def run_bigram(S: Study) -> ExperimentResult:
    """02: the bigram drafter against its paired baseline."""
    return run_pair(S, "bigram", {"bigram": S.profile["drafts"]["bigram"]})


def run_transformer_draft(S: Study) -> ExperimentResult:
    """03: the transformer draft(s) against the paired baseline, and greedy token identity of
    the main draft per dtype (the profile's dtype and e.g. float32)."""
    specs = transformer_specs(S)
    cfg = single_config(S, "transformer_draft", specs)
    ident = S.exp("transformer_draft").get("identity", {}) or {}
    cfg["identity"] = {
        "dtypes": list(ident.get("dtypes", [])),
        "n_prompts": int(ident.get("n_prompts", 0)),
        "max_new_tokens": int(ident.get("max_new_tokens", 0)),
    }

    def compute(on_row):
        run = _pair(S, cfg, specs, on_row)
        main = next(iter(specs))
        by_dtype = {}
        id_rows: list[dict[str, Any]] = []
        main_dtype = str(load_target(S).dtype).removeprefix("torch.")
        for dt_name in [main_dtype, *cfg["identity"]["dtypes"]]:
            if dt_name in by_dtype:
                continue
            if dt_name == main_dtype:
                rows = [r for r in run.rows if r["method"] == main]
            else:
                if not cfg["identity"]["n_prompts"]:
                    continue
                loaded = load_target(S, dtype=dt_name)
                arms = [
                    make_arm(S, loaded, BASELINE, "none", cfg["k"]),
                    make_arm(S, loaded, main, specs[main], cfg["k"]),
                ]
                prompts = prompts_for(
                    S, loaded, cfg["identity"]["n_prompts"], cfg["context_tokens"]
                )
                rows = paired(
                    arms,
                    prompts,
                    max_new_tokens=cfg["identity"]["max_new_tokens"],
                    warmup=cfg["warmup"],
                    progress=f"identity {dt_name}",
                    on_row=on_row,
                    extra_cols={"dtype": dt_name},
                )
                id_rows += rows
                rows = [r for r in rows if r["method"] == main]
            by_dtype[dt_name] = {
                "dtype": dt_name,
                "n_prompts": len(rows),
                "max_new_tokens": max((r["new_tokens"] for r in rows), default=0),
                "identical_fraction": float(np.mean([bool(r["identical"]) for r in rows]))
                if rows
                else None,
                "divergence_positions": [
                    r["divergence_pos"] for r in rows if r["divergence_pos"] is not None
                ],
                "divergence_margins": [
                    r["divergence_margin"] for r in rows if r["divergence_margin"] is not None
                ],
            }
        run.summary["identity_by_dtype"] = by_dtype
        run.extra = {"identity.csv": id_rows} if id_rows else None
        return run

    return execute(S, "transformer_draft", cfg, compute)


# --------------------------------------------------------------------------- 04 context sweep


def sweep_config(S: Study, experiment: str) -> dict[str, Any]:
    """The timed sweep's config. The cache-off ablation (`context_sweep_nocache`) takes its
    contexts, prompt counts, token counts, anchors and drafts from `context_sweep`, so that it
    runs on exactly the same prompts; only the cache differs. Its own section may list `drafts`,
    a subset of the sweep's draft arms (the baseline always runs), to save time."""
    e = S.exp("context_sweep")
    if experiment != "context_sweep":
        S.exp(experiment)  # the section must exist (a clear error otherwise)
    d = S.profile["drafts"]
    specs = (
        {str(k): str(v) for k, v in e["drafts"].items()}
        if e.get("drafts")
        else {arm_name(d["bigram"]): d["bigram"], arm_name(d["transformer"]): d["transformer"]}
    )
    if experiment == "context_sweep_nocache" and "drafts" in S.exp(experiment):
        keep = [str(m) for m in S.exp(experiment)["drafts"] or []]
        unknown = sorted(set(keep) - set(specs))
        if unknown:
            raise SpecdecError(
                f"context_sweep_nocache: drafts {unknown} are not context_sweep drafts {specs}"
            )
        specs = {m: v for m, v in specs.items() if m in keep}
    contexts = [int(c) for c in e["contexts"]]
    n = int(e["n_prompts"])
    beyond = e.get("n_prompts_beyond_100")
    return {
        **base_config(S, experiment),
        "contexts": contexts,
        "anchor_min": int(e.get("anchor_min") or max(contexts)),
        "n_prompts": n,
        "n_prompts_by_context": {
            str(c): (int(beyond) if beyond and c > 100 else n) for c in contexts
        },
        "max_new_tokens": int(e["max_new_tokens"]),
        "use_cache": experiment != "context_sweep_nocache",
        "reference_context": int(e.get("reference_context", 20)),
        "primary": str(e.get("primary") or next(iter(specs), "")),
        "arms": {BASELINE: "none", **specs},
    }


def run_context_sweep(S: Study, *, use_cache: bool = True) -> ExperimentResult:
    """04: time, speedup and acceptance per context, each context with its own paired baseline,
    on the same documents and anchors (a context with fewer prompts takes the first ones); plus
    the earlier study's speedup (one reference-context baseline over every row)."""
    experiment = "context_sweep" if use_cache else "context_sweep_nocache"
    cfg = sweep_config(S, experiment)

    def compute(on_row):
        from specdec_lib import plots

        loaded = load_target(S)
        specs = {k: v for k, v in cfg["arms"].items() if k != BASELINE}
        arms = build_arms(S, loaded, specs, cfg["k"], use_cache=use_cache)
        rows: list[dict[str, Any]] = []
        for c in cfg["contexts"]:
            n = cfg["n_prompts_by_context"][str(c)]
            prompts = prompts_for(S, loaded, n, c, anchor_min=cfg["anchor_min"])
            rows += paired(
                arms,
                prompts,
                max_new_tokens=cfg["max_new_tokens"],
                warmup=cfg["warmup"] if c == cfg["contexts"][0] else 0,
                progress=f"{experiment} context {c}",
                on_row=on_row,
                extra_cols={"context": c},
            )
        summary = sweep_summary(rows, cfg)
        summary["primary"] = cfg["primary"]
        summary["kinds"] = {
            m: draft_kind(get_drafter(S, loaded, s, use_cache=use_cache), loaded.model)
            for m, s in specs.items()
        }
        return Run(rows, summary, lambda d: plots.context_figures(summary, d))

    return execute(S, experiment, cfg, compute)


def sweep_summary(rows: list[dict[str, Any]], cfg: dict[str, Any]) -> dict[str, Any]:
    contexts = cfg["contexts"]
    ref = cfg["reference_context"] if cfg["reference_context"] in contexts else contexts[0]
    by_context = {}
    for c in contexts:
        by_context[str(c)] = {"arms": summarize([r for r in rows if r["context"] == c])}

    def walls(c: int, m: str) -> np.ndarray:
        rs = sorted(
            (r for r in rows if r["context"] == c and r["method"] == m), key=lambda r: r["prompt"]
        )
        return np.array([r["wall_s"] for r in rs])

    ref_wall = walls(ref, BASELINE)
    table = []
    for c in contexts:
        arms = by_context[str(c)]["arms"]
        for m, s in arms.items():
            sp = s.get("speedup") or {}
            acc = s.get("acceptance_rate") or {}
            w = walls(c, m)
            n = min(len(w), len(ref_wall))  # a context with fewer prompts has the first ones
            es = stats.paired_speedup(ref_wall[:n], w[:n])
            table.append(
                {
                    "context": c,
                    "method": m,
                    "draft": s["draft"],
                    "k": s["k"],
                    "n_prompts": s["n_prompts"],
                    "use_cache": cfg["use_cache"],
                    "total_wall_s": s["total_wall_s"],
                    "baseline_total_wall_s": arms[BASELINE]["total_wall_s"],
                    "tokens_per_s": s["tokens_per_s"]["median"],
                    "tokens_per_s_ci_low": s["tokens_per_s"]["ci_low"],
                    "tokens_per_s_ci_high": s["tokens_per_s"]["ci_high"],
                    "speedup": sp.get("value"),
                    "speedup_ci_low": sp.get("ci_low"),
                    "speedup_ci_high": sp.get("ci_high"),
                    "earlier_style_speedup": es.value,
                    "earlier_style_speedup_ci_low": es.low,
                    "earlier_style_speedup_ci_high": es.high,
                    "earlier_style_speedup_ci_method": es.method,
                    "acceptance_rate": acc.get("value"),
                    "acceptance_rate_ci_low": acc.get("ci_low"),
                    "acceptance_rate_ci_high": acc.get("ci_high"),
                    "mean_accepted_length": _v(s.get("mean_accepted_length")),
                }
            )
    base = [t for t in table if t["method"] == BASELINE]
    methods = [m for m in cfg["arms"] if m != BASELINE]
    return {
        "contexts": contexts,
        "use_cache": cfg["use_cache"],
        "by_context": by_context,
        "table": table,
        "earlier_style": {
            "reference_context": ref,
            "reference_total_wall_s": float(ref_wall.sum()),
        },
        "baseline_growth": {
            "context": [t["context"] for t in base],
            "total_wall_s": [t["total_wall_s"] for t in base],
            "s_per_token": [
                by_context[str(t["context"])]["arms"][BASELINE]["total_wall_s"]
                / max(by_context[str(t["context"])]["arms"][BASELINE]["new_tokens"], 1)
                for t in base
            ],
        },
        "headline": {
            "speedup_at": {
                m: {str(t["context"]): t["speedup"] for t in table if t["method"] == m}
                for m in methods
            },
            "earlier_style_speedup_at": {
                m: {
                    str(t["context"]): t["earlier_style_speedup"] for t in table if t["method"] == m
                }
                for m in [BASELINE, *methods]
            },
        },
    }


# teacher-forced agreement ------------------------------------------------------------------

SHARED = "shares the target's hidden states"
EXIT = "early exit of the target (its attention stops early)"
SEPARATE = "a separate computation"
CONTROL = "context-free control"


def exit_layers(drafter, target_model: torch.nn.Module) -> int | None:
    """L when the drafter's model is the target's own embedding, first L decoder layers and
    final norm (the very same modules, as `drafters.self_draft.early_exit_model` builds them)
    followed by a head of its own or the target's; else None."""
    from specdec_lib.drafters import ModelDrafter
    from specdec_lib.drafters.self_draft import decoder_path

    if not isinstance(drafter, ModelDrafter):
        return None
    try:
        path = decoder_path(target_model)
        inner, tinner = drafter.lm.model.get_submodule(path), target_model.get_submodule(path)
    except (SpecdecError, AttributeError):
        return None
    same = all(
        getattr(inner, name, None) is getattr(tinner, name, object())
        for name in ("layers", "norm", "embed_tokens")
    )
    return int(inner.config.num_hidden_layers) if same else None


def draft_kind(drafter, target_model: torch.nn.Module) -> str:
    """How a draft relates to the target: SHARED, EXIT, SEPARATE or CONTROL (bigram, n-gram)."""
    from specdec_lib.drafters import ModelDrafter
    from specdec_lib.drafters.adaptive import AdaptiveDrafter

    if isinstance(drafter, AdaptiveDrafter):
        return draft_kind(drafter.inner, target_model)
    if not isinstance(drafter, ModelDrafter):
        return CONTROL
    n = exit_layers(drafter, target_model)
    if n is None:
        return SEPARATE
    from specdec_lib.drafters.self_draft import decoder_path

    return (
        SHARED if n >= len(target_model.get_submodule(decoder_path(target_model)).layers) else EXIT
    )


def _head_argmax(drafter, logits: torch.Tensor) -> list[int]:
    """logits [T, V_head] of a ModelDrafter -> its greedy token ids in the target's vocabulary."""
    vsize, tmap = drafter.lm.vocab_size, drafter.token_map
    best = (logits if vsize is None else logits[:, :vsize]).argmax(-1)  # [T]
    return (tmap[best] if tmap is not None else best).tolist()


_TF_LMS: dict[int, Any] = {}


def _tf_lm(model: torch.nn.Module, vocab_size: int | None = None):
    """A cache-free CachedLM over model (its fast view on the CPU, as decoding runs it), kept
    per model so a view's packed weights are built once."""
    from specdec_lib.core.cache import CachedLM

    key = id(model)
    if key not in _TF_LMS:
        _TF_LMS[key] = CachedLM(model, use_cache=False, vocab_size=vocab_size)
    return _TF_LMS[key]


def _last_logits(lm, seq: Sequence[int], n: int) -> torch.Tensor:
    """The logits of the last n positions of seq through a cache-free CachedLM: [n, V]."""
    lm.reset()
    return lm.extend(list(seq), n)


def teacher_forced_guesses(
    target_model: torch.nn.Module, drafters: dict[str, Any], seq: Sequence[int], n: int
) -> tuple[list[int], dict[str, list[int]]]:
    """The target's greedy next token at the last n positions of seq and each draft's guess
    there, every model seeing the same seq (teacher forcing, no KV cache, each model through
    the same fast view decoding uses).

    One target forward. A draft that is the target's first L layers + final norm + a head
    (`exit_layers`) is read from the target's own layer-L output in that forward (a hook),
    through the final norm and the draft's head: the same weights on the same inputs as the
    drafter's own forward. A bigram guesses from each position's token. Any other model drafter
    gets one forward of its own."""
    from specdec_lib.drafters import BigramDrafter, ModelDrafter
    from specdec_lib.drafters.adaptive import AdaptiveDrafter

    drafters = {m: (d.inner if isinstance(d, AdaptiveDrafter) else d) for m, d in drafters.items()}
    from specdec_lib.drafters.self_draft import decoder_path

    tlm = _tf_lm(target_model)
    exits = {m: exit_layers(d, target_model) for m, d in drafters.items()}
    captured: dict[int, torch.Tensor] = {}
    hooks = []
    wanted = sorted({e for e in exits.values() if e is not None})
    layers = tlm.runner.get_submodule(decoder_path(target_model)).layers if wanted else []
    for L in wanted:

        def keep(_mod, _inp, out, L=L):
            h = out[0] if isinstance(out, tuple) else out  # [1, S, H]
            captured[L] = h[:, -n:]

        hooks.append(layers[L - 1].register_forward_hook(keep))
    try:
        target_next = _last_logits(tlm, seq, n).argmax(-1).tolist()
    finally:
        for h in hooks:
            h.remove()
    guesses: dict[str, list[int]] = {}
    for m, d in drafters.items():
        if exits[m] is not None:
            model = d.lm.model
            # the target's own (fast) head where the draft uses it, else the draft's own head
            head = (
                tlm.runner.lm_head if model.lm_head is target_model.lm_head else d.lm.runner.lm_head
            )
            norm = model.get_submodule(decoder_path(target_model)).norm
            with torch.inference_mode():
                logits = head(norm(captured[exits[m]]))[0]  # [n, V_head]
            guesses[m] = _head_argmax(d, logits)
        elif isinstance(d, BigramDrafter):
            guesses[m] = [d.next_of(int(t)) for t in seq[-n:]]
        elif isinstance(d, ModelDrafter):
            fed = d.embeddable(list(seq)) if hasattr(d, "embeddable") else list(seq)
            guesses[m] = _head_argmax(d, _last_logits(_tf_lm(d.lm.model), fed, n))
        elif callable(getattr(d, "predictor", None)) and d.predictor() is not None:
            guesses[m] = list(d.predictor()(list(seq)))[-n:]  # the drafter's own teacher forcing
        else:
            raise SpecdecError(f"no teacher-forced agreement for a {type(d).__name__} draft")
    return target_next, guesses


def agreement_drafts(S: Study, e: dict[str, Any]) -> dict[str, str]:
    """Arm name -> spec of the agreement's drafts: the section's own `drafts`, else the
    profile's bigram and transformer drafts."""
    if e.get("drafts"):
        return {str(k): str(v) for k, v in e["drafts"].items()}
    d = S.profile["drafts"]
    return {arm_name(d["bigram"]): d["bigram"], arm_name(d["transformer"]): d["transformer"]}


def run_agreement(S: Study) -> ExperimentResult:
    """04 (timing-free): teacher-forced agreement of every draft with the target on the
    documents' real next tokens, at the same positions for every context: fixed anchors in
    each eval document, the document's next `continuation_tokens` tokens teacher-forced, only
    the visible prefix before the anchor changing with the context."""
    e = S.exp("agreement")
    specs = agreement_drafts(S, e)
    ctxs = [int(c) for c in e["contexts"]]
    cfg = {
        **base_config(S, "agreement"),
        "contexts": ctxs,
        "anchor_min": int(e.get("anchor_min") or max(ctxs)),
        # a notebook's n_prompts override sets the number of documents too
        "n_documents": int(
            S.overrides.get("n_prompts") or e.get("n_documents") or e.get("n_prompts")
        ),
        "continuation_tokens": int(e["continuation_tokens"]),
        "primary": str(e.get("primary") or next(iter(specs))),
        "test_range": [int(c) for c in e.get("test_range", [10, 100])],
        "arms": specs,
    }
    if cfg["primary"] not in specs:
        raise SpecdecError(f"agreement: primary draft {cfg['primary']!r} is not one of {specs}")

    def compute(on_row):
        from specdec_lib import plots
        from specdec_lib.data import article_token_ids

        loaded = load_target(S)
        T = cfg["continuation_tokens"]
        drafters = {m: get_drafter(S, loaded, s) for m, s in specs.items()}
        kinds = {m: draft_kind(d, loaded.model) for m, d in drafters.items()}
        docs = prompts_for(
            S,
            loaded,
            cfg["n_documents"],
            max(ctxs),
            anchor_min=cfg["anchor_min"],
            continuation_tokens=T,
        )
        tokens = article_token_ids(loaded.tokenizer, eval_articles(S))
        bos = int(loaded.tokenizer.bos_token_id)
        rows: list[dict[str, Any]] = []
        bar = tqdm(total=len(docs) * len(ctxs), desc="agreement (documents x contexts)")
        for i, p in enumerate(docs):
            art = tokens[p.article]
            cont = art[p.anchor : p.anchor + T]
            for c in ctxs:
                seq = [bos, *art[p.anchor - c : p.anchor], *cont[:-1]]  # the last T predict cont
                target_next, guesses = teacher_forced_guesses(loaded.model, drafters, seq, T)
                scored = {**guesses, "target_vs_text": list(cont)}
                for name, guess in scored.items():
                    match = [int(a == b) for a, b in zip(target_next, guess, strict=True)]
                    row = {
                        "document": i,
                        "prompt": i,
                        "article": p.article,
                        "anchor": p.anchor,
                        "context": c,
                        "draft": name,
                        "kind": kinds.get(name, "control: the target against the real text"),
                        "agree": sum(match),
                        "positions": T,
                        "agreement": sum(match) / T,
                        "matches": "".join(map(str, match)),
                    }
                    rows.append(row)
                    on_row(row)
                bar.update(1)
        bar.close()
        summary = agreement_summary(rows, ctxs, k=cfg["k"], test_range=cfg["test_range"])
        summary["kinds"] = kinds
        summary["primary"] = cfg["primary"]
        summary["readout"] = (
            "early exits and the self-draft read from the target's own forward (the same "
            "modules on the same inputs); other models one forward each"
        )
        extra = draft_extras(S, drafters)
        if extra:
            summary["draft_records"] = extra
        return Run(
            rows, summary, lambda dd: plots.agreement(summary, dd / "agreement_vs_context.png")
        )

    return execute(S, "agreement", cfg, compute)


def draft_extras(S: Study, drafters: dict[str, Any]) -> dict[str, Any]:
    """What a draft records about how it was made (the distilled draft's training record),
    copied into the results beside the agreement; empty when no draft has one."""
    out: dict[str, Any] = {}
    for name, d in drafters.items():
        rec = getattr(d, "training_record", None)
        rec = rec() if callable(rec) else rec
        if rec:
            out[name] = rec
    return out


def _implied(a: np.ndarray, k: int) -> np.ndarray:
    """rules.implied_acceptance over an array of per-position agreements."""
    from specdec_lib.analysis.rules import implied_acceptance

    return np.vectorize(lambda x: implied_acceptance(float(x), k), otypes=[float])(a)


def _paired_mean_change(lo: np.ndarray, hi: np.ndarray, k: int) -> dict[str, dict[str, float]]:
    """The change hi - lo (documents paired) of the mean agreement and of the acceptance it
    implies at K = k, each with a bootstrap 95% interval resampling documents."""
    out = {}
    for key, f in (
        ("agreement", lambda a, b: b - a),
        ("implied_acceptance", lambda a, b: _implied(b, k) - _implied(a, k)),
    ):
        iv = stats.bootstrap(
            [lo, hi], lambda x, y, axis, f=f: f(np.mean(x, axis=axis), np.mean(y, axis=axis))
        )
        out[key] = iv.as_dict()
    return out


def agreement_summary(
    rows: list[dict[str, Any]],
    contexts: list[int],
    *,
    k: int = 4,
    test_range: Sequence[int] = (10, 100),
) -> dict[str, Any]:
    """Per draft and context: mean per-position agreement over documents and the acceptance it
    implies at K (book/math.md), with bootstrap 95% intervals and n; per draft the paired change
    over test_range (the earlier study's 10 -> 100) and over the whole sweep."""
    drafts = list(dict.fromkeys(r["draft"] for r in rows))
    table, by_draft, headline = [], {}, {}
    for dname in drafts:
        by_draft[dname] = {}
        per: dict[int, dict[int, float]] = {}
        for c in contexts:
            vals = {
                int(r["prompt"]): float(r["agreement"])
                for r in rows
                if r["draft"] == dname and int(r["context"]) == c
            }
            per[c] = vals
            x = np.array(list(vals.values()), dtype=float)
            iv = stats.mean(x)
            imp = stats.bootstrap([x], lambda v, axis: _implied(np.mean(v, axis=axis), k))
            cell = {
                **iv.as_dict("mean"),
                "n_documents": int(x.size),
                "implied_acceptance": imp.value,
                "implied_acceptance_ci_low": imp.low,
                "implied_acceptance_ci_high": imp.high,
            }
            by_draft[dname][str(c)] = cell
            table.append({"context": c, "draft": dname, "agreement": iv.value, **cell})
        head: dict[str, Any] = {
            "first": by_draft[dname][str(contexts[0])]["mean"],
            "last": by_draft[dname][str(contexts[-1])]["mean"],
            "n_documents": len(per[contexts[0]]),
        }
        spans = {"whole": (contexts[0], contexts[-1])}
        c0, c1 = (int(test_range[0]), int(test_range[1])) if len(test_range) == 2 else (0, 0)
        if c0 in per and c1 in per:
            spans["test"] = (c0, c1)
        for label, (a, b) in spans.items():
            common = sorted(set(per[a]) & set(per[b]))
            lo_v = np.array([per[a][i] for i in common], dtype=float)
            hi_v = np.array([per[b][i] for i in common], dtype=float)
            ch = _paired_mean_change(lo_v, hi_v, k) if common else {}
            head[f"change_{label}"] = {"contexts": [a, b], **ch}
        whole = head["change_whole"].get("agreement", {})
        head["change"] = whole.get("value")
        head["change_ci_low"] = whole.get("ci_low")
        head["change_ci_high"] = whole.get("ci_high")
        headline[dname] = head
    return {
        "contexts": contexts,
        "k": k,
        "test_range": list(test_range),
        "continuation_tokens": max((int(r["positions"]) for r in rows), default=0),
        "n_documents": len({r["prompt"] for r in rows}),
        "table": table,
        "by_draft": by_draft,
        "headline": headline,
    }


# --------------------------------------------------------------------------- 05 K sweep


def run_k_sweep(S: Study) -> ExperimentResult:
    """05: the transformer draft at K = 1..8 beside Leviathan's predicted speedup, and an
    adaptive-K schedule."""
    e = S.exp("k_sweep")
    spec = S.profile["drafts"]["transformer"]
    ks = [int(k) for k in e["ks"]]
    ad = e.get("adaptive", {}) or {}
    k_max = int(ad.get("k_max", max(ks)))
    arms_cfg = {f"k{k}": spec for k in ks}
    arms_cfg["adaptive"] = f"adaptive:{spec}"
    cfg = {
        **base_config(S, "k_sweep"),
        "n_prompts": int(e["n_prompts"]),
        "context_tokens": int(e["context_tokens"]),
        "max_new_tokens": int(e["max_new_tokens"]),
        "ks": ks,
        "adaptive": {
            "k_start": int(ad.get("k_start", 4)),
            "k_min": int(ad.get("k_min", 1)),
            "k_max": k_max,
        },
        "arms": {BASELINE: "none", **arms_cfg},
    }

    def compute(on_row):
        from specdec_lib import plots
        from specdec_lib.analysis.theory import best_k, expected_speedup

        loaded = load_target(S)
        arms = [make_arm(S, loaded, BASELINE, "none", 1)]
        arms += [make_arm(S, loaded, f"k{k}", spec, k) for k in ks]
        arms.append(make_arm(S, loaded, "adaptive", f"adaptive:{spec}", k_max))
        prompts = prompts_for(S, loaded, cfg["n_prompts"], cfg["context_tokens"])
        rows = paired(
            arms,
            prompts,
            max_new_tokens=cfg["max_new_tokens"],
            warmup=cfg["warmup"],
            progress="k sweep",
            on_row=on_row,
        )
        sm = summarize(rows)
        table = []
        for k in ks:
            s = sm[f"k{k}"]
            sp = s.get("speedup") or {}
            table.append(
                {
                    "k": k,
                    "method": f"k{k}",
                    "speedup": sp.get("value"),
                    "speedup_ci_low": sp.get("ci_low"),
                    "speedup_ci_high": sp.get("ci_high"),
                    "predicted_speedup_leviathan": s.get("predicted_speedup_leviathan"),
                    "predicted_speedup_calibrated": s.get("predicted_speedup_calibrated"),
                    "acceptance_rate": _v(s.get("acceptance_rate")),
                    "per_token_acceptance_iid": s.get("per_token_acceptance_iid"),
                    "cost_ratio": s.get("cost_ratio"),
                    "mean_accepted_length": _v(s.get("mean_accepted_length")),
                }
            )
        # Leviathan's model with one a and one c for the pair, pooled over the fixed-K arms
        a_vals = [
            t["per_token_acceptance_iid"]
            for t in table
            if t["per_token_acceptance_iid"] is not None
        ]
        c_vals = [t["cost_ratio"] for t in table if t["cost_ratio"] is not None]
        a_pool = float(np.median(a_vals)) if a_vals else None
        c_pool = float(np.median(c_vals)) if c_vals else None
        for t in table:
            t["predicted_speedup_pooled"] = (
                expected_speedup(min(max(a_pool, 0.0), 1.0), t["k"], c_pool)
                if a_pool is not None and c_pool is not None
                else None
            )
        meas = [t for t in table if t["speedup"] is not None]
        best = max(meas, key=lambda t: t["speedup"]) if meas else None
        a_rows = [r for r in rows if r["method"] == "adaptive"]
        props = [int(x) for r in a_rows for x in str(r["proposed_lengths"]).split()]
        adaptive = {
            **cfg["adaptive"],
            "mean_k_used": float(np.mean([p for p in props if p > 0])) if props else None,
            "speedup": sm["adaptive"].get("speedup"),
            "acceptance_rate": sm["adaptive"].get("acceptance_rate"),
            "mean_accepted_length": sm["adaptive"].get("mean_accepted_length"),
        }
        headline = {
            "best_k_measured": best["k"] if best else None,
            "best_speedup_measured": best["speedup"] if best else None,
            "best_k_predicted": best_k(min(max(a_pool, 0.0), 1.0), c_pool, max(ks))
            if a_pool is not None and c_pool is not None
            else None,
            "pooled_per_token_acceptance": a_pool,
            "pooled_cost_ratio": c_pool,
            "adaptive_speedup": adaptive["speedup"],
        }
        summary = {"arms": sm, "ks": ks, "table": table, "adaptive": adaptive, "headline": headline}

        def figs(d: Path) -> None:
            plots.measured_vs_predicted(summary, d / "measured_vs_predicted.png")
            plots.position_acceptance(
                {k: v for k, v in sm.items() if k in ("k2", "k4", "k8", "adaptive")},
                d / "position_acceptance.png",
            )

        return Run(rows, summary, figs)

    return execute(S, "k_sweep", cfg, compute)


# --------------------------------------------------------------------------- 06 sampling


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


def _tvd_between(p: np.ndarray, q: np.ndarray) -> float | None:
    """TVD of two distributions over ids, the shorter padded with zeros (a draft's vocabulary
    can be narrower than the target's)."""
    if not q.sum():
        return None  # the drafter proposed nothing: every first token comes from the target
    v = max(p.size, q.size)
    pp, qq = np.zeros(v), np.zeros(v)
    pp[: p.size], qq[: q.size] = p, q
    return float(0.5 * np.abs(pp - qq).sum())


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
                r["tvd_unverified"] = _tvd_between(
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
                        "mean_accepted_length": _v(s.get("mean_accepted_length")),
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


# --------------------------------------------------------------------------- 07 peers


def assistant_for(S: Study, loaded):
    """(model, tokenizer) for HF assisted generation: the transformer draft as a model of its own
    (model:ID, with its own tokenizer, which HF needs where the vocabulary sizes differ), or for
    the self-draft the target's early exit with its full head (the target's tokenizer)."""
    spec = S.profile["drafts"]["transformer"]
    if spec.startswith("model:"):  # the draft our arm already loaded: no second copy in memory
        drafter = get_drafter(S, loaded, spec)
        return drafter.lm.model, drafter.tokenizer or loaded.tokenizer
    from specdec_lib.drafters.registry import parse
    from specdec_lib.drafters.self_draft import early_exit_model

    layers = parse(spec).args[0]  # self[:LAYERS[:KEEP]]
    return early_exit_model(loaded.model, layers), loaded.tokenizer


HF_ARMS = {"hf-greedy": "greedy", "hf-prompt-lookup": "prompt_lookup", "hf-assisted": "assisted"}
ACCEPTANCE_KEYS = (
    "acceptance_rate",
    "mean_accepted_length",
    "position_acceptance",
    "accepted_histogram",
    "draft_share_of_time",
    "draft_s_per_token",
    "verify_s_per_call",
    "cost_ratio",
    "per_token_acceptance_iid",
    "predicted_speedup_leviathan",
    "verify_cost_ratio",
    "predicted_speedup_calibrated",
    "acceptance_rate_pooled",
)


def run_peers(S: Study) -> ExperimentResult:
    """07: Hugging Face generate (greedy, prompt lookup, assisted) beside our baseline, n-gram
    lookup and transformer draft on the same prompts, interleaved per prompt."""
    e = S.exp("peers")
    d = S.profile["drafts"]
    ours = {arm_name(d["ngram"]): d["ngram"], arm_name(d["transformer"]): d["transformer"]}
    try:
        import specdec_lib.peers  # noqa: F401

        peers_error = None
    except Exception as exc:  # noqa: BLE001 - reported in the summary, not fatal
        peers_error = f"{type(exc).__name__}: {exc}"
        print(f"specdec_lib.peers is not usable ({peers_error}); running our arms only")
    cfg = {
        **base_config(S, "peers"),
        "n_prompts": int(e["n_prompts"]),
        "context_tokens": int(e["context_tokens"]),
        "max_new_tokens": int(e["max_new_tokens"]),
        "arms": {
            BASELINE: "none",
            **ours,
            **({m: f"hf:{mode}" for m, mode in HF_ARMS.items()} if not peers_error else {}),
        },
    }

    def compute(on_row):
        from specdec_lib import plots

        loaded = load_target(S)
        k = cfg["k"]
        arms = build_arms(S, loaded, ours, k)
        if not peers_error:
            from specdec_lib.peers import HFGenerator

            assistant, assistant_tok = assistant_for(S, loaded)
            for m, mode in HF_ARMS.items():
                if mode == "assisted":
                    gen = HFGenerator(loaded, mode, k, assistant, assistant_tok)
                else:
                    gen = HFGenerator(loaded, mode, k)
                arms.append(Arm(Method(m, f"hf:{mode}", k), gen))

        def hook(row):
            if row["draft"] == "hf:greedy":
                row["k"] = 0
            on_row(row)

        prompts = prompts_for(S, loaded, cfg["n_prompts"], cfg["context_tokens"])
        rows = paired(
            arms,
            prompts,
            max_new_tokens=cfg["max_new_tokens"],
            warmup=cfg["warmup"],
            progress="peers",
            on_row=hook,
        )
        sm = summarize(rows)
        for m in HF_ARMS:
            for key in ACCEPTANCE_KEYS:
                sm.get(m, {}).pop(key, None)
        toks = {(r["method"], r["prompt"]): r["tokens"] for r in rows}
        n = len(prompts)
        hf_base = "hf-greedy" if "hf-greedy" in sm else None
        hf_wall = (
            np.array(
                [
                    r["wall_s"]
                    for r in sorted(
                        (r for r in rows if r["method"] == hf_base), key=lambda r: r["prompt"]
                    )
                ]
            )
            if hf_base
            else None
        )
        table = []
        for m, s in sm.items():
            sp = s.get("speedup") or {}
            wall = np.array(
                [
                    r["wall_s"]
                    for r in sorted(
                        (r for r in rows if r["method"] == m), key=lambda r: r["prompt"]
                    )
                ]
            )
            table.append(
                {
                    "method": m,
                    "implementation": "hf" if m in HF_ARMS else "ours",
                    "tokens_per_s": s["tokens_per_s"]["median"],
                    "tokens_per_s_ci_low": s["tokens_per_s"]["ci_low"],
                    "tokens_per_s_ci_high": s["tokens_per_s"]["ci_high"],
                    "speedup": sp.get("value", 1.0 if m == BASELINE else None),
                    "speedup_ci_low": sp.get("ci_low"),
                    "speedup_ci_high": sp.get("ci_high"),
                    "speedup_vs_hf_greedy": stats.paired_speedup(hf_wall, wall).value
                    if hf_wall is not None
                    else None,
                    "identical_to_baseline": s["identical_fraction"],
                    "identical_to_hf_greedy": float(
                        np.mean([toks[(m, i)] == toks[(hf_base, i)] for i in range(n)])
                    )
                    if hf_base
                    else None,
                }
            )
        summary = {
            "arms": sm,
            "table": table,
            "peers_available": peers_error is None,
            "peers_error": peers_error,
            "headline": {
                t["method"]: {
                    "speedup": t["speedup"],
                    "identical_to_baseline": t["identical_to_baseline"],
                }
                for t in table
            },
        }
        return Run(rows, summary, lambda dd: plots.peers(summary, dd / "peers_speed.png"))

    return execute(S, "peers", cfg, compute)


# --------------------------------------------------------------------------- notebook display


def rel(path: Path) -> str:
    """A path relative to the repository when it lies inside it (for printed messages)."""
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def display_result(S: Study, experiment: str) -> None:
    """Show an experiment's reading, table and captioned figures from its stored result files
    (what the book renders; see specdec_lib.present)."""
    from specdec_lib import present

    present.show(S.store.dir(experiment))


__all__ = [
    "EXPERIMENTS",
    "Study",
    "setup",
    "load_profile",
    "load_target",
    "run_baseline",
    "run_bigram",
    "run_transformer_draft",
    "run_context_sweep",
    "run_agreement",
    "run_k_sweep",
    "run_sampling",
    "run_peers",
    "display_result",
    "ci_dict",
]


# --------------------------------------------------------------------------- make download


def hub_reachable(timeout: float = 5.0) -> bool:
    import socket

    if os.environ.get("HF_HUB_OFFLINE", "0") not in ("", "0"):
        return False
    try:
        socket.create_connection(("huggingface.co", 443), timeout=timeout).close()
        return True
    except OSError:
        return False


def hub_models() -> list[str]:
    """Every hub id the profiles name (targets and model: drafts)."""
    from specdec_lib import profiles

    ids: list[str] = []
    good, bad = profiles.all_profiles(PROFILES)
    for why in bad.values():
        print(f"skipping: {why}")
    for prof in good:
        d = prof.get("drafts", {})
        specs = [d.get("transformer", ""), *(d.get("extra_transformers") or [])]
        for name in [
            prof.get("target", ""),
            *(s.split(":", 1)[1] for s in specs if s.startswith("model:")),
        ]:
            if name.count("/") == 1 and not Path(name).exists() and name not in ids:
                ids.append(name)
    return ids


def download() -> int:
    """Build the embedded model's cache; where the hub is reachable, fetch the profiles' hub
    weights and the full WikiText-2 too."""
    from specdec_lib.models import ensure_embedded_cache

    print(f"embedded model: {ensure_embedded_cache(full_check=True)}")
    if not hub_reachable():
        print(
            "the Hugging Face hub is unreachable from here: skipping the hub weights "
            f"({', '.join(hub_models())}) and the full WikiText-2 dataset; the embedded and smoke "
            "profiles need neither (run `make download` where the hub is reachable, e.g. Colab)"
        )
        return 0
    from huggingface_hub import snapshot_download

    failed = 0
    for repo in hub_models():
        try:
            path = snapshot_download(
                repo,
                token=os.environ.get("HF_TOKEN"),
                allow_patterns=["*.json", "*.safetensors", "tokenizer*", "*.model"],
            )
            print(f"{repo}: {path}")
        except Exception as e:  # noqa: BLE001 - one line per failure, never the token
            failed += 1
            print(
                f"{repo}: not downloaded ({type(e).__name__}; gated models need HF_TOKEN and "
                "an accepted licence)"
            )
    try:
        from specdec_lib.data import load_wikitext

        corpus = load_wikitext("datasets")
        print(f"WikiText-2 (datasets): {len(getattr(corpus, 'articles', corpus))} articles")
    except Exception as e:  # noqa: BLE001
        failed += 1
        print(f"WikiText-2 (datasets): not downloaded ({type(e).__name__}: {e})")
    return 1 if failed else 0


if __name__ == "__main__":
    import sys

    if sys.argv[1:] != ["download"]:
        print("usage: python -m specdec_lib.study download")
        sys.exit(2)
    sys.exit(download())
