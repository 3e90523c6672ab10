"""The target's greedy continuation of prompts, for 04's agreement (`experiments.agreement`,
reached through `Lab.continuer`): the lossless `continuation_by` run one prompt at a time, or with
`continuation_batch` B > 1 plain greedy decoding of B prompts per forward (`core.batched`).
Knows nothing about agreement rows or their summary.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from specdec_lib.config import SamplingConfig, SpecConfig
from specdec_lib.core.batched import greedy_continuations
from specdec_lib.models import LoadedModel
from specdec_lib.models.pairing import eos_token_ids
from specdec_study.runner.session import Session, make_arm


def continuer(
    study: Session, loaded: LoadedModel, cfg: dict[str, Any]
) -> Callable[[list[list[int]]], list[list[int]]]:
    """prompts -> the target's greedy continuation of each (`continuation_tokens`, through an
    EOS): the lossless `continuation_by` run one prompt at a time, or with
    `continuation_batch` > 1 plain greedy decoding of the whole batch (`core.batched`)."""
    T, size = int(cfg["continuation_tokens"]), int(cfg.get("continuation_batch", 1))
    if size > 1:
        pad = loaded.tokenizer.pad_token_id
        pad = int(pad if pad is not None else loaded.tokenizer.eos_token_id)
        eos = eos_token_ids(loaded)
        return lambda prompts: greedy_continuations(
            loaded.model, prompts, T, batch_size=size, pad_id=pad, eos_ids=eos
        )
    greedy = make_arm(study, loaded, "continuation", cfg["continuation_by"], cfg["continuation_k"])
    spec = SpecConfig(k=cfg["continuation_k"], max_new_tokens=T)
    return lambda prompts: [
        greedy.generator.generate_ids(p, spec, SamplingConfig()).tokens for p in prompts
    ]
