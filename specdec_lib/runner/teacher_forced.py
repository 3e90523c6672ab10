"""How a draft relates to the target, and teacher-forced guesses of many drafts at once.

`draft_kind` reads it from the modules a draft shares with the target (`analysis.agreement`'s
SHARED, EXIT, SEPARATE or CONTROL); `teacher_forced_guesses` gives the target's greedy next
token and every draft's guess at the last n positions of one sequence, with one target forward
(early exits are read from it by a hook). Knows nothing about experiments or result files.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from specdec_lib.analysis.agreement import CONTROL, EXIT, SEPARATE, SHARED
from specdec_lib.errors import SpecdecError


def exit_layers(drafter, target_model: torch.nn.Module) -> int | None:
    """L when the drafter's model is the target's own embedding, first L decoder layers and
    final norm (the very same modules, as `drafters.self_draft.early_exit_model` builds them)
    followed by a head of its own or the target's; else None."""
    from specdec_lib.drafters import ModelDrafter
    from specdec_lib.drafters.self_draft import decoder_path

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


def draft_kind(drafter, target_model: torch.nn.Module) -> str:
    """How a draft relates to the target: SHARED, EXIT, SEPARATE or CONTROL (bigram, n-gram)."""
    from specdec_lib.drafters import ModelDrafter
    from specdec_lib.drafters.adaptive import AdaptiveDrafter

    if isinstance(drafter, AdaptiveDrafter):
        return draft_kind(drafter.inner, target_model)
    if not isinstance(drafter, ModelDrafter):
        return CONTROL
    n = exit_layers(drafter, target_model)
    if n is None:
        return SEPARATE
    from specdec_lib.drafters.self_draft import decoder_path

    return (
        SHARED if n >= len(target_model.get_submodule(decoder_path(target_model)).layers) else EXIT
    )


def _head_argmax(drafter, logits: torch.Tensor) -> list[int]:
    """logits [T, V_head] of a ModelDrafter -> its greedy token ids in the target's vocabulary."""
    vsize, tmap = drafter.lm.vocab_size, drafter.token_map
    best = (logits if vsize is None else logits[:, :vsize]).argmax(-1)  # [T]
    return (tmap[best] if tmap is not None else best).tolist()


_TF_LMS: dict[int, Any] = {}


def _tf_lm(model: torch.nn.Module, vocab_size: int | None = None):
    """A cache-free CachedLM over model (its fast view on the CPU, as decoding runs it), kept
    per model so a view's packed weights are built once."""
    from specdec_lib.core.cache import CachedLM

    key = id(model)
    if key not in _TF_LMS:
        _TF_LMS[key] = CachedLM(model, use_cache=False, vocab_size=vocab_size)
    return _TF_LMS[key]


def _last_logits(lm, seq: Sequence[int], n: int) -> torch.Tensor:
    """The logits of the last n positions of seq through a cache-free CachedLM: [n, V]."""
    lm.reset()
    return lm.extend(list(seq), n)


def teacher_forced_guesses(
    target_model: torch.nn.Module, drafters: dict[str, Any], seq: Sequence[int], n: int
) -> tuple[list[int], dict[str, list[int]]]:
    """The target's greedy next token at the last n positions of seq and each draft's guess
    there, every model seeing the same seq (teacher forcing, no KV cache, each model through
    the same fast view decoding uses).

    One target forward. A draft that is the target's first L layers + final norm + a head
    (`exit_layers`) is read from the target's own layer-L output in that forward (a hook),
    through the final norm and the draft's head: the same weights on the same inputs as the
    drafter's own forward. A bigram guesses from each position's token. Any other model drafter
    gets one forward of its own."""
    from specdec_lib.drafters import BigramDrafter, ModelDrafter
    from specdec_lib.drafters.adaptive import AdaptiveDrafter

    drafters = {m: (d.inner if isinstance(d, AdaptiveDrafter) else d) for m, d in drafters.items()}
    from specdec_lib.drafters.self_draft import decoder_path

    tlm = _tf_lm(target_model)
    exits = {m: exit_layers(d, target_model) for m, d in drafters.items()}
    captured: dict[int, torch.Tensor] = {}
    hooks = []
    wanted = sorted({e for e in exits.values() if e is not None})
    layers = tlm.runner.get_submodule(decoder_path(target_model)).layers if wanted else []
    for L in wanted:

        def keep(_mod, _inp, out, L=L):
            h = out[0] if isinstance(out, tuple) else out  # [1, S, H]
            captured[L] = h[:, -n:]

        hooks.append(layers[L - 1].register_forward_hook(keep))
    try:
        target_next = _last_logits(tlm, seq, n).argmax(-1).tolist()
    finally:
        for h in hooks:
            h.remove()
    guesses: dict[str, list[int]] = {}
    for m, d in drafters.items():
        if exits[m] is not None:
            model = d.lm.model
            # the target's own (fast) head where the draft uses it, else the draft's own head
            head = (
                tlm.runner.lm_head if model.lm_head is target_model.lm_head else d.lm.runner.lm_head
            )
            norm = model.get_submodule(decoder_path(target_model)).norm
            with torch.inference_mode():
                logits = head(norm(captured[exits[m]]))[0]  # [n, V_head]
            guesses[m] = _head_argmax(d, logits)
        elif isinstance(d, BigramDrafter):
            guesses[m] = [d.next_of(int(t)) for t in seq[-n:]]
        elif isinstance(d, ModelDrafter):
            fed = d.embeddable(list(seq)) if hasattr(d, "embeddable") else list(seq)
            guesses[m] = _head_argmax(d, _last_logits(_tf_lm(d.lm.model), fed, n))
        elif callable(getattr(d, "predictor", None)) and d.predictor() is not None:
            guesses[m] = list(d.predictor()(list(seq)))[-n:]  # the drafter's own teacher forcing
        else:
            raise SpecdecError(f"no teacher-forced agreement for a {type(d).__name__} draft")
    return target_next, guesses
