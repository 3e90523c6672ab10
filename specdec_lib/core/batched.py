"""The target's plain greedy continuations of many prompts at once: rows left-padded to one
length, an attention mask over the padding, position ids counted from each row's first real
token and one KV cache for the batch, so a step is one forward of B rows of one token each.

Decoding one sequence is bound by reading the weights (memory bandwidth), so B rows per step
cost about one row's time on a GPU until the arithmetic catches up: B continuations in about the
time of one. A row stops after an end-of-sequence id (it is fed `pad_id` from there, its output
cut after the EOS) or at `max_new_tokens`; the batch stops when every row has.

What it does not know: whether the batched logits equal the one-row logits bit for bit (padding
changes the shapes of the products; in float32 on the CPU the argmax agrees, tests/
test_batched.py; in bfloat16 an argmax near a tie may flip, which the agreement's
`target_vs_own_greedy` row measures), drafts, sampling or timing.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import torch
from transformers import DynamicCache

from specdec_lib.core.sampling import argmax_rows


def left_pad(prompts: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(ids, mask), both (B, L) with L the longest prompt: each prompt right-aligned after
    `pad_id`s, mask 1 on its tokens and 0 on the padding."""
    length = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), length), pad_id, dtype=torch.long)  # (B, L)
    mask = torch.zeros((len(prompts), length), dtype=torch.long)  # (B, L)
    for row, p in enumerate(prompts):
        if p:
            ids[row, length - len(p) :] = torch.tensor(list(p), dtype=torch.long)
            mask[row, length - len(p) :] = 1
    return ids, mask


def _positions(mask: torch.Tensor) -> torch.Tensor:
    """(B, L) position ids: 0 at each row's first real token, counting its real tokens (the
    padding gets 0; its keys are masked anyway)."""
    return (mask.cumsum(-1) - 1).clamp(min=0)


@torch.inference_mode()
def greedy_batch(
    model: torch.nn.Module,
    prompts: Sequence[Sequence[int]],
    max_new_tokens: int,
    *,
    pad_id: int,
    eos_ids: Collection[int] = (),
) -> list[list[int]]:
    """One batch: each prompt's greedy continuation (argmax of the target's logits over its
    whole vocabulary), up to `max_new_tokens` tokens and through its first EOS."""
    if any(not p for p in prompts):
        raise ValueError("greedy_batch: an empty prompt has no position to continue from")
    out: list[list[int]] = [[] for _ in prompts]
    if max_new_tokens <= 0 or not prompts:
        return out
    device = next(model.parameters()).device
    ids, mask = (t.to(device) for t in left_pad(prompts, pad_id))  # (B, L), (B, L)
    eos = torch.tensor(sorted(set(eos_ids)) or [-1], device=device)  # (E,)
    done = torch.zeros(len(prompts), dtype=torch.bool, device=device)  # (B,)
    cache = DynamicCache()
    step_ids, step_pos = ids, _positions(mask)  # (B, L) then (B, 1)
    for _ in range(max_new_tokens):
        logits = model(
            input_ids=step_ids,
            attention_mask=mask,  # (B, tokens so far): the padding masked in every step
            position_ids=step_pos,
            cache=cache,
            use_cache=True,
            logits_to_keep=1,  # the last position's logits only: (B, 1, V), not (B, L, V)
        ).logits  # (B, 1, V)
        nxt = argmax_rows(logits[:, -1, :])  # (B,)
        nxt = torch.where(done, torch.full_like(nxt, pad_id), nxt)
        for row, (tok, finished) in enumerate(zip(nxt.tolist(), done.tolist(), strict=True)):
            if not finished:
                out[row].append(int(tok))
        done |= torch.isin(nxt, eos)
        if bool(done.all()):
            break
        step_ids = nxt[:, None]  # (B, 1)
        step_pos = step_pos[:, -1:] + 1  # (B, 1)
        mask = torch.cat([mask, torch.ones_like(step_ids)], dim=-1)  # (B, tokens + 1)
    return out


def greedy_continuations(
    model: torch.nn.Module,
    prompts: Sequence[Sequence[int]],
    max_new_tokens: int,
    *,
    batch_size: int,
    pad_id: int,
    eos_ids: Collection[int] = (),
) -> list[list[int]]:
    """Every prompt's greedy continuation, `batch_size` prompts per batch (`greedy_batch`), in
    the prompts' order."""
    if batch_size < 1:
        raise ValueError(f"greedy_continuations: batch_size must be >= 1, got {batch_size}")
    out: list[list[int]] = []
    for start in range(0, len(prompts), batch_size):
        chunk = prompts[start : start + batch_size]
        out += greedy_batch(model, chunk, max_new_tokens, pad_id=pad_id, eos_ids=eos_ids)
    return out
