"""The one drafter spec grammar: the table of drafters, presets, `parse` and `build`.

A spec is `NAME` or `NAME:ARGS` (`self:18:16384`, `lookup+shared:4:2`, `adaptive:self`) or a
preset name (`best`). `REGISTRY` declares every drafter in one table, in the style of
lm-evaluation-harness's lazy model registry: the name, its usage forms (shown in every error), an
argument parser (`rest` after the first colon -> a tuple, raising ValueError with the reason) and
where its builder `(args, DraftContext) -> Drafter` lives, as a `module:object` string that is
imported only by `build`. So `parse` checks a spec without importing any drafter or torch (the
CLI calls it before loading the target), and a drafter module that no entry names is not a
drafter (the tests say so). The CLI, the study and the benchmark all go through here, so every
configuration they run can be asked for with `python -m specdec_lib generate --draft SPEC`.

Specs (`valid_forms()`): `none` (autoregressive baseline), `bigram`, `ngram[:MAX[+bigram]]`,
`ngram+bigram`, `lookup[+bigram|+shared][:KFB[:MIN]]` (prompt lookup with a short fallback),
`self[:LAYERS[:KEEP]]` (a self-draft of the target with its own cache and a pruned head),
`shared[:KEEP]` (the target's own body on its own cache with a pruned head), `model:ID_OR_PATH`
(any causal LM sharing the target's tokenizer), `adaptive[:KSTART:KMAX]:SPEC`,
`gate[:WINDOW:MIN:BACKOFF]:SPEC` (SPEC silenced while its drafts are not accepted: `drafters.gate`),
`tree[:NODES[:BRANCH]]` / `tree+shared` / `tree+bigram` (tree verification, greedy only:
`drafters.tree`); drafts that compute apart from the target: `exit:LAYERS` (early exit, full
head), `int8` (an int8 copy of the target), `int8w[:KEEP]` (a weight-only int8 copy on int8
kernels, its head int8 and pruned to KEEP ids: `drafters.int8pack`), `distilled[:PATH]` (a few
layers distilled from the target on the fit split: `drafters.distilled`), and perturbed copies
of the target (`drafters.perturbed`): `quant:BITS[:GROUP]` (round-to-nearest weights,
fake-quant) and `noise:PERMILLE[:SEED]` (seeded weight noise).

Presets name a configuration and may carry its K: `best` is the benchmark's best configuration
for long generations, `best_short` for short ones. `PRESETS` is the static table: `parse` and
`build` map a preset through it alone, on every machine, so the study (whose agreement
experiment names `continuation_by: best`) keeps one config hash everywhere. `generate --draft
best` and the bench instead resolve a preset through `drafters.presets`: the configuration a
calibration measured fastest on this CPU kind and dtype, with this table as the fallback where
none is cached. The CLI uses the resolved configuration's K when `--k` is not given; an explicit
`--k` wins (and with no preset and no `--k`, K is 4).

`adaptive[:KSTART:KMAX]:SPEC` wraps SPEC in the adaptive-K schedule; without KSTART:KMAX its K
starts at `DraftContext.k_start` (capped by K) and is capped by the run's K (`DraftContext.k`).

Imports no torch and no drafter module at import time. Knows nothing about the decode loop,
files or how the fit split is made (`fit_ids` is given).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specdec_lib.config import MAX_K
from specdec_lib.errors import SpecdecError

if TYPE_CHECKING:
    from specdec_lib.core.draft import Drafter
    from specdec_lib.models import LoadedModel

# Spec defaults that the argument parsers fill in (the drafter modules import them from here).
# The default self-draft (`self`): all 18 layers of the embedded Gemma 3 270M with the LM head
# pruned to the 16,384 most frequent ids of the fit split (the results hold what it measured).
SELF_LAYERS = 18
SELF_KEEP = 16384
TREE_NODES = 16  # nodes per verification
TREE_BRANCH = 2  # bigram successors of the last token
MAX_TREE_NODES = 256  # a tree's nodes are rows of one verification forward: bounded like LAYERS
MAX_TREE_BRANCH = 16
DISTILLED_MARKER = "specdec-distilled.json"  # written last: its presence means it is complete
# The gate (`gate:SPEC`): closed for GATE_BACKOFF steps whenever the last GATE_WINDOW verified
# drafts accepted fewer than GATE_MIN_ACCEPTED tokens in all (a quarter of a token per draft)
GATE_WINDOW = 8
GATE_MIN_ACCEPTED = 2
GATE_BACKOFF = 8


@dataclass(frozen=True)
class DraftContext:
    """What a builder may use: the loaded target and how the run is set up."""

    target: LoadedModel
    fit_ids: Callable[[], list[int]]  # the fit split's ids (bigram, pruned heads)
    dtype: str = "auto"
    device: str = "auto"
    use_cache: bool = True
    k: int = 4  # the run's K: adaptive's k_max unless the spec gives one
    k_start: int = 4  # adaptive's first K unless the spec gives one (capped by k_max)
    k_min: int = 1
    # builds a nested spec (adaptive's SPEC); None: `build` itself (a caller may cache instead)
    build_inner: Callable[[str], Drafter] | None = None


@dataclass(frozen=True)
class DraftSpec:
    """A checked spec: the registry entry, its parsed arguments and a preset's K (or None)."""

    text: str  # as given (a preset keeps its name)
    name: str  # registry entry
    args: tuple[Any, ...]
    k: int | None = None


@dataclass(frozen=True)
class Entry:
    """One drafter: its name, usage forms, argument parser and where its builder lives."""

    name: str
    forms: tuple[str, ...]  # usage, e.g. "self[:LAYERS[:KEEP]]"
    parse: Callable[[str], tuple[Any, ...]]  # torch-free: `parse` runs before any loading
    builder: str  # "package.module:function", a builder (args, DraftContext) -> Drafter
    greedy_only: bool = False  # refuses sampling (the CLI says so before loading)

    def load(self) -> Callable[[tuple[Any, ...], DraftContext], Drafter]:
        """The builder, imported now (and only now)."""
        module, _, name = self.builder.partition(":")
        return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class Preset:
    """A named configuration: a spec and the K it runs at (None: the run's K)."""

    spec: str
    k: int | None
    about: str


# The static table: what the study always runs for a preset, and the fallback of `generate` and
# the bench where no calibration is cached for the machine (`drafters.presets`)
PRESETS: dict[str, Preset] = {
    # K = 7: a chain verification of K + 1 = 8 positions fills exactly one row chunk of the
    # batch-invariant fast path (`core.fastpath.ROWS`); K = 8 pays for a second one
    "best": Preset("ngram", 7, "the benchmark's best configuration for long generations"),
    "best_short": Preset(
        "lookup+shared:3:2", 4, "the benchmark's best configuration for short generations"
    ),
}


# ------------------------------------------------------------------------------ argument parsers


def no_args(rest: str) -> tuple[()]:
    """A drafter that takes no arguments."""
    if rest:
        raise ValueError("takes no arguments")
    return ()


def ints(
    rest: str, most: int, *, least: int = 0, minimum: int = 1, maxima: tuple[int, ...] = ()
) -> tuple[int, ...]:
    """Colon-separated ASCII integers >= minimum (and <= maxima[i] where given), between least
    and most of them."""
    parts = rest.split(":") if rest else []
    if not least <= len(parts) <= most:
        n = f"{least} to {most}" if least != most else str(most)
        raise ValueError(f"takes {n} integer argument(s), got {len(parts)}")
    for p in parts:
        if not (p.isascii() and p.isdigit()) or int(p) < minimum:
            raise ValueError(f"{p!r} is not an integer >= {minimum}")
    for p, top in zip(parts, maxima, strict=False):
        if int(p) > top:
            raise ValueError(f"{p} is more than {top}")
    return tuple(int(p) for p in parts)


_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?")


def model_path(rest: str, what: str = "model") -> str:
    """A hub id (org/name) or a local directory holding config.json, checked without loading."""
    if not rest:
        raise ValueError(f"needs a hub id or a local {what} directory")
    if rest.startswith((".", "/", "~")) or Path(rest).expanduser().exists():
        if not (Path(rest).expanduser() / "config.json").is_file():
            raise ValueError(f"{rest!r} is not a {what} directory (no config.json)")
        return rest
    if not _HUB_ID.fullmatch(rest):
        raise ValueError(f"{rest!r} is neither a hub id nor a local directory")
    return rest


def _adaptive_args(rest: str) -> tuple[int | None, int | None, str]:
    parts = rest.split(":")
    if len(parts) >= 3 and all(p.isascii() and p.isdigit() for p in parts[:2]):
        k_start, k_max = ints(":".join(parts[:2]), 2, least=2)
        if k_start > k_max:
            raise ValueError(f"KSTART {k_start} > KMAX {k_max}")
        inner = ":".join(parts[2:])
    else:
        k_start = k_max = None
        inner = rest
    if _parse(inner).name == "adaptive":
        raise ValueError("an adaptive drafter cannot wrap another")
    return k_start, k_max, inner


def _gate_args(rest: str) -> tuple[int, int, int, str]:
    """WINDOW:MIN:BACKOFF (all three or none) before the wrapped SPEC."""
    parts = rest.split(":")
    lead = 0
    while lead < len(parts) - 1 and parts[lead].isascii() and parts[lead].isdigit():
        lead += 1
    if lead not in (0, 3):
        raise ValueError(f"takes WINDOW:MIN:BACKOFF (three integers) or none, got {lead}")
    if lead:
        window, min_accepted, backoff = ints(":".join(parts[:3]), 3, least=3, minimum=0)
        if window < 1 or backoff < 1:
            raise ValueError(f"WINDOW and BACKOFF must be >= 1, got {window} and {backoff}")
    else:
        window, min_accepted, backoff = GATE_WINDOW, GATE_MIN_ACCEPTED, GATE_BACKOFF
    inner = ":".join(parts[lead:])
    if _parse(inner).name == "gate":
        raise ValueError("a gate cannot wrap another")
    return window, min_accepted, backoff, inner


def _model_args(rest: str) -> tuple[str]:
    return (model_path(rest),)


def _self_args(rest: str) -> tuple[int, int]:
    args = ints(rest, 2)
    return (args[0] if args else SELF_LAYERS), (args[1] if len(args) > 1 else SELF_KEEP)


def _exit_args(rest: str) -> tuple[int, ...]:
    return ints(rest, 1, least=1)


def _distilled_args(rest: str) -> tuple[str | None]:
    if not rest:
        return (None,)
    if not (Path(rest).expanduser() / DISTILLED_MARKER).is_file():
        raise ValueError(f"{rest!r} is not a distilled draft directory (no {DISTILLED_MARKER})")
    return (rest,)


def _quant_args(rest: str) -> tuple[int, int]:
    """BITS in 2..8 and GROUP (0, the default: per output channel)."""
    args = ints(rest, 2, least=1, minimum=0)
    if not 2 <= args[0] <= 8:
        raise ValueError(f"BITS must be in 2..8, got {args[0]}")
    return args[0], (args[1] if len(args) > 1 else 0)


def _noise_args(rest: str) -> tuple[int, int]:
    """PERMILLE (noise std per mille of each row's rms) and SEED (0 by default)."""
    args = ints(rest, 2, least=1, minimum=0)
    return args[0], (args[1] if len(args) > 1 else 0)


def _ngram_args(rest: str) -> tuple[int, bool]:
    size, plus, fallback = rest.partition("+")
    if plus and fallback != "bigram":
        raise ValueError(f"the only n-gram fallback is +bigram, got +{fallback}")
    (max_ngram,) = ints(size, 1, least=int(bool(plus))) or (3,)
    return max_ngram, bool(plus)


def _ngram_bigram_args(rest: str) -> tuple[int, bool]:
    return (*(ints(rest, 1) or (3,)), True)


def _lookup_args(rest: str) -> tuple[int, int]:
    """KFB (fallback tokens, 2 by default) and MIN (shortest n-gram, 1; at most 3)."""
    args = ints(rest, 2, minimum=0)
    k_fb = args[0] if args else 2
    min_ngram = max(1, min(args[1], 3)) if len(args) > 1 else 1
    return k_fb, min_ngram


def _shared_args(rest: str) -> tuple[int, ...]:
    return ints(rest, 1) or (SELF_KEEP,)


def _int8w_args(rest: str) -> tuple[int]:
    return ints(rest, 1) or (SELF_KEEP,)


def _tree_args(rest: str) -> tuple[int, int]:
    args = ints(rest, 2, maxima=(MAX_TREE_NODES, MAX_TREE_BRANCH))
    return (args[0] if args else TREE_NODES), (args[1] if len(args) > 1 else TREE_BRANCH)


def _tree_fb_args(rest: str) -> tuple[int, int]:
    args = ints(rest, 2, maxima=(MAX_TREE_NODES, MAX_K))
    return (args[0] if args else TREE_NODES), (args[1] if len(args) > 1 else 2)


# ------------------------------------------------------------------------------------ the table

_D = "specdec_lib.drafters"
REGISTRY: dict[str, Entry] = {
    e.name: e
    for e in [
        Entry("none", ("none",), no_args, f"{_D}.base:build_none"),
        Entry("adaptive", ("adaptive[:KSTART:KMAX]:SPEC",), _adaptive_args, f"{_D}.adaptive:build"),
        Entry("gate", ("gate[:WINDOW:MIN:BACKOFF]:SPEC",), _gate_args, f"{_D}.gate:build"),
        Entry("bigram", ("bigram",), no_args, f"{_D}.bigram:build"),
        Entry("model", ("model:ID_OR_PATH",), _model_args, f"{_D}.model:build"),
        Entry("self", ("self[:LAYERS[:KEEP]]",), _self_args, f"{_D}.self_draft:build"),
        Entry("exit", ("exit:LAYERS",), _exit_args, f"{_D}.self_draft:build_exit"),
        Entry("distilled", ("distilled[:PATH]",), _distilled_args, f"{_D}.distilled:build"),
        Entry("ngram", ("ngram[:MAX[+bigram]]",), _ngram_args, f"{_D}.ngram:build"),
        Entry("ngram+bigram", ("ngram+bigram[:MAX]",), _ngram_bigram_args, f"{_D}.ngram:build"),
        Entry("lookup", ("lookup[:KFB[:MIN]]",), _lookup_args, f"{_D}.lookup:build"),
        Entry(
            "lookup+bigram",
            ("lookup+bigram[:KFB[:MIN]]",),
            _lookup_args,
            f"{_D}.lookup:build_bigram",
        ),
        Entry(
            "lookup+shared",
            ("lookup+shared[:KFB[:MIN]]",),
            _lookup_args,
            f"{_D}.lookup:build_shared",
        ),
        Entry("int8", ("int8",), no_args, f"{_D}.quantized:build"),
        Entry("int8w", ("int8w[:KEEP]",), _int8w_args, f"{_D}.int8pack:build"),
        Entry("quant", ("quant:BITS[:GROUP]",), _quant_args, f"{_D}.perturbed:build_quant"),
        Entry("noise", ("noise:PERMILLE[:SEED]",), _noise_args, f"{_D}.perturbed:build_noise"),
        Entry("shared", ("shared[:KEEP]",), _shared_args, f"{_D}.shared:build"),
        Entry("tree", ("tree[:NODES[:BRANCH]]",), _tree_args, f"{_D}.tree:build", greedy_only=True),
        Entry(
            "tree+shared",
            ("tree+shared[:NODES[:KFB]]",),
            _tree_fb_args,
            f"{_D}.tree:build_shared",
            greedy_only=True,
        ),
        Entry(
            "tree+bigram",
            ("tree+bigram[:NODES[:KFB]]",),
            _tree_fb_args,
            f"{_D}.tree:build_bigram",
            greedy_only=True,
        ),
    ]
}


# --------------------------------------------------------------------------- parse and build


def valid_forms() -> str:
    """Every form and preset on one line, for errors and help."""
    forms = [f for e in REGISTRY.values() for f in e.forms]
    presets = [f"{n} ({p.spec}, K={p.k})" for n, p in PRESETS.items()]
    return ", ".join(forms) + "; presets: " + ", ".join(presets)


def _parse(spec: str) -> DraftSpec:
    """parse() with the reason as a ValueError (nested specs keep one message)."""
    if spec in PRESETS:
        p = PRESETS[spec]
        return replace(_parse(p.spec), text=spec, k=p.k)
    name, colon, rest = spec.partition(":")
    entry = REGISTRY.get(name)
    if entry is None:
        raise ValueError(f"no drafter named {name!r}")
    if colon and not rest:
        raise ValueError("empty arguments after ':'")
    return DraftSpec(spec, name, tuple(entry.parse(rest)))


def parse(spec: Any) -> DraftSpec:
    """Check a spec without loading anything; a bad one raises a one-line SpecdecError."""
    try:
        if not isinstance(spec, str) or not spec.strip():
            raise ValueError("empty")
        return _parse(spec)
    except ValueError as e:
        why = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise SpecdecError(
            f"unknown drafter spec {spec!r} ({why}); valid: {valid_forms()}"
        ) from None


def check_drafter_spec(spec: str) -> tuple[str, list]:
    """Validate a spec without loading anything: (registry name, parsed arguments)."""
    parsed = parse(spec)
    return parsed.name, list(parsed.args)


def build(spec: str | DraftSpec, ctx: DraftContext) -> Drafter:
    """The drafter for spec (a string or a parsed spec) and this target."""
    parsed = spec if isinstance(spec, DraftSpec) else parse(spec)
    return REGISTRY[parsed.name].load()(parsed.args, ctx)


def build_nested(spec: str, ctx: DraftContext) -> Drafter:
    """A nested spec through the caller's builder, if it gave one."""
    return ctx.build_inner(spec) if ctx.build_inner is not None else build(spec, ctx)


def build_drafter(
    spec: str,
    target: LoadedModel,
    *,
    fit_ids: Callable[[], list[int]],
    dtype: str = "auto",
    device: str = "auto",
    use_cache: bool = True,
    k: int = 4,
) -> Drafter:
    """A drafter for this target (`build`); fit_ids() gives the fit split's ids."""
    ctx = DraftContext(target, fit_ids, dtype=dtype, device=device, use_cache=use_cache, k=k)
    return build(spec, ctx)
