"""Cell values of the book's tables (`reporting.tables`) from hand-made summaries: each column
shows its own field, rounded as printed, rows in the order the book shows them, with the n each
interval rests on."""

from __future__ import annotations

from types import SimpleNamespace

from specdec_study.reporting.identity import identity_table
from specdec_study.reporting.sampling_tables import sampling_table
from specdec_study.reporting.tables import headline_table, k_sweep_table, peers_table, study_table


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


# ------------------------------------------------------------------- the book's other tables


def profile(**results) -> SimpleNamespace:
    """A profile whose get(experiment) returns the given stand-in results (None otherwise)."""
    return SimpleNamespace(get=lambda e: results.get(e))


def result(summary: dict, config: dict | None = None) -> SimpleNamespace:
    """A stand-in ExperimentResult: summary, config, and the arms and role lookups tables use."""
    return SimpleNamespace(
        summary=summary,
        config=config or {},
        arms=summary.get("arms") or {},
        role=lambda r: (summary.get("roles") or {}).get(r),
    )


def interval(value: float, lo: float, hi: float, **n) -> dict:
    return {"value": value, "ci_low": lo, "ci_high": hi, **n}


def test_headline_table_cells_by_hand():
    """One row per draft arm, the bigram experiment's before the transformer draft's, each
    column its own field: speedup and mean accepted length to 2 decimals, acceptance as a
    percentage to 1 with its own n (5) before the arm's (6), c to 3, identity to 0.
    Planted bugs it catches (each seen failing): the acceptance column printing the speedup's
    interval, the arm's prompts overriding an interval's own n."""
    bigram = {
        "k": 4,
        "n_prompts": 6,
        "speedup": interval(1.234, 1.1, 1.4),
        "acceptance_rate": interval(0.4567, 0.4, 0.5, n=5),
        "mean_accepted_length": interval(2.346, 2.0, 2.5),
        "cost_ratio": 0.12345,
        "identical_fraction": 0.5,
    }
    self_ = {**bigram, "k": 3, "speedup": interval(0.987, 0.9, 1.05), "identical_fraction": 1.0}
    base = {"k": 0, "n_prompts": 6}
    p = profile(
        bigram=result({"arms": {"baseline": base, "bigram": bigram}}),
        transformer_draft=result({"arms": {"baseline": base, "self": self_}}),
    )
    t = headline_table(p).to_dict("records")
    assert [r["arm (experiment)"] for r in t] == ["bigram (bigram)", "self (transformer_draft)"]
    assert t[0] == {
        "arm (experiment)": "bigram (bigram)",
        "K": "4",
        "prompts": "6",
        "speedup": "1.23x [1.10, 1.40], n=6",
        "acceptance rate": "45.7% [40.0, 50.0], n=5",
        "mean accepted length": "2.35 [2.00, 2.50], n=6",
        "c": "0.123",
        "identical": "50%",
    }
    assert t[1]["K"] == "3" and t[1]["speedup"] == "0.99x [0.90, 1.05], n=6"
    assert t[1]["identical"] == "100%"
    assert headline_table(profile()) is None


def test_sampling_table_cells_by_hand():
    """Per temperature and arm in the stored order; the baseline shows no speedup, acceptance
    or unverified TVD; a check found under another spelling of the temperature ("0.70"); the
    samples as the check's own count, else samples per prompt x prompts (2 x 50 = 100); an arm
    without a check shows '-' in every check column.
    Planted bugs it catches (each seen failing): the p-value column printing the TVD, the
    samples fallback taken as per-prompt samples alone (50), the baseline given a speedup."""
    table = [
        {"temperature": 0.7, "method": "baseline", "speedup": None, "acceptance_rate": None},
        {
            "temperature": 0.7,
            "method": "self",
            "speedup": 1.456,
            "speedup_ci_low": 1.2,
            "speedup_ci_high": 1.7,
            "acceptance_rate": 0.6789,
        },
        {"temperature": 0.7, "method": "ngram", "speedup": 1.1, "acceptance_rate": 0.25},
    ]
    check = {"tvd": 0.0456, "p_value": 0.5432, "detectable_tvd": 0.2109}
    dist = {
        "0.70": {
            "n_samples_per_prompt": 50,
            "n_prompts": 2,
            "baseline": {**check, "n_samples": 100},
            "self": {**check, "tvd": 0.0987, "p_value": 0.0012, "tvd_unverified": 0.3456},
        }
    }
    res = result(
        {"table": table, "distribution_check": dist, "roles": {"transformer": "self"}},
        {"n_prompts": 4},
    )
    t = sampling_table(profile(sampling=res)).to_dict("records")
    assert [r["arm"] for r in t] == ["baseline", "self", "ngram"]
    assert t[0] == {
        "temperature": "0.7",
        "arm": "baseline",
        "speedup (95% CI)": "-",
        "acceptance rate": "-",
        "first-token samples": "100",
        "first-token TVD": "0.046",
        "chi-square p": "0.543",
        "detectable TVD (80% power)": "0.211",
        "TVD if unverified": "-",
    }
    assert t[1]["speedup (95% CI)"] == "1.46x [1.20, 1.70], n=4"
    assert t[1]["acceptance rate"] == "67.9%" and t[1]["first-token samples"] == "100"
    assert t[1]["first-token TVD"] == "0.099" and t[1]["chi-square p"] == "0.001"
    assert t[1]["TVD if unverified"] == "0.346"
    assert t[2]["speedup (95% CI)"] == "1.10x" and t[2]["acceptance rate"] == "25.0%"
    assert {t[2][c] for c in list(t[2])[4:]} == {"-"}


def test_sampling_table_reads_an_old_result_s_single_speculative_check():
    """A result written before every arm was checked keeps its one check under "speculative":
    it belongs to the transformer role's arm, and to no other arm."""
    table = [
        {"temperature": 1.0, "method": "self", "speedup": 1.5, "acceptance_rate": 0.5},
        {"temperature": 1.0, "method": "ngram", "speedup": 1.2, "acceptance_rate": 0.4},
    ]
    dist = {"1.0": {"n_samples_per_prompt": 30, "n_prompts": 3, "speculative": {"tvd": 0.1}}}
    res = result({"table": table, "distribution_check": dist, "roles": {"transformer": "self"}})
    t = sampling_table(profile(sampling=res)).to_dict("records")
    assert t[0]["first-token TVD"] == "0.100" and t[0]["first-token samples"] == "90"
    assert t[1]["first-token TVD"] == "-"


def test_peers_table_cells_by_hand():
    """Each column its own field, in the stored order: tokens/s to 1 decimal without a suffix,
    the speedup over our baseline with its interval, over HF greedy without one, identities to
    0 decimals; n from the row, else the config.
    Planted bugs it catches (each seen failing): the two identity columns swapped, the speedup
    over HF greedy printed in the speedup-over-ours column."""
    rows = [
        {
            "method": "ngram",
            "implementation": "ours",
            "tokens_per_s": 123.46,
            "tokens_per_s_ci_low": 110.0,
            "tokens_per_s_ci_high": 130.06,
            "speedup": 1.876,
            "speedup_ci_low": 1.5,
            "speedup_ci_high": 2.0,
            "speedup_vs_hf_greedy": 2.504,
            "identical_to_baseline": 1.0,
            "identical_to_hf_greedy": 0.75,
            "n_prompts": 4,
        },
        {"method": "hf-greedy", "implementation": "hf", "tokens_per_s": 50.0, "speedup": 0.75},
    ]
    res = result({"table": rows}, {"n_prompts": 8})
    t = peers_table(profile(peers=res)).to_dict("records")
    assert t[0] == {
        "method": "ngram",
        "implementation": "ours",
        "tokens/s (median, 95% CI)": "123.5 [110.0, 130.1], n=4",
        "speedup vs our baseline": "1.88x [1.50, 2.00], n=4",
        "speedup vs HF greedy": "2.50x",
        "identical to our greedy": "100%",
        "identical to HF greedy": "75%",
    }
    assert t[1]["method"] == "hf-greedy" and t[1]["tokens/s (median, 95% CI)"] == "50.0"
    assert t[1]["speedup vs our baseline"] == "0.75x" and t[1]["identical to HF greedy"] == "n/a"


def test_identity_table_cells_by_hand():
    """Per dtype: the divergences are the finite first-difference positions (2 of 3 listed),
    their median position (3, 7 -> 5), the median and largest top-2 margin among the finite
    ones (0.01, 0.03 -> 0.020, 0.030); a dtype without divergences shows '-'.
    Planted bugs it catches (each seen failing): the smallest margin printed as the largest,
    non-finite positions counted as divergences."""
    ident = {
        "float32": {
            "dtype": "float32",
            "n_prompts": 4,
            "max_new_tokens": 16,
            "identical_fraction": 0.5,
            "divergence_positions": [3, 7, None],
            "divergence_margins": [0.03, 0.01, float("nan")],
        },
        "float64": {"n_prompts": 4, "max_new_tokens": 16, "identical_fraction": 1.0},
    }
    res = result({"identity_by_dtype": ident})
    t = identity_table(profile(transformer_draft=res)).to_dict("records")
    assert t[0] == {
        "dtype": "float32",
        "prompts": "4",
        "new tokens": "16",
        "identical to greedy baseline": "50%",
        "divergences": "2",
        "median position of first difference": "5",
        "median top-2 margin there": "0.020",
        "largest margin there": "0.030",
    }
    assert t[1]["dtype"] == "float64" and t[1]["identical to greedy baseline"] == "100%"
    assert t[1]["divergences"] == "0" and t[1]["largest margin there"] == "-"


def test_study_table_from_a_sweep_cells_by_hand():
    """The earlier study's format from a context sweep (reference context 20, its baseline's
    total 8 s): the baseline at 20, the bigram arm at 20 only, the transformer arm at every
    context in order. The earlier way's speedup is the stored one, else the reference total
    over the row's (8 / 6.4 = 1.25x); the paired speedup is the same context's; the last
    column is the same context's baseline.
    Planted bugs it catches (each seen failing): the earlier-way fallback inverted (0.80x), the
    last column showing the arm's own time (2.00 s at 10), the transformer rows in stored order
    (20 before 10)."""
    nan = float("nan")

    def t(context, method, total, base_total, es, k=0, sp=None, acc=None):
        return {
            "context": context,
            "method": method,
            "k": k,
            "n_prompts": 3,
            "total_wall_s": total,
            "baseline_total_wall_s": base_total,
            "earlier_style_speedup": es,
            "speedup": sp[0] if sp else None,
            "speedup_ci_low": sp[1] if sp else None,
            "speedup_ci_high": sp[2] if sp else None,
            "acceptance_rate": acc,
        }

    table = [
        t(20, "self", 5.0, 8.0, 1.6, 3, (1.6, 1.4, 1.8), 0.85),
        t(10, "baseline", 4.0, 4.0, 2.0),
        t(20, "baseline", 8.0, 8.0, 1.0),
        t(20, "bigram", 6.4, 8.0, nan, 4, (1.25, 1.2, 1.3), 1 / 3),
        t(10, "bigram", 3.0, 4.0, 2.5, 4, (1.3, 1.2, 1.4), 0.5),
        t(10, "self", 2.0, 4.0, 4.0, 3, (2.0, 1.5, 2.5), 0.9),
    ]
    earlier = {"reference_context": 20, "reference_total_wall_s": 8.0}
    sweep = SimpleNamespace(
        summary={"table": table, "earlier_style": earlier, "roles": {"transformer": "self"}},
        config={},
        arms={},
        role=lambda r: {"transformer": "self", "bigram": "bigram"}.get(r),
    )
    got = [list(r.values()) for r in study_table(profile(context_sweep=sweep)).to_dict("records")]
    assert got == [
        ["baseline autoregressive", "-", "20", "-", "8.00 s", "1.00x", "1.00x (reference)",
         "8.00 s"],
        ["bigram", "4", "20", "33.33%", "6.40 s", "1.25x", "1.25x [1.20, 1.30], n=3", "8.00 s"],
        ["transformer draft (self)", "3", "10", "90.00%", "2.00 s", "4.00x",
         "2.00x [1.50, 2.50], n=3", "4.00 s"],
        ["transformer draft (self)", "3", "20", "85.00%", "5.00 s", "1.60x",
         "1.60x [1.40, 1.80], n=3", "8.00 s"],
    ]  # fmt: skip


def test_the_batch_time_says_when_the_results_span_two_machines():
    """One kind of machine: the summed time is what a forced batch takes there. Two kinds (the
    embedded sampling result was recomputed alone in float32 on a CPU without native
    bfloat16): the sentence says the sum is no one machine's batch and names each kind with its
    experiments and minutes. Planted bug: summing across machines as one batch's time."""
    from types import SimpleNamespace

    from specdec_study.reporting.runs import batch_time_sentence

    def res(dtype: str, native: bool, wall: float) -> SimpleNamespace:
        env = {"device": "cpu", "cpu_model": "AMD EPYC", "bf16_native": native, "dtype": dtype,
               "wall_s_experiment": wall}  # fmt: skip
        return SimpleNamespace(env=env)

    one = {"baseline": res("bfloat16", True, 60.0), "bigram": res("bfloat16", True, 120.0)}
    prof = SimpleNamespace(results=one, get=one.get)
    text = batch_time_sentence(prof)
    assert "took 3.0 minutes in all" in text and "on the machine above" in text
    two = {**one, "sampling": res("float32", False, 360.0)}
    prof = SimpleNamespace(results=two, get=two.get)
    text = batch_time_sentence(prof)
    assert "took 9.0 minutes in all" in text and "on the machine above" not in text
    assert "2 kinds of machine" in text and "no one machine's batch time" in text
    assert "`baseline`, `bigram` in bfloat16 (native bfloat16: yes; 3.0 min)" in text
    assert "`sampling` in float32 (native bfloat16: no; 6.0 min)" in text
