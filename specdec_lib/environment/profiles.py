"""Profiles (`profiles/<name>.yaml`): read and checked against a typed schema, one line per error.

`load_profile(name)` returns the profile as a plain dict, or raises a one-line SpecdecError
naming the file, the key path and the value: a file that is not YAML or not a mapping, a missing
target, a dtype/device/data source outside the known ones, a count that is not an integer
(`n_prompts: 2.7`), a temperature the sampler would refuse, a tiny model's option of the wrong
type, an adaptive K with k_min <= k_start <= k_max broken, a reversed `test_range`, a `name`
that is not the file's (results go to RESULTS_DIR/<name>, the batch lock holds
RESULTS_DIR/<file's name>: `../../escape` would leave both). Nothing is coerced: what passes is
what the config records. Keys the schema does not know are kept unchecked, so a new experiment's
section needs no change here; inside `experiments`, keys are checked by name wherever they
appear (`n_prompts` in `identity` as in `baseline`). `all_profiles()` reads every profile and
returns the malformed ones separately, so one bad file never hides the others.
`profile_for_run(name)` is the profile a run uses where it runs: "auto" resolved (colab-t4 on a
Colab GPU, else embedded) and, in Colab, the target's extra packages installed (`colab`).
`python -m specdec_lib.environment.profiles NAME` checks one profile (`make evaluate` first).

Knows nothing about models, torch or results: it reads YAML only (the book imports it).
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from specdec_lib import ROOT
from specdec_lib.config import MAX_K, MAX_SEED, MAX_TEMPERATURE, MIN_TEMPERATURE
from specdec_lib.environment import colab
from specdec_lib.errors import SpecdecError

PROFILES = ROOT / "profiles"
DTYPES = ("auto", "float32", "bfloat16", "float16", "float64")  # float64: tiny-random only
DEVICES = ("auto", "cpu", "cuda")
DATA_SOURCES = ("auto", "bundled", "datasets")  # data.SOURCES (a test keeps them equal)

Check = Callable[[Any], str | None]  # the value -> what it must be, or None when it is fine


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _int(lo: int, hi: int | None = None) -> Check:
    def check(x: Any) -> str | None:
        if _is_int(x) and x >= lo and (hi is None or x <= hi):
            return None
        return f"an integer >= {lo}" + (f" and <= {hi}" if hi is not None else "")

    return check


def _one_of(options: tuple[str, ...]) -> Check:
    def check(x: Any) -> str | None:
        return None if isinstance(x, str) and x in options else f"one of {', '.join(options)}"

    return check


def _text(x: Any) -> str | None:
    return None if isinstance(x, str) and x.strip() else "a non-empty string"


def _mapping(x: Any) -> str | None:
    return None if isinstance(x, dict) else "a mapping"


def _threads(x: Any) -> str | None:
    return None if x is None or (_is_int(x) and x >= 1) else "an integer >= 1"


def _temperature(x: Any) -> bool:
    return (
        isinstance(x, (int, float))
        and not isinstance(x, bool)
        and (x == 0 or (math.isfinite(x) and MIN_TEMPERATURE <= x <= MAX_TEMPERATURE))
    )


def _list_of(item: Check, what: str, *, empty: bool = False) -> Check:
    def check(x: Any) -> str | None:
        if isinstance(x, list) and (x or empty) and all(item(v) is None for v in x):
            return None
        return f"a {'' if empty else 'non-empty '}list of {what}"

    return check


_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def _name(x: Any) -> str | None:
    """A folder name under RESULTS_DIR: no separator, no leading dot (never `../x`)."""
    if isinstance(x, str) and _NAME.fullmatch(x) and ".." not in x:
        return None
    return "a plain name (letters, digits, '.', '_', '-'; no '/' and no leading '.')"


def _pair_ascending(x: Any) -> str | None:
    if isinstance(x, list) and len(x) == 2 and all(_is_int(v) and v >= 1 for v in x):
        if x[0] < x[1]:
            return None
    return "two integers [low, high] with 1 <= low < high"


def _flag(x: Any) -> str | None:
    return None if isinstance(x, bool) else "true or false"


# the tiny random models' options (runner.tiny.tiny_random_model's keywords)
TINY: dict[str, Check] = {
    "vocab": _int(16),
    "hidden": _int(2),
    "layers": _int(1),
    "heads": _int(1),
    "seed": _int(0, MAX_SEED),
    "extra_vocab": _int(0),
    "conditional": _flag,
}


def _tiny_fail(x: dict[str, Any]) -> tuple[str, str, Any] | None:
    """(key, what it must be, value) for the first bad option of a tiny model, else None."""
    for key, value in x.items():
        check = TINY.get(str(key))
        if check is None:
            return str(key), f"one of {', '.join(TINY)}", key
        must = check(value)
        if must is not None:
            return str(key), must, value
    hidden, heads = x.get("hidden", 64), x.get("heads", 2)
    if hidden % heads:
        return "hidden", f"a multiple of heads ({heads})", hidden
    return None


def _drafts(x: Any) -> str | None:
    if not isinstance(x, dict):
        return "a mapping of role -> drafter spec"
    for v in x.values():
        if not (
            v is None
            or _text(v) is None
            or (isinstance(v, list) and all(_text(spec) is None for spec in v))
        ):
            return "a mapping of role -> drafter spec (or a list of specs)"
    return None


TOP: dict[str, Check] = {
    "name": _name,
    "target": _text,
    "dtype": _one_of(DTYPES),
    "device": _one_of(DEVICES),
    "data_source": _one_of(DATA_SOURCES),
    "seed": _int(0, MAX_SEED),
    "threads": _threads,
    "k": _int(1, MAX_K),
    "warmup": _int(0),
    "tiny": _mapping,
    "tiny_draft": _mapping,
    "drafts": _drafts,
    "experiments": _mapping,
}
REQUIRED = ("target", "drafts", "experiments")

# inside `experiments`, by key name at any depth
BY_NAME: dict[str, Check] = {
    **{
        key: _int(0)
        for key in (
            "n_prompts",
            "context_tokens",
            "max_new_tokens",
            "continuation_tokens",
            "n_samples",
            "anchor_min",
            "anchor_room",
            "n_documents",
            "n_documents_text",
            "n_documents_other",
            "warmup_tokens",
        )
    },
    **{key: _int(1, MAX_K) for key in ("k_start", "k_min", "k_max")},
    "continuation_batch": _int(1),  # the agreement's documents per forward
    "contexts": _list_of(_int(1), "integers >= 1"),
    "text_contexts": _list_of(_int(1), "integers >= 1"),
    "ks": _list_of(_int(1, MAX_K), f"integers in [1, {MAX_K}]"),
    "temperatures": _list_of(
        lambda t: None if _temperature(t) else "t",
        f"temperatures (0, or in [{MIN_TEMPERATURE:g}, {MAX_TEMPERATURE:g}])",
    ),
    "dtypes": _list_of(_one_of(DTYPES), f"dtypes ({', '.join(DTYPES)})", empty=True),
    "test_range": _pair_ascending,
}
K_ORDER = ("k_min", "k_start", "k_max")  # adaptive K: k_min <= k_start <= k_max
AT_LEAST_ONE = ("n_prompts", "max_new_tokens")  # directly under an experiment


def _fail(where: str, key: str, must: str, value: Any) -> SpecdecError:
    return SpecdecError(f"profile {where}: {key} must be {must}, got {value!r}")


def _check_section(where: str, path: str, section: dict[str, Any], top: bool) -> None:
    for key, value in section.items():
        full = f"{path}.{key}"
        check = BY_NAME.get(str(key))
        must = check(value) if check else None
        if must is None and top and key in AT_LEAST_ONE and value == 0:
            must = "an integer >= 1"
        if must is not None:
            raise _fail(where, full, must, value)
        if isinstance(value, dict):
            _check_section(where, full, value, False)
    given = [(key, section[key]) for key in K_ORDER if key in section]
    for (lo_key, lo), (hi_key, hi) in zip(given, given[1:], strict=False):
        if lo > hi:
            raise _fail(where, f"{path}.{hi_key}", f">= {path}.{lo_key} ({lo})", hi)


def validate(prof: Any, where: str) -> dict[str, Any]:
    """The profile when it fits the schema; else a one-line SpecdecError naming key and value."""
    if not isinstance(prof, dict):
        raise SpecdecError(f"profile {where} must be a mapping of keys, not {type(prof).__name__}")
    for key in REQUIRED:
        if key not in prof:
            raise SpecdecError(f"profile {where} has no {key!r}")
    for key, check in TOP.items():
        if key in prof:
            must = check(prof[key])
            if must is not None:
                raise _fail(where, key, must, prof[key])
    for key in ("tiny", "tiny_draft"):
        bad = _tiny_fail(prof.get(key) or {})
        if bad is not None:
            raise _fail(where, f"{key}.{bad[0]}", bad[1], bad[2])
    for name, section in prof["experiments"].items():
        if not isinstance(section, dict):
            raise _fail(where, f"experiments.{name}", "a mapping", section)
        _check_section(where, f"experiments.{name}", section, True)
    return prof


class UniqueKeyLoader(yaml.SafeLoader):
    """yaml.SafeLoader that refuses a mapping naming one key twice (safe_load keeps the last,
    silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: set = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def profile_path(name: str) -> Path:
    """A profile's YAML file: the name if it ends in .yaml/.yml, else profiles/<name>.yaml."""
    return Path(name) if name.endswith((".yaml", ".yml")) else PROFILES / f"{name}.yaml"


def load_profile(name: str) -> dict[str, Any]:
    """profiles/<name>.yaml (or a path to a YAML file) as a dict, checked against the typed
    schema (a bad value is a one-line SpecdecError, never coerced)."""
    path = profile_path(name)
    if not path.is_file():
        known = sorted(p.stem for p in PROFILES.glob("*.yaml"))
        raise SpecdecError(f"no profile {name!r}: known profiles are {known}")
    where = repr(str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path))
    try:
        prof = yaml.load(path.read_text(encoding="utf-8"), Loader=UniqueKeyLoader)  # noqa: S506
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        why = getattr(e, "problem", None) or type(e).__name__
        raise SpecdecError(f"profile {where} is not valid YAML{at}: {why}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise SpecdecError(f"profile {where} cannot be read ({type(e).__name__})") from None
    validate(prof, where)
    prof.setdefault("name", path.stem)
    if prof["name"] != path.stem:  # the batch lock holds RESULTS_DIR/<file's name>
        raise _fail(where, "name", f"the file's name without .yaml ({path.stem!r})", prof["name"])
    return prof


def resolve_profile(name: str) -> str:
    """ "auto" -> colab-t4 on a Colab GPU runtime, embedded outside Colab (a Colab runtime
    without a GPU stops in one line: `colab.auto_profile`); any other name as given."""
    return colab.auto_profile() if name == "auto" else name


def profile_for_run(name: str) -> dict[str, Any]:
    """The checked profile `name` ("auto" resolved here), its target's packages ready (Colab)."""
    prof = load_profile(resolve_profile(name))
    colab.ensure_target(str(prof.get("target", "")))
    return prof


def all_profiles(folder: Path | None = None) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """(every valid profile in folder, file name -> one-line error for each malformed one)."""
    good, bad = [], {}
    for path in sorted(Path(folder or PROFILES).glob("*.yaml")):
        try:
            good.append(load_profile(str(path)))
        except SpecdecError as e:
            bad[path.name] = str(e)
    return good, bad


def main(argv: list[str] | None = None) -> int:
    """`python -m specdec_lib.environment.profiles NAME`: 0 when the profile is sound, else one
    line on stderr and 2 (`make evaluate` checks before any folder or notebook exists)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m specdec_lib.environment.profiles PROFILE", file=sys.stderr)
        return 2
    try:
        load_profile(resolve_profile(args[0]))
    except SpecdecError as e:
        print(f"specdec: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
