"""Profiles (`profiles/<name>.yaml`): read and checked against a typed schema, one line per error.

`load_profile(name)` returns the profile as a plain dict, or raises a one-line SpecdecError
naming the file, the key path and the value: a file that is not YAML or not a mapping, a missing
target, a dtype/device/data source outside the known ones, a count that is not an integer
(`n_prompts: 2.7`), a temperature the sampler would refuse, a tiny model's option of the wrong
type, an adaptive K with k_min <= k_start <= k_max broken, a reversed `test_range`, a `name`
that is not the file's (results go to RESULTS_DIR/<name>, the batch lock holds
RESULTS_DIR/<file's name>: `../../escape` would leave both). pydantic checks each key's declared
type in strict mode, so nothing is coerced: what passes is what the config records; the first
problem in the file's order is said in the profile's words (`KEY must be WHAT, got VALUE`).
Keys the schema does not know are kept unchecked, so a new experiment's section needs no change
here; inside `experiments`, keys are checked by name wherever they appear (`n_prompts` in
`identity` as in `baseline`). `all_profiles()` reads every profile and
returns the malformed ones separately, so one bad file never hides the others.
`profile_for_run(name)` is the profile a run uses where it runs: "auto" resolved (colab-t4 on a
Colab GPU, else embedded) and, in Colab, the target's extra packages installed (`colab`).
`python -m specdec_study.environment.profiles NAME` checks one profile (`make evaluate` first).

Knows nothing about models, torch or results: it reads YAML only (the book imports it).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

import pydantic
import yaml
from pydantic import Field
from pydantic_core import PydanticCustomError
from typing_extensions import Required, TypedDict

from specdec_lib import ROOT
from specdec_lib.config import MAX_K, MAX_SEED, MAX_TEMPERATURE, MIN_TEMPERATURE
from specdec_lib.errors import SpecdecError
from specdec_study.environment import colab

PROFILES = ROOT / "profiles"
DTYPES = ("auto", "float32", "bfloat16", "float16", "float64")  # float64: tiny-random only
DEVICES = ("auto", "cpu", "cuda")
DATA_SOURCES = ("auto", "bundled", "datasets")  # data.SOURCES (a test keeps them equal)


def _refusal(must: str) -> PydanticCustomError:
    """pydantic's error for a value that must be `must` (the profile's one-line wording)."""
    return PydanticCustomError("must", "{must}", {"must": must})


def _must(what: str, kind: Any, *more: Any) -> Any:
    """kind, with `more` pydantic constraints and checks, refused as "must be {what}" whatever
    inside it failed (a list is refused whole, as the profile's reader fixes it whole)."""

    def refuse(value: Any, handler: pydantic.ValidatorFunctionWrapHandler) -> Any:
        try:
            return handler(value)
        except pydantic.ValidationError:
            raise _refusal(what) from None

    return Annotated[(kind, *more, pydantic.WrapValidator(refuse))]


def _holds(test: Callable[[Any], bool], what: str = "") -> pydantic.AfterValidator:
    """A check pydantic has no constraint for: test(value) is true, else "must be {what}"
    (inside `_must`, its phrase is the one said)."""

    def check(value: Any) -> Any:
        if not test(value):
            raise _refusal(what)
        return value

    return pydantic.AfterValidator(check)


def _int(lo: int, hi: int | None = None) -> Any:
    bound = f" and <= {hi}" if hi is not None else ""
    return _must(f"an integer >= {lo}{bound}", int, Field(ge=lo, le=hi))


def _one_of(options: tuple[str, ...]) -> Any:
    return _must(f"one of {', '.join(options)}", Literal[options])


def _list_of(item: Any, what: str, *, empty: bool = False) -> Any:
    return _must(
        f"a {'' if empty else 'non-empty '}list of {what}",
        list[item],
        Field(min_length=int(not empty)),
    )


SPEC = Annotated[str, Field(pattern=r"\S")]  # a drafter spec, a target: some text
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
PLAIN_NAME = "a plain name (letters, digits, '.', '_', '-'; no '/' and no leading '.')"


def name_problem(x: Any) -> str | None:
    """What a folder name under RESULTS_DIR must be (no separator, no leading dot: never
    `../x`), or None when x is one."""
    if isinstance(x, str) and _NAME.fullmatch(x) and ".." not in x:
        return None
    return PLAIN_NAME


def _heads_divide_hidden(tiny: dict[str, Any]) -> dict[str, Any]:
    hidden, heads = tiny.get("hidden", 64), tiny.get("heads", 2)
    if hidden % heads:  # a located error: its path ends in `hidden`, as a bad value's would
        error = {"type": _refusal(f"a multiple of heads ({heads})"), "loc": ("hidden",)}
        raise pydantic.ValidationError.from_exception_data("tiny", [{**error, "input": hidden}])
    return tiny


# the tiny random models' options (runner.tiny.tiny_random_model's keywords), a closed set
TINY: dict[str, Any] = {
    "vocab": _int(16),
    "hidden": _int(2),
    "layers": _int(1),
    "heads": _int(1),
    "seed": _int(0, MAX_SEED),
    "extra_vocab": _int(0),
    "conditional": _must("true or false", bool),
}
Tiny = Annotated[
    pydantic.with_config(pydantic.ConfigDict(extra="forbid"))(TypedDict("Tiny", TINY, total=False)),
    pydantic.AfterValidator(_heads_divide_hidden),
]

ROLES = pydantic.TypeAdapter(dict[Any, SPEC | list[SPEC] | None])  # role -> drafter spec(s)
DRAFTS = Annotated[
    _must("a mapping of role -> drafter spec", dict),
    _holds(
        lambda x: not _errors(ROLES, x), "a mapping of role -> drafter spec (or a list of specs)"
    ),
]

# a profile's top-level keys; keys it does not name are kept unchecked
PROFILE = pydantic.TypeAdapter(
    TypedDict(
        "Profile",
        {
            "name": _must(PLAIN_NAME, str, _holds(lambda x: name_problem(x) is None)),
            "target": Required[_must("a non-empty string", SPEC)],
            "dtype": _one_of(DTYPES),
            "device": _one_of(DEVICES),
            "data_source": _one_of(DATA_SOURCES),
            "seed": _int(0, MAX_SEED),
            "threads": _must("an integer >= 1", Annotated[int, Field(ge=1)] | None),
            "k": _int(1, MAX_K),
            "warmup": _int(0),
            "tiny": Tiny,
            "tiny_draft": Tiny,
            "drafts": Required[DRAFTS],
            "experiments": Required[dict[Any, _must("a mapping", dict)]],
        },
        total=False,
    )
)

COUNTS = (
    "n_prompts context_tokens max_new_tokens continuation_tokens n_samples anchor_min anchor_room"
    " n_documents n_documents_text n_documents_other warmup_tokens"
).split()
# inside `experiments`, by key name at any depth
BY_NAME: dict[str, Any] = {
    **{key: _int(0) for key in COUNTS},
    **{key: _int(1, MAX_K) for key in ("k_start", "k_min", "k_max")},
    "continuation_batch": _int(1),  # the agreement's documents per forward
    "contexts": _list_of(Annotated[int, Field(ge=1)], "integers >= 1"),
    "text_contexts": _list_of(Annotated[int, Field(ge=1)], "integers >= 1"),
    "ks": _list_of(Annotated[int, Field(ge=1, le=MAX_K)], f"integers in [1, {MAX_K}]"),
    "temperatures": _list_of(
        Annotated[float, _holds(lambda t: t == 0 or MIN_TEMPERATURE <= t <= MAX_TEMPERATURE)],
        f"temperatures (0, or in [{MIN_TEMPERATURE:g}, {MAX_TEMPERATURE:g}])",
    ),
    "dtypes": _list_of(Literal[DTYPES], f"dtypes ({', '.join(DTYPES)})", empty=True),
    "test_range": _must(
        "two integers [low, high] with 1 <= low < high",
        list[Annotated[int, Field(ge=1)]],
        Field(min_length=2, max_length=2),
        _holds(lambda pair: pair[0] < pair[1]),
    ),
}
SECTION = pydantic.TypeAdapter(TypedDict("Section", BY_NAME, total=False))
# directly under an experiment, at least one prompt and one token (a wrong type: as BY_NAME says)
AT_LEAST_ONE = {
    key: Annotated[BY_NAME[key], _holds(lambda n: n >= 1, "an integer >= 1")]
    for key in ("n_prompts", "max_new_tokens")
}
EXPERIMENT = pydantic.TypeAdapter(TypedDict("Experiment", {**BY_NAME, **AT_LEAST_ONE}, total=False))
K_ORDER = ("k_min", "k_start", "k_max")  # adaptive K: k_min <= k_start <= k_max


def _fail(where: str, key: str, must: str, value: Any) -> SpecdecError:
    return SpecdecError(f"profile {where}: {key} must be {must}, got {value!r}")


def _place(data: Any, loc: tuple[Any, ...]) -> list[int]:
    """Where an error's location sits in the file: each step's position in its mapping (-1: a
    key the file lacks, said first)."""
    at = []
    for step in loc:
        keys = list(data) if isinstance(data, dict) else []
        if step not in keys:
            return [*at, -1]
        at.append(keys.index(step))
        data = data[step]
    return at


def _errors(adapter: pydantic.TypeAdapter, data: Any, path: tuple[Any, ...] = ()) -> list[Any]:
    """pydantic's errors for data as adapter's shape (strict: nothing coerced), each located
    from the profile's top (data sits at path)."""
    try:
        adapter.validate_python(data, strict=True)
    except pydantic.ValidationError as e:
        return [{**error, "loc": (*path, *error["loc"])} for error in e.errors()]
    return []


def _sections(path: tuple[Any, ...], section: Any) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """An experiment's section and every mapping inside it, each with its path."""
    if isinstance(section, dict):
        yield path, section
        for key, value in section.items():
            yield from _sections((*path, key), value)


def _refusal_line(where: str, error: Any) -> SpecdecError:
    """One pydantic error as the profile's one line: `KEY must be WHAT, got VALUE`."""
    loc, kind = error["loc"], error["type"]
    key = ".".join(map(str, loc))
    if kind == "missing":
        return SpecdecError(f"profile {where} has no {loc[-1]!r}")
    if kind == "extra_forbidden":  # the tiny models' options, the one closed mapping
        return _fail(where, key, f"one of {', '.join(TINY)}", loc[-1])
    must = {"must": (error.get("ctx") or {}).get("must"), "dict_type": "a mapping"}.get(kind)
    return _fail(where, key, must or error["msg"], error["input"])


def validate(prof: Any, where: str) -> dict[str, Any]:
    """The profile when it fits the schema; else a one-line SpecdecError naming key and value:
    the first problem in the file's order."""
    if not isinstance(prof, dict):
        raise SpecdecError(f"profile {where} must be a mapping of keys, not {type(prof).__name__}")
    errors = _errors(PROFILE, prof)
    experiments = prof.get("experiments")
    sections = [
        (path, part)
        for name, section in (experiments.items() if isinstance(experiments, dict) else ())
        for path, part in _sections(("experiments", name), section)
    ]
    for path, part in sections:
        errors += _errors(EXPERIMENT if len(path) == 2 else SECTION, part, path)
    if errors:
        raise _refusal_line(where, min(errors, key=lambda error: _place(prof, error["loc"])))
    for path, part in sections:
        given = [(key, part[key]) for key in K_ORDER if key in part]
        for (lo_key, lo), (hi_key, hi) in zip(given, given[1:], strict=False):
            if lo > hi:
                at = ".".join(map(str, path))
                raise _fail(where, f"{at}.{hi_key}", f">= {at}.{lo_key} ({lo})", hi)
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
    """`python -m specdec_study.environment.profiles NAME`: 0 when the profile is sound, else one
    line on stderr and 2 (`make evaluate` checks before any folder or notebook exists)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m specdec_study.environment.profiles PROFILE", file=sys.stderr)
        return 2
    try:
        load_profile(resolve_profile(args[0]))
    except SpecdecError as e:
        print(f"specdec: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
