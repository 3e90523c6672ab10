"""Results bundles: a profile's finished result directories in one zip, written where a run
happened (a Colab notebook's last cell, `study.write_bundle`) and imported into this repository's
`results/<profile>/` by `python -m specdec_lib import-bundle PATH.zip` (the way back into the
book).

A bundle holds `<profile>/<experiment>/{config.json, env.json, summary.json, per_prompt.csv, ...}`
and nothing else: no W&B folder, no checkpoint, no lock. `import_bundle` unpacks it into a temporary
folder and accepts it only when every member is a plain file under one profile folder whose name is
a profile name (the profile grammar), in a folder named after an experiment of the catalog
(`notebooks` is none), with a result file's name (`schema.SAFE_NAME`: the book links these names),
every JSON file is strict JSON (no NaN, no infinity, as SCHEMA.md says), every experiment passes
`schema.result_problem` (config.json, env.json, summary.json and the rows whole), every
config.json's stored `config_hash` is the hash of its config (recomputed: an edited config would
otherwise be reused as the config it no longer is), every config and summary names that profile, and
where `profiles/<profile>.yaml` exists every config asks for its target, every `model:` draft an arm
runs is one the profile names and the device is the profile's unless it leaves that to the machine
(`profile_problem`), each env.json was written by a run of its own config (its device and dtype
those the config asks for), all were measured with one target on one machine (GPU and its
capability, or CPU), and no file holds a secret (a set secret's value or a hub-token shaped string);
else it refuses in one line (a SpecdecError) naming the experiment, and writes nothing.

Once accepted, the import is atomic per experiment and locked: it holds the folder's batch lock
and its book lock (`results.locks.changing`: refused in one line while a batch runs for the
folder or a book is built from it), copies every experiment into a hidden folder beside its
destination (same filesystem), then swaps each into place with one rename (an atomic exchange
where it replaces one: a kill at any point leaves the old result or the new one, never neither)
and only then removes what was replaced; an error before the last swap puts back what it swapped.
Hidden leftovers of a killed import (`.import-*`) are never read and the next import removes
them. Torch-free.
"""

from __future__ import annotations

import csv
import ctypes
import ctypes.util
import errno
import json
import math
import os
import re
import shutil
import tempfile
import zipfile
from pathlib import Path, PurePosixPath
from typing import Any

from specdec_lib.config import config_hash
from specdec_lib.errors import SpecdecError
from specdec_study.environment.profiles import PROFILES, load_profile
from specdec_study.environment.profiles import name_problem as profile_name_problem
from specdec_study.environment.secrets import holds_secret, secret_values
from specdec_study.results import catalog
from specdec_study.results.locks import changing
from specdec_study.results.schema import SAFE_NAME, result_problem

SUFFIXES = (".json", ".csv", ".png", ".md", ".txt", ".ipynb")  # what a result directory holds
MAX_BYTES = 512 * 1024 * 1024  # unpacked; a results bundle is a few MB
STAGED = ".import-"  # the prefix of an import's hidden folders beside its destinations
# a key of a result's JSON (arm, draft, context, temperature, input labels) and a name in its rows
# (the `method` and `draft` columns: arm names and drafter specs): what the study writes, and no
# character with a meaning in Markdown, so a name is never markup wherever the book puts it
KEY_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:/+, =-]{0,127}")
NAME_COLUMNS = ("method", "draft")


def experiments_in(profile_dir: Path) -> list[Path]:
    """The finished result directories of a profile folder (those `result_problem` accepts);
    hidden folders (checkpoints, temporary writes) and `wandb/` are left out."""
    out = []
    for d in sorted(Path(profile_dir).iterdir()) if Path(profile_dir).is_dir() else []:
        if d.is_dir() and not d.name.startswith(".") and d.name not in ("wandb", "notebooks"):
            if result_problem(d, study=True) is None:
                out.append(d)
    return out


def write_bundle(profile_dir: Path, out: Path) -> Path:
    """Zip the finished experiments of `profile_dir` (`<results>/<profile>`) into `out`, each
    file as `<profile>/<experiment>/<path>`; returns `out`. Refuses an empty folder."""
    profile_dir = Path(profile_dir)
    found = experiments_in(profile_dir)
    if not found:
        raise SpecdecError(f"no finished results in {profile_dir} to bundle")
    tmp = out.with_name(f".{out.name}.tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for d in found:
            for f in sorted(d.rglob("*")):
                if f.is_file() and not f.is_symlink() and f.suffix in SUFFIXES:
                    z.write(f, f"{profile_dir.name}/{d.name}/{f.relative_to(d).as_posix()}")
    tmp.replace(out)
    return out


def _members(z: zipfile.ZipFile) -> tuple[str, list[zipfile.ZipInfo]]:
    """(the one profile folder, the file members); refuses unsafe or unexpected names."""
    files, tops, total = [], set(), 0
    for info in z.infolist():
        name = PurePosixPath(info.filename)
        if info.filename.startswith("/") or ".." in name.parts or "\\" in info.filename:
            raise SpecdecError(f"bundle member {info.filename!r} leaves its folder")
        if info.is_dir():
            continue
        if (info.external_attr >> 16) & 0o170000 == 0o120000:
            raise SpecdecError(f"bundle member {info.filename!r} is a link")
        if len(name.parts) < 3:
            raise SpecdecError(
                f"bundle member {info.filename!r} is not under <profile>/<experiment>/"
            )
        if name.suffix not in SUFFIXES:
            raise SpecdecError(f"bundle member {info.filename!r} is not a result file")
        total += info.file_size
        tops.add(name.parts[0])
        files.append(info)
    if not files:
        raise SpecdecError("bundle holds no files")
    if len(tops) != 1:
        raise SpecdecError(f"bundle mixes profiles {sorted(tops)}")
    if total > MAX_BYTES:
        raise SpecdecError(f"bundle unpacks to {total} bytes, more than {MAX_BYTES}")
    top = tops.pop()
    if problem := names_problem(top, [PurePosixPath(f.filename) for f in files]):
        raise SpecdecError(f"bundle refused: {problem}")
    return top, files


def _secret_in(path: Path) -> bool:
    """Whether a file holds a set secret's value or a hub-token shaped string (a binary file's
    bytes read as Latin-1, so a token stored in a PNG chunk is found too)."""
    if path.suffix == ".png":
        data = path.read_bytes()
        return any(s.encode() in data for s in secret_values()) or holds_secret(
            data.decode("latin-1")
        )
    return holds_secret(path.read_text(encoding="utf-8", errors="replace"))


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not strict JSON")


def _finite(text: str) -> float:
    v = float(text)
    if not math.isfinite(v):
        raise ValueError(f"{text} overflows to {v}, which is not strict JSON")
    return v


def strict_json(path: Path) -> Any:
    """A JSON file read as SCHEMA.md's strict JSON: NaN, Infinity and a number that overflows
    to one are a ValueError saying which."""
    return json.loads(
        path.read_text(encoding="utf-8"), parse_constant=_no_constant, parse_float=_finite
    )


def _json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def keys_problem(data: Any, where: str) -> str | None:
    """Why a JSON document holds a key outside KEY_NAME (None when none does)."""
    if isinstance(data, dict):
        for key, value in data.items():
            if not KEY_NAME.fullmatch(str(key)):
                return f"{where} has a key {str(key)[:40]!r} that is not a plain name"
            if problem := keys_problem(value, where):
                return problem
    elif isinstance(data, list):
        for value in data:
            if problem := keys_problem(value, where):
                return problem
    return None


def rows_problem(path: Path) -> str | None:
    """Why per_prompt.csv names an arm or a draft outside KEY_NAME (None when it does not)."""
    with open(path, newline="", encoding="utf-8") as f:
        for i, row in enumerate(csv.DictReader(f), start=1):
            for column in NAME_COLUMNS:
                value = row.get(column)
                if value and not KEY_NAME.fullmatch(value):
                    shown = repr(value[:40])
                    return f"{path.name} row {i} has a {column} {shown} that is not a plain name"
    return None


def names_problem(profile: str, names: list[PurePosixPath]) -> str | None:
    """Why a bundle's member paths (`<profile>/<experiment>/<file>` or `.../figures/<file>`) are
    not those of a study's result folders: a profile name outside the profile grammar, an
    experiment the catalog does not declare, a file name outside the result-file grammar."""
    if problem := profile_name_problem(profile):
        return f"its profile folder {profile!r} is not {problem}"
    known = set(catalog.EXPERIMENTS)
    for name in names:
        exp, *rest = name.parts[1:]
        if exp not in known:
            return f"its folder {exp!r} is not an experiment of the study ({', '.join(known)})"
        if len(rest) > 2 or (len(rest) == 2 and rest[0] != "figures"):
            return f"its member {name.as_posix()!r} is not a result file's place"
        if not all(SAFE_NAME.fullmatch(part) for part in rest):
            return f"its member {name.as_posix()!r} is not named as a result file"
    return None


def hash_problem(config: dict[str, Any]) -> str | None:
    """Why a config.json's stored hash is not its config's (None when it is)."""
    stored = config.get("config_hash")
    recomputed = config_hash({k: v for k, v in config.items() if k != "config_hash"})
    if stored != recomputed:
        return f"its config_hash {stored} is not the hash of its config ({recomputed})"
    return None


def machine(env: dict[str, Any]) -> str:
    """The machine an env.json names: the GPU with its capability, else the CPU."""
    if env.get("gpu"):
        cap = env.get("gpu_capability")
        return f"{env['gpu']}" + (f" (sm {cap})" if cap else "")
    return str(env.get("cpu_model") or env.get("device"))


def env_problem(config: dict[str, Any], env: dict[str, Any]) -> str | None:
    """Why env.json cannot be the record of a run of this config: a device or dtype other than
    the config's (None when it can, or when the config leaves them to the machine)."""
    want, got = str(config.get("device", "auto")), str(env.get("device", ""))
    if want != "auto" and got and got.split(":")[0] != want.split(":")[0]:
        return f"env.json was measured on {got}, its config asks for {want}"
    want_dtype, got_dtype = config.get("dtype"), env.get("profile_dtype")
    if want_dtype and got_dtype and want_dtype != got_dtype:
        return f"env.json was a {got_dtype} run, its config asks for {want_dtype}"
    if env.get("cuda") is False and env.get("gpu"):
        return f"env.json names GPU {env['gpu']} without CUDA"
    return None


def _strings(obj: Any) -> list[str]:
    if isinstance(obj, dict):
        return [s for v in obj.values() for s in _strings(v)]
    if isinstance(obj, list):
        return [s for v in obj for s in _strings(v)]
    return [obj] if isinstance(obj, str) else []


def profile_problem(
    profile: dict[str, Any], config: dict[str, Any], env: dict[str, Any]
) -> str | None:
    """Why a result cannot have been measured under this profile (its YAML, as loaded): another
    target, a `model:` draft the profile never names, a device other than the one it fixes (None
    when it can)."""
    if config.get("target") != profile.get("target"):
        return f"its target {config.get('target')!r} is not the profile's {profile.get('target')!r}"
    named = set(_strings(profile))
    for arm, spec in (config.get("arms") or {}).items():
        for model in re.findall(r"model:[^\s,;]+", str(spec)):
            if model not in named:
                return f"its arm {arm!r} drafts with {model!r}, which the profile never names"
    want, got = str(profile.get("device") or "auto"), str(env.get("device") or "")
    if want != "auto" and got and got.split(":")[0] != want.split(":")[0]:
        return f"it was measured on {got}, the profile runs on {want}"
    return None


def check_unpacked(folder: Path, profile: str) -> list[Path]:
    """The experiments of an unpacked profile folder when the bundle is sound, else a one-line
    SpecdecError naming the first problem."""
    exps = [d for d in sorted(folder.iterdir()) if d.is_dir()]
    targets: set[str] = set()
    devices: dict[str, list[str]] = {}  # machine -> the experiments measured on it
    declared = load_profile(profile) if (PROFILES / f"{profile}.yaml").is_file() else None
    for d in exps:
        problem = result_problem(d, study=True)
        if problem is not None:
            raise SpecdecError(f"bundle's {d.name}/ is damaged: {problem}")
        for f in sorted(d.rglob("*.json")):
            try:
                problem = keys_problem(strict_json(f), f.name)
            except ValueError as e:
                problem = str(e)
            if problem is not None:
                raise SpecdecError(f"bundle's {f.relative_to(folder)}: {problem}")
        if problem := rows_problem(d / "per_prompt.csv"):
            raise SpecdecError(f"bundle's {d.name}/: {problem}")
        config, summary, env = (_json(d / f) for f in ("config.json", "summary.json", "env.json"))
        problem = hash_problem(config) or env_problem(config, env)
        if problem is not None:
            raise SpecdecError(f"bundle's {d.name}/ is mixed or edited: {problem}; not imported")
        if declared is not None and (problem := profile_problem(declared, config, env)):
            raise SpecdecError(f"bundle's {d.name}/ is not a {profile} result: {problem}")
        for what, data in (("config.json", config), ("summary.json", summary)):
            if data.get("profile") != profile:
                raise SpecdecError(
                    f"bundle's {d.name}/{what} names profile {data.get('profile')!r}, "
                    f"not {profile!r}"
                )
        targets.add(str(config.get("target")))
        devices.setdefault(machine(env), []).append(d.name)
    if len(targets) > 1:
        raise SpecdecError(f"bundle mixes targets {sorted(targets)}")
    if len(devices) > 1:
        listed = "; ".join(f"{m}: {', '.join(names)}" for m, names in sorted(devices.items()))
        raise SpecdecError(f"bundle mixes machines ({listed})")
    for f in sorted(folder.rglob("*")):
        if f.is_file() and _secret_in(f):
            raise SpecdecError(f"bundle's {f.relative_to(folder)} holds a secret; not imported")
    return exps


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one atomic step (Linux renameat2 RENAME_EXCHANGE); False where the
    system or the filesystem has no such step."""
    libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), str(a))


def swap_in(staged: Path, dest: Path) -> None:
    """Put the folder `staged` at `dest` (same filesystem), leaving what `dest` held at
    `staged`: one atomic exchange where the system has one, else two renames (a kill between
    them leaves the old result hidden at `staged`, which `put_back` restores)."""
    if not dest.exists():
        staged.rename(dest)
        staged.mkdir()  # what it replaced: nothing
    elif not _exchange(staged, dest):
        held = staged.with_name(staged.name + "-old")
        dest.rename(held)
        staged.rename(dest)
        held.rename(staged)


def clear_staged(profile_dir: Path) -> None:
    """Remove the hidden folders an earlier import left (killed while copying or removing);
    a result it swapped out but never put back (killed between two renames) is restored first."""
    for left in sorted(profile_dir.glob(f"{STAGED}*")):
        name = left.name.removeprefix(STAGED).split(".", 1)[0]
        if left.name.endswith("-old") and not (profile_dir / name).exists():
            left.rename(profile_dir / name)
        else:
            shutil.rmtree(left, ignore_errors=True)


def move_in(exps: list[Path], dest: Path) -> None:
    """Copy each checked experiment into a hidden folder beside its destination, then swap all
    of them in, then remove what they replaced; an error (or a stop signal) before the last swap
    swaps back those already in, so the folder holds the old results."""
    staged = {}
    try:
        for d in exps:
            staged[d.name] = Path(tempfile.mkdtemp(prefix=f"{STAGED}{d.name}.", dir=dest))
            shutil.copytree(d, staged[d.name], dirs_exist_ok=True)
        done: list[str] = []
        try:
            for name, folder in staged.items():
                swap_in(folder, dest / name)
                done.append(name)
        except BaseException:
            for name in reversed(done):  # the old result (or the empty marker) back in place
                swap_in(staged[name], dest / name)
                if not any((dest / name).iterdir()):  # there was none before
                    (dest / name).rmdir()
            raise
    finally:
        for folder in staged.values():
            shutil.rmtree(folder, ignore_errors=True)


def import_bundle(
    path: Path, results_root: Path, profile: str | None = None, *, replace: bool = False
) -> list[str]:
    """Check the bundle at `path` and move its experiments into `<results_root>/<profile>/`;
    returns their names. `profile` (default: the bundle's) must be the bundle's; an experiment
    already there is refused unless `replace`. Nothing is written when any check fails; the
    move holds the folder's locks and swaps each experiment in atomically (module docstring)."""
    path = Path(path)
    if not path.is_file():
        raise SpecdecError(f"no bundle at {path}")
    try:
        z = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as e:
        raise SpecdecError(f"{path} is not a zip file ({type(e).__name__})") from None
    with z, tempfile.TemporaryDirectory(prefix="specdec-bundle-") as tmp:
        top, files = _members(z)
        if profile is not None and profile != top:
            raise SpecdecError(f"bundle holds profile {top!r}, not {profile!r}")
        try:
            for info in files:
                z.extract(info, tmp)
        except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError) as e:
            raise SpecdecError(f"bundle {path} is damaged ({type(e).__name__}: {e})") from None
        exps = check_unpacked(Path(tmp) / top, top)
        dest = Path(results_root) / top
        if Path(results_root).exists() and not Path(results_root).is_dir():
            raise SpecdecError(f"the results folder {results_root} is a file, not a folder")
        if dest.exists() and not dest.is_dir():
            raise SpecdecError(f"{dest} is a file, not a profile's results folder")
        there = [d.name for d in exps if (dest / d.name).exists()]
        if there and not replace:
            raise SpecdecError(
                f"{dest} already holds {', '.join(there)}; pass --replace to overwrite them"
            )
        with changing(dest):
            clear_staged(dest)
            move_in(exps, dest)
        return [d.name for d in exps]
