"""An int8 copy of the whole target as drafter: every linear layer dynamically quantized.

`int8_copy` keeps the target's module tree but replaces each `nn.Linear` (the attention and MLP
projections and the LM head) by PyTorch's dynamically quantized linear layer
(`torch.ao.quantization.quantize_dynamic`, weights int8 per output channel; each call quantizes
its input activations to 8 bits on the fly and returns float32). Embeddings and norms stay
float32: shared with the target when it is float32, copied to float32 otherwise. The copy runs on
its own KV cache, so its activations drift from the target's through every layer. CPU only (the
quantized kernels are fbgemm/x86/qnnpack). Knows nothing about the verifier.
"""

from __future__ import annotations

import copy
import warnings

import torch

from specdec_lib.drafters.model import ModelDrafter
from specdec_lib.drafters.registry import DraftContext
from specdec_lib.errors import SpecdecError


def _tree(module: torch.nn.Module) -> torch.nn.Module:
    """New module objects all the way down, sharing every parameter and buffer."""
    new = copy.copy(module)
    new._modules = {n: (_tree(c) if c is not None else None) for n, c in module._modules.items()}
    new._parameters = dict(module._parameters)
    new._buffers = dict(module._buffers)
    return new


def int8_copy(model: torch.nn.Module) -> torch.nn.Module:
    """The model with every nn.Linear dynamically quantized to int8 (the model is untouched)."""
    from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

    p = next(model.parameters())
    if p.device.type != "cpu":
        raise SpecdecError(
            f"the int8 draft runs on the CPU only (dynamic quantization); the target is on "
            f"{p.device.type}: use --device cpu or another draft"
        )
    engines = [e for e in torch.backends.quantized.supported_engines if e != "none"]
    if not engines:
        raise SpecdecError("the int8 draft needs a quantized engine; this torch build has none")
    src = _tree(model) if p.dtype == torch.float32 else copy.deepcopy(model).float()
    with warnings.catch_warnings():  # torch deprecates quantized tensors in favour of torchao
        warnings.simplefilter("ignore", UserWarning)
        return quantize_dynamic(
            src, {torch.nn.Linear: per_channel_dynamic_qconfig}, dtype=torch.qint8, inplace=True
        ).eval()


class Int8Drafter(ModelDrafter):
    """An int8 dynamically quantized copy of the target."""

    name = "int8"

    def __init__(self, target: torch.nn.Module, *, vocab_size: int, use_cache: bool = True):
        super().__init__(int8_copy(target), vocab_size=vocab_size, use_cache=use_cache)


def build(args: tuple[()], ctx: DraftContext) -> Int8Drafter:
    """`int8`: an int8 copy of the target."""
    return Int8Drafter(ctx.target.model, vocab_size=ctx.target.vocab_size, use_cache=ctx.use_cache)
