"""The bytes the target holds (weights, packed weights, KV cache) and those the self-draft adds
(its pruned head, that head's packed copy, its KV cache), with the process's resident memory.
Knows nothing about timing or printing."""

from __future__ import annotations

import gc
from typing import Any

import torch

from specdec_lib.config import SamplingConfig, SpecConfig
from specdec_lib.core.fastpath import packed_bytes
from specdec_lib.generate import Generator
from specdec_lib.models import LoadedModel
from specdec_study.bench.configs import make_drafter


def rss_bytes() -> int | None:
    """Resident memory of this process now (Linux /proc), or None."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _tensor_bytes(tensors) -> int:
    seen: set[int] = set()
    total = 0
    for t in tensors:
        if t is None:
            continue
        try:
            key = t.untyped_storage().data_ptr()
            size = t.untyped_storage().nbytes()
        except (RuntimeError, NotImplementedError):  # mkldnn tensors have no storage
            key, size = id(t), t.element_size() * t.numel()
        if key not in seen:
            seen.add(key)
            total += size
    return total


def _peak_cuda(device: torch.device) -> int | None:
    return torch.cuda.max_memory_allocated(device) if device.type == "cuda" else None


def measure_memory(
    loaded: LoadedModel, fit_ids, prompt: list[int], max_new_tokens: int, self_spec: str
) -> dict[str, Any]:
    """Target alone, then target + self-draft: RSS (CPU) or peak allocated (CUDA), and the
    bytes each holds. The self-draft's extra is its own tensors: pruned head (and its packed
    copy) and its KV cache; everything else it shares with the target."""
    device = loaded.device
    gc.collect()
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    spec = SpecConfig(4, max_new_tokens)
    base = Generator.from_loaded(loaded, "none")
    base.generate_ids(prompt, spec, SamplingConfig())
    params = _tensor_bytes(loaded.model.parameters())
    target_bytes = params + packed_bytes(loaded.model) + _tensor_bytes(base.lm.cache_tensors())
    rss_target = rss_bytes()
    cuda_target = _peak_cuda(device)
    drafter = make_drafter(self_spec, loaded, fit_ids)
    gen = Generator.from_loaded(loaded, drafter)
    gen.generate_ids(prompt, spec, SamplingConfig())
    rss_both = rss_bytes()
    cuda_both = _peak_cuda(device)
    own = [p for p in drafter.lm.model.parameters()]
    shared = {p.untyped_storage().data_ptr() for p in loaded.model.parameters()}
    own = [p for p in own if p.untyped_storage().data_ptr() not in shared]
    draft_bytes = _tensor_bytes(own) + _tensor_bytes(drafter.lm.cache_tensors())
    head = getattr(drafter.lm.model, "lm_head", None)
    if head is not None and head not in set(loaded.model.modules()):
        draft_bytes += packed_bytes(head)
    out: dict[str, Any] = {
        "self_draft": self_spec,
        "target_bytes": target_bytes,
        "target_param_bytes": params,
        "self_draft_extra_bytes": draft_bytes,
        "self_draft_extra_fraction": draft_bytes / target_bytes if target_bytes else None,
        "rss_target_bytes": rss_target,
        "rss_target_plus_self_bytes": rss_both,
    }
    if rss_target and rss_both:
        out["rss_self_draft_extra_bytes"] = rss_both - rss_target
    if cuda_target is not None:
        out["cuda_peak_target_bytes"] = cuda_target
        out["cuda_peak_target_plus_self_bytes"] = cuda_both
    return out
