"""What a decoder needs to know about a target/draft pair: the end-of-sequence ids, and the
vocabulary the two share (a draft may have fewer ids than the target, never other tokens).

Knows nothing about loading or decoding.
"""

from __future__ import annotations

from transformers import (
    PreTrainedTokenizerBase,
)

from specdec_lib.errors import SpecdecError
from specdec_lib.models import LoadedModel


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
