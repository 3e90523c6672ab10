"""Logits to probabilities (temperature, top-k, top-p) and seeded sampling.

Knows nothing about caches, models or drafters. The same `logits_to_probs` is applied to the
target's and the draft's logits, which lossless speculative sampling requires. Random numbers come
from a CPU `torch.Generator`, so a seed gives the same draws on every device.
"""

from __future__ import annotations

import torch

from specdec_lib.config import SamplingConfig


def logits_to_probs(logits: torch.Tensor, cfg: SamplingConfig) -> torch.Tensor:
    """[n, V] logits -> [n, V] float32 probabilities after temperature, top-k and top-p.

    For cfg.greedy the result is the one-hot of the argmax (the limit temperature -> 0).
    """
    logits = logits.float()
    if cfg.greedy:
        return torch.nn.functional.one_hot(argmax_rows(logits), logits.shape[-1]).float()
    logits = logits / cfg.temperature
    if cfg.top_k and cfg.top_k < logits.shape[-1]:
        kth = torch.topk(logits, cfg.top_k, dim=-1).values[..., -1:]  # [n, 1]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = torch.softmax(logits, dim=-1)
    if cfg.top_p < 1.0:
        sorted_p, order = torch.sort(probs, dim=-1, descending=True)
        # keep the smallest prefix whose mass reaches top_p (the token crossing it is kept)
        drop_sorted = (sorted_p.cumsum(-1) - sorted_p) >= cfg.top_p
        drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
        probs = probs.masked_fill(drop, 0.0)
        probs = probs / probs.sum(-1, keepdim=True)
    return probs


def argmax_rows(logits: torch.Tensor) -> torch.Tensor:
    """[n, V] -> [n] long: each row's index of its largest value, the first one on a tie (as
    `argmax`). By `max(dim).indices`, which gives the same indices (both are documented to return
    the first maximal index) and on the CPU reads a 262,144-wide row several times faster than
    `argmax`, a cost every greedy step pays. Finite logits assumed (`cache.check_finite`)."""
    return logits.max(-1).indices


def greedy_ids(logits: torch.Tensor) -> list[int]:
    """[n, V] logits -> the greedy token of each row (`argmax_rows`) as Python ints."""
    return argmax_rows(logits).tolist()


def make_generator(seed: int) -> torch.Generator:
    """A CPU generator: draws do not depend on the device the model runs on."""
    g = torch.Generator(device="cpu")
    g.manual_seed(seed)
    return g


def uniform(n: int, generator: torch.Generator) -> torch.Tensor:
    """[n] float64 uniforms in [0, 1) on the CPU."""
    return torch.rand(n, generator=generator, dtype=torch.float64)


def sample(probs: torch.Tensor, generator: torch.Generator) -> int:
    """One index from an unnormalised [V] distribution by inverse CDF with one uniform draw."""
    cdf = probs.detach().to("cpu", torch.float64).cumsum(-1)  # [V]
    u = uniform(1, generator) * cdf[-1]
    idx = int(torch.searchsorted(cdf, u, right=True).item())
    # first i with cdf[i] > u, so probs[i] > 0; the clamp only guards u rounding up to cdf[-1]
    return min(idx, cdf.shape[0] - 1)
