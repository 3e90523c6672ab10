"""Cell values of a book table (`reporting.tables.k_sweep_table`) from a hand-made summary: each
column shows its own field, rounded as printed, rows in K order, with n from the config."""

from __future__ import annotations

from types import SimpleNamespace

from specdec_lib.reporting.tables import k_sweep_table


def row(k: int, speedup: float) -> dict:
    return {
        "k": k,
        "method": f"self{k}",
        "speedup": speedup,
        "speedup_ci_low": speedup - 0.1,
        "speedup_ci_high": speedup + 0.2,
        "predicted_speedup_leviathan": 2.345 + k,
        "predicted_speedup_calibrated": None,
        "acceptance_rate": 0.4567,
        "per_token_acceptance_iid": 0.81234,
        "cost_ratio": 0.1,
        "mean_accepted_length": 2.0 + k,
    }


def test_k_sweep_table_cells_by_hand():
    """Planted bugs it catches (each seen failing): the Leviathan column showing the calibrated
    prediction, the rows left in stored order (K 4 before K 2)."""
    res = SimpleNamespace(summary={"table": [row(4, 1.5), row(2, 1.25)]}, config={"n_prompts": 6})
    p = SimpleNamespace(get=lambda e: res if e == "k_sweep" else None)
    t = k_sweep_table(p).to_dict("records")
    assert [r["K"] for r in t] == ["2", "4"] and t[0]["arm"] == "self2"
    assert t[0]["measured speedup (95% CI)"] == "1.25x [1.15, 1.45], n=6"
    assert t[1]["predicted (Leviathan)"] == "6.35x" and t[1]["predicted (calibrated)"] == "n/a"
    assert t[0]["acceptance rate"] == "45.7%" and t[0]["a (i.i.d. fit)"] == "0.812"
    assert t[0]["c"] == "0.100" and t[1]["mean accepted length"] == "6.00"
    assert k_sweep_table(SimpleNamespace(get=lambda e: None)) is None
