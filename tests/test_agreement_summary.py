"""The agreement summary (`experiments.agreement`) on hand-built rows: the mean agreement over
documents, the acceptance implied by that mean at K, and each draft's change between contexts
over the documents both contexts measured (paired)."""

from __future__ import annotations

import pytest

from specdec_study.experiments.agreement import agreement_summary


def row(draft: str, doc: int, context: int, agreement: float) -> dict:
    return {"draft": draft, "prompt": doc, "context": context, "agreement": agreement,
            "positions": 8}  # fmt: skip


ROWS = [
    row("q8", 0, 10, 0.5),
    row("q8", 1, 10, 0.7),
    row("q8", 2, 10, 0.9),  # document 2 has no context-100 row: not in the paired change
    row("q8", 0, 100, 0.4),
    row("q8", 1, 100, 0.5),
]


def test_agreement_cells_and_paired_change_by_hand():
    """By hand at K = 4: context 10's mean over three documents is 0.7, implying (0.7 - 0.7^5) /
    (4 x 0.3) = 0.443275; context 100's mean 0.45; the paired change over documents 0 and 1 is
    (0.4 + 0.5) / 2 - (0.5 + 0.7) / 2 = -0.15 (unpaired means would give -0.25), and the implied
    acceptance's change implied(0.45) - implied(0.6). Planted bug it catches (seen failing): the
    implied acceptance as the mean of each document's implied acceptance (0.4838 at context 10,
    not 0.4433); by construction also a change over unpaired means (-0.25)."""
    s = agreement_summary(ROWS, [10, 100], k=4, test_range=(10, 100))
    c10, c100 = s["by_draft"]["q8"]["10"], s["by_draft"]["q8"]["100"]
    assert c10["mean"] == pytest.approx(0.7) and c10["n_documents"] == 3
    assert c10["implied_acceptance"] == pytest.approx((0.7 - 0.7**5) / (4 * 0.3))
    assert c100["mean"] == pytest.approx(0.45) and c100["n_documents"] == 2
    head = s["headline"]["q8"]
    assert head["first"] == pytest.approx(0.7) and head["last"] == pytest.approx(0.45)
    assert head["change"] == pytest.approx(-0.15)
    change = head["change_test"]
    assert change["contexts"] == [10, 100]
    implied = lambda a: (a - a**5) / (4 * (1 - a))  # noqa: E731
    assert change["implied_acceptance"]["value"] == pytest.approx(implied(0.45) - implied(0.6))
    assert s["n_documents"] == 3 and s["continuation_tokens"] == 8
    assert [(t["context"], t["agreement"]) for t in s["table"]] == [
        (10, pytest.approx(0.7)),
        (100, pytest.approx(0.45)),
    ]
