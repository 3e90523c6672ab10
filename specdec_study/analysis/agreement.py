"""Teacher-forced agreement (04, timing-free): per draft and context the mean per-position
agreement with the target over documents and the acceptance it implies at K, with bootstrap
intervals and n, and each draft's paired change between contexts; and the names of how a draft
relates to the target (`SHARED`, `EXIT`, `SEPARATE`, `CONTROL`), which the runner decides;
and the summary's declared shape (`AgreementSummary`).

Torch-free; knows nothing about models or how the agreement rows were measured.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypedDict

import numpy as np

from specdec_study.analysis import stats
from specdec_study.analysis.replay import ContinuationSummary
from specdec_study.analysis.rules import implied_acceptance
from specdec_study.analysis.summary import Num
from specdec_study.results.declare import Experiment, Figure, StudyConfig, StudySummary

SHARED = "shares the target's hidden states"
EXIT = "early exit of the target (its attention stops early)"
SEPARATE = "a separate computation"
CONTROL = "context-free control"
TEXT_CONTROL = "control: the target against the real text"  # the target_vs_text row


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

agreement = Experiment(
    "agreement",
    "teacher-forced agreement of draft and target on the same positions (no timing)",
    call="study.run_agreement(study_run)",
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
        ),
        Figure(
            "replay_vs_context.png",
            "Tokens per target call (left) and acceptance (right) at K = 4 of every draft, "
            "replayed on the target's own greedy continuation: exactly what a greedy run with "
            "that draft counts (whiskers: 95% intervals over documents).",
        ),
        Figure(
            "ladder_dose_response.png",
            "The ladder of drafts: agreement at context 10 on the target's own continuation "
            "(x) against the change in tokens per call from context 10 to 100 (y, 95% "
            "whiskers). Below the dotted line is a material fall under H3's rule; the star is "
            "the earlier study's pair, its level implied by its acceptance; the ringed draft "
            "decides H3.",
        ),
    ),
)
