"""Every experiment notebook runs end to end on the smoke profile (papermill), writes every result
file of results/SCHEMA.md with sane values, and a second run reuses them instead of recomputing.

The smoke profile is a tiny random Gemma 3 in float64 with an offline word-level tokenizer over
the bundled WikiText-2, so this runs the real pipeline in well under two minutes.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from conftest import FAKE_SECRETS, files_containing

from specdec_study.analysis.summary import ArmSummary
from specdec_study.results import catalog
from specdec_study.results.schema import decode_row, shape_problem, summary_problem

pm = pytest.importorskip("papermill")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = catalog.NOTEBOOKS  # notebook -> the experiments it writes
FIGURES = {
    "baseline": ["tokens_per_s.png"],
    "bigram": ["speedup.png", "position_acceptance.png", "accepted_histogram.png",
               "time_split.png"],
    "transformer_draft": ["speedup.png", "position_acceptance.png", "time_split.png"],
    "context_sweep": ["speedup_vs_context.png", "acceptance_vs_context.png",
                      "time_vs_context.png", "earlier_style_vs_paired.png"],
    "context_sweep_nocache": ["speedup_vs_context.png", "earlier_style_vs_paired.png"],
    "agreement": ["agreement_vs_context.png"],
    "k_sweep": ["measured_vs_predicted.png", "position_acceptance.png"],
    "sampling": ["sampling_speedup.png", "distribution_check.png"],
    "peers": ["peers_speed.png"],
    "implementations": ["implementations.png"],
}  # fmt: skip
# the keys of the declared ArmSummary that a drafting arm paired with a baseline has
DRAFT_KEYS = {"acceptance_rate", "mean_accepted_length", "position_acceptance",
              "accepted_histogram", "speedup", "cost_ratio", "predicted_speedup_leviathan",
              "predicted_speedup_calibrated"}  # fmt: skip
assert DRAFT_KEYS <= ArmSummary.__optional_keys__


@pytest.fixture(scope="module")
def smoke(smoke_batch):
    results, first, second, _ = smoke_batch
    return results, first, second


def load(results: Path, exp: str):
    d = results / "smoke" / exp
    summary = json.loads((d / "summary.json").read_text())
    config = json.loads((d / "config.json").read_text())
    env = json.loads((d / "env.json").read_text())
    with open(d / "per_prompt.csv", newline="") as f:  # the text, list columns decoded
        rows = [decode_row(r) for r in csv.DictReader(f)]
    return summary, config, env, rows


NOTEBOOKS_EXPERIMENTS = [e for exps in NOTEBOOKS.values() for e in exps]


def all_arms(summary: dict) -> dict[str, dict]:
    """Every ArmSummary in a summary, whichever cell it sits in."""
    out = dict(summary.get("arms", {}))
    for key in ("by_context", "by_temperature"):
        for cell, v in summary.get(key, {}).items():
            out.update({f"{cell}/{m}": s for m, s in v["arms"].items()})
    return out


def check_arm(name: str, s: dict, *, greedy: bool) -> None:
    assert shape_problem(s, ArmSummary, name, strict=True) is None  # every key declared and typed
    assert 0.0 <= s["identical_fraction"] <= 1.0
    assert s["tokens_per_s"]["median"] > 0
    drafted = (s.get("acceptance_rate") or {}).get("value") is not None  # None: nothing proposed
    if s["k"] and not s["draft"].startswith("hf:") and drafted:
        assert DRAFT_KEYS <= s.keys(), (name, DRAFT_KEYS - s.keys())
        acc = s["acceptance_rate"]
        assert 0.0 <= acc["value"] <= 1.0 and acc["ci_low"] <= acc["value"] <= acc["ci_high"]
        assert 1.0 <= s["mean_accepted_length"]["value"] <= s["k"] + 1
        assert all(p is None or 0.0 <= p <= 1.0 for p in s["position_acceptance"])
    if "speedup" in s:
        sp = s["speedup"]
        assert sp["value"] > 0 and sp["ci_low"] <= sp["value"] <= sp["ci_high"]
    if greedy and not s["draft"].startswith("hf:"):
        # float64 (and the float32 identity check below): greedy speculation is exact
        assert s["identical_fraction"] == 1.0, name


def test_every_result_file(smoke):
    results, _, _ = smoke
    for nb, exps in NOTEBOOKS.items():
        assert (results / "smoke" / "notebooks" / f"{nb}.ipynb").is_file()
        for exp in exps:
            summary, config, env, rows = load(results, exp)
            assert summary["experiment"] == exp and summary["profile"] == "smoke"
            assert config["experiment"] == exp and len(config["config_hash"]) == 16
            assert {"torch", "transformers", "git_commit", "dtype", "wall_s_experiment"} <= set(env)
            # the thread count and how it was chosen (the smoke profile sets 1)
            assert env["threads"]["threads"] == env["torch_threads"] == 1
            assert env["threads"]["chosen_by"] in ("profile", "SPECDEC_THREADS")
            assert rows and "headline" in summary and "roles" in summary
            assert summary_problem(exp, summary, strict=True) is None  # its declared shape
            for fig in FIGURES[exp]:
                assert (results / "smoke" / exp / "figures" / fig).stat().st_size > 0, (exp, fig)


def test_schema_and_values(smoke):
    results, _, _ = smoke
    for exp in ["baseline", "bigram", "transformer_draft", "context_sweep",
                "context_sweep_nocache", "k_sweep", "peers"]:  # fmt: skip
        summary, *_ = load(results, exp)
        for name, s in all_arms(summary).items():
            check_arm(f"{exp}/{name}", s, greedy=True)
    summary, *_ = load(results, "sampling")
    for name, s in all_arms(summary).items():
        check_arm(f"sampling/{name}", s, greedy=False)


BASE = "baseline"
CELLS = {"by_context": "context", "by_temperature": "temperature"}  # summary key -> row column


def walls(rows: list[dict], method: str, **where) -> list[float]:
    """One arm's per-prompt seconds from per_prompt.csv rows, in prompt order (rows matching
    every column = value in `where`)."""
    mine = [
        r
        for r in rows
        if r["method"] == method and all(str(r[c]) == str(v) for c, v in where.items())
    ]
    return [float(r["wall_s"]) for r in sorted(mine, key=lambda r: int(r["prompt"]))]


def cells(summary: dict, rows: list[dict]):
    """(label, arms, the rows they summarize) for every group of arms in a summary: `arms` over
    all rows, or one cell of `by_context` / `by_temperature` over that cell's rows."""
    if "arms" in summary:
        yield "", summary["arms"], rows
    for key, col in CELLS.items():
        for cell, v in summary.get(key, {}).items():
            mine = [r for r in rows if float(r[col]) == float(cell)]
            yield f"{col} {cell}/", v["arms"], mine


def total(rows: list[dict], col: str) -> float:
    return sum(float(r[col]) for r in rows)


def test_speedups_acceptance_and_predictions_match_the_rows(smoke):
    """Every draft arm's published speedup, acceptance, tokens per call, cost ratio and
    Leviathan prediction, in every experiment and cell, recomputed by hand from per_prompt.csv:
    speedup = total baseline seconds / the arm's, acceptance = accepted / proposed, tokens per
    call = (accepted + calls) / calls, c = (draft seconds per proposed token) / (baseline seconds
    per token), prediction = (1 - a^(K+1)) / (1 - a) / (K c + 1) (Leviathan's formula at the
    i.i.d. a fitted to the calls' counts by maximum likelihood). They were only asked to be
    positive.
    Planted bug seen failing: the speedup as the mean of per-prompt ratios
    (`analysis.summary.summarize`; bigram 0.737 published against 0.730 by hand)."""
    results, _, _ = smoke
    checked = 0
    for exp in NOTEBOOKS_EXPERIMENTS:
        summary, _, _, all_rows = load(results, exp)
        for label, arms, rows in cells(summary, all_rows):
            base = [r for r in rows if r["method"] == BASE]
            for name, s in arms.items():
                where = (exp, label + name)
                mine = [r for r in rows if r["method"] == name]
                assert s["total_wall_s"] == pytest.approx(total(mine, "wall_s")), where
                if name == BASE or "speedup" not in s:
                    continue
                speedup = total(base, "wall_s") / total(mine, "wall_s")
                assert s["speedup"]["value"] == pytest.approx(speedup), where
                checked += 1
                if not (s["k"] and total(mine, "proposed")):
                    continue
                acc = total(mine, "accepted") / total(mine, "proposed")
                assert s["acceptance_rate"]["value"] == pytest.approx(acc), where
                calls = sum(len(r["accepted_lengths"]) for r in mine)
                per_call = (total(mine, "accepted") + calls) / calls
                assert s["mean_accepted_length"]["value"] == pytest.approx(per_call), where
                if "predicted_speedup_leviathan" not in s:
                    continue
                step = total(base, "wall_s") / total(base, "new_tokens")
                c = total(mine, "draft_s") / total(mine, "proposed") / step
                assert s["cost_ratio"] == pytest.approx(c), where
                # the i.i.d. a by maximum likelihood over the calls' counts (a last call cut
                # short by the token cap reached only its own drafts), then Leviathan's formula
                acc_n = [n for r in mine for n in r["accepted_lengths"]]
                prop_n = [d for r in mine for d in r["proposed_lengths"]]
                reached = sum(min(d, n + 1) for n, d in zip(acc_n, prop_n, strict=True))
                a = sum(acc_n) / reached
                k = s["k"]
                tokens = k + 1.0 if a == 1.0 else (1.0 - a ** (k + 1)) / (1.0 - a)
                predicted = tokens / (k * c + 1.0)
                assert s["predicted_speedup_leviathan"] == pytest.approx(predicted), where
    assert checked >= 20, checked  # every draft arm of every experiment, not a few


def test_context_sweep(smoke):
    """Both sweeps' tables, with the earlier study's speedup (the reference context's baseline
    over the arm, prompt by prompt) recomputed by hand from the rows. Planted bug seen failing:
    the same context's baseline instead of the reference's
    (`experiments.context_sweep.sweep_table`)."""
    results, _, _ = smoke
    for exp, cache in (("context_sweep", True), ("context_sweep_nocache", False)):
        summary, config, _, rows = load(results, exp)
        assert summary["use_cache"] is cache
        assert sorted(int(c) for c in summary["by_context"]) == config["contexts"]
        assert len(summary["table"]) == len(config["contexts"]) * len(config["arms"])
        ref = summary["earlier_style"]["reference_context"]
        assert ref in config["contexts"]
        ref_wall = walls(rows, BASE, context=ref)
        for t in summary["table"]:
            # by hand from the rows: the arm's total, and the earlier study's speedup (the
            # reference context's baseline over the arm, prompt by prompt, first n prompts)
            w = walls(rows, t["method"], context=t["context"])
            n = min(len(w), len(ref_wall))
            assert t["total_wall_s"] == pytest.approx(sum(w))
            assert t["baseline_total_wall_s"] == pytest.approx(
                sum(walls(rows, BASE, context=t["context"]))
            )
            assert t["earlier_style_speedup"] == pytest.approx(sum(ref_wall[:n]) / sum(w[:n]))
        # H4: the same documents and anchors at every context
        anchors = {}
        for r in rows:
            anchors.setdefault(r["prompt"], set()).add((r["article"], r["anchor"]))
        assert all(len(v) == 1 for v in anchors.values())
        assert {r["use_cache"] for r in rows} == {str(cache)}


def test_agreement(smoke):
    results, _, _ = smoke
    summary, config, _, rows = load(results, "agreement")
    drafts = set(config["arms"])
    assert {t["draft"] for t in summary["table"]} == drafts | {"target_vs_text"}
    for t in summary["table"]:
        assert 0.0 <= t["agreement"] <= 1.0 and 0.0 <= t["implied_acceptance"] <= 1.0
        assert t["n_documents"] == config["n_documents"]
    assert summary["primary"] == config["primary"] in drafts
    # the exit drafts and the self-draft are classified from the modules they share
    kinds = summary["kinds"]
    assert kinds["self"].startswith("shares") and kinds["exit1"].startswith("early exit")
    assert kinds["bigram"].startswith("context-free")
    head = summary["headline"][config["primary"]]["change_test"]
    assert head["contexts"] == [10, 100] and head["agreement"]["n"] == config["n_documents"]
    # the same documents, anchors and number of positions at every context
    docs = {}
    for r in rows:
        docs.setdefault(r["prompt"], set()).add((r["article"], r["anchor"], r["positions"]))
        assert len(r["matches"]) == int(r["positions"]) == config["continuation_tokens"]
        assert int(r["agree"]) == sum(r["matches"])
    assert all(len(v) == 1 for v in docs.values())
    assert {int(r["context"]) for r in rows} == set(config["contexts"])


def test_cache_off_sweep_runs_on_the_cache_on_prompts(smoke):
    results, _, _ = smoke
    on_s, on_c, _, on_rows = load(results, "context_sweep")
    off_s, off_c, _, off_rows = load(results, "context_sweep_nocache")
    for key in ("contexts", "n_prompts_by_context", "max_new_tokens", "anchor_min"):
        assert on_c[key] == off_c[key], key

    def prompts(rows):
        return {(r["context"], r["prompt"], r["article"], r["anchor"]) for r in rows}

    assert prompts(on_rows) == prompts(off_rows)


def test_k_sweep_and_sampling(smoke):
    """The K sweep's table carries its arms' numbers and the adaptive arm's mean K is recomputed
    from the rows (planted bug seen failing: calls that drafted nothing counted as K = 0, in
    `experiments.k_sweep.adaptive_summary`); the sampling run's distribution check."""
    results, _, _ = smoke
    summary, config, _, rows = load(results, "k_sweep")
    assert [t["k"] for t in summary["table"]] == config["ks"] == list(range(1, 9))
    arms = summary["arms"]  # each recomputed from the rows in the test above
    for t in summary["table"]:
        s = arms[t["method"]]
        assert t["speedup"] == s["speedup"]["value"]
        assert t["mean_accepted_length"] == s["mean_accepted_length"]["value"]
        assert t["cost_ratio"] == s["cost_ratio"]
        assert t["predicted_speedup_leviathan"] == s["predicted_speedup_leviathan"]
    # the adaptive arm's mean K: its calls that drafted anything, by hand from the rows
    ks = [x for r in rows if r["method"] == "adaptive" for x in r["proposed_lengths"]]
    drafted = [x for x in ks if x > 0]
    assert summary["adaptive"]["mean_k_used"] == pytest.approx(sum(drafted) / len(drafted))
    assert 1 <= summary["adaptive"]["mean_k_used"] <= config["adaptive"]["k_max"]
    summary, config, _, _ = load(results, "sampling")
    for chk in summary["distribution_check"].values():
        methods = {m: c for m, c in chk.items() if isinstance(c, dict)}
        assert set(methods) == {"baseline", *config["distribution"]["arms"]}
        for c in methods.values():
            assert 0.0 <= c["tvd"] <= 1.0
            assert c["p_value"] is None or 0.0 <= c["p_value"] <= 1.0
            # the run passes its own check: a lossless sampler is not rejected at 0.1%
            assert c["p_value"] is None or c["p_value"] > 1e-3, c
            assert c["p_value"] is None or 0.0 < c["detectable_tvd"] <= 1.0
            assert c["n_samples"] == chk["n_samples_per_prompt"] * chk["n_prompts"]
    assert (results / "smoke" / "sampling" / "distribution.csv").is_file()


def test_transformer_identity_and_peers(smoke):
    results, _, _ = smoke
    summary, *_ = load(results, "transformer_draft")
    ids = summary["identity_by_dtype"]
    assert {"float64", "float32"} <= ids.keys()
    assert ids["float64"]["identical_fraction"] == 1.0
    summary, *_ = load(results, "peers")
    methods = {t["method"] for t in summary["table"]}
    assert {"baseline", "ngram"} <= methods
    if summary["peers_available"]:
        assert {"hf-greedy", "hf-prompt-lookup", "hf-assisted"} <= methods
        greedy = next(t for t in summary["table"] if t["method"] == "hf-greedy")
        assert greedy["identical_to_baseline"] == 1.0


def test_second_run_reuses(smoke):
    _, first, second = smoke
    assert first and first == second


def test_json_is_strict(smoke):
    results, _, _ = smoke

    def refuse(constant: str):
        raise ValueError(f"non-strict JSON constant {constant}")

    for p in (results / "smoke").glob("*/*.json"):
        json.loads(p.read_text(), parse_constant=refuse)


def test_fake_secrets_reach_no_result_notebook_log_or_wandb_file(smoke_batch):
    """The batch ran with HF_TOKEN and WANDB_API_KEY set (W&B offline, into results/wandb):
    neither value is in any result file, executed notebook, W&B file or the batch's log."""
    results, _, _, log = smoke_batch
    assert any((results / "wandb").rglob("*")), "W&B wrote nothing: the scan would prove little"
    assert log.stat().st_size > 0
    assert files_containing(results, FAKE_SECRETS.values()) == []


def test_executed_notebooks_explain_their_results(smoke):
    """Each executed notebook reads its results back: what was run with n, a headline with its
    interval, tables without an index column or NaN cells, and a caption under every figure."""
    import nbformat

    results, _, _ = smoke
    for nb_name, exps in NOTEBOOKS.items():
        nb = nbformat.read(results / "smoke" / "notebooks" / f"{nb_name}.ipynb", as_version=4)
        outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
        md = [o["data"]["text/markdown"] for o in outputs if "text/markdown" in o.get("data", {})]
        text = "\n".join(md)
        assert not any("text/html" in o.get("data", {}) for o in outputs), nb_name  # no DataFrame
        for exp in exps:
            assert f"### `{exp}`" in text and "**What was run.**" in text, (nb_name, exp)
        assert "n = " in text and "**Headline**" in text and "[" in text, nb_name
        assert "| --- |" not in text and "|---|" in text, nb_name  # Markdown tables
        for cell in md:
            if cell.lstrip().startswith("|") or "\n|" in cell:
                assert " nan " not in cell.lower() and "| nan" not in cell.lower(), nb_name
        images = [o for o in outputs if "image/png" in o.get("data", {})]
        captions = [m for m in md if m.startswith("*Figure ")]
        n_figs = sum(len(list((results / "smoke" / e / "figures").glob("*.png"))) for e in exps)
        assert len(images) == n_figs == len(captions), (nb_name, len(images), len(captions))
