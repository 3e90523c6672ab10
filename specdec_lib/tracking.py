"""Environment capture and W&B logging that never blocks, prompts or leaks a secret.

W&B runs offline unless WANDB_API_KEY is set (and WANDB_MODE is not "offline"), and not at all
with WANDB_MODE=disabled or when wandb is not installed. Config values are scrubbed of anything
that looks like a token before they reach W&B or a file. Knows nothing about decoding.
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

SECRET_ENV = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "WANDB_API_KEY")
_TOKEN_RE = re.compile(r"\bhf_[A-Za-z0-9]{8,}\b")  # hub-token shaped; set secrets go by value


def secrets() -> list[str]:
    """The secret values set in this environment (to scan outputs for)."""
    return [v for k in SECRET_ENV if (v := os.environ.get(k)) and len(v) >= 4]


def scrub(obj: Any) -> Any:
    """A copy of plain data with secret values and token-shaped strings replaced."""
    if isinstance(obj, dict):
        return {k: scrub(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(scrub(v) for v in obj)
    if isinstance(obj, str):
        for s in secrets():
            obj = obj.replace(s, "***")
        return _TOKEN_RE.sub("***", obj)
    return obj


def git_commit(root: Path | None = None) -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=root or Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=5,
        )
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def environment(device: str | None = None, dtype: str | None = None) -> dict[str, Any]:
    """Versions, hardware and the commit: written beside every result."""
    import torch
    import transformers

    env: dict[str, Any] = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "torch_threads": torch.get_num_threads(),
        "cuda": torch.cuda.is_available(),
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "device": device,
        "dtype": dtype,
        "git_commit": git_commit(),
    }
    env.update(precision_facts(device))
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    env["cpu_model"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return env


def precision_facts(device: str | None) -> dict[str, Any]:
    """The GPU's compute capability and whether bfloat16 is native on `device` (a GPU from sm_80;
    a CPU with AVX512-BF16/AMX): a T4 runs bfloat16 emulated, and its timings say so."""
    import torch

    from specdec_lib.models import bf16_native

    facts: dict[str, Any] = {"gpu_capability": None, "bf16_native": None}
    if not device:
        return facts
    dev = torch.device(device)
    if dev.type == "cuda":
        facts["gpu_capability"] = ".".join(map(str, torch.cuda.get_device_capability(dev)))
    if dev.type in ("cuda", "cpu"):
        facts["bf16_native"] = bf16_native(dev)
    return facts


class Tracker:
    """A W&B run when wandb is usable, else a no-op. Offline without a key; never prompts."""

    def __init__(self, project: str, name: str, config: dict[str, Any], dir: Path | None = None):
        self.run = None
        if os.environ.get("WANDB_MODE") == "disabled":
            return
        try:
            import wandb
        except ImportError:
            return
        # online only with a key and no explicit WANDB_MODE=offline (CI sets it with a fake key)
        online = os.environ.get("WANDB_API_KEY") and os.environ.get("WANDB_MODE") != "offline"
        mode = "online" if online else "offline"
        os.environ.setdefault("WANDB_SILENT", "true")
        os.environ.setdefault("WANDB_CONSOLE", "off")
        try:
            self.run = wandb.init(
                project=project,
                name=name,
                config=scrub(config),
                mode=mode,
                dir=str(dir) if dir else None,
                reinit="finish_previous",
                settings=wandb.Settings(silent=True, console="off", x_disable_stats=True),
            )
        except Exception as e:  # noqa: BLE001 - tracking must never stop a run
            print(f"W&B disabled for this run: {type(e).__name__}", file=sys.stderr)
            self.run = None

    def log(self, data: dict[str, Any]) -> None:
        if self.run is not None:
            self.run.log(scrub(data))

    def summary(self, data: dict[str, Any]) -> None:
        if self.run is not None:
            for k, v in scrub(data).items():
                self.run.summary[k] = v

    def finish(self) -> None:
        if self.run is not None:
            self.run.finish()
            self.run = None
