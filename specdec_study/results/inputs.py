"""The files a result was measured from, fingerprinted, and whether they changed since.

The config hash (`runner.session.base_config` and the experiments' configs) names what a
profile asks for; it does not see the files behind the names: the target's weights, a separate
draft model's weights, a distilled draft's weights, the data file. `fingerprint` records them,
as sha256 digests, in a new result's env.json (`inputs`, outside the hashed config, so a result
measured before inputs were fingerprinted keeps its hash and is still reused), and
`changed_input` says which one differs from what a stored result records, so that the batch
recomputes it.

What is fingerprinted, by the label env.json lists it under:
- `target NAME` / `draft NAME`: a model folder's `*.safetensors`, `config.json` and tokenizer
  files (the embedded model's cache folder, a local folder, or a hub model's local snapshot);
  a model that is not on this machine (a hub model not yet downloaded) is a note, not a digest,
  and is not compared. The tiny random models (`tiny-random`, `model:tiny-random-draft`) are a
  note: they are built from their options, which the config holds (`tiny`, `tiny_draft`).
- `draft distilled` / `draft distilled:PATH`: the distilled draft's weights and its marker (the
  layers it copies), the files `drafters.distilled` loads; from PATH, or for the cached draft
  from the folder the caller's `distilled_folder` finds for the target. Its folder is named by
  the target's weights and the recipe, so a draft retrained (on another machine, the bits
  differ) or replaced in place keeps the name: only the digest tells it apart. Not found (not
  trained yet, or no `distilled_folder`): a note, not compared.
- `data SOURCE`: the bundled WikiText file's sha256 (also read by a tiny model's tokenizer); the
  hub's copy (`datasets`) is a note: it is named, not fingerprinted.

A digest of a file over `CACHE_ABOVE` bytes is kept beside it (`DIGEST_FILE`, keyed on the
file's size and mtime), so a reuse reads a few stat() results, not a gigabyte of weights; a
folder that cannot be written is hashed each time. Torch-free: where a model's or a distilled
draft's folder is comes from the caller (`models.loading.model_folder`,
`runner.execute.distilled_folder`); knows nothing about loading or measuring.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from specdec_lib.data import BUNDLED_PATH
from specdec_lib.drafters.registry import DISTILLED_MARKER

DIGEST_FILE = ".specdec-sha256.json"
CACHE_ABOVE = 16 * 2**20  # smaller files are hashed on every call (milliseconds)
MODEL_FILES = ("*.safetensors", "config.json", "tokenizer.json", "tokenizer.model")
MODEL_FILES += ("tokenizer_config.json",)
TINY_NOTE = "random init from the profile's tiny options, which the config (and its hash) holds"
TINY_MODELS = ("tiny-random", "tiny-random-draft")
HUB_DATA_NOTE = "the hub's WikiText copy, named by the data source, not fingerprinted"
NOT_HERE = "not on this machine: not fingerprinted"
DISTILLED = "distilled"  # the drafter spec `distilled[:PATH]`
DISTILLED_FILES = ("*.safetensors", DISTILLED_MARKER)  # what loading a distilled draft reads

_MEMO: dict[tuple[str, int, int], str] = {}  # (path, size, mtime_ns) -> sha256, this process


def sha256_of(path: Path) -> str:
    """A file's sha256; for a large file, remembered beside it under its size and mtime."""
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    if key in _MEMO:
        return _MEMO[key]
    store = path.parent / DIGEST_FILE
    kept = _read_digests(store) if st.st_size > CACHE_ABOVE else {}
    rec = kept.get(path.name)
    if isinstance(rec, dict) and (rec.get("size"), rec.get("mtime_ns")) == key[1:]:
        digest = str(rec.get("sha256"))
    else:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            while block := f.read(2**24):
                h.update(block)
        digest = h.hexdigest()
        if st.st_size > CACHE_ABOVE:
            kept[path.name] = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": digest}
            _write_digests(store, kept)
    _MEMO[key] = digest
    return digest


def _read_digests(store: Path) -> dict[str, Any]:
    try:
        data = json.loads(store.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_digests(store: Path, kept: dict[str, Any]) -> None:
    """Atomically; a folder that cannot be written keeps no digests (hashed again next time)."""
    tmp = store.with_name(f"{store.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(kept, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(tmp, store)
    except OSError:
        tmp.unlink(missing_ok=True)


def model_files(folder: Path) -> dict[str, str]:
    """File name -> sha256 of a model folder's weights, config and tokenizer files."""
    names = sorted({p.name for pattern in MODEL_FILES for p in folder.glob(pattern)})
    return {name: sha256_of(folder / name) for name in names if (folder / name).is_file()}


def _strings(o: Any) -> Iterator[str]:
    """Every string value anywhere in a config (dicts and lists walked)."""
    if isinstance(o, dict):
        for v in o.values():
            yield from _strings(v)
    elif isinstance(o, (list, tuple)):
        for v in o:
            yield from _strings(v)
    elif isinstance(o, str):
        yield o


def model_specs(config: dict[str, Any]) -> list[str]:
    """The separate draft models a config names (`model:NAME` anywhere in it), sorted."""
    return sorted({o.split(":", 1)[1] for o in _strings(config) if o.startswith("model:")})


def distilled_specs(config: dict[str, Any]) -> list[str]:
    """The distilled drafts a config names (`distilled` or `distilled:PATH` as a value anywhere
    in it), sorted."""
    return sorted({o for o in _strings(config) if o == DISTILLED or o.startswith(f"{DISTILLED}:")})


def distilled_files(folder: Path) -> dict[str, str]:
    """File name -> sha256 of a distilled draft's weights and marker."""
    names = sorted({p.name for pattern in DISTILLED_FILES for p in folder.glob(pattern)})
    return {name: sha256_of(folder / name) for name in names if (folder / name).is_file()}


def fingerprint(
    config: dict[str, Any],
    model_folder: Callable[[str], Path | None],
    data_read: str | None = None,
    distilled_folder: Callable[[str, str], Path | str] | None = None,
) -> dict[str, Any]:
    """label -> {file: sha256} or a note, for what a run of `config` reads (module docstring).
    `model_folder(name)` is where a model's files are on this machine (None: not here);
    `data_read` the source a run actually read (`data.Corpus.source`), when known;
    `distilled_folder(spec, target)` where a distilled draft's files are, or a note saying why
    none is (without it, distilled drafts are a note)."""
    out: dict[str, Any] = {}
    target = [("target", str(config["target"]))] if config.get("target") else []
    models = target + [("draft", m) for m in model_specs(config)]
    for role, name in models:
        if name in TINY_MODELS:
            out[f"{role} {name}"] = TINY_NOTE
            continue
        folder = model_folder(name)
        files = model_files(folder) if folder is not None and folder.is_dir() else {}
        out[f"{role} {name}"] = files or NOT_HERE
    for spec in distilled_specs(config):
        where = distilled_folder(spec, str(config.get("target"))) if distilled_folder else NOT_HERE
        found = distilled_files(where) if isinstance(where, Path) and where.is_dir() else {}
        out[f"draft {spec}"] = found or (where if isinstance(where, str) else NOT_HERE)
    source = str(config.get("data_source", "auto"))
    hub = source == "datasets" or (data_read or "").startswith("datasets:")
    out[f"data {source}"] = HUB_DATA_NOTE if hub else bundled_file()
    if hub and config.get("target") in TINY_MODELS:
        out["data bundled (the tiny tokenizer's words)"] = bundled_file()
    return out


def bundled_file() -> dict[str, str] | str:
    """The bundled WikiText file's digest, or a note where it is missing."""
    if not BUNDLED_PATH.is_file():
        return "the bundled file is missing"
    return {BUNDLED_PATH.name: sha256_of(BUNDLED_PATH)}


def changed_input(stored: dict[str, Any], now: dict[str, Any]) -> str | None:
    """The first input whose files differ between a stored fingerprint and today's, in words
    (None: none differs). Only labels with digests on both sides are compared: a note (a tiny
    model, a hub data set, a model not on this machine) cannot differ."""
    for label in sorted(stored):
        before, after = stored[label], now.get(label)
        if not isinstance(before, dict) or not isinstance(after, dict):
            continue
        for name in sorted(set(before) | set(after)):
            if before.get(name) != after.get(name):
                how = "is new" if name not in before else "is gone" if name not in after else ""
                return f"{label}: {name} " + (how or "changed (another sha256)")
    return None
