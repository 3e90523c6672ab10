"""Acceptance on the text a real run sees, by replay (04, timing-free).

A greedy speculative run emits the target's own greedy continuation g, and its draft proposes
from prefixes of g: when the first i drafted tokens of a call were accepted, the draft's next
input is exactly the prompt + g up to there, so its next proposal is its teacher-forced guess at
that position of g. The acceptance of a run with chain drafts of K is therefore a deterministic
function of one 0/1 vector, `matches[i]` = the draft's teacher-forced guess at position i of g
equals g[i] (`replay_chain`), with the same K per call as `core.decode.speculative_decode`
(min(K, tokens left - 1)). The runner measures the vectors (`view` = "continuation" rows of the
agreement experiment); this module turns them into accepted / proposed / calls per document and
into per-context cells and 10 -> 100 changes with paired bootstrap intervals over documents.

Scales of the change (rules.py decides on the first, declared before the numbers):
- `tokens_per_call`: new tokens / target calls at c1 over the same at c0 (time per token at a
  fixed cost per call is proportional to its inverse; what matters for speed);
- `acceptance`: accepted / proposed at c1 minus at c0 (points);
- `rejection_ratio`: (1 - acceptance at c1) / (1 - acceptance at c0);
- `agreement`: mean per-position agreement on g at c1 minus at c0.

Also the vocabulary of the agreement's rows: their views (`CONTINUATION`, `TEXT`) and the kinds
of draft (`SHARED`, `EXIT`, `SEPARATE`, `CONTROL`, and the two controls' rows).

Torch-free; knows nothing about models, drafts or files.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

import numpy as np

from specdec_study.analysis import stats
from specdec_study.analysis.changes import rate_change, ratio_change

CONTINUATION = "continuation"  # the `view` of rows scored on the target's greedy continuation
TEXT = "text"  # the `view` of rows scored on the document's own next tokens
CONSISTENCY = "target_vs_own_greedy"  # the target's teacher-forced argmax against its own g
CONSISTENCY_KIND = "control: the target's teacher-forced argmax against its own greedy run"
# how a draft relates to the target (the rows' `kind`; the runner reads it from the modules a
# draft shares with the target, `runner.teacher_forced.draft_kind`)
SHARED = "shares the target's hidden states"
EXIT = "early exit of the target (its attention stops early)"
SEPARATE = "a separate computation"
CONTROL = "context-free control"
TEXT_CONTROL = "control: the target against the real text"  # the target_vs_text row


@dataclass(frozen=True)
class Replay:
    """What a greedy chain run with K would count on one continuation."""

    accepted: int
    proposed: int
    calls: int  # verification calls (the prefill not counted)
    new_tokens: int


def replay_chain(matches: Sequence[int], k: int) -> Replay:
    """Replay a greedy chain run over one continuation of len(matches) tokens: each call drafts
    min(k, tokens left - 1), accepts the leading matches, and emits them plus one target token."""
    n, pos = len(matches), 0
    accepted = proposed = calls = 0
    while pos < n:
        k_eff = min(k, n - pos - 1)
        a = 0
        while a < k_eff and matches[pos + a]:
            a += 1
        accepted, proposed, calls = accepted + a, proposed + k_eff, calls + 1
        pos += a + 1
    return Replay(accepted, proposed, calls, n)


def per_document(
    rows: list[dict[str, Any]], draft: str, context: int, k: int
) -> dict[int, tuple[float, Replay]]:
    """Document -> (agreement, replay) of one draft at one context."""
    out = {}
    for r in rows:
        if r["draft"] == draft and int(r["context"]) == context:
            m = list(r["matches"])
            out[int(r["prompt"])] = (sum(m) / len(m) if m else math.nan, replay_chain(m, k))
    return out


def _arrays(per: dict[int, tuple[float, Replay]], docs: Sequence[int]) -> dict[str, np.ndarray]:
    def col(f):
        return np.array([f(per[d]) for d in docs], dtype=float)

    return {
        "agreement": col(lambda x: x[0]),
        "accepted": col(lambda x: x[1].accepted),
        "proposed": col(lambda x: x[1].proposed),
        "calls": col(lambda x: x[1].calls),
        "new_tokens": col(lambda x: x[1].new_tokens),
    }


def _named(iv: stats.Interval, key: str) -> dict[str, Any]:
    """{key, key_ci_low, key_ci_high} of one interval (a cell holds several)."""
    return {key: iv.value, f"{key}_ci_low": iv.low, f"{key}_ci_high": iv.high}


def replay_cell(per: dict[int, tuple[float, Replay]]) -> dict[str, Any]:
    """One draft at one context: mean agreement on g, pooled replayed acceptance and tokens
    per call, each with a bootstrap 95% interval over documents, and the counts."""
    a = _arrays(per, sorted(per))
    acc = stats.pooled_ratio(a["accepted"], a["proposed"])
    tpc = stats.pooled_ratio(a["new_tokens"], a["calls"])
    return {
        **_named(stats.mean(a["agreement"]), "agreement"),
        **_named(acc, "acceptance"),
        **_named(tpc, "tokens_per_call"),
        "n_documents": len(per),
        "accepted": int(a["accepted"].sum()),
        "proposed": int(a["proposed"].sum()),
        "calls": int(a["calls"].sum()),
        "new_tokens": int(a["new_tokens"].sum()),
    }


def _rej_ratio(a0, p0, a1, p1, axis=-1):
    return (1 - a1.sum(axis) / p1.sum(axis)) / (1 - a0.sum(axis) / p0.sum(axis))


def _mean_change(x0, x1, axis=-1):
    return x1.mean(axis) - x0.mean(axis)


def replay_change(
    per0: dict[int, tuple[float, Replay]], per1: dict[int, tuple[float, Replay]]
) -> dict[str, Any]:
    """The change from one context to another on the documents both have, on every scale
    (module docstring), each with a paired bootstrap 95% interval and its n."""
    docs = sorted(set(per0) & set(per1))
    if len(docs) < 2:
        nan = {"value": math.nan, "ci_low": math.nan, "ci_high": math.nan, "n": len(docs)}
        return {
            s: dict(nan) for s in ("tokens_per_call", "acceptance", "rejection_ratio", "agreement")
        }
    a, b = _arrays(per0, docs), _arrays(per1, docs)
    counts = [a["accepted"], a["proposed"], b["accepted"], b["proposed"]]
    return {
        "tokens_per_call": stats.bootstrap(
            [a["new_tokens"], a["calls"], b["new_tokens"], b["calls"]], ratio_change
        ).as_dict(),
        "acceptance": stats.bootstrap(counts, rate_change).as_dict(),
        "rejection_ratio": stats.bootstrap(counts, _rej_ratio).as_dict(),
        "agreement": stats.bootstrap([a["agreement"], b["agreement"]], _mean_change).as_dict(),
    }


class ContinuationSummary(TypedDict):
    """The agreement replayed on the target's own continuation (`continuation_summary`):
    cells per draft and context, changes and levels per draft, the target's self-consistency
    per context."""

    k: int
    contexts: list[int]
    test_range: list[int]
    n_documents: int
    continuation_tokens: int
    by_draft: dict[str, dict[str, dict[str, Any]]]
    changes: dict[str, dict[str, Any]]
    levels: dict[str, float | None]
    target_consistency: dict[str, dict[str, Any]]


def continuation_summary(
    rows: list[dict[str, Any]],
    contexts: Sequence[int],
    *,
    k: int,
    test_range: Sequence[int],
) -> dict[str, Any]:
    """Per draft and context the replayed cell, per draft the change over test_range (when both
    ends were measured) and its level (agreement at the range's first context); the target's
    consistency with its own greedy continuation (teacher-forced vs decoded), per context."""
    drafts = [d for d in dict.fromkeys(r["draft"] for r in rows) if d != CONSISTENCY]
    c0, c1 = (int(test_range[0]), int(test_range[1])) if len(test_range) == 2 else (0, 0)
    by_draft: dict[str, Any] = {}
    changes: dict[str, Any] = {}
    for d in drafts:
        per = {c: per_document(rows, d, c, k) for c in contexts}
        by_draft[d] = {str(c): replay_cell(per[c]) for c in contexts if per[c]}
        if per.get(c0) and per.get(c1):
            changes[d] = {"contexts": [c0, c1], **replay_change(per[c0], per[c1])}
    consistency = {}
    for c in contexts:
        cons = [r for r in rows if r["draft"] == CONSISTENCY and int(r["context"]) == c]
        if cons:
            agree = sum(int(r["agree"]) for r in cons)
            total = sum(int(r["positions"]) for r in cons)
            consistency[str(c)] = {"agree": agree, "positions": total, "share": agree / total}
    return {
        "k": k,
        "contexts": list(contexts),
        "test_range": [c0, c1],
        "n_documents": len({r["prompt"] for r in rows}),
        "continuation_tokens": max((int(r["positions"]) for r in rows), default=0),
        "by_draft": by_draft,
        "changes": changes,
        "levels": {d: by_draft[d].get(str(c0), {}).get("agreement") for d in drafts},
        "target_consistency": consistency,
    }


def replay_check(
    replay_rows: Sequence[dict[str, Any]],
    replay_arms: dict[str, str],
    timed_rows: Sequence[dict[str, Any]],
    timed_arms: dict[str, str],
    k: int,
) -> dict[str, Any]:
    """The replay against real timed runs of the same drafts (matched by spec) on the same
    documents, anchors and contexts: per draft, how many runs' accepted / proposed the replay
    reproduces exactly, and how many baseline runs emitted the very continuation the replay
    used. Only runs of the replay's length and K are comparable."""
    by_spec = {spec: name for name, spec in replay_arms.items()}
    key = lambda r: (int(r["article"]), int(r["anchor"]), int(r["context"]))  # noqa: E731
    replayed = {(r["draft"], *key(r)): r for r in replay_rows}
    # the continuation each (document, context) scored; a row without its tokens (an older or
    # hand-made file) cannot be compared and is left out
    g = {key(r): r["tokens"] for r in replay_rows if r["draft"] == CONSISTENCY and r.get("tokens")}
    out: dict[str, Any] = {"drafts": {}, "continuations": {"same": 0, "compared": 0}}
    for r in timed_rows:
        if int(r.get("k") or k) != k and r.get("draft") != "none":
            continue
        if r.get("method") == "baseline" and key(r) in g and r.get("tokens") is not None:
            out["continuations"]["compared"] += 1
            out["continuations"]["same"] += list(r["tokens"][: len(g[key(r)])]) == list(g[key(r)])
            continue
        name = by_spec.get(timed_arms.get(str(r.get("method")), ""))
        rep = replayed.get((name, *key(r))) if name else None
        if rep is None:
            continue
        m = list(rep["matches"])
        if int(r["new_tokens"]) != len(m):
            continue
        x = replay_chain(m, k)
        d = out["drafts"].setdefault(str(r["method"]), {"replay": name, "same": 0, "compared": 0})
        d["compared"] += 1
        d["same"] += (x.accepted, x.proposed) == (int(r["accepted"]), int(r["proposed"]))
    return out
