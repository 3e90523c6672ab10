"""Acceptance rules as pure functions on tensors: greedy verification and speculative sampling.

Notation (used throughout the project):
- p: the target's distribution over the next token, after temperature, top-k and top-p.
- q: the draft's distribution, processed identically; q is exactly what the draft token was
  sampled from. A deterministic drafter (bigram, n-gram lookup) is a point mass: q(x) = 1 at its
  proposed token x, which we pass as `q=None`.
- K: the draft length. A verification pass scores K + 1 positions: row i of p is the target's
  distribution after the context and the first i draft tokens.

Greedy verification (temperature 0) accepts the longest prefix of drafts equal to the target's
argmax and then appends the target's argmax at the first mismatch (or after all K: the bonus).
Its output is exactly step-by-step greedy decoding.

Speculative sampling (Leviathan et al. 2023; Chen et al. 2023) accepts draft x_i with probability
min(1, p_i(x_i) / q_i(x_i)); at the first rejection it samples from the residual
max(0, p_i - q_i) / sum(max(0, p_i - q_i)) and stops; if all K are accepted it samples a bonus
token from p_K. Every emitted token then follows p exactly.

Knows nothing about models, caches or drafters.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from specdec_lib.core.sampling import sample, uniform


@dataclass(frozen=True)
class Verdict:
    """The outcome of verifying one draft: accepted count, next token and (for a tree) the path."""

    n_accepted: int  # how many leading draft tokens were accepted, 0..K
    next_token: int  # the target's token after them: correction or bonus
    path: tuple[int, ...] | None = None  # a tree's accepted tokens (a chain's are its prefix)


def greedy_verify(draft: list[int], target_argmax: list[int]) -> Verdict:
    """draft: K ids; target_argmax: K + 1 ids, the argmax of each row of the target's logits."""
    n = 0
    while n < len(draft) and draft[n] == target_argmax[n]:
        n += 1
    return Verdict(n, target_argmax[n])


def pad_vocab(q: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """[K, V_draft] -> [K, vocab_size]: tokens the draft cannot produce get q = 0."""
    extra = vocab_size - q.shape[-1]
    if extra < 0:
        raise ValueError(
            f"draft vocabulary ({q.shape[-1]}) is wider than the target's ({vocab_size})"
        )
    return torch.nn.functional.pad(q, (0, extra)) if extra else q


def residual(p: torch.Tensor, q: torch.Tensor | None, x: int) -> torch.Tensor:
    """max(0, p - q) for one position ([V]); q=None is a point mass at x. Unnormalised."""
    if q is None:
        r = p.clone()
        r[x] = 0.0
    else:
        r = (p - q).clamp_min(0.0)
    if float(r.sum()) <= 0.0:  # p == q: rejection had probability 0; only rounding gets here
        return p
    return r


def speculative_verify(
    draft: list[int],
    q: torch.Tensor | None,  # [K, V] or None for a point-mass drafter
    p: torch.Tensor,  # [K + 1, V]
    generator: torch.Generator,
) -> Verdict:
    """Modified rejection sampling. Uses K uniforms plus one draw for the emitted token."""
    k = len(draft)
    if k:
        idx = torch.arange(k, device=p.device)
        ids = torch.tensor(draft, device=p.device)
        px = p[idx, ids].double().cpu()  # [K]
        qx = q[idx, ids].double().cpu() if q is not None else torch.ones(k, dtype=torch.float64)
        u = uniform(k, generator)  # [K]
        rejected = (u * qx >= px).tolist()  # accept iff u < p/q
        for i in range(k):
            if rejected[i]:
                qi = q[i] if q is not None else None
                return Verdict(i, sample(residual(p[i], qi, draft[i]), generator))
    return Verdict(k, sample(p[k], generator))
