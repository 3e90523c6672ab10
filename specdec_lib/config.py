"""Frozen settings for sampling and speculation, checked once at construction.

Knows nothing about models, tensors or files: a config is plain data that round-trips through a
dict (and so through JSON, YAML and papermill parameters).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from dataclasses import dataclass
from typing import Any

from specdec_lib.errors import SpecdecError

MAX_K = 64  # a draft longer than this is never useful and only wastes a verification pass
# Sampling temperatures outside this range are refused: below it logits / T overflows float32
# (and the result is greedy in all but name: use 0), above it the distribution is uniform noise.
MIN_TEMPERATURE = 1e-3
MAX_TEMPERATURE = 100.0
MAX_SEED = 2**63 - 1  # what torch, numpy and random all accept as a seed


def _is_number(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


@dataclass(frozen=True)
class SamplingConfig:
    """How a token is chosen from logits. temperature 0 is greedy (argmax)."""

    temperature: float = 0.0
    top_k: int = 0  # 0: off
    top_p: float = 1.0  # 1.0: off
    seed: int = 0

    def __post_init__(self) -> None:
        t = self.temperature
        if not _is_number(t) or not (
            t == 0 or (math.isfinite(t) and MIN_TEMPERATURE <= t <= MAX_TEMPERATURE)
        ):
            raise SpecdecError(
                f"temperature must be 0 (greedy) or in [{MIN_TEMPERATURE:g}, "
                f"{MAX_TEMPERATURE:g}], got {t!r}"
            )
        if not isinstance(self.top_k, int) or isinstance(self.top_k, bool) or self.top_k < 0:
            raise SpecdecError(
                f"top-k must be an integer >= 0 (0 turns it off), got {self.top_k!r}"
            )
        if not _is_number(self.top_p) or not 0.0 < self.top_p <= 1.0:
            raise SpecdecError(f"top-p must be in (0, 1], got {self.top_p!r}")
        check_seed(self.seed)

    @property
    def greedy(self) -> bool:
        """Whether these settings decode greedily (temperature 0)."""
        return self.temperature == 0


def check_seed(seed: object) -> int:
    """A seed every RNG here accepts: an integer in [0, 2**63 - 1]."""
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed <= MAX_SEED:
        raise SpecdecError(f"seed must be an integer in [0, 2**63 - 1], got {seed!r}")
    return seed


@dataclass(frozen=True)
class SpecConfig:
    """How much to draft and generate."""

    k: int = 4
    max_new_tokens: int = 64

    def __post_init__(self) -> None:
        if not isinstance(self.k, int) or not 1 <= self.k <= MAX_K:
            raise SpecdecError(
                f"K (draft length) must be an integer in [1, {MAX_K}], got {self.k!r}"
            )
        if not isinstance(self.max_new_tokens, int) or self.max_new_tokens < 0:
            raise SpecdecError(
                f"max_new_tokens must be an integer >= 0, got {self.max_new_tokens!r}"
            )


def to_dict(cfg: Any) -> dict[str, Any]:
    """A dataclass as a plain dict (nested dataclasses included)."""
    return dataclasses.asdict(cfg)


def config_hash(obj: Any) -> str:
    """A short stable hash of plain data (dicts sorted by key), used to name and reuse results."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        obj = dataclasses.asdict(obj)
    blob = json.dumps(obj, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]
