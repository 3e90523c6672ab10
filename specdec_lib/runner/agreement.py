"""04 (timing-free): teacher-forced agreement of every draft with the target on the documents'
real next tokens, at the same positions for every context: fixed anchors in each eval document,
the document's next `continuation_tokens` tokens teacher-forced, only the visible prefix before
the anchor changing with the context.

Builds the config and the rows (`runner.teacher_forced`); the summary is `analysis.agreement`'s.
"""

from __future__ import annotations

from typing import Any

import torch
from tqdm.auto import tqdm

from specdec_lib.analysis.agreement import TEXT_CONTROL, agreement_summary
from specdec_lib.core.draft import Drafter
from specdec_lib.data import Prompt, article_token_ids
from specdec_lib.errors import SpecdecError
from specdec_lib.results.store import ExperimentResult
from specdec_lib.runner.context import Study, arm_name, base_config, get_drafter, load_target
from specdec_lib.runner.execute import Progress, Run, execute
from specdec_lib.runner.prompts import eval_articles, prompts_for
from specdec_lib.runner.teacher_forced import draft_kind, teacher_forced_guesses

READOUT = (
    "early exits and the self-draft read from the target's own forward (the same "
    "modules on the same inputs); other models one forward each"
)


def agreement_drafts(S: Study, e: dict[str, Any]) -> dict[str, str]:
    """Arm name -> spec of the agreement's drafts: the section's own `drafts`, else the
    profile's bigram and transformer drafts."""
    if e.get("drafts"):
        return {str(k): str(v) for k, v in e["drafts"].items()}
    d = S.profile["drafts"]
    return {arm_name(d["bigram"]): d["bigram"], arm_name(d["transformer"]): d["transformer"]}


def agreement_config(S: Study) -> dict[str, Any]:
    e = S.exp("agreement")
    specs = agreement_drafts(S, e)
    ctxs = [int(c) for c in e["contexts"]]
    cfg = {
        **base_config(S, "agreement"),
        "contexts": ctxs,
        "anchor_min": int(e.get("anchor_min") or max(ctxs)),
        # a notebook's n_prompts override sets the number of documents too
        "n_documents": int(
            S.overrides.get("n_prompts") or e.get("n_documents") or e.get("n_prompts")
        ),
        "continuation_tokens": int(e["continuation_tokens"]),
        "primary": str(e.get("primary") or next(iter(specs))),
        "test_range": [int(c) for c in e.get("test_range", [10, 100])],
        "arms": specs,
    }
    if cfg["primary"] not in specs:
        raise SpecdecError(f"agreement: primary draft {cfg['primary']!r} is not one of {specs}")
    return cfg


def run_agreement(S: Study) -> ExperimentResult:
    """04 (timing-free): teacher-forced agreement of every draft with the target on the
    documents' real next tokens, at the same positions for every context: fixed anchors in
    each eval document, the document's next `continuation_tokens` tokens teacher-forced, only
    the visible prefix before the anchor changing with the context."""
    cfg = agreement_config(S)
    return execute(S, "agreement", cfg, lambda on_row: _agreement(S, cfg, on_row))


def _agreement(S: Study, cfg: dict[str, Any], on_row: Progress) -> Run:
    loaded = load_target(S)
    T, ctxs = cfg["continuation_tokens"], cfg["contexts"]
    drafters = {m: get_drafter(S, loaded, s) for m, s in cfg["arms"].items()}
    kinds = {m: draft_kind(d, loaded.model) for m, d in drafters.items()}
    docs = prompts_for(
        S,
        loaded,
        cfg["n_documents"],
        max(ctxs),
        anchor_min=cfg["anchor_min"],
        continuation_tokens=T,
    )
    tokens = article_token_ids(loaded.tokenizer, eval_articles(S))
    bos = int(loaded.tokenizer.bos_token_id)
    rows: list[dict[str, Any]] = []
    bar = tqdm(total=len(docs) * len(ctxs), desc="agreement (documents x contexts)")
    for i, p in enumerate(docs):
        for c in ctxs:
            seq, cont = _window(tokens[p.article], p.anchor, c, T, bos)
            for row in _rows_at(loaded.model, drafters, kinds, seq, cont, T, i, p, c):
                rows.append(row)
                on_row(row)
            bar.update(1)
    bar.close()
    summary = agreement_summary(rows, ctxs, k=cfg["k"], test_range=cfg["test_range"])
    summary["kinds"] = kinds
    summary["primary"] = cfg["primary"]
    summary["readout"] = READOUT
    extra = draft_extras(S, drafters)
    if extra:
        summary["draft_records"] = extra
    return Run(rows, summary)


def _window(
    art: list[int], anchor: int, context: int, T: int, bos: int
) -> tuple[list[int], list[int]]:
    """(seq, cont): BOS + the `context` tokens before the anchor + the first T - 1 of the T
    tokens after it, so that the last T positions of seq predict cont (the T tokens)."""
    cont = art[anchor : anchor + T]
    return [bos, *art[anchor - context : anchor], *cont[:-1]], cont


def _rows_at(
    target: torch.nn.Module,
    drafters: dict[str, Drafter],
    kinds: dict[str, str],
    seq: list[int],
    cont: list[int],
    T: int,
    doc: int,
    p: Prompt,
    context: int,
) -> list[dict[str, Any]]:
    """One row per draft (and one for the target against the text) at one document and
    context: which of the last T positions of seq each guessed as the target did."""
    target_next, guesses = teacher_forced_guesses(target, drafters, seq, T)
    rows = []
    for name, guess in {**guesses, "target_vs_text": list(cont)}.items():
        match = [int(a == b) for a, b in zip(target_next, guess, strict=True)]
        rows.append(
            {
                "document": doc,
                "prompt": doc,
                "article": p.article,
                "anchor": p.anchor,
                "context": context,
                "draft": name,
                "kind": kinds.get(name, TEXT_CONTROL),
                "agree": sum(match),
                "positions": T,
                "agreement": sum(match) / T,
                "matches": "".join(map(str, match)),
            }
        )
    return rows


def draft_extras(S: Study, drafters: dict[str, Any]) -> dict[str, Any]:
    """What a draft records about how it was made (the distilled draft's training record),
    copied into the results beside the agreement; empty when no draft has one."""
    out: dict[str, Any] = {}
    for name, d in drafters.items():
        rec = getattr(d, "training_record", None)
        rec = rec() if callable(rec) else rec
        if rec:
            out[name] = rec
    return out
