"""How a draft relates to the target, and teacher-forced guesses of many drafts at once.

`draft_kind` reads it from the modules a draft shares with the target (`analysis.replay`'s
SHARED, EXIT, SEPARATE or CONTROL); `teacher_forced_guesses` gives the target's greedy next
token and every draft's guess at the last n positions of one sequence, with one target forward
(early exits are read from it by a hook). Knows nothing about experiments or result files.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

import torch

from specdec_lib.core.cache import CachedLM
from specdec_lib.core.draft import Drafter
from specdec_lib.drafters.model import ModelDrafter
from specdec_lib.drafters.self_draft import decoder_path
from specdec_lib.errors import SpecdecError
from specdec_study.analysis.replay import CONTROL, EXIT, SEPARATE, SHARED


def exit_layers(drafter: Drafter, target_model: torch.nn.Module) -> int | None:
    """L when the drafter's model is the target's own embedding, first L decoder layers and
    final norm (the very same modules, as `drafters.self_draft.early_exit_model` builds them)
    followed by a head of its own or the target's; else None."""
    if not isinstance(drafter, ModelDrafter):
        return None
    try:
        path = decoder_path(target_model)
        inner, tinner = drafter.lm.model.get_submodule(path), target_model.get_submodule(path)
    except (SpecdecError, AttributeError):
        return None
    same = all(
        getattr(inner, name, None) is getattr(tinner, name, object())
        for name in ("layers", "norm", "embed_tokens")
    )
    return int(inner.config.num_hidden_layers) if same else None


def draft_kind(drafter: Drafter, target_model: torch.nn.Module) -> str:
    """How a draft relates to the target: SHARED, EXIT, SEPARATE or CONTROL (bigram, n-gram)."""
    drafter = drafter.unwrapped()
    if not isinstance(drafter, ModelDrafter):
        return CONTROL
    n = exit_layers(drafter, target_model)
    if n is None:
        return SEPARATE
    total = len(target_model.get_submodule(decoder_path(target_model)).layers)
    return SHARED if n >= total else EXIT


def _head_argmax(drafter: ModelDrafter, logits: torch.Tensor) -> list[int]:
    """logits [T, V_head] of a ModelDrafter -> its greedy token ids in the target's vocabulary."""
    vsize, tmap = drafter.lm.vocab_size, drafter.token_map
    best = (logits if vsize is None else logits[:, :vsize]).argmax(-1)  # [T]
    return (tmap[best] if tmap is not None else best).tolist()


# model -> its CachedLM (weakly keyed by the model object, never by id())
_TF_LMS: weakref.WeakKeyDictionary[torch.nn.Module, CachedLM] = weakref.WeakKeyDictionary()


def _tf_lm(model: torch.nn.Module, vocab_size: int | None = None) -> CachedLM:
    """A CachedLM over model, as decoding runs it (its fast view on the CPU, with the KV cache:
    on the batch-invariant path a position's logits are then the same bits whether it is scored
    in one call over the whole sequence or in decode steps, so a teacher-forced guess is the
    guess a decoding run makes; a cache-free forward falls back to SDPA, whose bfloat16 rounding
    differs), kept per model so a view's packed weights are built once."""
    if model not in _TF_LMS:
        _TF_LMS[model] = CachedLM(model, use_cache=True, vocab_size=vocab_size)
    return _TF_LMS[model]


def _last_logits(lm: CachedLM, seq: Sequence[int], n: int) -> torch.Tensor:
    """The logits of the last n positions of seq, all of seq in one call: [n, V]."""
    lm.reset()
    return lm.extend(list(seq), n)


def _target_pass(
    tlm: CachedLM, target_model: torch.nn.Module, seq: Sequence[int], n: int, exits: list[int]
) -> tuple[list[int], dict[int, torch.Tensor]]:
    """One target forward over seq: its greedy next token at the last n positions, and the
    output of decoder layer L there for every L in exits ([1, n, H] each, by a hook)."""
    captured: dict[int, torch.Tensor] = {}
    hooks = []
    layers = tlm.runner.get_submodule(decoder_path(target_model)).layers if exits else []
    for L in exits:

        def keep(_mod, _inp, out, L=L):
            h = out[0] if isinstance(out, tuple) else out  # [1, S, H]
            captured[L] = h[:, -n:]

        hooks.append(layers[L - 1].register_forward_hook(keep))
    try:
        target_next = _last_logits(tlm, seq, n).argmax(-1).tolist()
    finally:
        for h in hooks:
            h.remove()
    return target_next, captured


def _exit_guesses(
    d: ModelDrafter, tlm: CachedLM, target_model: torch.nn.Module, hidden: torch.Tensor
) -> list[int]:
    """An exit draft's guesses from the target's layer output `hidden` [1, n, H]: through the
    final norm and the target's own (fast) head where the draft uses it, else its own head."""
    model = d.lm.model
    head = tlm.runner.lm_head if model.lm_head is target_model.lm_head else d.lm.runner.lm_head
    norm = model.get_submodule(decoder_path(target_model)).norm
    with torch.inference_mode():
        logits = head(norm(hidden))[0]  # [n, V_head]
    return _head_argmax(d, logits)


def teacher_forced_guesses(
    target_model: torch.nn.Module, drafters: dict[str, Any], seq: Sequence[int], n: int
) -> tuple[list[int], dict[str, list[int]]]:
    """The target's greedy next token at the last n positions of seq and each draft's guess
    there, every model seeing the same seq (teacher forcing in one call, each model through
    the same fast view and cache decoding uses).

    One target forward. A draft that is the target's first L layers + final norm + a head
    (`exit_layers`) is read from the target's own layer-L output in that forward (a hook),
    through the final norm and the draft's head: the same weights on the same inputs as the
    drafter's own forward. Any other model drafter gets one forward of its own; other drafters
    (a bigram, say) guess through their own teacher forcing (`Drafter.predictor`)."""
    drafters = {m: d.unwrapped() for m, d in drafters.items()}
    tlm = _tf_lm(target_model)
    exits = {m: exit_layers(d, target_model) for m, d in drafters.items()}
    wanted = sorted({e for e in exits.values() if e is not None})
    target_next, captured = _target_pass(tlm, target_model, seq, n, wanted)
    guesses: dict[str, list[int]] = {}
    for m, d in drafters.items():
        if exits[m] is not None:
            guesses[m] = _exit_guesses(d, tlm, target_model, captured[exits[m]])
        elif isinstance(d, ModelDrafter):
            fed = d.embeddable(list(seq))
            guesses[m] = _head_argmax(d, _last_logits(_tf_lm(d.lm.model), fed, n))
        elif callable(getattr(d, "predictor", None)) and d.predictor() is not None:
            guesses[m] = list(d.predictor()(list(seq)))[-n:]  # the drafter's own teacher forcing
        else:
            raise SpecdecError(f"no teacher-forced agreement for a {type(d).__name__} draft")
    return target_next, guesses
