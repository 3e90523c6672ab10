"""Which environment variables hold secrets, and scrubbing them (and hub-token shaped strings)
out of plain data before it reaches a file or W&B.

Uses the standard library only (Colab's first cell imports it before the requirements are
installed). Knows nothing about W&B, result files or Colab itself.
"""

from __future__ import annotations

import os
import re
from typing import Any

SECRET_ENV = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "WANDB_API_KEY")
# the secrets a user stores (Colab's secrets panel, a shell's environment); a subset of SECRET_ENV
STORED_SECRETS = ("HF_TOKEN", "WANDB_API_KEY")
_TOKEN_RE = re.compile(r"\bhf_[A-Za-z0-9]{8,}\b")  # hub-token shaped; set secrets go by value


def secret_values() -> list[str]:
    """The secret values set in this environment (to scan outputs for)."""
    return [v for k in SECRET_ENV if (v := os.environ.get(k)) and len(v) >= 4]


def holds_secret(text: str) -> bool:
    """Whether text holds a set secret's value or a hub-token shaped string."""
    return bool(_TOKEN_RE.search(text)) or any(s in text for s in secret_values())


def scrub(obj: Any) -> Any:
    """A copy of plain data with secret values and token-shaped strings replaced."""
    if isinstance(obj, dict):
        return {k: scrub(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(scrub(v) for v in obj)
    if isinstance(obj, str):
        for s in secret_values():
            obj = obj.replace(s, "***")
        return _TOKEN_RE.sub("***", obj)
    return obj
