"""Device and dtype: `resolve_device`, `resolve_dtype` (auto is bfloat16 where the CPU or GPU
runs it natively, else float32 on CPU) and the CPU feature checks behind them.

Knows nothing about loading weights or the embedded cache.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import torch

from specdec_lib.errors import SpecdecError

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
DEVICES = ("auto", "cpu", "cuda")


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
