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

Resumable: each (document, context) is saved to the experiment's checkpoint as it finishes, so a
rerun after a lost runtime skips the finished ones (keyed by the window's token ids); a batch
holds only unfinished ones. The rows are published in (document, context) order either way. The
timed sweep does not read g: its runs are the timing, and `analysis.replay.replay_check` compares
their tokens with the g stored here.

The whole experiment: its declaration (notebook 04 is `context_sweep`'s), the shapes of its
config.json and summary.json, its config and run (given a `runner.lab.Lab`; the torch side stays
in the runner behind the Lab: the drafts and their kinds, the target's continuations
(`runner.continuations`), the teacher-forced guesses (`runner.teacher_forced`)), its summary (per
draft and context the mean per-position agreement with the target over documents and the
acceptance it implies at K, with bootstrap intervals and n, and each draft's paired change
between contexts; the continuation view's by `analysis.replay`) and its figures. Imports no
runner and no torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np
from tqdm.auto import tqdm

from specdec_lib.data import Prompt
from specdec_lib.drafters.registry import parse
from specdec_lib.errors import SpecdecError
from specdec_study.analysis import rules, stats
from specdec_study.analysis.replay import (
    CONSISTENCY,
    CONSISTENCY_KIND,
    CONTINUATION,
    SEPARATE,
    TEXT,
    TEXT_CONTROL,
    ContinuationSummary,
    continuation_summary,
)
from specdec_study.analysis.rules import implied_acceptance
from specdec_study.analysis.summary import Num
from specdec_study.reporting.earlier import earlier_recomputed
from specdec_study.reporting.figures import context_length as context_figures
from specdec_study.reporting.reading_lines import headline_table, shown_table
from specdec_study.results.declare import Experiment, Figure, StudyConfig, StudySummary

if TYPE_CHECKING:
    from specdec_study.results.store import ExperimentResult
    from specdec_study.runner.execute import Progress, Run
    from specdec_study.runner.lab import Lab

READOUT = (
    "early exits and the self-draft read from the target's own forward (the same "
    "modules on the same inputs); other models one forward each"
)


# --------------------------------------------------------------------------- shapes


class AgreementCell(TypedDict):
    """A draft's mean agreement at one context and the acceptance it implies (agreement_cell)."""

    mean: Num
    ci_low: Num
    ci_high: Num
    n: int
    ci_method: str
    n_documents: int
    implied_acceptance: Num
    implied_acceptance_ci_low: Num
    implied_acceptance_ci_high: Num


class AgreementRow(AgreementCell):
    """One (context, draft) row of the flat table: the cell, named."""

    context: int
    draft: str
    agreement: Num


class _HeadlineKeys(TypedDict):
    first: Num
    last: Num
    n_documents: int
    change_whole: dict[str, Any]
    change: Num
    change_ci_low: Num
    change_ci_high: Num


class DraftHeadline(_HeadlineKeys, total=False):
    """One draft's headline (`draft_headline`); `change_test` where both ends of the test range
    were measured."""

    change_test: dict[str, Any]


class _AgreementKeys(StudySummary):
    contexts: list[int]
    k: int
    test_range: list[int]
    continuation_tokens: int
    n_documents: int
    table: list[AgreementRow]
    by_draft: dict[str, dict[str, AgreementCell]]
    headline: dict[str, DraftHeadline]
    kinds: dict[str, str]
    readout: str


class AgreementSummary(_AgreementKeys, total=False):
    """04's agreement summary.json: the text view's (`agreement_summary`), the continuation's,
    and the runner's draft kinds, primary draft and readout; `draft_records` where a draft
    records how it was made (the distilled one). The runner always writes `continuation` and
    `primary`; a result from before them is read, and the book asks for a re-run."""

    continuation: ContinuationSummary
    primary: str
    draft_records: dict[str, Any]


class _AgreementConfigKeys(StudyConfig):
    contexts: list[int]
    anchor_min: int
    n_documents: int
    n_documents_other: int
    n_documents_text: int
    text_contexts: list[int]
    continuation_by: str
    continuation_k: int
    continuation_tokens: int
    test_range: list[int]


class AgreementConfig(_AgreementConfigKeys, total=False):
    """04's agreement's config (timing-free: documents, not timed prompts)."""

    primary: str  # absent from results configured before it was recorded
    continuation_batch: int  # only when > 1: plain greedy continuations, B documents a forward


# --------------------------------------------------------------------------- config and run


def agreement_drafts(lab: Lab, e: dict[str, Any]) -> dict[str, str]:
    """Arm name -> spec of the agreement's drafts: the section's own `drafts`, else the
    profile's bigram and transformer drafts."""
    if e.get("drafts"):
        return {str(k): str(v) for k, v in e["drafts"].items()}
    d = lab.profile["drafts"]
    return {
        lab.arm_name(d["bigram"]): d["bigram"],
        lab.arm_name(d["transformer"]): d["transformer"],
    }


def config(lab: Lab) -> dict[str, Any]:
    """04's agreement config: contexts, documents per data kind, test range and the drafts
    compared."""
    e = lab.section()
    specs = agreement_drafts(lab, e)
    ctxs = [int(c) for c in e["contexts"]]
    # a notebook's n_prompts override sets the number of documents too
    n_docs = int(lab.overrides.get("n_prompts") or e.get("n_documents") or e.get("n_prompts"))
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
        **lab.base_config(),
        "contexts": ctxs,
        "anchor_min": int(e.get("anchor_min") or max(ctxs)),
        "n_documents": n_docs,
        # the test range's contexts see every document; the others the first n_documents_other
        "n_documents_other": min(n_other, n_docs),
        "n_documents_text": min(n_text, n_docs),
        "text_contexts": [int(c) for c in e.get("text_contexts") or ctxs],
        # the lossless greedy run that produces the target's continuation (a preset's own K)
        "continuation_by": by,
        "continuation_k": int(parse(by).k or int(lab.profile.get("k", 4))),
        "continuation_tokens": int(e["continuation_tokens"]),
        "primary": str(e.get("primary") or next(iter(specs))),
        "test_range": test,
        "arms": specs,
        **({"continuation_batch": batch} if batch > 1 else {}),
    }
    if cfg["primary"] not in specs:
        raise SpecdecError(f"agreement: primary draft {cfg['primary']!r} is not one of {specs}")
    return cfg


def run(lab: Lab) -> ExperimentResult:
    """04 (timing-free): agreement of every draft with the target at fixed anchors of each eval
    document, only the visible prefix before the anchor changing with the context. The main
    view replays the target's own greedy continuation (`continuation_tokens` tokens, written by
    the lossless `continuation_by` run): what a greedy speculative run is scored on, so its
    acceptance is a function of these rows. The second view teacher-forces the document's own
    next tokens, on the first `n_documents_text` documents at `text_contexts`."""
    cfg = config(lab)
    return lab.execute(cfg, lambda on_row: _measure(lab, cfg, on_row))


def _measure(lab: Lab, cfg: dict[str, Any], on_row: Progress) -> Run:
    loaded = lab.load_target()
    T, ctxs = cfg["continuation_tokens"], cfg["contexts"]
    drafters = lab.drafters(loaded, cfg["arms"])
    kinds = lab.draft_kinds(loaded, drafters)
    docs = lab.prompts(
        loaded,
        cfg["n_documents"],
        max(ctxs),
        anchor_min=cfg["anchor_min"],
        continuation_tokens=T,
    )
    tokens = lab.article_tokens(loaded)
    bos = int(loaded.tokenizer.bos_token_id)
    todo = [(i, p, c) for i, p in enumerate(docs) for c in ctxs if _scored(cfg, i, c)]
    windows = {(i, c): _window(tokens[p.article], p.anchor, c, T, bos) for i, p, c in todo}
    bar = tqdm(total=len(todo), desc="agreement (documents x contexts)")
    checkpoint = getattr(on_row, "checkpoint", None)
    finished: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for i, _, c in todo:  # those an interrupted run finished: their rows, not logged again
        done = checkpoint.done(_segment(c), [windows[(i, c)][0]], [i]) if checkpoint else {}
        if i in done:
            finished[(i, c)] = done[i]
            bar.update(1)
    continue_ = lab.continuer(loaded, cfg)
    for chunk in _chunks([x for x in todo if (x[0], x[2]) not in finished], cfg):
        prompts = [_prompt(windows[(i, c)][0], T) for i, _, c in chunk]
        for (i, p, c), prompt, g in zip(chunk, prompts, continue_(prompts), strict=True):
            seq, cont = windows[(i, c)]
            new = _rows_at(lab, loaded, drafters, kinds, prompt + g[:-1], g, i, p, c, CONTINUATION)
            if i < cfg["n_documents_text"] and c in cfg["text_contexts"]:
                new += _rows_at(lab, loaded, drafters, kinds, seq, cont, i, p, c, TEXT)
            for row in new:
                on_row(row)
            if checkpoint is not None:
                checkpoint.add(_segment(c), i, seq, new)
            finished[(i, c)] = new
            bar.update(1)
    bar.close()
    rows = [r for i, _, c in todo for r in finished[(i, c)]]  # documents, then contexts
    summary = from_rows(rows, cfg, {})
    summary["kinds"] = kinds
    summary["primary"] = cfg["primary"]
    summary["readout"] = READOUT
    extra = draft_extras(drafters)
    if extra:
        summary["draft_records"] = extra
    return lab.result(rows, summary)


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
    lab: Lab,
    loaded: Any,
    drafters: dict[str, Any],
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
    target_next, guesses = lab.teacher_forced(loaded, drafters, seq, T)
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


def draft_extras(drafters: dict[str, Any]) -> dict[str, Any]:
    """What a draft records about how it was made (the distilled draft's training record),
    copied into the results beside the agreement; empty when no draft has one."""
    out: dict[str, Any] = {}
    for name, d in drafters.items():
        rec = getattr(d, "training_record", None)
        rec = rec() if callable(rec) else rec
        if rec:
            out[name] = rec
    return out


# --------------------------------------------------------------------------- summary


def _implied(a: np.ndarray, k: int) -> np.ndarray:
    """rules.implied_acceptance over an array of per-position agreements."""
    return np.vectorize(lambda x: implied_acceptance(float(x), k), otypes=[float])(a)


def _paired_mean_change(lo: np.ndarray, hi: np.ndarray, k: int) -> dict[str, dict[str, float]]:
    """The change hi - lo (documents paired) of the mean agreement and of the acceptance it
    implies at K = k, each with a bootstrap 95% interval resampling documents."""
    out = {}
    for key, f in (
        ("agreement", lambda a, b: b - a),
        ("implied_acceptance", lambda a, b: _implied(b, k) - _implied(a, k)),
    ):
        iv = stats.bootstrap(
            [lo, hi], lambda x, y, axis, f=f: f(np.mean(x, axis=axis), np.mean(y, axis=axis))
        )
        out[key] = iv.as_dict()
    return out


def per_document(rows: list[dict[str, Any]], draft: str, context: int) -> dict[int, float]:
    """Document -> one draft's agreement at one context."""
    return {
        int(r["prompt"]): float(r["agreement"])
        for r in rows
        if r["draft"] == draft and int(r["context"]) == context
    }


def agreement_cell(values: dict[int, float], k: int) -> dict[str, Any]:
    """The mean agreement over documents and the acceptance it implies at K, with intervals."""
    x = np.array(list(values.values()), dtype=float)
    iv = stats.mean(x)
    imp = stats.bootstrap([x], lambda v, axis: _implied(np.mean(v, axis=axis), k))
    return {
        **iv.as_dict("mean"),
        "n_documents": int(x.size),
        "implied_acceptance": imp.value,
        "implied_acceptance_ci_low": imp.low,
        "implied_acceptance_ci_high": imp.high,
    }


def draft_headline(
    cells: dict[str, Any],
    per: dict[int, dict[int, float]],
    contexts: list[int],
    test_range: Sequence[int],
    k: int,
) -> dict[str, Any]:
    """One draft's first and last mean, and its paired changes over the whole sweep and over
    test_range (when both ends were measured), documents paired."""
    head: dict[str, Any] = {
        "first": cells[str(contexts[0])]["mean"],
        "last": cells[str(contexts[-1])]["mean"],
        "n_documents": len(per[contexts[0]]),
    }
    spans = {"whole": (contexts[0], contexts[-1])}
    c0, c1 = (int(test_range[0]), int(test_range[1])) if len(test_range) == 2 else (0, 0)
    if c0 in per and c1 in per:
        spans["test"] = (c0, c1)
    for label, (a, b) in spans.items():
        common = sorted(set(per[a]) & set(per[b]))
        lo_v = np.array([per[a][i] for i in common], dtype=float)
        hi_v = np.array([per[b][i] for i in common], dtype=float)
        ch = _paired_mean_change(lo_v, hi_v, k) if common else {}
        head[f"change_{label}"] = {"contexts": [a, b], **ch}
    whole = head["change_whole"].get("agreement", {})
    head["change"] = whole.get("value")
    head["change_ci_low"] = whole.get("ci_low")
    head["change_ci_high"] = whole.get("ci_high")
    return head


def agreement_summary(
    rows: list[dict[str, Any]],
    contexts: list[int],
    *,
    k: int = 4,
    test_range: Sequence[int] = (10, 100),
) -> dict[str, Any]:
    """Per draft and context: mean per-position agreement over documents and the acceptance it
    implies at K (book/math.md), with bootstrap 95% intervals and n; per draft the paired change
    over test_range (the earlier study's 10 -> 100) and over the whole sweep."""
    drafts = list(dict.fromkeys(r["draft"] for r in rows))
    table, by_draft, headline = [], {}, {}
    for dname in drafts:
        per = {c: per_document(rows, dname, c) for c in contexts}
        by_draft[dname] = {str(c): agreement_cell(per[c], k) for c in contexts}
        for c in contexts:
            cell = by_draft[dname][str(c)]
            table.append({"context": c, "draft": dname, "agreement": cell["mean"], **cell})
        headline[dname] = draft_headline(by_draft[dname], per, contexts, test_range, k)
    return {
        "contexts": contexts,
        "k": k,
        "test_range": list(test_range),
        "continuation_tokens": max((int(r["positions"]) for r in rows), default=0),
        "n_documents": len({r["prompt"] for r in rows}),
        "table": table,
        "by_draft": by_draft,
        "headline": headline,
    }


def from_rows(
    rows: list[dict[str, Any]], cfg: dict[str, Any], stated: dict[str, Any]
) -> dict[str, Any]:
    """The summary the rows give (the run's, and `analysis.from_rows`'): the text view's
    (`agreement_summary`, at `text_contexts`) with the continuation view's under
    `continuation` (`analysis.replay.continuation_summary`); the draft kinds, primary draft
    and readout are the run's, not the rows'."""
    out = agreement_summary(
        [r for r in rows if r.get("view") == TEXT],
        cfg["text_contexts"],
        k=cfg["k"],
        test_range=cfg["test_range"],
    )
    out[CONTINUATION] = continuation_summary(
        [r for r in rows if r.get("view") == CONTINUATION],
        cfg["contexts"],
        k=cfg["k"],
        test_range=cfg["test_range"],
    )
    return out


# --------------------------------------------------------------------------- figures


def agreement_vs_context(summary: dict[str, Any], rows: Sequence[dict[str, Any]]) -> Any:
    """Each draft's teacher-forced agreement and implied acceptance against context, and its
    change from context 10 to 100, beside the earlier study's acceptance."""
    return context_figures.agreement_vs_context(summary, published=earlier_recomputed())


def ladder_dose_response(summary: dict[str, Any], rows: Sequence[dict[str, Any]]) -> Any:
    """Scatter of each draft's agreement level against its change in tokens per call from
    context 10 to 100, with the threshold and the earlier study's pair."""
    cont = summary.get("continuation") or {}
    own = {d for d, k in (summary.get("kinds") or {}).items() if k == SEPARATE}
    levels = {d: v for d, v in (cont.get("levels") or {}).items() if d in own}
    return context_figures.ladder_dose_response(
        cont,
        own,
        (rules.published_level(), rules.published_ratio()),
        rules.MATERIAL_RATIO,
        decisive=rules.decisive_draft(levels),
    )


def replay_vs_context(summary: dict[str, Any], rows: Sequence[dict[str, Any]]) -> Any:
    """Each draft's replayed tokens per call and acceptance against context length."""
    return context_figures.replay_vs_context(summary.get("continuation") or {})


# --------------------------------------------------------------------------- declaration

# this result directory's section of results/SCHEMA.md (`make notebooks` writes it there)
SCHEMA = """\
Timing-free teacher-forced agreement (H3), in two views (`view`). `n_documents` eval documents,
each with one anchor fixed for every context (`make_prompts(..., anchor_min=max(contexts),
continuation_tokens=T)`); at every context only the visible prefix (BOS + the `context` tokens
before the anchor) changes. Per position, a draft agrees when its greedy next token equals the
reference. One target forward per (document, context, view); drafts that are the target's first L
layers + final norm + a head (early exits, the self-draft) are read from that forward's layer-L
output; other model drafts run one forward each.
- `view` = `continuation` (H3's; every document): the reference is the target's own greedy
  continuation g of T tokens after the prompt, generated by the lossless greedy run
  `continuation_by` (a spec or preset, with `continuation_k`), or, where the config has
  `continuation_batch` B (only when B > 1: the colab profiles), by plain greedy decoding of B
  documents per forward, left-padded under an attention mask (`continuation_by` is then `none`);
  every model sees the prompt + g so far. A greedy chain run's accepted / proposed / calls are
  a function of the draft's `matches` here (`analysis/replay.py`). The `target_vs_own_greedy`
  row is the target's teacher-forced argmax against g (a consistency check), and carries g in
  `tokens`.
- `view` = `text` (the first `n_documents_text` documents): the document's own next T tokens are
  teacher-forced; the reference is the target's greedy token; `target_vs_text` is the target
  against the real next token.
- config: `contexts`, `n_documents`, `n_documents_text`, `continuation_by`, `continuation_k`,
  `continuation_tokens`, `anchor_min`, `primary`, `test_range` (`[10, 100]`), `arms` (arm -> spec);
  `continuation_batch` only where it is > 1.
- per_prompt.csv: one row per view x document x context x draft: `view`, `document` (= `prompt`),
  `article`, `anchor`, `context`, `draft` (arm name or a control row), `kind`, `agree`,
  `positions` (T, or fewer when g stopped at EOS), `agreement` (agree / positions), `matches` (one
  0/1 character per position, in order), `tokens` (g, on the `target_vs_own_greedy` row only).
- summary (the text view, as before): `contexts`, `k`, `test_range`, `continuation_tokens`,
  `n_documents`, `primary`, `kinds` (arm -> `shares the target's hidden states` | `early exit of
  the target (its attention stops early)` | `a separate computation` | `context-free control`),
  `readout`; `table` rows and `by_draft[arm]["<context>"]`: `mean`, `ci_low`, `ci_high`,
  `n_documents`, `implied_acceptance` (+ `_ci_low`, `_ci_high`); `headline[arm]`: `first`,
  `last`, `n_documents`, `change_test` and `change_whole` (`contexts`, `agreement` and
  `implied_acceptance` as `{value, ci_low, ci_high, n}`), `change`/`change_ci_low`/
  `change_ci_high`. `draft_records`: arm -> the draft's training record, when any.
- summary `continuation` (the replay): `k`, `contexts`, `test_range`, `n_documents`,
  `continuation_tokens`; `by_draft[arm]["<context>"]`: `agreement`, `acceptance` and
  `tokens_per_call` each with `_ci_low`/`_ci_high` (bootstrap over documents), `n_documents`, and
  the pooled counts `accepted`, `proposed`, `calls`, `new_tokens`; `changes[arm]`: `contexts`
  [lo, hi] and `tokens_per_call` (ratio hi / lo: H3's Q), `acceptance` (difference),
  `rejection_ratio`, `agreement` (difference), each `{value, ci_low, ci_high, n, ci_method}`,
  paired over documents; `levels[arm]` (agreement at lo: the ladder's x); `target_consistency
  ["<context>"]`: `agree`, `positions`, `share`.
"""


def reading_headline(summary: dict[str, Any], config: dict[str, Any]) -> list[str]:
    """The reading's headline: each draft's agreement at the lowest and highest context."""
    return headline_table(summary, "agreement", "context", "agreement")


def reading_showed(summary: dict[str, Any]) -> list[str]:
    """What it showed: whether each draft's agreement intervals at those contexts overlap."""
    return shown_table(summary, "agreement", "context")


agreement = Experiment(
    "agreement",
    "teacher-forced agreement of draft and target on the same positions (no timing)",
    schema=SCHEMA,
    summary=AgreementSummary,
    config_shape=AgreementConfig,
    figures=(
        Figure(
            "agreement_vs_context.png",
            "Teacher-forced agreement: the share of positions where draft and "
            "target pick the same next token from the same true prefix (whiskers: 95% "
            "intervals); right, the acceptance at K = 4 it implies, beside the earlier study's "
            "reported acceptance. No timing enters it; a fall with context would be the "
            "divergence the earlier study proposed.",
            draw=agreement_vs_context,
        ),
        Figure(
            "replay_vs_context.png",
            "Tokens per target call (left) and acceptance (right) at K = 4 of every draft, "
            "replayed on the target's own greedy continuation: exactly what a greedy run with "
            "that draft counts (whiskers: 95% intervals over documents).",
            draw=replay_vs_context,
        ),
        Figure(
            "ladder_dose_response.png",
            "The ladder of drafts: agreement at context 10 on the target's own continuation "
            "(x) against the change in tokens per call from context 10 to 100 (y, 95% "
            "whiskers). Below the dotted line is a material fall under H3's rule; the star is "
            "the earlier study's pair, its level implied by its acceptance; the ringed draft "
            "decides H3.",
            draw=ladder_dose_response,
        ),
    ),
    build_config=config,
    run=run,
    summarize=from_rows,
    headline=reading_headline,
    showed=reading_showed,
)
