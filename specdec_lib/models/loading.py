"""`load_model`: "embedded", a local directory or a hub id -> a `LoadedModel` in eval mode with
gradients off; `check_model_name` refuses a bad name in one line before anything loads. Never
prints, logs or raises the Hugging Face token. A checkpoint that does not fill its model whole
(a weight missing, unexpected or of another shape: another architecture's config over these
weights, renamed layers) or that cannot be read (a truncated safetensors file, a pickle that
`weights_only` refuses) is refused in one line naming it, never run with random weights.

Knows nothing about decoding, prompts or data sets.
"""

from __future__ import annotations

import importlib.util
import os
import pickle
import re
from pathlib import Path
from typing import Any

import torch
from huggingface_hub import errors as hub_errors
from safetensors import SafetensorError
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    Gemma3ForCausalLM,
    PreTrainedModel,
)

from specdec_lib.errors import SpecdecError
from specdec_lib.models import LoadedModel
from specdec_lib.models.device import resolve_device, resolve_dtype
from specdec_lib.models.embedded import EMBEDDED, embedded_cache_dir, ensure_embedded_cache

_OFFLINE_HINT = "run `make download` where the hub is reachable"


def load_model(name: str, *, dtype: str = "auto", device: str = "auto") -> LoadedModel:
    """Load "embedded", a local directory or a hub id as an inference-only causal LM."""
    torch_device = resolve_device(device)
    resolve_dtype(dtype, torch_device)  # a bad dtype or device is one line, before any download
    source, local = _resolve_source(name)
    token = None if local else os.environ.get("HF_TOKEN")
    try:
        config = _config(source, local, token)
        family = getattr(config, "model_type", None)
        torch_dtype = resolve_dtype(dtype, torch_device, family)
        where = {**placement(torch_device), **text_only(config)}
        model = _load_weights(source, torch_dtype, local, token, where)
        tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=local, token=token)
    except (OSError, ValueError, hub_errors.HfHubHTTPError) as exc:
        raise SpecdecError(_load_error_message(name, exc, token)) from None
    except (SafetensorError, pickle.UnpicklingError, EOFError) as exc:
        raise SpecdecError(_redact(_unreadable(name, exc), token)) from None
    except RuntimeError as exc:  # a torch checkpoint cut short; any other runtime error stands
        if "PytorchStreamReader" not in str(exc) and "zip archive" not in str(exc):
            raise
        raise SpecdecError(_redact(_unreadable(name, exc), token)) from None
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


def model_folder(name: str) -> Path | None:
    """Where a model's files are on this machine, without building or downloading anything:
    the embedded model's cache folder, a local folder, or a hub model's cached snapshot (None
    where there is none yet). `results.inputs` fingerprints what it finds there."""
    if name == EMBEDDED:
        return embedded_cache_dir()
    path = Path(name).expanduser()
    if path.is_dir():
        return path
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(name, local_files_only=True))
    except Exception:  # noqa: BLE001 - not cached, or not a hub id: nothing to fingerprint
        return None


def _config(source: str, local: bool, token: str | None) -> Any:
    """The model's config (its model_type: "gemma3", "gemma3_text", ...), read before the
    weights."""
    from transformers import AutoConfig

    return AutoConfig.from_pretrained(source, local_files_only=local, token=token)


# Gemma 3 4B's checkpoint holds a vision tower under a multimodal model; its text model's weights
# in either layout (the hub's, or transformers' own) renamed to a Gemma3ForCausalLM's
_GEMMA3_TEXT_KEYS = {
    r"^language_model\.model\.": "model.",
    r"^model\.language_model\.": "model.",
    r"^language_model\.lm_head\.": "lm_head.",
}


class Gemma3TextOnly(Gemma3ForCausalLM):
    """Gemma3ForCausalLM that leaves a multimodal checkpoint's vision weights unread without
    listing each of them in transformers' load report (a missing text weight is still reported)."""

    _keys_to_ignore_on_load_unexpected = [r"^vision_tower\.", r"^multi_modal_projector\."]


def text_only(config: Any) -> dict[str, Any]:
    """from_pretrained options that load only the text model of a multimodal Gemma 3 (the 4B):
    a Gemma3ForCausalLM over its text config, the vision tower and projector never read into
    memory (the same logits: ids never hold image tokens here). Empty for any other model."""
    if getattr(config, "model_type", None) != "gemma3" or not hasattr(config, "text_config"):
        return {}
    return {"config": config.text_config, "key_mapping": dict(_GEMMA3_TEXT_KEYS)}


def placement(device: torch.device) -> dict[str, Any]:
    """Where from_pretrained puts the weights as it reads them: straight onto a CUDA device
    (`device_map`, which needs accelerate), so that host memory holds no full copy of the model
    on the way (a 4B in bfloat16 is about 8 GB: most of a free Colab's RAM); on the CPU, or
    without accelerate, the default (then `.to(device)` moves them)."""
    if device.type != "cuda" or importlib.util.find_spec("accelerate") is None:
        return {}
    return {"device_map": {"": str(device)}}


def _load_weights(
    source: str,
    dtype: torch.dtype,
    local: bool,
    token: str | None,
    where: dict[str, Any] | None = None,
) -> PreTrainedModel:
    """from_pretrained with sdpa attention, falling back to eager where a model lacks sdpa."""
    kwargs = {"dtype": dtype, "local_files_only": local, "token": token, **(where or {})}
    kwargs["output_loading_info"] = True
    # a text-only load of a multimodal Gemma 3 names its class (the auto class would build the
    # multimodal one from the top-level model_type)
    auto = Gemma3TextOnly if "key_mapping" in kwargs else AutoModelForCausalLM
    try:
        model, info = auto.from_pretrained(source, attn_implementation="sdpa", **kwargs)
    except ValueError as exc:
        if "scaled_dot_product_attention" not in str(exc):
            raise
        model, info = auto.from_pretrained(source, attn_implementation="eager", **kwargs)
    problem = loading_problem(model, info)
    if problem is not None:
        raise SpecdecError(f"model {source!r} does not match its checkpoint: {problem}")
    return model


def _matches(key: str, patterns: Any) -> bool:
    return any(re.search(p, key) for p in patterns or ())


def loading_problem(model: PreTrainedModel, info: dict[str, Any]) -> str | None:
    """Why from_pretrained's loading report says the weights did not fill the model whole (a
    weight the model has and the checkpoint lacks, one the checkpoint has and the model does
    not, one of another shape, an error), or None. Weights the model's class declares it may
    lack or leave unread (a multimodal checkpoint's vision tower) are not problems."""
    missing = sorted(
        k
        for k in info.get("missing_keys") or ()
        if not _matches(k, getattr(model, "_keys_to_ignore_on_load_missing", None))
    )
    unexpected = sorted(
        k
        for k in info.get("unexpected_keys") or ()
        if not _matches(k, getattr(model, "_keys_to_ignore_on_load_unexpected", None))
    )
    mismatched = sorted(
        str(k[0] if isinstance(k, tuple) else k) for k in info.get("mismatched_keys") or ()
    )
    errors = [
        str(e).strip().splitlines()[0] for e in info.get("error_msgs") or () if str(e).strip()
    ]
    for what, keys in (
        ("missing from the checkpoint", missing),
        ("in the checkpoint but not in the model", unexpected),
        ("of another shape", mismatched),
        ("not loaded", errors),
    ):
        if keys:
            more = f" and {len(keys) - 1} more" if len(keys) > 1 else ""
            return (
                f"{len(keys)} weight(s) {what} ({keys[0]}{more}); "
                "is the config of another model, or the file not this model's?"
            )
    return None


def _unreadable(name: str, exc: BaseException) -> str:
    """One line for a checkpoint file that cannot be read (cut short, or a pickle)."""
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    if isinstance(exc, pickle.UnpicklingError):
        why = "a pickled checkpoint that weights_only refuses; convert it to safetensors"
    else:
        why = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    return f"model {name!r} could not be read: {why}"


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
