"""04 (timing-free): teacher-forced agreement of every draft with the target at the same positions
for every context: fixed anchors in each eval document, only the visible prefix before the anchor
changing with the context. Two views, each a set of rows (`view`):

- "continuation" (H3's): the target's own greedy continuation g of `continuation_tokens` after
  the prompt, generated once per (document, context) by a lossless greedy run
  (`continuation_by`), or with `continuation_batch` B > 1 by plain greedy decoding of B
  documents per forward (`core.batched`: a profile for a GPU, where a batch costs about one
  sequence), then every draft teacher-forced along that same g: the 0/1 vector a greedy
  speculative run's acceptance is a function of (`analysis.replay`). A `target_vs_own_greedy`
  row checks that the target's teacher-forced argmax reproduces g (a batched g in bfloat16 may
  differ from it where an argmax is near a tie: that row counts how often).
- "text": the document's own next tokens teacher-forced, on the first `n_documents_text`
  documents (the earlier rounds' measure, kept as a second view).

Builds the config and the rows (`runner.teacher_forced`); the summary is `analysis.agreement`'s.
Resumable: each (document, context) is saved to the experiment's checkpoint as it finishes, so a
rerun after a lost runtime skips the finished ones (keyed by the window's token ids); a batch
holds only unfinished ones. The rows are published in (document, context) order either way. The
timed sweep does not read g: its runs are the timing, and `analysis.replay.replay_check` compares
their tokens with the g stored here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from tqdm.auto import tqdm

from specdec_lib.config import SamplingConfig, SpecConfig
from specdec_lib.core.batched import greedy_continuations
from specdec_lib.core.draft import Drafter
from specdec_lib.data import Prompt, article_token_ids
from specdec_lib.drafters.registry import parse
from specdec_lib.errors import SpecdecError
from specdec_lib.models import LoadedModel
from specdec_lib.models.pairing import eos_token_ids
from specdec_study.analysis.agreement import TEXT_CONTROL, agreement_summary
from specdec_study.analysis.replay import (
    CONSISTENCY,
    CONSISTENCY_KIND,
    CONTINUATION,
    TEXT,
    continuation_summary,
)
from specdec_study.results.store import ExperimentResult
from specdec_study.runner.execute import Progress, Run, execute
from specdec_study.runner.prompts import eval_articles, prompts_for
from specdec_study.runner.session import (
    Session,
    arm_name,
    base_config,
    get_drafter,
    load_target,
    make_arm,
)
from specdec_study.runner.teacher_forced import draft_kind, teacher_forced_guesses

READOUT = (
    "early exits and the self-draft read from the target's own forward (the same "
    "modules on the same inputs); other models one forward each"
)


def agreement_drafts(study: Session, e: dict[str, Any]) -> dict[str, str]:
    """Arm name -> spec of the agreement's drafts: the section's own `drafts`, else the
    profile's bigram and transformer drafts."""
    if e.get("drafts"):
        return {str(k): str(v) for k, v in e["drafts"].items()}
    d = study.profile["drafts"]
    return {arm_name(d["bigram"]): d["bigram"], arm_name(d["transformer"]): d["transformer"]}


def agreement_config(study: Session) -> dict[str, Any]:
    """04's config: contexts, documents per data kind, test range and the drafts compared."""
    e = study.exp("agreement")
    specs = agreement_drafts(study, e)
    ctxs = [int(c) for c in e["contexts"]]
    # a notebook's n_prompts override sets the number of documents too
    n_docs = int(study.overrides.get("n_prompts") or e.get("n_documents") or e.get("n_prompts"))
    n_text = int(e.get("n_documents_text") or n_docs)
    n_other = int(e.get("n_documents_other") or n_docs)
    test = [int(c) for c in e.get("test_range", [10, 100])]
    # continuation_batch B > 1: the continuation by plain greedy decoding of B documents per
    # forward (`core.batched`); the key is in the config only then, so that configs without it
    # keep their hash (and their stored results)
    batch = int(e.get("continuation_batch") or 1)
    if batch > 1 and e.get("continuation_by") not in (None, "none"):
        raise SpecdecError(
            f"agreement: continuation_batch {batch} decodes plain greedy; drop continuation_by "
            f"{e['continuation_by']!r} or the batch"
        )
    by = "none" if batch > 1 else str(e.get("continuation_by") or "best")
    cfg = {
        **base_config(study, "agreement"),
        "contexts": ctxs,
        "anchor_min": int(e.get("anchor_min") or max(ctxs)),
        "n_documents": n_docs,
        # the test range's contexts see every document; the others the first n_documents_other
        "n_documents_other": min(n_other, n_docs),
        "n_documents_text": min(n_text, n_docs),
        "text_contexts": [int(c) for c in e.get("text_contexts") or ctxs],
        # the lossless greedy run that produces the target's continuation (a preset's own K)
        "continuation_by": by,
        "continuation_k": int(parse(by).k or int(study.profile.get("k", 4))),
        "continuation_tokens": int(e["continuation_tokens"]),
        "primary": str(e.get("primary") or next(iter(specs))),
        "test_range": test,
        "arms": specs,
        **({"continuation_batch": batch} if batch > 1 else {}),
    }
    if cfg["primary"] not in specs:
        raise SpecdecError(f"agreement: primary draft {cfg['primary']!r} is not one of {specs}")
    return cfg


def run_agreement(study: Session) -> ExperimentResult:
    """04 (timing-free): agreement of every draft with the target at fixed anchors of each eval
    document, only the visible prefix before the anchor changing with the context. The main
    view replays the target's own greedy continuation (`continuation_tokens` tokens, written by
    the lossless `continuation_by` run): what a greedy speculative run is scored on, so its
    acceptance is a function of these rows. The second view teacher-forces the document's own
    next tokens, on the first `n_documents_text` documents at `text_contexts`."""
    cfg = agreement_config(study)
    return execute(study, "agreement", cfg, lambda on_row: _agreement(study, cfg, on_row))


def _agreement(study: Session, cfg: dict[str, Any], on_row: Progress) -> Run:
    loaded = load_target(study)
    T, ctxs = cfg["continuation_tokens"], cfg["contexts"]
    drafters = {m: get_drafter(study, loaded, s) for m, s in cfg["arms"].items()}
    kinds = {m: draft_kind(d, loaded.model) for m, d in drafters.items()}
    docs = prompts_for(
        study,
        loaded,
        cfg["n_documents"],
        max(ctxs),
        anchor_min=cfg["anchor_min"],
        continuation_tokens=T,
    )
    tokens = article_token_ids(loaded.tokenizer, eval_articles(study))
    bos = int(loaded.tokenizer.bos_token_id)
    todo = [(i, p, c) for i, p in enumerate(docs) for c in ctxs if _scored(cfg, i, c)]
    windows = {(i, c): _window(tokens[p.article], p.anchor, c, T, bos) for i, p, c in todo}
    bar = tqdm(total=len(todo), desc="agreement (documents x contexts)")
    checkpoint = on_row.checkpoint if isinstance(on_row, Progress) else None
    finished: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for i, _, c in todo:  # those an interrupted run finished: their rows, not logged again
        done = checkpoint.done(_segment(c), [windows[(i, c)][0]], [i]) if checkpoint else {}
        if i in done:
            finished[(i, c)] = done[i]
            bar.update(1)
    continue_ = _continuer(study, loaded, cfg)
    for chunk in _chunks([x for x in todo if (x[0], x[2]) not in finished], cfg):
        prompts = [_prompt(windows[(i, c)][0], T) for i, _, c in chunk]
        for (i, p, c), prompt, g in zip(chunk, prompts, continue_(prompts), strict=True):
            seq, cont = windows[(i, c)]
            new = _rows_at(loaded.model, drafters, kinds, prompt + g[:-1], g, i, p, c, CONTINUATION)
            if i < cfg["n_documents_text"] and c in cfg["text_contexts"]:
                new += _rows_at(loaded.model, drafters, kinds, seq, cont, i, p, c, TEXT)
            for row in new:
                on_row(row)
            if checkpoint is not None:
                checkpoint.add(_segment(c), i, seq, new)
            finished[(i, c)] = new
            bar.update(1)
    bar.close()
    rows = [r for i, _, c in todo for r in finished[(i, c)]]  # documents, then contexts
    summary = agreement_summary(
        [r for r in rows if r["view"] == TEXT],
        cfg["text_contexts"],
        k=cfg["k"],
        test_range=cfg["test_range"],
    )
    summary[CONTINUATION] = continuation_summary(
        [r for r in rows if r["view"] == CONTINUATION],
        ctxs,
        k=cfg["k"],
        test_range=cfg["test_range"],
    )
    summary["kinds"] = kinds
    summary["primary"] = cfg["primary"]
    summary["readout"] = READOUT
    extra = draft_extras(study, drafters)
    if extra:
        summary["draft_records"] = extra
    return Run(rows, summary)


def _prompt(seq: list[int], T: int) -> list[int]:
    """BOS + the context tokens before the anchor: the window without its last T - 1 tokens."""
    return seq[: len(seq) - (T - 1)]


def _segment(context: int) -> str:
    """The checkpoint segment of a context: a (document, context) is one checkpoint line."""
    return f"agreement context {context}"


Item = tuple[int, Prompt, int]  # (document index, its prompt, context)


def _chunks(todo: list[Item], cfg: dict[str, Any]) -> list[list[Item]]:
    """The order the continuations are generated in: one (document, context) at a time as
    listed, or with `continuation_batch` B > 1, each context's documents in batches of B (one
    context per batch, so its prompts have one length)."""
    size = int(cfg.get("continuation_batch", 1))
    if size <= 1:
        return [[x] for x in todo]
    out = []
    for c in cfg["contexts"]:
        mine = [x for x in todo if x[2] == c]
        out += [mine[s : s + size] for s in range(0, len(mine), size)]
    return out


def _continuer(
    study: Session, loaded: LoadedModel, cfg: dict[str, Any]
) -> Callable[[list[list[int]]], list[list[int]]]:
    """prompts -> the target's greedy continuation of each (`continuation_tokens`, through an
    EOS): the lossless `continuation_by` run one prompt at a time, or with
    `continuation_batch` > 1 plain greedy decoding of the whole batch (`core.batched`)."""
    T, size = int(cfg["continuation_tokens"]), int(cfg.get("continuation_batch", 1))
    if size > 1:
        pad = loaded.tokenizer.pad_token_id
        pad = int(pad if pad is not None else loaded.tokenizer.eos_token_id)
        eos = eos_token_ids(loaded)
        return lambda prompts: greedy_continuations(
            loaded.model, prompts, T, batch_size=size, pad_id=pad, eos_ids=eos
        )
    greedy = make_arm(study, loaded, "continuation", cfg["continuation_by"], cfg["continuation_k"])
    spec = SpecConfig(k=cfg["continuation_k"], max_new_tokens=T)
    return lambda prompts: [
        greedy.generator.generate_ids(p, spec, SamplingConfig()).tokens for p in prompts
    ]


def _scored(cfg: dict[str, Any], doc: int, context: int) -> bool:
    """Whether document `doc` is scored at `context`: every document in the test range, the
    first n_documents_other elsewhere."""
    return context in cfg["test_range"] or doc < cfg["n_documents_other"]


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
    doc: int,
    p: Prompt,
    context: int,
    view: str,
) -> list[dict[str, Any]]:
    """One row per draft at one document and context: which of the last T = len(cont)
    positions of seq each guessed as the reference did. The reference is the target's
    teacher-forced greedy token on the document's text (view TEXT; plus a `target_vs_text` row),
    or the continuation cont itself, the target's own greedy run (view CONTINUATION; plus a
    `target_vs_own_greedy` row: the target's teacher-forced argmax against cont)."""
    T = len(cont)
    target_next, guesses = teacher_forced_guesses(target, drafters, seq, T)
    if view == TEXT:
        reference, control = target_next, {"target_vs_text": list(cont)}
    else:
        reference, control = list(cont), {CONSISTENCY: target_next}
    rows = []
    for name, guess in {**guesses, **control}.items():
        match = [int(a == b) for a, b in zip(reference, guess, strict=True)]
        rows.append(
            {
                "view": view,
                "document": doc,
                "prompt": doc,
                "article": p.article,
                "anchor": p.anchor,
                "context": context,
                "draft": name,
                "kind": kinds.get(name, CONSISTENCY_KIND if name == CONSISTENCY else TEXT_CONTROL),
                "agree": sum(match),
                "positions": T,
                "agreement": sum(match) / T,
                "matches": match,  # lists: schema.LIST_COLUMNS
                "tokens": list(cont) if name == CONSISTENCY else [],  # g, on one row only
            }
        )
    return rows


def draft_extras(study: Session, drafters: dict[str, Any]) -> dict[str, Any]:
    """What a draft records about how it was made (the distilled draft's training record),
    copied into the results beside the agreement; empty when no draft has one."""
    out: dict[str, Any] = {}
    for name, d in drafters.items():
        rec = getattr(d, "training_record", None)
        rec = rec() if callable(rec) else rec
        if rec:
            out[name] = rec
    return out
