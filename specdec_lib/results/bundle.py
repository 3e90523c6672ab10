"""Results bundles: a profile's finished result directories in one zip, written where a run
happened (a Colab notebook's last cell, `study.write_bundle`) and imported into this repository's
`results/<profile>/` by `python -m specdec_lib import-bundle PATH.zip` (the way back into the
book).

A bundle holds `<profile>/<experiment>/{config.json, env.json, summary.json, per_prompt.csv,
...}` and nothing else: no W&B folder, no checkpoint, no lock. `import_bundle` unpacks it into a
temporary folder and accepts it only when every member is a plain file under one profile folder,
every experiment passes `schema.result_problem` (config.json, env.json, summary.json and the rows
whole), every config and summary names that profile, all were measured with one target on one
device, and no file holds a secret (a set secret's value or a hub-token shaped string); else it
refuses in one line (a SpecdecError) and writes nothing. Torch-free.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import zipfile
from pathlib import Path, PurePosixPath
from typing import Any

from specdec_lib.environment.secrets import holds_secret, secret_values
from specdec_lib.errors import SpecdecError
from specdec_lib.results.schema import result_problem

SUFFIXES = (".json", ".csv", ".png", ".md", ".txt", ".ipynb")  # what a result directory holds
MAX_BYTES = 512 * 1024 * 1024  # unpacked; a results bundle is a few MB


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
    return tops.pop(), files


def _secret_in(path: Path) -> bool:
    """Whether a text file holds a set secret's value or a hub-token shaped string."""
    if path.suffix == ".png":
        return any(s.encode() in path.read_bytes() for s in secret_values())
    return holds_secret(path.read_text(encoding="utf-8", errors="replace"))


def _json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def check_unpacked(folder: Path, profile: str) -> list[Path]:
    """The experiments of an unpacked profile folder when the bundle is sound, else a one-line
    SpecdecError naming the first problem."""
    exps = [d for d in sorted(folder.iterdir()) if d.is_dir()]
    targets, devices = set(), set()
    for d in exps:
        problem = result_problem(d, study=True)
        if problem is not None:
            raise SpecdecError(f"bundle's {d.name}/ is damaged: {problem}")
        config, summary, env = (_json(d / f) for f in ("config.json", "summary.json", "env.json"))
        for what, data in (("config.json", config), ("summary.json", summary)):
            if data.get("profile") != profile:
                raise SpecdecError(
                    f"bundle's {d.name}/{what} names profile {data.get('profile')!r}, "
                    f"not {profile!r}"
                )
        targets.add(str(config.get("target")))
        devices.add(str(env.get("gpu") or env.get("cpu_model") or env.get("device")))
    if len(targets) > 1:
        raise SpecdecError(f"bundle mixes targets {sorted(targets)}")
    if len(devices) > 1:
        raise SpecdecError(f"bundle mixes machines {sorted(devices)}")
    for f in sorted(folder.rglob("*")):
        if f.is_file() and _secret_in(f):
            raise SpecdecError(f"bundle's {f.relative_to(folder)} holds a secret; not imported")
    return exps


def import_bundle(
    path: Path, results_root: Path, profile: str | None = None, *, replace: bool = False
) -> list[str]:
    """Check the bundle at `path` and move its experiments into `<results_root>/<profile>/`;
    returns their names. `profile` (default: the bundle's) must be the bundle's; an experiment
    already there is refused unless `replace`. Nothing is written when any check fails."""
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
        except (zipfile.BadZipFile, OSError, EOFError) as e:
            raise SpecdecError(f"bundle {path} is damaged ({type(e).__name__}: {e})") from None
        exps = check_unpacked(Path(tmp) / top, top)
        dest = Path(results_root) / top
        there = [d.name for d in exps if (dest / d.name).exists()]
        if there and not replace:
            raise SpecdecError(
                f"{dest} already holds {', '.join(there)}; pass --replace to overwrite them"
            )
        dest.mkdir(parents=True, exist_ok=True)
        for d in exps:
            if (dest / d.name).exists():
                shutil.rmtree(dest / d.name)
            shutil.move(str(d), dest / d.name)
        return [d.name for d in exps]
