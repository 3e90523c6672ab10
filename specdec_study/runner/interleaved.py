"""The interleaved blocks of 04's timed sweeps (`experiments.context_sweep`: `context_sweep`,
`context_sweep_nocache`) and of its positive control (`experiments.implementations`), one loop
both reach through `Lab.interleaved_rows`.

The contexts are interleaved, not run in blocks: prompt by prompt, each prompt's contexts in a
seeded random order (`context_order`), each (prompt, context) block after its own short warm-up
of every arm on that block's prompt, with the arms paired and rotated as `paired` does. So a
drift in the machine's speed during the run spreads over every context instead of landing on
the contexts run last. Knows nothing about what the rows are summarized into.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from tqdm.auto import tqdm

from specdec_lib.measure.paired import Arm
from specdec_lib.models import LoadedModel
from specdec_study.runner.execute import Progress, paired
from specdec_study.runner.prompts import prompts_for
from specdec_study.runner.session import Session


def context_order(seed: int, prompt: int, contexts: Sequence[int]) -> list[int]:
    """The order prompt `prompt` runs its contexts in: a shuffle by a `random.Random` seeded
    from the config's seed and the prompt index (reproducible, different between prompts)."""
    order = list(contexts)
    random.Random(f"context order {seed} {prompt}").shuffle(order)
    return order


def sweep_blocks(cfg: dict[str, Any]) -> list[tuple[int, int, int]]:
    """(prompt, context, order) of every measured block in run order: prompts in the outer loop,
    each prompt's contexts (those with that many prompts) in `context_order`; `order` is the
    context's 0-based position in its prompt's order."""
    by_context = {c: int(cfg["n_prompts_by_context"][str(c)]) for c in cfg["contexts"]}
    blocks = []
    for i in range(max(by_context.values(), default=0)):
        mine = [c for c in cfg["contexts"] if i < by_context[c]]
        blocks += [(i, c, k) for k, c in enumerate(context_order(cfg["seed"], i, mine))]
    return blocks


def interleaved_rows(
    study: Session, loaded: LoadedModel, cfg: dict[str, Any], arms: list[Arm], on_row: Progress
) -> list[dict[str, Any]]:
    """The rows of every block of `sweep_blocks`, each block's arms paired after its warm-up
    (none with `warmup_tokens: 0`) and checkpointed under its context's segment and its prompt
    index; an arm of `n_prompts_by_arm` runs on the first of the prompts only. Returned by
    context, then prompt (their `order` column keeps the run order). The timed sweep's and the
    positive control's (`experiments.implementations`) one loop."""
    prompts = {
        c: prompts_for(
            study,
            loaded,
            cfg["n_prompts_by_context"][str(c)],
            c,
            anchor_min=cfg["anchor_min"],
            continuation_tokens=cfg.get("anchor_room", 0),
        )
        for c in cfg["contexts"]
    }
    warm = 1 if cfg["warmup_tokens"] > 0 else 0
    block_rows: dict[tuple[int, int], list[dict[str, Any]]] = {}
    fewer = cfg.get("n_prompts_by_arm") or {}
    for i, c, k in tqdm(sweep_blocks(cfg), desc=f"{cfg['experiment']} blocks"):
        block_rows[(c, i)] = paired(
            [a for a in arms if i < fewer.get(a.method.name, i + 1)],
            [prompts[c][i]],
            max_new_tokens=cfg["max_new_tokens"],
            warmup=warm,
            warmup_tokens=cfg["warmup_tokens"],
            progress=f"{cfg['experiment']} context {c}",
            on_row=on_row,
            extra_cols={"context": c, "order": k},
            indices=[i],
            bar=False,
        )
    return [r for c in cfg["contexts"] for i in range(len(prompts[c])) for r in block_rows[(c, i)]]
