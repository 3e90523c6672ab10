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

A Gemma 3 text copy with its KV cache on drafts through `LeanInt8LM`: the same weights (query,
key and value rows fused into one int8 product per layer, gate and up into another, the modules'
buffers becoming views of them) run by a forward written out here instead of Hugging Face's
modules, whose small per-operation costs are a large share of a one-row int8 step. It is a draft:
its logits need not equal the module path's to the last bit (the verifier keeps the output the
target's); `tests/test_int8pack.py` checks they agree. Any other model runs through `CachedLM`.
"""

from __future__ import annotations

import torch

from specdec_lib.core.cache import CachedLM
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


def _mm(x: torch.Tensor, w: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """x [n, K] (any float dtype) @ the int8 weight w = (q [N, K], scales [N]) -> [n, N] in x's
    dtype, the kernel reading x in `KERNEL_DTYPE`."""
    return torch._weight_int8pack_mm(x.to(KERNEL_DTYPE), w[0], w[1]).to(x.dtype)


def _fused(*linears: Int8Linear) -> tuple[torch.Tensor, torch.Tensor]:
    """One (q, scales) over the linears' rows stacked; each linear's buffers become views of it
    (no second copy of the weights)."""
    q = torch.cat([m.qweight for m in linears])
    sc = torch.cat([m.scales for m in linears])
    row = 0
    for m in linears:
        m.qweight, m.scales = q[row : row + m.out_features], sc[row : row + m.out_features]
        row += m.out_features
    return q, sc


def lean_supported(model: torch.nn.Module) -> bool:
    """Whether `LeanInt8LM` runs this int8w copy: a Gemma 3 text model (`Gemma3ForCausalLM`)
    with default rotary embeddings, no logit soft-capping and Int8Linear projections."""
    cfg = getattr(model, "config", None)
    if getattr(cfg, "model_type", None) != "gemma3_text" or not hasattr(model, "model"):
        return False
    if cfg.attn_logit_softcapping is not None or cfg.final_logit_softcapping is not None:
        return False
    ropes = getattr(cfg, "rope_parameters", None) or {}
    if any(ropes.get(kind, {}).get("rope_type", "default") != "default" for kind in ropes):
        return False
    if any(kind not in ropes for kind in cfg.layer_types):
        return False
    lay = model.model.layers[0]
    return isinstance(lay.self_attn.q_proj, Int8Linear) and isinstance(model.lm_head, Int8Linear)


class LeanInt8LM(CachedLM):
    """A Gemma 3 int8w copy run without Hugging Face's modules, on its own KV cache (keys and
    values [layers, positions, kv heads, head size], grown by doubling), as `CachedLM` (the same
    `extend`, `sync_to`, `rollback`, `keep`). The model itself stays as it was (its linears'
    buffers now views of the fused ones), for what reads it directly."""

    def __init__(self, model: torch.nn.Module, *, vocab_size: int | None = None):
        super().__init__(model, use_cache=True, vocab_size=vocab_size, fast=False)
        cfg = model.config
        self.heads, self.kv_heads, self.head_dim = (
            cfg.num_attention_heads,
            cfg.num_key_value_heads,
            cfg.head_dim,
        )
        self.eps, self.scaling = cfg.rms_norm_eps, cfg.query_pre_attn_scalar**-0.5
        self.window = cfg.sliding_window
        body = model.model
        self.embed = body.embed_tokens
        self.final_norm = 1 + body.norm.weight.float()
        self.head_w = (model.lm_head.qweight, model.lm_head.scales)
        self.layers = [self._layer(lay, cfg, i) for i, lay in enumerate(body.layers)]
        d = self.head_dim
        self.inv_freq = {  # attention kind (sliding?) -> its rotary frequencies [D/2]
            kind == "sliding_attention": 1.0
            / cfg.rope_parameters[kind]["rope_theta"] ** (torch.arange(0, d, 2).float() / d)
            for kind in set(cfg.layer_types)
        }
        self.keys: torch.Tensor | None = None  # [L, T, kv heads, D]
        self.values: torch.Tensor | None = None

    def _layer(self, lay: torch.nn.Module, cfg, i: int) -> dict[str, object]:
        a, f = lay.self_attn, lay.mlp
        return {
            "qkv": _fused(a.q_proj, a.k_proj, a.v_proj),
            "gate_up": _fused(f.gate_proj, f.up_proj),
            "o": (a.o_proj.qweight, a.o_proj.scales),
            "down": (f.down_proj.qweight, f.down_proj.scales),
            "norms": [
                1 + m.weight.float()
                for m in (
                    lay.input_layernorm,
                    lay.post_attention_layernorm,
                    lay.pre_feedforward_layernorm,
                    lay.post_feedforward_layernorm,
                    a.q_norm,
                    a.k_norm,
                )
            ],
            "sliding": cfg.layer_types[i] == "sliding_attention",
        }

    def reset(self) -> None:
        """Forget the sequence (the buffers stay allocated)."""
        self.tokens = []

    def cache_tensors(self) -> list[torch.Tensor]:
        """The key and value buffers as allocated (none before the first call)."""
        return [t for t in (self.keys, self.values) if t is not None]

    def _room(self, need: int) -> None:
        """Buffers of at least `need` positions, the cached ones kept."""
        have = 0 if self.keys is None else self.keys.shape[1]
        if need <= have:
            return
        size = max(need, 2 * have, 64)
        shape = (len(self.layers), size, self.kv_heads, self.head_dim)
        keys, values = torch.zeros(shape, dtype=self.dtype), torch.zeros(shape, dtype=self.dtype)
        if self.keys is not None and self.values is not None:
            keys[:, :have], values[:, :have] = self.keys, self.values
        self.keys, self.values = keys, values

    def _rms(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        """Gemma's RMS norm (in float32, weight 1 + w) back in x's dtype."""
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps) * w).to(x.dtype)

    def _mask(self, start: int, n: int, sliding: bool) -> torch.Tensor | None:
        """Additive mask [n, start + n] of a call's positions start.. (None where every key is
        visible): a query at p sees keys j <= p, in a sliding-window layer p - j < window too."""
        end = start + n
        if n == 1 and (not sliding or end <= self.window):
            return None  # a one-token step sees every cached key
        q = torch.arange(start, end)[:, None]  # [n, 1]
        j = torch.arange(end)[None, :]  # [1, end]
        seen = (j <= q) & (q - j < self.window) if sliding else j <= q
        return None if bool(seen.all()) else torch.where(seen, 0.0, float("-inf"))

    def _per_kind(self, start: int, n: int, dtype: torch.dtype) -> dict[bool, tuple]:
        """Once per call, for each attention kind (sliding?): (mask, cos [n, 1, D], sin) of
        positions start..start + n - 1, which every layer of that kind shares."""
        out = {}
        for sliding, inv_freq in self.inv_freq.items():
            freqs = torch.arange(start, start + n, dtype=torch.float32)[:, None] * inv_freq
            angles = torch.cat((freqs, freqs), -1)[:, None]  # [n, 1, D]
            mask = self._mask(start, n, sliding)
            out[sliding] = (mask, angles.cos().to(dtype), angles.sin().to(dtype))
        return out

    def _rope(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        """Rotary embedding of x [n, heads, D] (Hugging Face's rotate-half layout)."""
        half = self.head_dim // 2
        return x * cos + torch.cat((-x[..., half:], x[..., :half]), -1) * sin

    def _attend(self, h: torch.Tensor, p: dict, i: int, start: int, kinds) -> torch.Tensor:
        """One layer's attention block on h [n, hidden], caching its keys and values."""
        n, d, heads, kvh = h.shape[0], self.head_dim, self.heads, self.kv_heads
        x = self._rms(h, p["norms"][0])
        qkv = _mm(x, p["qkv"])  # [n, (heads + 2 kv heads) * D]
        q = qkv[:, : heads * d].view(n, heads, d)
        k = qkv[:, heads * d : (heads + kvh) * d].view(n, kvh, d)
        v = qkv[:, (heads + kvh) * d :].view(n, kvh, d)
        mask, cos, sin = kinds[p["sliding"]]
        q = self._rope(self._rms(q, p["norms"][4]), cos, sin)
        k = self._rope(self._rms(k, p["norms"][5]), cos, sin)
        end = start + n
        self.keys[i, start:end], self.values[i, start:end] = k, v
        keys = self.keys[i, :end].permute(1, 2, 0)  # [kv heads, D, end]
        values = self.values[i, :end].transpose(0, 1)  # [kv heads, end, D]
        q = q.transpose(0, 1).reshape(kvh, heads // kvh * n, d)  # [kv heads, group * n, D]
        scores = (q @ keys).float().view(heads, n, end) * self.scaling  # [heads, n, end]
        if mask is not None:
            scores = scores + mask
        probs = scores.softmax(-1).to(h.dtype).view(kvh, heads // kvh * n, end)
        out = (probs @ values).view(heads, n, d).transpose(0, 1).reshape(n, heads * d)
        return self._rms(_mm(out, p["o"]), p["norms"][1])

    def _feed_forward(self, h: torch.Tensor, p: dict) -> torch.Tensor:
        """One layer's MLP block: down(gelu_tanh(gate x) * up x), normed before and after."""
        gate_up = _mm(self._rms(h, p["norms"][2]), p["gate_up"])  # [n, 2 * I]
        gate, up = gate_up.chunk(2, dim=-1)
        act = torch.nn.functional.gelu(gate, approximate="tanh") * up
        return self._rms(_mm(act, p["down"]), p["norms"][3])

    @torch.inference_mode()
    def extend(self, ids: list[int], logits_to_keep: int = 1) -> torch.Tensor:
        """Append ids; return the logits of the last `logits_to_keep` positions: [n, V]."""
        if not ids:
            raise ValueError("extend needs at least one token")
        start, n = len(self.tokens), len(ids)
        self._room(start + n)
        self.tokens.extend(ids)
        h = self.embed(torch.tensor(ids, dtype=torch.long, device=self.device))  # [n, hidden]
        kinds = self._per_kind(start, n, h.dtype)
        for i, p in enumerate(self.layers):
            h = h + self._attend(h, p, i, start, kinds)
            h = h + self._feed_forward(h, p)
        return self.counted(_mm(self._rms(h[-logits_to_keep:], self.final_norm), self.head_w))

    def keep(self, start: int, rows: list[int]) -> None:
        """Keep the first `start` cached tokens and then the given later rows (offsets from
        start, in order), moved next to them; drop the rest."""
        moved = [start + r for r in rows]
        if self.keys is not None and moved and moved != list(range(start, start + len(rows))):
            idx = torch.tensor(moved, dtype=torch.long)
            with torch.inference_mode():  # the buffers are inference tensors (made in extend)
                for buf in (self.keys, self.values):
                    buf[:, start : start + len(moved)] = buf.index_select(1, idx)
        self.tokens[start:] = [self.tokens[i] for i in moved]


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
        if use_cache and lean_supported(draft):
            self.lm = LeanInt8LM(draft, vocab_size=self.lm.vocab_size)


def build(args: tuple[int], ctx: DraftContext) -> Int8WeightDrafter:
    """`int8w[:KEEP]`: a weight-only int8 copy of the target, head pruned to KEEP ids (all of them
    when KEEP >= the vocabulary)."""
    (keep,) = args
    v = ctx.target.vocab_size
    keep_ids = frequent_ids(ctx.fit_ids(), v, keep) if keep < v else None
    return Int8WeightDrafter(
        ctx.target.model, vocab_size=v, keep_ids=keep_ids, use_cache=ctx.use_cache
    )
