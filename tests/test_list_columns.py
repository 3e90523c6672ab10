"""The list-valued per-prompt columns (`results.schema.LIST_COLUMNS`: accepted_lengths,
proposed_lengths, tokens, matches) are lists of ints in memory and one encoding in the CSV,
declared once: rows written from lists are the very bytes the text-valued rows gave, read back
as the same lists, and every committed CSV round-trips byte for byte."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

from specdec_study.results.schema import (
    LIST_COLUMNS,
    decode_list,
    decode_row,
    encode_list,
)
from specdec_study.results.store import Checkpoint, ResultStore, read_rows, write_rows

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = sorted((ROOT / "results").glob("*/*/*.csv"))


@pytest.mark.parametrize(
    ("column", "value", "text"),
    [
        ("accepted_lengths", [3, 0, 4, 1], "3 0 4 1"),
        ("proposed_lengths", [4], "4"),
        ("tokens", [691, 506, 2369], "691 506 2369"),
        ("matches", [1, 0, 0, 0, 1, 0, 0, 0], "10001000"),
        ("matches", [], ""),
        ("tokens", [], ""),
    ],
)
def test_a_list_is_its_columns_text_and_back(column, value, text):
    assert encode_list(column, value) == text
    assert decode_list(column, text) == value
    assert decode_list(column, value) == value  # a list passes


@pytest.mark.parametrize("empty", [None, math.nan, "", " "])
def test_an_empty_or_missing_cell_is_the_empty_list(empty):
    assert decode_list("tokens", empty) == []


def test_other_columns_and_encoded_text_pass_unchanged():
    assert encode_list("method", [1, 2]) == [1, 2]  # not a list column
    assert encode_list("tokens", "1 2") == "1 2"  # already text
    assert encode_list("tokens", None) is None  # left empty by the writer
    assert decode_row({"method": "a", "matches": "01"}) == {"method": "a", "matches": [0, 1]}


def _rows(listed: bool) -> list[dict]:
    def cell(column: str, value: list[int]) -> object:
        return value if listed else LIST_COLUMNS[column].join(map(str, value))

    return [
        {
            "prompt": i,
            "method": m,
            "accepted_lengths": cell("accepted_lengths", acc),
            "proposed_lengths": cell("proposed_lengths", prop),
            "tokens": cell("tokens", toks),
            "matches": cell("matches", [1, 0, i % 2]),
        }
        for i, (m, acc, prop, toks) in enumerate(
            [("baseline", [0, 0], [0, 0], [5, 6]), ("hf-greedy", [], [], [5, 7])]
        )
    ]


def test_rows_of_lists_are_written_as_the_text_rows_were_and_read_back_as_lists(tmp_path):
    write_rows(tmp_path / "lists.csv", _rows(listed=True))
    write_rows(tmp_path / "text.csv", _rows(listed=False))
    assert (tmp_path / "lists.csv").read_bytes() == (tmp_path / "text.csv").read_bytes()
    assert read_rows(tmp_path / "lists.csv").to_dict("records") == _rows(listed=True)


def test_a_checkpoint_gives_lists_back_whether_written_as_lists_or_as_text(tmp_path):
    ckpt = Checkpoint(ResultStore(tmp_path, "p"), "a", {"n": 2}, fresh=False)
    ckpt.add("seg", 0, [1, 2], [_rows(listed=True)[0]])
    old = {"segment": "seg", "prompt": 1, "ids": ckpt._ids_key([3, 4]), "rows": _rows(False)[1:]}
    with open(ckpt.path, "a", encoding="utf-8") as f:  # a line written before lists
        f.write(json.dumps(old) + "\n")
    again = Checkpoint(ResultStore(tmp_path, "p"), "a", {"n": 2}, fresh=False)
    done = again.done("seg", [[1, 2], [3, 4]])
    assert [done[0][0], done[1][0]] == _rows(listed=True)


@pytest.mark.skipif(not COMMITTED, reason="no committed results")
@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: "/".join(p.parts[-3:]))
def test_committed_csvs_round_trip_byte_for_byte_through_lists(path, tmp_path):
    """Every committed CSV, its list columns decoded to lists and written again, is the same
    file (other columns kept as the text they were)."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = [decode_row(r) for r in csv.DictReader(f)]
    assert any(isinstance(v, list) for r in rows for v in r.values()) or not (
        set(rows[0]) & set(LIST_COLUMNS)
    )
    write_rows(tmp_path / path.name, rows)
    assert (tmp_path / path.name).read_bytes() == path.read_bytes()
