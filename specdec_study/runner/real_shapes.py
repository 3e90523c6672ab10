"""The real pair's shapes without its weights: Gemma 3 4B (the target's text model, as the study
loads it) and Gemma 3 1B (the draft) built from their configs with random weights, no download.

`real_pair()` computes, building nothing in memory, each model's parameter count from its config
(`Shape.params`, the formula; the 4B with its vision tower counted on the meta device, which is
what the download holds) and its weight bytes per dtype: whether the pair fits a GPU. `measure`
builds the pair on a device (straight there in the dtype: no float32 or host copy on the way) and
times, per dtype, a decode step and a K + 1 verification of each with `estimate.measure_costs`
(the library's cache and calls, the device synchronised), with c = the draft's decode step over
the target's and v = the target's verification over its step. `scale` > 1 shrinks both configs
(hidden, head and feed-forward widths and layers by that factor, the vocabularies kept) so that
the same code runs on a CPU in a test.

What it does not know: random weights say nothing about acceptance, token identity or
sampling (the tiny pair checks those); a timing is one context length (`context`) at batch 1;
the memory is weights and one short cache, not a long generation's cache; a dtype the device
cannot hold or run is skipped with one line.
"""

from __future__ import annotations

import gc
import math
from dataclasses import asdict, dataclass, replace
from typing import Any

import torch

from specdec_lib.errors import SpecdecError

TARGET = "google/gemma-3-4b-pt"
DRAFT = "google/gemma-3-1b-pt"
SECOND_DRAFT = "google/gemma-3-270m"
DTYPES = (torch.bfloat16, torch.float16, torch.float32)
CPU_SCALE = 16  # the scale a CPU run uses (at scale 1 the 4B alone is about 16 GB in float32)


@dataclass(frozen=True)
class Shape:
    """A Gemma 3 text decoder's shape: what its parameter count and timings depend on."""

    vocab: int
    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    window: int  # sliding window of the local layers
    positions: int  # max_position_embeddings
    rope_factor: float | None = None  # linear RoPE scaling of the global layers
    full_every: int = 6  # every 6th layer attends globally, the others in the sliding window

    def scaled(self, factor: int) -> Shape:
        """The same architecture shrunk by `factor` (vocabulary kept): 1 is the real shape."""
        if factor == 1:
            return self
        layers = max(2, self.layers // factor)
        return replace(
            self,
            hidden=max(8, self.hidden // factor),
            intermediate=max(8, self.intermediate // factor),
            layers=layers,
            head_dim=max(8, self.head_dim // factor),
            window=max(8, self.window // factor),
            full_every=min(self.full_every, layers),  # keep one global layer
        )

    def layer_types(self) -> list[str]:
        """Each layer's attention: full every `full_every`th layer, sliding window otherwise."""
        return [
            "full_attention" if (i + 1) % self.full_every == 0 else "sliding_attention"
            for i in range(self.layers)
        ]

    def params(self) -> int:
        """Parameters by formula: tied embedding, per layer q/k/v/o, gated MLP (3 matrices),
        4 RMSNorms of the hidden size and the q/k norms of the head size, the final norm."""
        attention = 2 * self.hidden * self.head_dim * (self.heads + self.kv_heads)
        layer = attention + 3 * self.hidden * self.intermediate + 4 * self.hidden
        return self.vocab * self.hidden + self.layers * (layer + 2 * self.head_dim) + self.hidden

    def config(self) -> Any:
        """Its Gemma3TextConfig: `runner.tiny.text_config` at this shape, RoPE as Gemma 3's (the
        global layers' linearly scaled by rope_factor where given)."""
        from specdec_study.runner.tiny import text_config

        full = {"rope_type": "default", "rope_theta": 1_000_000.0}
        if self.rope_factor is not None:
            full = {"rope_type": "linear", "factor": self.rope_factor, "rope_theta": 1_000_000.0}
        return text_config(
            self.vocab,
            self.hidden,
            self.layers,
            self.heads,
            window=self.window,
            kinds=self.layer_types(),
            max_positions=self.positions,
            intermediate=self.intermediate,
            kv_heads=self.kv_heads,
            head_dim=self.head_dim,
            tied=True,
            initializer_range=0.02,  # transformers' default, as the hub's configs have it
            rope_parameters={
                "full_attention": full,
                "sliding_attention": {"rope_type": "default", "rope_theta": 10_000.0},
            },
        )


# The hub's config.json of google/gemma-3-4b-pt (its text_config) and google/gemma-3-1b-pt as
# transformers 4.50 wrote them (mirrored e.g. at huggingface.co/YFolla/gemma-3-dnd and
# mlx-community/gemma-3-4b-pt-4bit); the formula's counts agree with keras-hub's published
# gemma3_presets: 999,885,952 for the 1B, 3,880,099,328 for the 4B text model at 262,144 ids.
SHAPES = {
    TARGET: Shape(262_208, 2560, 10_240, 34, 8, 4, 256, 1024, 131_072, rope_factor=8.0),
    DRAFT: Shape(262_144, 1152, 6912, 26, 4, 1, 256, 512, 32_768),
    # the quick profile's second separate draft, from google/gemma-3-270m's config.json (hidden
    # 640, feed-forward 2048, 18 layers, 4 heads, 1 KV head); 268,098,176 by the formula, as
    # keras-hub's gemma3_270m preset
    SECOND_DRAFT: Shape(262_144, 640, 2048, 18, 4, 1, 256, 512, 32_768),
}


def _short(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def with_vision_params(shape: Shape) -> int:
    """The 4B checkpoint's count: the text model inside Gemma3ForConditionalGeneration with its
    SigLIP vision tower and projector (what is downloaded), counted on the meta device."""
    from transformers import Gemma3Config, Gemma3ForConditionalGeneration, SiglipVisionConfig

    vision = SiglipVisionConfig(
        hidden_size=1152,
        intermediate_size=4304,
        num_hidden_layers=27,
        num_attention_heads=16,
        image_size=896,
        patch_size=14,
        vision_use_head=False,
    )
    top = Gemma3Config(
        text_config=shape.config(),
        vision_config=vision,
        mm_tokens_per_image=256,
        boi_token_index=255_999,
        eoi_token_index=256_000,
        image_token_index=262_144,
    )
    with torch.device("meta"):
        model = Gemma3ForConditionalGeneration(top)
    return sum(p.numel() for p in model.parameters())


def real_pair() -> dict[str, Any]:
    """The real pair's parameter counts and weight bytes per dtype, from the configs alone."""
    out: dict[str, Any] = {}
    for role, name in (("target", TARGET), ("draft", DRAFT)):
        n = SHAPES[name].params()
        out[role] = {
            "name": name,
            "params": n,
            "weight_bytes": {_short(d): n * d.itemsize for d in DTYPES},
        }
    out["target"]["params_with_vision"] = with_vision_params(SHAPES[TARGET])
    out["pair_weight_bytes"] = {
        _short(d): (out["target"]["params"] + out["draft"]["params"]) * d.itemsize for d in DTYPES
    }
    out["note"] = (
        "the text model the study loads (no vision tower); weights only: the KV cache, "
        "activations and the CUDA context come on top"
    )
    return out


def build(shape: Shape, dtype: torch.dtype, device: torch.device) -> torch.nn.Module:
    """A Gemma3ForCausalLM of `shape` with random weights (transformers' own init, tied
    embeddings), its tensors created on `device` in `dtype`: no float32 or host copy first."""
    from transformers import Gemma3ForCausalLM

    with torch.device(device):
        model = Gemma3ForCausalLM._from_config(shape.config(), dtype=dtype)
    return model.eval().requires_grad_(False)


def _fits(need: int, device: torch.device) -> str | None:
    """Why `need` bytes of weights do not fit on the device now (None when they do)."""
    if device.type != "cuda":
        return None
    free, _ = torch.cuda.mem_get_info(device)
    if need * 1.1 + (512 << 20) <= free:
        return None
    return f"needs {need / 2**30:.1f} GiB of weights, {free / 2**30:.1f} GiB free"


def _free(device: torch.device) -> None:
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


def measure_dtype(
    dtype: torch.dtype, device: torch.device, scale: int, k: int, context: int, repeats: int
) -> dict[str, Any]:
    """Build the pair in `dtype` on `device`, its memory and timings; {"skipped": why} when the
    device cannot hold or run it."""
    from specdec_study.runner.estimate import measure_costs

    shapes = {role: SHAPES[n].scaled(scale) for role, n in (("target", TARGET), ("draft", DRAFT))}
    why = _fits(sum(s.params() for s in shapes.values()) * dtype.itemsize, device)
    if why:
        return {"skipped": why}
    cuda = device.type == "cuda"
    before = torch.cuda.memory_allocated(device) if cuda else 0
    if cuda:
        torch.cuda.reset_peak_memory_stats(device)
    models: dict[str, torch.nn.Module] = {}
    try:
        models = {role: build(s, dtype, device) for role, s in shapes.items()}
        allocated = torch.cuda.memory_allocated(device) - before if cuda else None
        seconds = {role: measure_costs(m, k, k + 2, context=context, repeats=repeats)
                   for role, m in models.items()}  # fmt: skip
    except (SpecdecError, RuntimeError) as exc:  # torch.cuda.OutOfMemoryError is a RuntimeError
        return {"skipped": str(exc).strip().splitlines()[0][:200]}
    finally:
        params = {role: sum(p.numel() for p in m.parameters()) for role, m in models.items()}
        weight_bytes = sum(
            p.numel() * p.element_size() for m in models.values() for p in m.parameters()
        )
        models.clear()
        _free(device)
    step, draft_step = seconds["target"][1], seconds["draft"][1]
    return {
        "params": params,
        "params_by_formula": {role: s.params() for role, s in shapes.items()},
        "weight_bytes": weight_bytes,
        "allocated_bytes": allocated,
        "peak_allocated_bytes": torch.cuda.max_memory_allocated(device) - before if cuda else None,
        "target_step_s": step,
        "target_verify_s": seconds["target"][k + 1],
        "draft_step_s": draft_step,
        "draft_verify_s": seconds["draft"][k + 1],
        "c": draft_step / step,
        "v": seconds["target"][k + 1] / step,
    }


def measure(
    device: torch.device,
    *,
    scale: int = 1,
    k: int = 4,
    context: int = 100,
    repeats: int = 5,
    dtypes: tuple[torch.dtype, ...] = DTYPES,
) -> dict[str, Any]:
    """The pair at real (scale 1) or scaled-down shapes on `device`, per dtype: ok is True when
    every built model has its formula's count and positive, finite costs; None when every dtype
    was skipped; False otherwise."""
    by_dtype = {_short(d): measure_dtype(d, device, scale, k, context, repeats) for d in dtypes}
    ran = [r for r in by_dtype.values() if "skipped" not in r]
    sound = all(
        r["params"] == r["params_by_formula"]
        and all(math.isfinite(r[x]) and r[x] > 0 for x in ("c", "v", "target_step_s"))
        for r in ran
    )
    return {
        "ok": sound if ran else None,
        "scale": scale,
        "k": k,
        "context": context,
        "shapes": {n: asdict(SHAPES[n].scaled(scale)) for n in (TARGET, DRAFT)},
        "by_dtype": by_dtype,
        "real_pair": real_pair(),
    }
