"""A run's session: a profile (YAML) with a notebook's overrides, the results folder, and the
targets and drafters this process has loaded.

`setup` makes a `Session` from a profile name; `base_config` is what every experiment's config
starts from; `load_target` loads a target once per process and dtype, `get_drafter` builds a
drafter through the one grammar (`drafters.registry`) once per target, spec and cache setting
(both kept in `MODELS`); `make_arm` / `build_arms` wrap them into the arms `measure.paired` runs.

Knows nothing about what an experiment measures, how it is summarized or where it is written.
"""

from __future__ import annotations

import copy
import json
import os
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from specdec_lib import ROOT
from specdec_lib.core.draft import Drafter
from specdec_lib.drafters.model import ModelDrafter
from specdec_lib.drafters.registry import DraftContext, build
from specdec_lib.errors import SpecdecError
from specdec_lib.generate import Generator, fit_ids_for
from specdec_lib.measure.paired import Arm, Method
from specdec_lib.models import LoadedModel
from specdec_lib.models.device import DTYPES
from specdec_lib.models.loading import load_model
from specdec_lib.models.pairing import shared_vocab_size
from specdec_study.environment import profiles
from specdec_study.environment.runtime import current as current_runtime
from specdec_study.environment.runtime import env_threads
from specdec_study.environment.runtime import setup as setup_runtime
from specdec_study.results import catalog
from specdec_study.results.declare import BASELINE
from specdec_study.results.store import ResultStore
from specdec_study.runner.tiny import TINY, TINY_DRAFT, tiny_random_model

PROFILES = profiles.PROFILES
SPLIT_SEED = 0  # the fit/eval article split; generate.fit_ids_for fits the bigram on seed 0 too
YES = ("1", "true", "yes", "on")  # a flag's spellings (papermill passes `-p force false` as text)
NO = ("0", "false", "no", "off", "")


# --------------------------------------------------------------------------- profiles and setup


@dataclass
class Session:
    """One run's profile, results directory and notebook overrides: what every runner reads (its
    parameter is called `study` there; the notebooks call it `study_run`)."""

    profile: dict[str, Any]
    results_dir: Path
    force: bool = False
    overrides: dict[str, Any] = field(default_factory=dict)
    # draws an experiment's declared figures: (experiment, summary, rows, folder) -> None; set by
    # the edge that presents (study.setup gives reporting.figures.declared.draw), None: no figures
    draw: Callable[[str, dict[str, Any], list[dict[str, Any]], Path], Any] | None = None

    @property
    def name(self) -> str:
        """The profile's name."""
        return str(self.profile["name"])

    @property
    def store(self) -> ResultStore:
        """The result store of this profile under results_dir."""
        return ResultStore(self.results_dir, self.name)

    def section(self, experiment: str) -> dict[str, Any] | None:
        """The profile's section for an experiment over the defaults its declaration gives
        (`results.declare.Experiment.defaults`), without overrides; None when the profile names
        no such section and the declaration gives no defaults."""
        own = self.profile.get("experiments", {}).get(experiment)
        defaults = declared_defaults(experiment)
        if defaults is None:
            return None if own is None else dict(own)
        return {**copy.deepcopy(defaults), **(own or {})}

    def exp(self, experiment: str) -> dict[str, Any]:
        """The experiment's section (`section`), with the notebook's overrides applied."""
        sec = self.section(experiment)
        if sec is None:
            known = {*self.profile.get("experiments", {}), *catalog_defaults()}
            raise SpecdecError(
                f"unknown experiment {experiment!r} for profile {self.name!r}; "
                f"known: {', '.join(sorted(known))}"
            )
        for key, value in self.overrides.items():
            if value not in (None, 0, "") and key in sec:
                sec[key] = value
        return sec


def catalog_defaults() -> dict[str, dict[str, Any]]:
    """The declared experiments that give a default profile section, with it (`results.catalog`)."""
    return {
        name: e.defaults for name, (_, e) in catalog.declared().items() if e.defaults is not None
    }


def declared_defaults(experiment: str) -> dict[str, Any] | None:
    """The profile section `experiment`'s declaration gives; None if none or undeclared."""
    return catalog_defaults().get(experiment)


def parse_flag(value: Any, what: str) -> bool:
    """A yes/no setting given as a bool, 0/1 or text (any case): true/yes/on/1 or
    false/no/off/0/empty; anything else is a one-line SpecdecError naming the setting."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in YES + NO:
        return value.strip().lower() in YES
    raise SpecdecError(f"{what} must be true or false (1/0, yes/no), got {value!r}")


def setup(
    profile: str = "auto",
    *,
    results_dir: str = "results",
    force: bool | str = False,
    overrides: dict[str, Any] | None = None,
    dtype: str = "",
    draw: Callable[[str, dict[str, Any], list[dict[str, Any]], Path], Any] | None = None,
) -> Session:
    """The study context of a notebook. A relative results_dir is relative to the repository;
    `profile="auto"` picks colab-t4 on a Colab GPU, else embedded; a non-empty `dtype` replaces
    the profile's; `force` and $FORCE are read by `parse_flag` (`-p force false` is false, a value
    that is neither is refused); `draw` paints an experiment's figures into its result directory
    (`Session.draw`)."""
    prof = profiles.profile_for_run(profile)
    if dtype:
        if dtype != "auto" and dtype not in DTYPES and dtype != "float64":
            raise SpecdecError(f"unknown dtype {dtype!r}; use auto, {', '.join(DTYPES)}")
        prof["dtype"] = dtype
    rd = Path(results_dir)
    if not rd.is_absolute():
        rd = ROOT / rd
    force = parse_flag(force, "force") | parse_flag(os.environ.get("FORCE", ""), "FORCE")
    torch.manual_seed(int(prof.get("seed", 0)))
    if prof.get("threads") and env_threads() is None:  # $SPECDEC_THREADS overrides the profile
        torch.set_num_threads(int(prof["threads"]))
    return Session(prof, rd, force, dict(overrides or {}), draw)


def base_config(study: Session, experiment: str) -> dict[str, Any]:
    """The keys every experiment's config starts with (its hash names the stored result): every
    top-level profile key that changes what is measured (the tiny models' options where the
    profile has them; `threads` changes only how fast, and env.json records it)."""
    p = study.profile
    tiny = {key: dict(p[key]) for key in ("tiny", "tiny_draft") if p.get(key)}
    return {
        **tiny,
        "experiment": experiment,
        "profile": study.name,
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


def roles(study: Session) -> dict[str, str]:
    """Role (bigram, transformer, ngram, ...) -> the arm name of the profile's draft for it."""
    d = study.profile["drafts"]
    return {role: arm_name(spec) for role, spec in d.items() if isinstance(spec, str)}


def thread_choice(study: Session) -> dict[str, Any]:
    """How this process's thread count was chosen, for env.json."""
    choice = current_runtime()
    if choice is not None:
        return choice
    how = "profile" if study.profile.get("threads") else "default"
    return {"threads": torch.get_num_threads(), "chosen_by": how, "step_s": None}


# --------------------------------------------------------------------------- models and drafters


class ModelCache:
    """What this process has loaded, so that each is loaded once: models (targets and the tiny
    draft) by (name, dtype, device), and drafters per target model by (spec, cache setting, K
    cap). Drafters are kept per model object (weakly), not per id(): a target that was dropped
    never lends its drafters to one that happens to reuse its address."""

    def __init__(self) -> None:
        self.models: dict[tuple[str, str, str], LoadedModel] = {}
        self._drafters: weakref.WeakKeyDictionary[torch.nn.Module, dict[tuple, Drafter]] = (
            weakref.WeakKeyDictionary()
        )

    def drafters(self, loaded: LoadedModel) -> dict[tuple, Drafter]:
        """The drafters built for this target: (spec, use_cache, k cap or None) -> drafter."""
        return self._drafters.setdefault(loaded.model, {})

    def drop_drafters(self) -> None:
        """Forget every drafter (and with them their caches); the models stay."""
        self._drafters.clear()


MODELS = ModelCache()  # this process's


def tiny_key(name: str, opts: dict[str, Any]) -> str:
    """A tiny model's cache name: its name and its options. Two profiles may build different
    tiny models under one name (the smoke profile's and the smoke pair's targets differ in
    vocabulary and class), and one process must not hand the second the first's weights."""
    return f"{name} {json.dumps(opts, sort_keys=True)}"


def load_target(study: Session, dtype: str | None = None) -> LoadedModel:
    """The profile's target as a LoadedModel, loaded once per process per dtype (a tiny target
    once per set of options)."""
    name = study.profile["target"]
    dtype = dtype or study.profile.get("dtype", "auto")
    device = study.profile.get("device", "auto")
    tiny = dict(study.profile.get("tiny", {}))
    key = (tiny_key(name, tiny) if name == TINY else name, dtype, device)
    if key not in MODELS.models:
        if name == TINY:
            loaded = tiny_random_model(dtype, device=device, **tiny)
        else:
            loaded = load_model(name, dtype=dtype, device=device)
            if not study.profile.get("threads") or env_threads() is not None:
                # the thread count chosen as the CLI and the bench choose it (runtime.setup)
                setup_runtime(loaded.model, int(study.profile.get("k", 4)) + 1)
        MODELS.models[key] = loaded
    return MODELS.models[key]


def tiny_draft(study: Session, loaded: LoadedModel) -> LoadedModel:
    """The smoke-pair's draft (`model:tiny-random-draft`): a tiny Gemma3ForCausalLM over the
    target's tokenizer without its extra ids, in the target's dtype and device (profile
    `tiny_draft`: layers, hidden, heads, seed)."""
    opts = {**study.profile.get("tiny", {}), **study.profile.get("tiny_draft", {})}
    opts.pop("extra_vocab", None)
    opts.pop("conditional", None)
    dtype = str(loaded.dtype).removeprefix("torch.")
    key = (tiny_key(TINY_DRAFT, opts), dtype, str(loaded.device))
    if key not in MODELS.models:
        MODELS.models[key] = tiny_random_model(dtype, device=loaded.device.type, **opts)
    return MODELS.models[key]


def get_drafter(
    study: Session, loaded: LoadedModel, spec: str, *, use_cache: bool = True, k_max: int = 8
) -> Drafter:
    """A drafter for spec (kept per target, spec and cache setting), through the one grammar
    (`drafters.registry`); `adaptive:SPEC` takes its schedule from the profile, capped by k_max.
    A cache-off drafter shares the weights of the cache-on one already built."""
    built = MODELS.drafters(loaded)
    key = (spec, use_cache, k_max if spec.startswith("adaptive:") else None)
    if key in built:
        return built[key]
    on = built.get((spec, True, None))
    if not use_cache and on is not None:
        d = on.with_cache(False)
    elif spec == f"model:{TINY_DRAFT}":
        draft = tiny_draft(study, loaded)
        d = ModelDrafter(
            draft.model,
            vocab_size=shared_vocab_size(loaded, draft),
            use_cache=use_cache,
            tokenizer=draft.tokenizer,
        )
    else:
        d = build(spec, draft_context(study, loaded, use_cache, k_max))
    built[key] = d
    return d


def draft_context(study: Session, loaded: LoadedModel, use_cache: bool, k_max: int) -> DraftContext:
    """What the registry builds a drafter from: the target, the fit split's ids, the profile's
    dtype, device and adaptive-K schedule; inner drafters come through `get_drafter`."""
    ad = study.profile.get("experiments", {}).get("k_sweep", {}).get("adaptive", {})
    return DraftContext(
        loaded,
        lambda: fit_ids_for(loaded.tokenizer, study.profile.get("data_source", "auto"), SPLIT_SEED),
        dtype=study.profile.get("dtype", "auto"),
        device=study.profile.get("device", "auto"),
        use_cache=use_cache,
        k=k_max,
        k_start=int(ad.get("k_start", 4)),
        k_min=int(ad.get("k_min", 1)),
        build_inner=lambda inner: get_drafter(study, loaded, inner, use_cache=use_cache),
    )


def make_arm(
    study: Session,
    loaded: LoadedModel,
    name: str,
    spec: str,
    k: int,
    *,
    use_cache: bool = True,
    draft_cache: bool | None = None,
) -> Arm:
    """An arm of our generator on the loaded target with spec's drafter at K, named `name`; the
    target keeps a KV cache when `use_cache`, the draft when `draft_cache` (None: as the target)."""
    draft_cache = use_cache if draft_cache is None else draft_cache
    drafter = get_drafter(study, loaded, spec, use_cache=draft_cache, k_max=k)
    gen = Generator.from_loaded(
        loaded,
        drafter,
        dtype=study.profile.get("dtype", "auto"),
        device=study.profile.get("device", "auto"),
        use_cache=use_cache,
        data_source=study.profile.get("data_source", "auto"),
    )
    return Arm(Method(name, spec, k, use_cache), gen)


def build_arms(
    study: Session, loaded: LoadedModel, specs: dict[str, str], k: int, *, use_cache: bool = True
) -> list[Arm]:
    """The baseline first, then one arm per (name -> spec)."""
    arms = [make_arm(study, loaded, BASELINE, "none", k, use_cache=use_cache)]
    for name, spec in specs.items():
        arms.append(make_arm(study, loaded, name, spec, k, use_cache=use_cache))
    return arms
