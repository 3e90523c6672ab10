"""Is a result directory whole? The layout of results/SCHEMA.md as read-only checks.

`result_problem(path)` returns why `<results>/<profile>/<experiment>/` cannot be used, in a few
words (None when it can): a required file missing or unreadable, a JSON file that is not an
object of the expected shape, a per_prompt.csv without a header, without rows or with a short
(truncated) row, a row count or sha256 other than summary.json recorded at publication (a CSV
cut at a line boundary). `study=True` adds what every study experiment writes (experiment and
profile names, the experiment matching the directory, a headline, a `prompt` column), which the
reuse check and the book rely on, and a config.json and a summary.json of the shapes its
experiment declares (`results.declare.Experiment.config_shape` and `.summary`, checked by
`shape_problem`, pydantic in strict mode: a declared key missing or of another type, named in
one line). A damaged directory is recomputed
by the batch and never rendered by the book.
`LIST_COLUMNS` declares the per-prompt columns that hold lists of ints and how a CSV cell
writes each (`encode_list` / `decode_list`, used by `store.write_rows`, `read_rows` and the
checkpoint).

Knows nothing about torch, models, notebooks or how a result was computed: it reads files only.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import json
import math
import re
import types
import typing
from pathlib import Path
from typing import Any, Literal, Union

import pydantic
import typing_extensions
from typing_extensions import NotRequired, Required

REQUIRED_FILES = ("config.json", "env.json", "summary.json", "per_prompt.csv")
# summary.json's record of per_prompt.csv as published: {"rows": n, "sha256": hex}; a CSV cut at
# a line boundary parses cleanly, only this tells it (results without the record: as before)
PER_PROMPT_RECORD = "per_prompt_csv"
_HASH = re.compile(r"[0-9a-f]{16}")
# the name of a result file or of a folder of them (what a bundle may hold, what the book links)
SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")

# The list-valued per-prompt columns, lists of ints in memory, and the separator that joins
# a list's items in a CSV cell: "3 0 4 1" (a length per target call, the generated ids) or
# "10001000" (one 0/1 per position). An empty list is an empty cell, as is a missing value: a
# cell cannot tell the two apart, and reads back as [] (Hugging Face arms' empty length lists,
# the agreement's draft rows, which carry no tokens).
LIST_COLUMNS: dict[str, str] = {
    "accepted_lengths": " ",
    "proposed_lengths": " ",
    "tokens": " ",
    "matches": "",
}


def _missing(value: Any) -> bool:
    """None, NaN (pandas' empty cell) or the empty text."""
    if isinstance(value, str):
        return not value.strip()
    return value is None or (isinstance(value, float) and math.isnan(value))


def encode_list(column: str, value: Any) -> Any:
    """A list column's value as its CSV text (other columns' values, and text already encoded,
    unchanged; a missing value, None or NaN, is None, which the writer leaves empty)."""
    if column not in LIST_COLUMNS or isinstance(value, str):
        return value
    if _missing(value):
        return None
    return LIST_COLUMNS[column].join(str(int(x)) for x in value)


def decode_list(column: str, value: Any) -> list[int]:
    """A list column's value, as CSV text or already a list, as a list of ints ([] for an
    empty or missing cell)."""
    if _missing(value):
        return []
    if not isinstance(value, str):
        return [int(x) for x in value]
    sep, text = LIST_COLUMNS[column], value.strip()
    return [int(x) for x in (text.split(sep) if sep else text)]


def encode_row(row: dict[str, Any]) -> dict[str, Any]:
    """A row with its list columns as their CSV text."""
    return {k: encode_list(k, v) for k, v in row.items()}


def decode_row(row: dict[str, Any]) -> dict[str, Any]:
    """A row with its list columns as lists of ints (text or lists in, as `decode_list`)."""
    return {k: decode_list(k, v) if k in LIST_COLUMNS else v for k, v in row.items()}


def _kind(value: Any) -> str:
    return "null" if value is None else f"a {type(value).__name__}"


def _name(shape: Any) -> str:
    return getattr(shape, "__name__", None) or str(shape).replace("typing.", "")


def _alternatives(shape: Any) -> list[Any] | None:
    """A union's alternatives other than None (None: shape is not a union)."""
    if typing.get_origin(shape) not in (Union, types.UnionType):
        return None
    return [a for a in typing.get_args(shape) if a is not type(None)]


def _inner(shape: Any) -> Any:
    """X for X | None, else shape (pydantic's error locations add no step for it)."""
    alternatives = _alternatives(shape)
    return alternatives[0] if alternatives is not None and len(alternatives) == 1 else shape


def _portable(shape: Any, extra: str) -> Any:
    """shape with each typing.TypedDict in it remade as a typing_extensions one, the only kind
    pydantic reads before Python 3.12 (the declarations use typing's; the keys, their types and
    which are required stay as declared), its undeclared keys ignored or forbidden (`extra`)."""
    if typing.is_typeddict(shape):
        fields = {
            key: (Required if key in shape.__required_keys__ else NotRequired)[
                _portable(kind, extra)
            ]
            for key, kind in typing.get_type_hints(shape).items()
        }
        remade = typing_extensions.TypedDict(shape.__name__, fields)  # type: ignore[operator]
        return pydantic.with_config(pydantic.ConfigDict(extra=extra))(remade)
    origin, args = typing.get_origin(shape), typing.get_args(shape)
    if not args or origin is Literal:
        return shape
    if origin in (Union, types.UnionType):
        return Union[tuple(_portable(a, extra) for a in args)]  # noqa: UP007 (a computed union)
    return origin[tuple(_portable(a, extra) for a in args)]  # list[X], dict[str, X]


@functools.cache
def _adapter(shape: Any, strict: bool) -> pydantic.TypeAdapter:
    """pydantic's validator for shape; strict: a key a TypedDict does not declare is refused."""
    return pydantic.TypeAdapter(_portable(shape, "forbid" if strict else "ignore"))


def _at(value: Any, shape: Any, where: str, loc: tuple[Any, ...]) -> tuple[Any, Any, str, int]:
    """Follow pydantic's error location from the top: (the value there, its declared shape, its
    name as `where['key'][0]`, how many steps were followed). Stops at a union of two or more
    alternatives, whose next step names the alternative tried, not a key."""
    for n, step in enumerate(loc):
        inner = _inner(shape)
        if _alternatives(inner) is not None:
            return value, shape, where, n
        if typing.is_typeddict(inner):
            shape = typing.get_type_hints(inner)[step]
        else:  # dict[str, X], list[X]: the last argument is the value's shape
            shape = typing.get_args(inner)[-1]
        value, where = value[step], f"{where}[{step!r}]"
    return value, shape, where, len(loc)


def _mismatch(value: Any, shape: Any, where: str) -> str:
    """Why value is not of shape, in the words of the hand-written checker before pydantic."""
    alternatives = _alternatives(shape)
    if alternatives is not None:
        if len(alternatives) == 1 and isinstance(value, (dict, list)):
            return _mismatch(value, alternatives[0], where)  # X | None: say what X is
        return f"{where} is {_kind(value)}, not {_name(shape)}"
    if typing.get_origin(shape) is Literal:
        return f"{where} is {value!r}, not one of {typing.get_args(shape)}"
    if typing.is_typeddict(shape) or typing.get_origin(shape) is dict:
        return f"{where} is {_kind(value)}, not an object"
    if typing.get_origin(shape) is list:
        return f"{where} is {_kind(value)}, not a list"
    return f"{where} is {_kind(value)}, not {_name(shape)}"


def _first(errors: list[Any], depth: int = 0) -> Any:
    """The problem the hand-written checker named first among pydantic's: at each level a missing
    key, then an undeclared one, then the first key (in declared order) holding any problem."""
    for kind in ("missing", "extra_forbidden"):
        here = [e for e in errors if len(e["loc"]) == depth + 1 and e["type"] == kind]
        if here:
            return here[0]
    head = errors[0]["loc"][: depth + 1]
    if len(head) <= depth:
        return errors[0]
    return _first([e for e in errors if e["loc"][: depth + 1] == head], depth + 1)


def shape_problem(value: Any, shape: Any, where: str = "it", strict: bool = False) -> str | None:
    """Why JSON data (as `json` reads it back) is not of the declared shape, in one line naming
    where (None when it is), checked by pydantic in strict mode (nothing coerced: "3" is not an
    int, nor 3.0 nor true; an int passes for a float, as JSON writes a count). Shapes: a
    TypedDict, dict[str, X], list[X], a union (X | None), Literal, str, int, float, bool and Any:
    the experiments' declarations (`results.declare.Experiment.summary` and `.config_shape`).
    strict: a key that a TypedDict does not declare is a problem too (the tests' check that a
    declaration names everything its experiment writes; results read back allow more)."""
    try:
        _adapter(shape, strict).validate_python(value, strict=True)
    except pydantic.ValidationError as e:
        error = _first(e.errors())
        loc, keyed = error["loc"], error["type"] in ("missing", "extra_forbidden")
        if loc[-1:] == ("[key]",):  # a mapping's key (JSON writes text only: never from a file)
            return f"{_at(value, shape, where, loc[:-2])[2]} has the key {loc[-2]!r}, not text"
        value, shape, where, steps = _at(value, shape, where, loc[:-1] if keyed else loc)
        if keyed and steps == len(loc) - 1:
            if error["type"] == "missing":
                return f"{where} has no {loc[-1]!r}"
            return f"{where} has {loc[-1]!r}, which {_name(_inner(shape))} does not declare"
        return _mismatch(value, shape, where)
    return None


def declared_summary(experiment: str) -> Any:
    """The summary shape experiment `experiment` declares (None: not a declared experiment, or
    it declares none). Read from the catalog when asked: the declarations are loaded then."""
    from specdec_study.results import catalog

    found = catalog.declared().get(experiment)
    return found[1].summary if found else None


def summary_problem(
    experiment: str, summary: dict[str, Any], *, strict: bool = False
) -> str | None:
    """Why a summary (JSON data) is not of its experiment's declared shape (None: it is, or
    none is declared), as `summary.json['key'] ...`."""
    shape = declared_summary(experiment)
    return None if shape is None else shape_problem(summary, shape, "summary.json", strict)


def declared_config(experiment: str) -> Any:
    """The config shape experiment `experiment` declares (None: not a declared experiment, or it
    declares none), read from the catalog as `declared_summary`."""
    from specdec_study.results import catalog

    found = catalog.declared().get(experiment)
    return found[1].config_shape if found else None


def config_problem(experiment: str, config: dict[str, Any], *, strict: bool = False) -> str | None:
    """Why a config (JSON data) is not of its experiment's declared shape (None: it is, or none
    is declared), as `config.json['key'] ...`."""
    shape = declared_config(experiment)
    return None if shape is None else shape_problem(config, shape, "config.json", strict)


def _json_object(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    name = path.name
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None, f"{name} is missing"
    except OSError as e:
        return None, f"{name} cannot be read ({e.strerror or type(e).__name__})"
    except ValueError:
        return None, f"{name} is not valid JSON"
    if not isinstance(data, dict):
        return None, f"{name} holds a {type(data).__name__}, not an object"
    if not data:
        return None, f"{name} is empty"
    return data, None


def _record_problem(path: Path, n: int, record: Any) -> str | None:
    """Why per_prompt.csv is not the file summary.json recorded (None when it is, or when
    there is no record)."""
    if record is None:
        return None
    if not (isinstance(record, dict) and isinstance(record.get("rows"), int)):
        return f"summary.json's {PER_PROMPT_RECORD!r} is not a record of rows and sha256"
    if n != record["rows"]:
        return f"{path.name} has {n} rows, summary.json records {record['rows']}"
    if hashlib.sha256(path.read_bytes()).hexdigest() != record.get("sha256"):
        return f"{path.name} is not the file summary.json records (sha256 differs)"
    return None


def _csv_problem(path: Path, study: bool, record: Any = None) -> str | None:
    name = path.name
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.reader(f)
            header = next(reader, None)
            if not header:
                return f"{name} has no header"
            n = 0
            for n, row in enumerate(reader, start=1):
                if len(row) != len(header):
                    return f"{name} row {n} has {len(row)} fields, the header {len(header)}"
    except FileNotFoundError:
        return f"{name} is missing"
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        return f"{name} cannot be read ({getattr(e, 'strerror', None) or type(e).__name__})"
    if n == 0:
        return f"{name} has no rows"
    if study and "prompt" not in header:
        return f"{name} has no 'prompt' column"
    return _record_problem(path, n, record)


def result_problem(path: Path, *, study: bool = False) -> str | None:
    """Why the result directory at path is unusable, or None when it is whole."""
    path = Path(path)
    if not path.is_dir():
        return "it does not exist"
    config, problem = _json_object(path / "config.json")
    if problem:
        return problem
    assert config is not None
    if not isinstance(config.get("config_hash"), str) or not _HASH.fullmatch(config["config_hash"]):
        return "config.json has no config_hash of 16 hex digits"
    env, problem = _json_object(path / "env.json")
    if problem:
        return problem
    summary, problem = _json_object(path / "summary.json")
    if problem:
        return problem
    assert summary is not None
    for what, data in (("config.json", config), ("summary.json", summary)):
        if "experiment" in data and data["experiment"] != path.name:
            return f"{what} names experiment {data['experiment']!r}, not {path.name!r}"
    if study:
        for key, kind in (("experiment", str), ("profile", str), ("headline", dict)):
            if not isinstance(summary.get(key), kind):
                return f"summary.json has no {key!r} ({kind.__name__})"
        for key, kind in (("arms", dict), ("table", list), ("roles", dict)):
            if key in summary and not isinstance(summary[key], kind):
                return f"summary.json's {key!r} is not a {kind.__name__}"
        if problem := config_problem(path.name, config):
            return problem
        if problem := summary_problem(path.name, summary):
            return problem
    return _csv_problem(path / "per_prompt.csv", study, summary.get(PER_PROMPT_RECORD))
