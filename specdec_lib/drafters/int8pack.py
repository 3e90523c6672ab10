"""A weight-only int8 copy of the target as drafter (`int8w[:KEEP]`), on real int8 kernels.

`int8w_copy` keeps the target's module tree (new module objects sharing the embeddings, the norms
and every other parameter) and replaces each `nn.Linear` of the decoder layers (attention and MLP
projections) by an `Int8Linear`: the weight rounded to nearest per output channel (one scale per
row, max |w| / 127, symmetric) and stored as an int8 tensor, multiplied by
`torch._weight_int8pack_mm`. The LM head becomes an `Int8Linear` too, over all its rows or over
the KEEP most frequent ids of the fit split (`self_draft.frequent_ids`, as the self-draft prunes
its head; q is then zero outside the kept ids, which the verifier's rejection rule handles).
The copy drafts through `ModelDrafter` on its own KV cache, greedy or sampled, with the logits
processed as the target's are.

Activations are not quantized (unlike `drafters.quantized`'s dynamic int8): the kernel reads
them in bfloat16 (`KERNEL_DTYPE`) and the output returns to the target's dtype. On an AVX2 CPU
torch 2.13's kernel is vectorised for 16-bit activations only: with float32 ones it runs 5 to 10
times slower than the float32 product it replaces (measured: a [2048, 640] weight, one row,
1.2 ms against 0.12 ms; with bfloat16 activations 0.07 ms). Norms, attention, residuals and the
embedding stay in the target's dtype. Memory: one byte per quantized weight plus a scale per row;
no second float copy of anything.

CPU only, float32 / bfloat16 / float16 targets (the kernel's). Its layers are not `nn.Linear`, so
`core.fastpath`'s view leaves them alone. Knows nothing about the verifier.
"""

from __future__ import annotations

import torch

from specdec_lib.drafters.model import ModelDrafter
from specdec_lib.drafters.perturbed import decoder_linears
from specdec_lib.drafters.quantized import _tree
from specdec_lib.drafters.registry import DraftContext
from specdec_lib.drafters.self_draft import frequent_ids, pruned_linear
from specdec_lib.errors import SpecdecError

KERNEL_DTYPE = torch.bfloat16  # what `_weight_int8pack_mm` reads the activations in
_DTYPES = (torch.float32, torch.bfloat16, torch.float16)


def quantize_rows(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """w [N, K] -> (int8 [N, K], float32 scales [N]): round to nearest, one symmetric scale per
    row (max |w| / 127; an all-zero row gets scale 1)."""
    x = w.detach().float()
    scale = x.abs().amax(dim=1) / 127
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    q = (x / scale[:, None]).round().clamp(-127, 127).to(torch.int8)
    return q.contiguous(), scale


class Int8Linear(torch.nn.Module):
    """y = x @ (q * scale)^T (+ bias) by `torch._weight_int8pack_mm`, q int8 [N, K]; x is cast to
    `kernel_dtype` for the kernel and y back to x's dtype."""

    def __init__(
        self, weight: torch.Tensor, bias: torch.Tensor | None, kernel_dtype: torch.dtype
    ) -> None:
        super().__init__()
        q, scale = quantize_rows(weight)
        self.kernel_dtype = kernel_dtype
        self.in_features, self.out_features = q.shape[1], q.shape[0]
        self.register_buffer("qweight", q)  # [N, K] int8
        self.register_buffer("scales", scale.to(kernel_dtype))  # [N]
        self.bias = None if bias is None else bias.detach()

    @classmethod
    def of(cls, linear: torch.nn.Linear, kernel_dtype: torch.dtype = KERNEL_DTYPE) -> Int8Linear:
        """The int8 version of an nn.Linear (which is untouched)."""
        return cls(linear.weight, linear.bias, kernel_dtype)

    def dequantized(self) -> torch.Tensor:
        """The weight it multiplies by, as float32: [N, K]."""
        return self.qweight.float() * self.scales.float()[:, None]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x [..., K] -> y [..., N] in x's dtype, the int8 kernel over x flattened to [M, K]."""
        shape = x.shape
        x2 = x.reshape(-1, shape[-1]).to(self.kernel_dtype)  # [M, K]
        y = torch._weight_int8pack_mm(x2, self.qweight, self.scales).to(x.dtype)  # [M, N]
        if self.bias is not None:
            y = y + self.bias
        return y.reshape(*shape[:-1], self.out_features)


def _check(model: torch.nn.Module) -> None:
    """Refuse in one line where the kernel cannot run this model."""
    p = next(model.parameters())
    if p.device.type != "cpu":
        raise SpecdecError(
            f"the int8w draft runs on the CPU only (torch._weight_int8pack_mm); the target is on "
            f"{p.device.type}: use --device cpu or another draft"
        )
    if p.dtype not in _DTYPES:
        raise SpecdecError(
            f"the int8w draft needs a float32, bfloat16 or float16 target; got {p.dtype}"
        )
    if not hasattr(torch, "_weight_int8pack_mm"):
        raise SpecdecError("the int8w draft needs torch._weight_int8pack_mm (torch >= 2.3)")
    if not hasattr(model, "lm_head"):
        raise SpecdecError(f"the int8w draft needs an LM head; got {type(model).__name__}")


def int8w_copy(
    model: torch.nn.Module,
    keep_ids: torch.Tensor | None = None,
    kernel_dtype: torch.dtype = KERNEL_DTYPE,
) -> torch.nn.Module:
    """The model with its decoder layers' linears and its LM head (its rows for keep_ids, or all
    of them) as Int8Linear; every other parameter shared (the model is untouched)."""
    _check(model)
    new = _tree(model)
    for name, linear in list(decoder_linears(new)):
        parent, _, leaf = name.rpartition(".")
        setattr(new.get_submodule(parent), leaf, Int8Linear.of(linear, kernel_dtype))
    head = model.lm_head if keep_ids is None else pruned_linear(model.lm_head, keep_ids)
    new.lm_head = Int8Linear.of(head, kernel_dtype)  # the pruned float rows are dropped here
    return new.eval()


def int8_bytes(model: torch.nn.Module) -> int:
    """Bytes of the int8 weights and their scales held by the Int8Linear layers of model."""
    return sum(
        b.element_size() * b.numel()
        for m in model.modules()
        if isinstance(m, Int8Linear)
        for b in (m.qweight, m.scales)
    )


class Int8WeightDrafter(ModelDrafter):
    """A weight-only int8 copy of the target, on its own cache, with a pruned or full int8 head."""

    name = "int8w"

    def __init__(
        self,
        target: torch.nn.Module,
        *,
        vocab_size: int,
        keep_ids: torch.Tensor | None = None,
        use_cache: bool = True,
    ):
        draft = int8w_copy(target, keep_ids)
        if keep_ids is None:
            super().__init__(draft, vocab_size=vocab_size, use_cache=use_cache)
        else:
            super().__init__(draft, token_map=keep_ids, full_vocab=vocab_size, use_cache=use_cache)
        self.keep = None if keep_ids is None else int(keep_ids.numel())


def build(args: tuple[int], ctx: DraftContext) -> Int8WeightDrafter:
    """`int8w[:KEEP]`: a weight-only int8 copy of the target, head pruned to KEEP ids (all of them
    when KEEP >= the vocabulary)."""
    (keep,) = args
    v = ctx.target.vocab_size
    keep_ids = frequent_ids(ctx.fit_ids(), v, keep) if keep < v else None
    return Int8WeightDrafter(
        ctx.target.model, vocab_size=v, keep_ids=keep_ids, use_cache=ctx.use_cache
    )
