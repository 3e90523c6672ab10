"""The tiny random-init Gemma 3 targets and drafts: the smoke profiles' models, built offline in
seconds from the bundled WikiText-2 (a word-level tokenizer over its most frequent words), so the
whole pipeline runs on real text without any download.

Knows nothing about profiles, experiments or result files: it builds models.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import torch
from tokenizers import Tokenizer, models, pre_tokenizers, processors
from transformers import (
    Gemma3Config,
    Gemma3ForCausalLM,
    Gemma3ForConditionalGeneration,
    Gemma3TextConfig,
    PreTrainedTokenizerFast,
    SiglipVisionConfig,
)

from specdec_lib.data import BUNDLED_PATH
from specdec_lib.models import LoadedModel
from specdec_lib.models.device import resolve_device

TINY = "tiny-random"
TINY_DRAFT = "tiny-random-draft"  # `model:tiny-random-draft`: the smoke-pair's draft

_TINY_TOKENIZERS: dict[int, Any] = {}  # vocabulary size -> its one tokenizer


def tiny_tokenizer(vocab: int = 2048):
    """A word-level tokenizer over the `vocab` - 4 most frequent words of the bundled WikiText-2
    test split plus <pad> <eos> <bos> <unk>; one object per size, so a tiny target and its tiny
    draft share it."""
    if vocab in _TINY_TOKENIZERS:
        return _TINY_TOKENIZERS[vocab]
    text = BUNDLED_PATH.read_text(encoding="utf-8")
    specials = ["<pad>", "<eos>", "<bos>", "<unk>"]
    words = [w for w, _ in Counter(text.split()).most_common(vocab - len(specials))]
    table = {w: i for i, w in enumerate(specials + words)}
    tok = Tokenizer(models.WordLevel(table, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.post_processor = processors.TemplateProcessing(
        single="<bos> $A", special_tokens=[("<bos>", table["<bos>"])]
    )
    _TINY_TOKENIZERS[vocab] = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<bos>",
        eos_token="<eos>",
        unk_token="<unk>",
        pad_token="<pad>",
    )
    return _TINY_TOKENIZERS[vocab]


ALTERNATING = ("sliding_attention", "full_attention")


def text_config(
    n_ids: int,
    hidden: int,
    layers: int,
    heads: int,
    *,
    window: int = 32,
    kinds: Sequence[str] = ALTERNATING,
    max_positions: int = 4096,
    intermediate: int | None = None,
    kv_heads: int = 1,
    head_dim: int | None = None,
    tied: bool = False,
    **extra: Any,
) -> Gemma3TextConfig:
    """A few Gemma 3 layers over n_ids ids, their attention kinds cycling through `kinds`
    (sliding and full alternating): the one tiny Gemma config, of the smoke profiles' models and
    of the tests' (`tests/conftest.tiny_gemma`, the saved model of `tests/test_models.py`), and
    the one Gemma text config the real shapes build too (`runner.real_shapes.Shape.config`:
    their MLP width, key/value heads, head size, tied embeddings and `extra` settings such as
    rope_parameters; unset, the tiny model's: 2 x hidden, 1, hidden / heads, untied)."""
    head_dim = head_dim or hidden // heads
    settings: dict[str, Any] = {
        "initializer_range": 0.2,  # with untied embeddings: continuations that vary
        **extra,
    }
    return Gemma3TextConfig(
        vocab_size=n_ids,
        hidden_size=hidden,
        intermediate_size=intermediate or 2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        head_dim=head_dim,
        query_pre_attn_scalar=head_dim,
        sliding_window=window,
        layer_types=[kinds[i % len(kinds)] for i in range(layers)],
        max_position_embeddings=max_positions,
        tie_word_embeddings=tied,
        pad_token_id=0,
        eos_token_id=1,
        bos_token_id=2,
        attn_implementation="sdpa",  # eager softmaxes in float32 even for float64 weights
        **settings,
    )


def conditional_model(cfg: Gemma3TextConfig, n_ids: int) -> Gemma3ForConditionalGeneration:
    """The text config inside a Gemma3ForConditionalGeneration with a tiny vision tower (the
    class Gemma 3 4B loads as); its last three ids are the image tokens."""
    vision = SiglipVisionConfig(
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        image_size=28,
        patch_size=14,
    )
    top = Gemma3Config(
        text_config=cfg,
        vision_config=vision,
        mm_tokens_per_image=4,
        boi_token_index=n_ids - 3,
        eoi_token_index=n_ids - 2,
        image_token_index=n_ids - 1,
        tie_word_embeddings=False,
        attn_implementation="sdpa",
    )
    model = Gemma3ForConditionalGeneration(top)
    model.generation_config.eos_token_id = 1
    return model


def tiny_random_model(
    dtype: str = "float64",
    *,
    vocab: int = 2048,
    hidden: int = 64,
    layers: int = 4,
    heads: int = 2,
    seed: int = 0,
    extra_vocab: int = 0,
    conditional: bool = False,
    device: str = "cpu",
) -> LoadedModel:
    """A random-init Gemma 3 (a few layers, 64 wide) with a word-level tokenizer over the most
    frequent words of the bundled WikiText-2 test split; offline and instant.

    `extra_vocab` rows beyond the tokenizer's ids imitate Gemma 3 4B's larger vocabulary (262,208
    ids beside the 1B's 262,144); `conditional` builds a `Gemma3ForConditionalGeneration` (the
    class Gemma 3 4B loads as, with a tiny vision tower) instead of a `Gemma3ForCausalLM`."""
    tokenizer = tiny_tokenizer(vocab)
    n_ids = len(tokenizer) + int(extra_vocab)
    cfg = text_config(n_ids, hidden, layers, heads)
    torch.manual_seed(seed)
    tdtype = {"float64": torch.float64, "float32": torch.float32, "auto": torch.float64}.get(
        dtype, torch.float64
    )
    model = conditional_model(cfg, n_ids) if conditional else Gemma3ForCausalLM(cfg)
    dev = resolve_device(device)
    model = model.to(device=dev, dtype=tdtype).eval()
    model.requires_grad_(False)
    return LoadedModel(
        model=model,
        tokenizer=tokenizer,
        name=TINY,
        dtype=tdtype,
        device=dev,
        vocab_size=int(model.get_output_embeddings().weight.shape[0]),
    )
