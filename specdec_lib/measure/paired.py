"""Running arms over prompts, paired and interleaved: every arm runs on the same prompts in the
same process; per prompt the arms run back to back in an order that rotates with the prompt
index, after a warm-up, so drift in the machine's speed hits all arms alike. One row per prompt x
arm (the columns are `results/SCHEMA.md`'s). Knows nothing about summaries or result files.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from tqdm.auto import tqdm

from specdec_lib.config import SamplingConfig, SpecConfig
from specdec_lib.core.cache import check_finite
from specdec_lib.core.decode import Generation
from specdec_lib.generate import Generator
from specdec_lib.measure.metrics import first_divergence, repeated_ngram_share

WARMUP_TOKENS = 8  # new tokens per arm in a warm-up: the prefill and a few draft-verify rounds


@dataclass(frozen=True)
class Method:
    """One arm of an experiment: a drafter spec and its K. The baseline is draft='none'."""

    name: str
    draft: str = "none"
    k: int = 4
    use_cache: bool = True


@dataclass
class Arm:
    """A method with the generator that runs it."""

    method: Method
    generator: Generator


@dataclass
class PromptRef:
    """What a row records of its prompt: ids plus where they came from."""

    ids: tuple[int, ...]
    article: int = -1
    anchor: int = -1
    context_tokens: int = -1


def as_prompt_ref(p: Any) -> PromptRef:
    """A PromptRef from a PromptRef, a data prompt (ids plus origin) or bare ids."""
    if isinstance(p, PromptRef):
        return p
    if hasattr(p, "ids"):
        return PromptRef(tuple(p.ids), p.article, p.anchor, p.context_tokens)
    return PromptRef(tuple(p))


def top2_margin(arm: Arm, ids: Sequence[int]) -> float:
    """The target's top-1 minus top-2 logit for the token after ids (uncached, one pass)."""
    model = arm.generator.target.model
    device = arm.generator.lm.device
    with torch.inference_mode():
        logits = (
            model(
                input_ids=torch.tensor([list(ids)], device=device),
                use_cache=False,
                logits_to_keep=1,
            )
            .logits[0, -1]
            .float()
        )
    check_finite(logits[None], arm.generator.lm.dtype)  # NaN would make a margin of nan, silently
    top = torch.topk(logits, 2).values
    return float(top[0] - top[1])


def prompt_row(
    i: int, ref: PromptRef, arm: Arm, gen: Generation, base: Generation
) -> dict[str, Any]:
    """The row of one arm on prompt i: its generation `gen` and statistics, and its token
    identity with the reference's generation `base` (where they diverge, at what top-2 margin
    of the target's logits; one uncached forward)."""
    st = gen.stats
    div = first_divergence(base.tokens, gen.tokens)
    margin = (
        top2_margin(arm, list(ref.ids) + base.tokens[:div])
        if div is not None and div < len(base.tokens)
        else None
    )
    return {
        "prompt": i,
        "article": ref.article,
        "anchor": ref.anchor,
        "context_tokens": ref.context_tokens,
        "prompt_tokens": len(ref.ids),
        "method": arm.method.name,
        "draft": arm.method.draft,
        "k": arm.method.k if arm.method.draft != "none" else 0,
        "use_cache": arm.method.use_cache,
        "new_tokens": st.new_tokens,
        "wall_s": st.wall_s,
        "tokens_per_s": st.new_tokens / st.wall_s if st.wall_s > 0 else float("nan"),
        "target_calls": st.target_calls,
        "proposed": st.proposed,
        "accepted": st.accepted,
        "acceptance_rate": st.acceptance_rate,
        "mean_accepted_length": st.mean_accepted_length,
        "draft_s": st.draft_s,
        "verify_s": st.verify_s,
        "prefill_s": st.prefill_s,
        "stopped_by": st.stopped_by,
        "identical": div is None,
        "divergence_pos": div,
        "divergence_margin": margin,
        "repetition_4gram": repeated_ngram_share(gen.tokens, 4, ref.ids),
        "accepted_lengths": list(st.accepted_lengths),  # lists: schema.LIST_COLUMNS
        "proposed_lengths": list(st.proposed_lengths),
        "tokens": list(gen.tokens),
    }


def run_paired(
    arms: Sequence[Arm],
    prompts: Sequence[Any],
    *,
    max_new_tokens: int,
    sampling: SamplingConfig = SamplingConfig(),
    warmup: int = 1,
    warmup_tokens: int = WARMUP_TOKENS,
    progress: str | None = None,
    on_row: Callable[[dict[str, Any]], None] | None = None,
    done: dict[int, list[dict[str, Any]]] | None = None,
    on_prompt: Callable[[int, Sequence[int], list[dict[str, Any]]], None] | None = None,
    indices: Sequence[int] | None = None,
) -> list[dict[str, Any]]:
    """Rows for every prompt x arm. arms[0] is the reference (baseline) for token identity.

    The warm-up runs every arm on the first `warmup` prompts for at most `warmup_tokens` new
    tokens. `indices` are the prompts' indices (default their positions 0..n-1): a row's
    `prompt`, the arms' rotation and the keys of `done` and `on_prompt` (a caller running one
    prompt at a time passes its index). `done` maps a prompt index to its rows from an earlier,
    interrupted run (a `Checkpoint`): those prompts are not run again; `on_prompt(i, ids, rows)`
    gets each prompt's rows once all arms ran it (to checkpoint them)."""
    refs = [as_prompt_ref(p) for p in prompts]
    index = list(range(len(refs))) if indices is None else [int(i) for i in indices]
    if len(index) != len(refs):
        raise ValueError(f"{len(index)} indices for {len(refs)} prompts")
    done = done or {}
    if all(i in done for i in index):
        warmup = 0  # nothing left to run
    for ref in refs[:warmup]:  # warm-up: caches, allocator, lazy init; not recorded
        for arm in arms:
            spec = SpecConfig(arm.method.k, min(warmup_tokens, max_new_tokens))
            arm.generator.generate_ids(list(ref.ids), spec, sampling)
    rows: list[dict[str, Any]] = []
    bar = tqdm(refs, desc=progress or "prompts", disable=progress is None)
    for i, ref in zip(index, bar, strict=True):
        if i in done:
            rows.extend(done[i])
            continue
        first_row = len(rows)
        order = [arms[(j + i) % len(arms)] for j in range(len(arms))]
        outs = {}
        for arm in order:  # every arm generates before any row is made (margins run after)
            spec = SpecConfig(arm.method.k, max_new_tokens)
            outs[arm.method.name] = arm.generator.generate_ids(list(ref.ids), spec, sampling)
        base = outs[arms[0].method.name]
        for arm in arms:
            row = prompt_row(i, ref, arm, outs[arm.method.name], base)
            rows.append(row)
            if on_row is not None:
                on_row(row)
        if on_prompt is not None:
            on_prompt(i, ref.ids, rows[first_row:])
    return rows


def teacher_forced_agreement(
    target_model: torch.nn.Module,
    predict: Callable[[list[int]], list[int]],
    prefix: Sequence[int],
    continuation: Sequence[int],
) -> float:
    """Share of continuation positions where the draft's next-token guess equals the target's
    argmax, both seeing prefix + continuation[:t] (no timing, no sampling, one pass each).

    predict(ids) returns the draft's guess after every prefix of ids (like argmax of logits).
    """
    ids = list(prefix) + list(continuation)
    device = next(target_model.parameters()).device
    with torch.inference_mode():
        logits = target_model(input_ids=torch.tensor([ids], device=device), use_cache=False).logits[
            0
        ]
    start = len(prefix) - 1  # position predicting continuation[0]
    target_next = logits[start : len(ids) - 1].argmax(-1).tolist()
    draft_next = predict(ids)[start : len(ids) - 1]
    agree = sum(int(a == b) for a, b in zip(target_next, draft_next, strict=True))
    return agree / len(target_next) if target_next else float("nan")
