"""The summary an experiment's rows give: its `arms` sections and its `headline` recomputed from
per_prompt.csv (with its config) by the functions its runner summarized the rows with, so that
a number the book states from summary.json is checked against the rows it summarizes, never
against the summary that states it (`reporting.claims`: an edited summary.json then differs).

What is not a function of the rows is taken from the summary as written and checked elsewhere:
the names of the arms that play a role (`headline.arm`), the peers' error, and the sampling
experiment's distribution check (its own samples are not in per_prompt.csv). Knows nothing
about torch or models: rows in, summary sections out.
"""

from __future__ import annotations

import math
from typing import Any

from specdec_study.results import catalog
from specdec_study.results.store import ExperimentResult


def row_dicts(res: ExperimentResult) -> list[dict[str, Any]]:
    """The result's per-prompt rows as the runner held them: dicts, an empty cell as None."""
    return [
        {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in r.items()}
        for r in res.rows.to_dict("records")
    ]


# experiment -> its summary from rows: an experiment module's declaration carries it
SUMMARIZED = {n: e.summarize for n, (_, e) in catalog.declared().items() if e.summarize is not None}

_CACHE: dict[int, tuple[ExperimentResult, dict[str, Any]]] = {}


def summary_from_rows(res: ExperimentResult | None, experiment: str) -> dict[str, Any]:
    """The summary sections (arms per cell, headline) that the result's rows give, as its
    runner computed them; {} without a result, for an experiment this module does not know, or
    for rows that lack what its runner summarized.
    Computed once per result read."""
    if res is None or experiment not in SUMMARIZED:
        return {}
    held = _CACHE.get(id(res))
    if held is not None and held[0] is res:
        return held[1]
    try:
        out = SUMMARIZED[experiment](row_dicts(res), res.config, res.summary)
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        # rows that do not hold what the runner summarized (a partial or hand-made result):
        # they give nothing, and each claim says it is read from the summary instead
        out = {}
    if len(_CACHE) > 64:
        _CACHE.clear()
    _CACHE[id(res)] = (res, out)
    return out
