"""A self-draft: the target's own first layers (early exit), optionally with a pruned LM head.

The draft shares the target's weights (no copy): it runs the embedding, the first `n_layers`
decoder layers, the final norm and either the full LM head or a head restricted to the `keep`
most frequent token ids of the fit split (its own small matrix). Its extra memory is its KV cache
and the pruned head. Works for models with an `lm_head` whose decoder (found by `decoder_path`:
`model.model` for a causal LM, `model.model.language_model` for Gemma 3 4B's
Gemma3ForConditionalGeneration) holds `layers` and honours `config.num_hidden_layers`.
Knows nothing about the verifier.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import numpy as np
import torch

from specdec_lib.drafters.model import ModelDrafter
from specdec_lib.drafters.registry import DraftContext
from specdec_lib.errors import SpecdecError


def _shallow(module: torch.nn.Module) -> torch.nn.Module:
    """A new module object sharing parameters and submodules, whose own registry can change."""
    new = copy.copy(module)
    new._modules = dict(module._modules)
    new._parameters = dict(module._parameters)
    new._buffers = dict(module._buffers)
    return new


def decoder_path(model: torch.nn.Module) -> str:
    """The dotted name of the text decoder: the first module with token embeddings
    (`embed_tokens`), a `layers` ModuleList and a config with num_hidden_layers (a vision
    tower's encoder has layers but no token embeddings): "model" for Gemma3ForCausalLM / Llama /
    Qwen, "model.language_model" for Gemma3ForConditionalGeneration (Gemma 3 4B)."""
    for name, module in model.named_modules():
        layers = getattr(module, "layers", None)
        config = getattr(module, "config", None)
        if (
            name
            and isinstance(layers, torch.nn.ModuleList)
            and hasattr(module, "embed_tokens")
            and hasattr(config, "num_hidden_layers")
        ):
            return name
    raise SpecdecError(
        f"a self-draft needs a decoder with a `layers` list; {type(model).__name__} has none"
    )


def early_exit_model(model: torch.nn.Module, n_layers: int) -> torch.nn.Module:
    """The target cut after n_layers decoder layers, sharing its weights: the modules on the
    path to the decoder are shallow copies, the decoder's copy gets a config with
    num_hidden_layers = n_layers (its forward runs `layers[: num_hidden_layers]`)."""
    if not hasattr(model, "lm_head"):
        raise SpecdecError(f"a self-draft needs an LM head (lm_head); got {type(model).__name__}")
    path = decoder_path(model).split(".")
    decoder = model.get_submodule(".".join(path))
    total = len(decoder.layers)
    if not 1 <= n_layers <= total:
        raise SpecdecError(f"self-draft layers must be in [1, {total}], got {n_layers}")
    draft = _shallow(model)
    parent, source = draft, model
    for part in path:
        source = getattr(source, part)
        copy_ = _shallow(source)
        setattr(parent, part, copy_)
        parent = copy_
    cfg = copy.deepcopy(decoder.config)
    cfg.num_hidden_layers = n_layers
    parent.config = cfg
    if len(path) == 1:  # a causal LM: the model's config is the decoder's
        draft.config = cfg
    return draft


def frequent_ids(token_ids: Sequence[int], vocab_size: int, keep: int) -> torch.Tensor:
    """The `keep` most frequent ids of the fit data (ties by lower id), sorted ascending."""
    counts = np.bincount(np.asarray(token_ids, dtype=np.int64), minlength=vocab_size)
    order = np.lexsort((np.arange(vocab_size), -counts))[:keep]
    return torch.from_numpy(np.sort(order))


def prune_head(model: torch.nn.Module, keep_ids: torch.Tensor) -> torch.nn.Module:
    """Replace the LM head (of a shallow copy) by its rows for keep_ids."""
    pruned = _shallow(model)
    pruned.lm_head = pruned_linear(model.lm_head, keep_ids)
    return pruned


def pruned_linear(head: torch.nn.Linear, keep_ids: torch.Tensor) -> torch.nn.Linear:
    """A bias-free linear layer holding head's rows for keep_ids (a copy): [V_keep, H]."""
    w = head.weight.detach()[keep_ids.to(head.weight.device)].clone()  # [V_keep, H]
    small = torch.nn.Linear(w.shape[1], w.shape[0], bias=False, device=w.device, dtype=w.dtype)
    small.weight = torch.nn.Parameter(w, requires_grad=False)
    return small


class SelfDrafter(ModelDrafter):
    """The target's first layers on their own cache, with a pruned head or the full one."""

    name = "self"

    def __init__(
        self,
        target: torch.nn.Module,
        *,
        n_layers: int,
        vocab_size: int,
        keep_ids: torch.Tensor | None = None,
        use_cache: bool = True,
    ):
        draft = early_exit_model(target, n_layers)
        if keep_ids is not None:
            draft = prune_head(draft, keep_ids)
            device = next(target.parameters()).device
            super().__init__(
                draft, token_map=keep_ids.to(device), full_vocab=vocab_size, use_cache=use_cache
            )
        else:
            super().__init__(draft, vocab_size=vocab_size, use_cache=use_cache)
        self.n_layers = n_layers
        self.keep = None if keep_ids is None else int(keep_ids.numel())


def build(args: tuple[int, int], ctx: DraftContext) -> SelfDrafter:
    """`self[:LAYERS[:KEEP]]`: the target's first LAYERS layers, head pruned to KEEP ids."""
    layers, keep = args
    v = ctx.target.vocab_size
    keep_ids = frequent_ids(ctx.fit_ids(), v, keep) if keep < v else None
    return SelfDrafter(
        ctx.target.model, n_layers=layers, vocab_size=v, keep_ids=keep_ids, use_cache=ctx.use_cache
    )


def build_exit(args: tuple[int], ctx: DraftContext) -> SelfDrafter:
    """Early exit with the full LM head: the target's first LAYERS layers on their own cache."""
    return SelfDrafter(
        ctx.target.model,
        n_layers=args[0],
        vocab_size=ctx.target.vocab_size,
        use_cache=ctx.use_cache,
    )
