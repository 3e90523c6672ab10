"""Committed notebooks carry no local absolute path, no progress-bar log and no warning; the
batch's scrub (specdec_study.environment.scrub) removes each of them and the Makefile runs it on
every notebook papermill writes.

Reads the committed notebooks' JSON only: no kernel, no model.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from specdec_study.environment import scrub

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = sorted([*ROOT.glob("results/*/notebooks/*.ipynb"), *ROOT.glob("notebooks/*.ipynb")])


def _nb(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _stream(text: str, name: str = "stderr") -> dict:
    return {"output_type": "stream", "name": name, "text": text}


def _code_cell(outputs: list[dict], source: str = "x = 1") -> dict:
    return {"cell_type": "code", "source": source, "metadata": {}, "outputs": outputs}


def test_there_are_committed_notebooks_to_check():
    assert any("results" in p.parts for p in COMMITTED) and any(
        p.parent.name == "notebooks" and p.parent.parent == ROOT for p in COMMITTED
    )


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: str(p.relative_to(ROOT)))
def test_committed_notebook_is_clean(path):
    found = scrub.problems(_nb(path))
    assert found == [], (
        f"{path.relative_to(ROOT)}: {found[:5]} (python -m "
        "specdec_study.environment.scrub NOTEBOOK cleans it)"
    )


def test_a_planted_local_path_in_a_committed_notebook_is_found():
    nb = _nb(ROOT / "results" / "embedded" / "notebooks" / "04_context_sweep.ipynb")
    assert scrub.problems(nb) == []
    planted = copy.deepcopy(nb)
    planted["cells"][-1].setdefault("outputs", []).append(
        _stream("wrote /home/someone/specdec/results/embedded/x.csv\n", "stdout")
    )
    planted["cells"][-1]["cell_type"] = "code"
    assert any("local path '/home/someone" in p for p in scrub.problems(planted))
    in_source = copy.deepcopy(nb)
    in_source["cells"][0]["source"] = "open('/work/main/data/x')"
    assert any("local path" in p for p in scrub.problems(in_source))


def test_progress_bars_and_warnings_are_found():
    nb = {"cells": [_code_cell([
        _stream("\rbaseline:  62%|██████▎   | 5/8 [00:11<00:06,  2.31s/it]"),
        _stream("/x/plots.py:35: UserWarning: No artists with labels found\n  ax.legend()\n"),
    ])], "metadata": {}}  # fmt: skip
    found = scrub.problems(nb)
    assert any("progress bar" in p for p in found)
    assert any("warning" in p for p in found)


def test_colab_content_path_in_the_set_up_instructions_is_allowed():
    nb = {"cells": [_code_cell([], "!git clone URL /content/specdec")], "metadata": {}}
    assert scrub.problems(nb) == []


def test_scrub_removes_progress_warnings_and_local_paths_and_keeps_the_rest():
    nb = {
        "cells": [
            _code_cell(
                [
                    _stream("\rLoading weights:   0%|          | 0/236 [00:00<?, ?it/s]"),
                    _stream(
                        "\rLoading weights: 100%|██████████| 236/236 [00:00<00:00, 868.94it/s]"
                    ),
                    _stream("\n"),
                    _stream(
                        "\n/work/wt/measure/specdec_lib/plots.py:35: UserWarning: No artists with "
                        "labels found to put in legend.\n  ax.legend(loc='upper left')\n"
                    ),
                    _stream(
                        "sweep: 78.4 s, written to /home/me/specdec/results/embedded/sweep\n",
                        "stdout",
                    ),
                    {
                        "output_type": "display_data",
                        "metadata": {},
                        "data": {"text/markdown": "see /tmp/build/figures/a.png"},
                    },
                ]
            )
        ],
        "metadata": {"papermill": {"output_path": "/work/main/results/embedded/notebooks/a"}},
    }
    clean = scrub.scrub(copy.deepcopy(nb))
    assert scrub.problems(clean) == []
    outs = clean["cells"][0]["outputs"]
    assert [o["output_type"] for o in outs] == ["stream", "display_data"]
    assert outs[0]["text"] == "sweep: 78.4 s, written to results/embedded/sweep\n"
    assert outs[1]["data"]["text/markdown"] == "see a.png"
    assert clean["metadata"]["papermill"]["output_path"] == "results/embedded/notebooks/a"
    assert clean["cells"][0]["source"] == nb["cells"][0]["source"]


def test_scrub_file_cleans_in_place_and_check_exits_nonzero_before(tmp_path, capsys):
    src = ROOT / "results" / "embedded" / "notebooks" / "01_baseline.ipynb"
    nb = _nb(src)
    code = next(c for c in nb["cells"] if c["cell_type"] == "code")
    code["outputs"].append(_stream("\rx:  50%|█████     | 1/2 [00:01<00:01,  1.00s/it]"))
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    assert scrub.main(["--check", str(path)]) == 1
    assert scrub.main([str(path)]) == 0
    assert scrub.main(["--check", str(path)]) == 0
    assert "cleaned" in capsys.readouterr().out


def test_scrub_refuses_a_file_that_is_not_a_notebook_in_one_line(tmp_path, capsys):
    bad = tmp_path / "x.ipynb"
    bad.write_text("not json", encoding="utf-8")
    assert scrub.main([str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a readable notebook" in err


def test_the_batch_scrubs_every_notebook_papermill_writes():
    make = (ROOT / "Makefile").read_text(encoding="utf-8")
    loop = make[make.index("_evaluate-locked:") :]
    loop = loop[: loop.index("done;")]
    assert loop.index("papermill") < loop.index("-m specdec_study.environment.scrub $(OUT_NB)/")
