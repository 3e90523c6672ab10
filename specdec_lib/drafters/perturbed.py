"""Perturbed copies of the target as drafters: `quant:BITS[:GROUP]` and `noise:PERMILLE[:SEED]`.

Each builds one deep copy of the target (the target is untouched) and perturbs the weight of
every `nn.Linear` inside its decoder layers (the attention and MLP projections); the embeddings,
the norms and the LM head stay exact (Gemma ties the LM head to the embedding, so the head could
not be perturbed without the input side too). The copy drafts through `ModelDrafter`, on its own
KV cache.

- `quant:BITS[:GROUP]`: weight-only round-to-nearest symmetric quantization, fake-quant: each
  weight is rounded to one of the 2 * (2**(BITS-1) - 1) + 1 levels {-Q..Q} * scale (Q =
  2**(BITS-1) - 1, scale = max |w| / Q over its group; BITS = 2 is ternary) and stored back
  dequantized in the model's own dtype, so the copy runs the same dense kernels as the target.
  GROUP = 0 (the default): one scale per output channel; GROUP > 0: one per GROUP consecutive
  input columns of a row, which must divide every quantized layer's in_features.
- `noise:PERMILLE[:SEED]`: W += N(0, (PERMILLE / 1000 * rms(row))^2) for each output row of W
  (rms over that row), drawn from one CPU generator seeded by SEED (0 by default) layer after
  layer in module order, so a spec gives the same weights on every run and on every device.

How this differs from a small draft (a 1B draft of a 4B target): a perturbed copy has the
target's architecture, depth and cost per token; it disagrees with the target through weight
error, not through less capacity. So a ladder of levels varies the agreement with the target
while the draft's cost stays fixed, which isolates "agreement level" from "draft cost". It gives
no speedup here: fake-quant weights cost what the target's do, and a real gain would need a
low-bit kernel. Memory: one full copy of the target per draft.

Knows nothing about the verifier or the decode loop; works on any device and floating dtype.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator

import torch

from specdec_lib.drafters.model import ModelDrafter
from specdec_lib.drafters.registry import DraftContext
from specdec_lib.drafters.self_draft import decoder_path
from specdec_lib.errors import SpecdecError


def decoder_linears(model: torch.nn.Module) -> Iterator[tuple[str, torch.nn.Linear]]:
    """Every nn.Linear inside the decoder layers, in module order, with its qualified name."""
    path = decoder_path(model)
    layers = model.get_submodule(path).layers
    for i, layer in enumerate(layers):
        for name, module in layer.named_modules():
            if isinstance(module, torch.nn.Linear):
                yield f"{path}.layers.{i}.{name}", module


def _work_dtype(w: torch.Tensor) -> torch.dtype:
    """float32 for low-precision weights (bfloat16, float16); the weight's own dtype otherwise."""
    return torch.promote_types(w.dtype, torch.float32)


def quantize_rtn(w: torch.Tensor, bits: int, group: int) -> torch.Tensor:
    """w [out, in] rounded to nearest on a symmetric grid of 2**(bits-1) - 1 levels each side,
    one scale per row (group 0) or per `group` input columns, returned dequantized in w's dtype."""
    out_f, in_f = w.shape
    q = 2 ** (bits - 1) - 1
    x = w.to(_work_dtype(w))
    x = x.reshape(out_f, in_f // group, group) if group else x.reshape(out_f, 1, in_f)
    scale = x.abs().amax(dim=-1, keepdim=True) / q
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))  # an all-zero group stays zero
    return ((x / scale).round().clamp(-q, q) * scale).reshape(out_f, in_f).to(w.dtype)


def add_row_noise(w: torch.Tensor, permille: int, generator: torch.Generator) -> torch.Tensor:
    """w [out, in] plus Gaussian noise of std permille/1000 * rms(row), drawn on the CPU."""
    x = w.to(_work_dtype(w))
    rms = x.pow(2).mean(dim=-1, keepdim=True).sqrt()  # [out, 1]
    noise = torch.randn(w.shape, generator=generator, dtype=torch.float32).to(x.device, x.dtype)
    return (x + noise * (permille / 1000) * rms).to(w.dtype)


def quantized_copy(model: torch.nn.Module, bits: int, group: int) -> torch.nn.Module:
    """A deep copy of model with its decoder layers' linear weights fake-quantized."""
    linears = list(decoder_linears(model))
    for name, lin in linears:
        if group and lin.in_features % group:
            raise SpecdecError(
                f"quant group {group} does not divide {name}'s {lin.in_features} input columns"
            )
    new = copy.deepcopy(model)
    with torch.no_grad():
        for _, lin in decoder_linears(new):
            lin.weight.copy_(quantize_rtn(lin.weight, bits, group))
    return new.eval()


def noisy_copy(model: torch.nn.Module, permille: int, seed: int) -> torch.nn.Module:
    """A deep copy of model with seeded per-row Gaussian noise on its decoder layers' linears."""
    new = copy.deepcopy(model)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _, lin in decoder_linears(new):
            lin.weight.copy_(add_row_noise(lin.weight, permille, generator))
    return new.eval()


class QuantDrafter(ModelDrafter):
    """A fake-quantized copy of the target (`quant:BITS[:GROUP]`)."""

    name = "quant"


class NoiseDrafter(ModelDrafter):
    """A copy of the target with seeded weight noise (`noise:PERMILLE[:SEED]`)."""

    name = "noise"


def build_quant(args: tuple[int, int], ctx: DraftContext) -> QuantDrafter:
    """`quant:BITS[:GROUP]`: a round-to-nearest fake-quantized copy of the target."""
    bits, group = args
    model = quantized_copy(ctx.target.model, bits, group)
    return QuantDrafter(model, vocab_size=ctx.target.vocab_size, use_cache=ctx.use_cache)


def build_noise(args: tuple[int, int], ctx: DraftContext) -> NoiseDrafter:
    """`noise:PERMILLE[:SEED]`: a copy of the target with seeded per-row weight noise."""
    permille, seed = args
    model = noisy_copy(ctx.target.model, permille, seed)
    return NoiseDrafter(model, vocab_size=ctx.target.vocab_size, use_cache=ctx.use_cache)
