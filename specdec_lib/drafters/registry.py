"""The one drafter spec grammar: named drafter factories, presets, `parse` and `build`.

A spec is `NAME` or `NAME:ARGS` (`self:18:16384`, `lookup+shared:4:2`, `adaptive:self`) or a
preset name (`best`). Each drafter module registers its names with `@register`, in the style of
lm-evaluation-harness's model registry: the name, its usage forms (shown in every error), an
argument parser (`rest` after the first colon -> a tuple, raising ValueError with the reason) and
a builder `(args, DraftContext) -> Drafter`. `parse` checks a spec without loading anything (the
CLI calls it before loading the target); `build` makes the drafter for a loaded target. The CLI,
the study and the benchmark all go through here, so every configuration they run can be asked for
with `python -m specdec_lib generate --draft SPEC`.

Presets name a configuration and may carry its K: `best` is the benchmark's best configuration
for long generations, `best_short` for short ones. The CLI uses a preset's K when `--k` is not
given; an explicit `--k` wins (and with no preset and no `--k`, K is 4).

`adaptive[:KSTART:KMAX]:SPEC` wraps SPEC in the adaptive-K schedule; without KSTART:KMAX its K
starts at `DraftContext.k_start` (capped by K) and is capped by the run's K (`DraftContext.k`).

Knows nothing about the decode loop, files or how the fit split is made (`fit_ids` is given).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specdec_lib.errors import SpecdecError

if TYPE_CHECKING:
    from specdec_lib.drafters.base import Drafter
    from specdec_lib.models import LoadedModel


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
    name: str
    forms: tuple[str, ...]  # usage, e.g. "self[:LAYERS[:KEEP]]"
    parse: Callable[[str], tuple[Any, ...]]
    build: Callable[[tuple[Any, ...], DraftContext], Drafter]
    greedy_only: bool = False  # refuses sampling (the CLI says so before loading)


@dataclass(frozen=True)
class Preset:
    spec: str
    k: int | None
    about: str


REGISTRY: dict[str, Entry] = {}
PRESETS: dict[str, Preset] = {
    # K = 7: a chain verification of K + 1 = 8 positions fills exactly one row chunk of the
    # batch-invariant fast path (`core.fastpath.ROWS`); K = 8 pays for a second one
    "best": Preset("ngram", 7, "the benchmark's best configuration for long generations"),
    "best_short": Preset(
        "lookup+shared:3:2", 4, "the benchmark's best configuration for short generations"
    ),
}


def no_args(rest: str) -> tuple[()]:
    if rest:
        raise ValueError("takes no arguments")
    return ()


def ints(rest: str, most: int, *, least: int = 0, minimum: int = 1) -> tuple[int, ...]:
    """Colon-separated ASCII integers >= minimum, between least and most of them."""
    parts = rest.split(":") if rest else []
    if not least <= len(parts) <= most:
        n = f"{least} to {most}" if least != most else str(most)
        raise ValueError(f"takes {n} integer argument(s), got {len(parts)}")
    for p in parts:
        if not (p.isascii() and p.isdigit()) or int(p) < minimum:
            raise ValueError(f"{p!r} is not an integer >= {minimum}")
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


def register(
    name: str,
    *,
    forms: tuple[str, ...] | None = None,
    parse: Callable = no_args,
    greedy_only: bool = False,
) -> Callable:
    """Decorator: register a builder `(args, ctx) -> Drafter` under name."""

    def deco(build: Callable[[tuple[Any, ...], DraftContext], Drafter]) -> Callable:
        if name in REGISTRY and REGISTRY[name].build is not build:
            raise ValueError(f"drafter {name!r} is registered twice")
        REGISTRY[name] = Entry(name, forms or (name,), parse, build, greedy_only)
        return build

    return deco


def _load_all() -> None:
    import specdec_lib.drafters  # noqa: F401 - its modules register themselves


def valid_forms() -> str:
    """Every form and preset on one line, for errors and help."""
    _load_all()
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
    _load_all()
    try:
        if not isinstance(spec, str) or not spec.strip():
            raise ValueError("empty")
        return _parse(spec)
    except ValueError as e:
        why = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise SpecdecError(
            f"unknown drafter spec {spec!r} ({why}); valid: {valid_forms()}"
        ) from None


def build(spec: str | DraftSpec, ctx: DraftContext) -> Drafter:
    """The drafter for spec (a string or a parsed spec) and this target."""
    parsed = spec if isinstance(spec, DraftSpec) else parse(spec)
    return REGISTRY[parsed.name].build(parsed.args, ctx)


def build_nested(spec: str, ctx: DraftContext) -> Drafter:
    """A nested spec through the caller's builder, if it gave one."""
    return ctx.build_inner(spec) if ctx.build_inner is not None else build(spec, ctx)


def preset_k(spec: str) -> int | None:
    """The K a preset carries (None for a plain spec)."""
    return parse(spec).k


# ----------------------------------------------------------------------- simple and nested forms


@register("none")
def _none(args, ctx: DraftContext) -> Drafter:
    from specdec_lib.drafters.base import NoDrafter

    return NoDrafter()


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


@register("adaptive", forms=("adaptive[:KSTART:KMAX]:SPEC",), parse=_adaptive_args)
def _adaptive(args, ctx: DraftContext) -> Drafter:
    from specdec_lib.drafters.adaptive import AdaptiveDrafter

    k_start, k_max, inner = args
    k_max = k_max if k_max is not None else ctx.k
    k_start = k_start if k_start is not None else min(ctx.k_start, k_max)
    return AdaptiveDrafter(
        build_nested(inner, ctx), k_start=k_start, k_min=min(ctx.k_min, k_start), k_max=k_max
    )
