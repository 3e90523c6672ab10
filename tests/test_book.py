"""The book: specdec_study.pages on synthetic results (fast), and real `jupyter-book` builds.

Synthetic results follow results/SCHEMA.md (made up numbers, never committed); the builds use
`book/build.py --workdir <tmp>` so that they never touch the checkout's staging folder. One build
uses the smoke profile's real results when they exist (CI runs the smoke batch first) and is
skipped otherwise.

    python tests/test_book.py DIR [PROFILE]   # write a synthetic profile under DIR for hacking
"""

from __future__ import annotations

import json
import subprocess
import sys
from functools import partial
from pathlib import Path

import nbformat
import numpy as np
import pandas as pd
import pytest
from conftest import FAKE_SECRETS, files_containing, whole_config

from specdec_study import pages as report
from specdec_study.analysis import stats
from specdec_study.analysis.replay import continuation_summary
from specdec_study.analysis.summary import summarize
from specdec_study.experiments.baseline import baseline_headline
from specdec_study.experiments.bigram_draft import headline_pair
from specdec_study.experiments.implementations import VARIANTS as IMPL_VARIANTS
from specdec_study.experiments.implementations import implementations_summary, variant_arms
from specdec_study.experiments.k_sweep import k_row
from specdec_study.experiments.speculative_sampling import temperature_rows
from specdec_study.results.schema import declared_config
from specdec_study.results.store import ResultStore, publish

ROOT = Path(__file__).resolve().parents[1]

# --------------------------------------------------------------------------------------------
# synthetic results in the documented layout

CONTEXTS = [10, 20, 50, 100, 200]
K = 4
N_PROMPTS = 12
NEW_TOKENS = 32


def _row(prompt, method, draft, k, ctx, a, step_s, c, rng, cache=True, cell=None):
    acc_l, prop_l = [], []
    emitted = 0
    while emitted < NEW_TOKENS:
        d = min(k, NEW_TOKENS - emitted - 1) if k else 0
        n = 0
        while n < d and rng.random() < a:
            n += 1
        acc_l.append(n)
        prop_l.append(d)
        emitted += n + 1
    calls = len(acc_l)
    prefill = step_s * (1 + ctx / 40)
    verify = calls * step_s * (1.05 if k else 1.0)
    draft_s = sum(prop_l) * c * step_s
    wall = prefill + verify + draft_s
    r = {
        "prompt": prompt,
        "article": prompt * 3,
        "anchor": 600 + 7 * prompt,
        "context_tokens": ctx,
        "prompt_tokens": ctx,
        "method": method,
        "draft": draft,
        "k": k,
        "use_cache": cache,
        "new_tokens": emitted,
        "wall_s": wall,
        "tokens_per_s": emitted / wall,
        "target_calls": calls + 1,
        "proposed": sum(prop_l),
        "accepted": sum(acc_l),
        "acceptance_rate": sum(acc_l) / sum(prop_l) if sum(prop_l) else 0.0,
        "mean_accepted_length": (sum(acc_l) + calls) / calls,
        "draft_s": draft_s,
        "verify_s": verify,
        "prefill_s": prefill,
        "stopped_by": "max_new_tokens",
        "identical": True,
        "divergence_pos": None,
        "divergence_margin": None,
        "repetition_4gram": 0.1,
        "accepted_lengths": list(acc_l),
        "proposed_lengths": list(prop_l),
        "tokens": [5] * emitted,
    }
    if cell is not None:
        r.update(cell)
    return r


def _publish(root: Path, profile: str, name: str, config, rows, summary):
    """Write one synthetic experiment the way the study does (results.store.publish). The keys
    its config shape requires and these configs do not set are the committed embedded
    result's (`whole_config`)."""
    committed = ROOT / "results/embedded" / name / "config.json"
    whole = whole_config(name, profile) if committed.exists() else {}  # a new experiment's: none
    config = {
        **{key: whole[key] for key in declared_config(name).__required_keys__ if key in whole},
        "experiment": name,
        "profile": profile,
        "target": "synthetic",
        "dtype": "float32",
        "device": "cpu",
        "data_source": "synthetic",
        "seed": 0,
        "k": K,
        "max_new_tokens": NEW_TOKENS,
        "n_prompts": N_PROMPTS,
        "arms": {},
        **config,
    }
    env = {
        "python": "3.11",
        "platform": "linux",
        "processor": "x86_64",
        "cpu_count": 2,
        "torch": "0",
        "transformers": "0",
        "torch_threads": 2,
        "cuda": False,
        "gpu": None,
        "device": "cpu",
        "dtype": "float32",
        "git_commit": "f" * 40,
        "wall_s_experiment": 12.5,
    }
    summary = {"experiment": name, "profile": profile, **summary}
    store = ResultStore(root, profile)
    publish(store, name, config, env, rows, summary, figures=lambda d: None)


# an arm of a single-context result: (method, draft, k, acceptance per token, cost ratio)
BASELINE_ARM = ("baseline", "none", 0, 0, 0)
KS = list(range(1, 9))  # k_sweep's fixed K
TEMPERATURES = [0.7, 1.0]  # sampling's


def _self_arm(method: str = "self", draft: str = "self", k: int = K) -> tuple:
    """An arm of the shared self-draft (acceptance 0.65, cost ratio 0.3)."""
    return (method, draft, k, 0.65, 0.3)


# the single-context results: their arms, and the role of the drafted (last) arm if any
SINGLE = {
    "baseline": ([BASELINE_ARM], None),
    "bigram": ([BASELINE_ARM, ("bigram", "bigram", K, 0.1, 0.01)], "bigram"),
    "transformer_draft": ([BASELINE_ARM, _self_arm()], "transformer"),
}


def _arm_rows(arms, rng, step: dict | None = None, cell: dict | None = None) -> list[dict]:
    """Per prompt, one row per arm at context 20 (step: a method's target step in seconds
    where it is not 0.01; cell: columns every row gets)."""
    step = step or {}
    return [
        _row(i, m, d, k, 20, a, step.get(m, 0.01), c, rng, cell=cell)
        for i in range(N_PROMPTS)
        for m, d, k, a, c in arms
    ]


def _interval(name: str, s: dict, point: str = "value") -> dict:
    """The table columns name, name_ci_low, name_ci_high of the interval s (None where absent)."""
    return {
        name: s.get(point),
        f"{name}_ci_low": s.get("ci_low"),
        f"{name}_ci_high": s.get("ci_high"),
    }


def _single(name: str, rows: list[dict]) -> tuple[dict, list, dict]:
    """baseline, bigram or transformer_draft (config, rows, summary) from its rows."""
    arm_list, role = SINGLE[name]
    arms = summarize(rows)
    if role is None:
        scope = {"max_new_tokens": NEW_TOKENS, "context_tokens": 20}
        summary = {"roles": {}, "arms": arms, "headline": baseline_headline(arms, scope)}
    else:
        method = arm_list[-1][0]  # the drafted arm
        summary = {"roles": {role: method}, "arms": arms, "headline": headline_pair(arms, method)}
    if name == "transformer_draft":
        summary["identity_by_dtype"] = {
            dtype: {
                "dtype": dtype,
                "n_prompts": N_PROMPTS,
                "max_new_tokens": NEW_TOKENS,
                "identical_fraction": fraction,
                "divergence_positions": positions,
                "divergence_margins": margins,
            }
            for dtype, fraction, positions, margins in (
                ("bfloat16", 0.75, [5, 17, 30], [0.01, 0.06, 0.12]),
                ("float32", 1.0, [], []),
            )
        }
    return {}, rows, summary


def _sweep(rng, cache: bool) -> tuple[dict, list, dict]:
    """A timed sweep whose summary comes from study.sweep_summary (the real analysis)."""
    from specdec_study import study

    rows = []
    for ctx in CONTEXTS:
        step = 0.01 * (1 + ctx / 400) if cache else 0.01 * (1 + ctx / 25)
        for i in range(N_PROMPTS):
            cell = {"context": ctx}
            rows.append(_row(i, "baseline", "none", 0, ctx, 0, step, 0, rng, cache, cell))
            rows.append(_row(i, "bigram", "bigram", K, ctx, 0.08, step, 0.01, rng, cache, cell))
            a_self = 0.62 + 0.02 * (i % 3)
            c_self = 0.3 * (1 + (0 if cache else ctx / 50))
            rows.append(_row(i, "self", "self", K, ctx, a_self, step, c_self, rng, cache, cell))
            rows.append(_row(i, "exit12", "exit:12", K, ctx, 0.45, step, 0.2, rng, cache, cell))
    arms = {"baseline": "none", "bigram": "bigram", "self": "self", "exit12": "exit:12"}
    config = {"contexts": CONTEXTS, "use_cache": cache}
    summary = study.sweep_summary(rows, {**config, "reference_context": 20, "arms": arms})
    summary["roles"] = {"bigram": "bigram", "transformer": "self"}
    summary["primary"] = "exit12"
    summary["kinds"] = {
        "bigram": study.CONTROL,
        "self": study.SHARED,
        "exit12": study.EXIT,
    }
    return config, rows, summary


def _agreement_row(view: str, i: int, ctx: int, d: str, m: np.ndarray) -> dict:
    return {
        "view": view,
        "document": i,
        "prompt": i,
        "article": i * 3,
        "anchor": 600 + 7 * i,
        "context": ctx,
        "draft": d,
        "agree": int(m.sum()),
        "positions": len(m),
        "agreement": float(m.mean()),
        "matches": [int(x) for x in m],
    }


def _view_rows(view: str, level: dict, n_docs: int, T: int, rng) -> list[dict]:
    """Rows of one view: per document, context and draft, T positions agreeing with
    probability level[draft](context)."""
    rows = []
    for i in range(n_docs):
        for ctx in CONTEXTS:
            for d, f in level.items():
                m = (rng.random(T) < f(ctx)).astype(int)
                rows.append(_agreement_row(view, i, ctx, d, m))
    return rows


def _agreement(rng) -> tuple[dict, list, dict]:
    """Teacher-forced agreement rows (40 documents x 64 positions) summarized by
    study.agreement_summary (the real analysis): a flat primary draft, an exit that falls."""
    from specdec_study import study

    n_docs, T = 40, 64
    level = {
        "distilled": lambda c: 0.55,
        "exit12": lambda c: 0.55 - 0.25 * min(c, 100) / 100,
        "self": lambda c: 0.9,
        "bigram": lambda c: 0.2,
        "target_vs_text": lambda c: 0.4 + 0.001 * c,
    }
    rows = _view_rows("text", level, n_docs, T, rng)
    # the replay view: a flat draft near the published level (int8, which decides H3), a
    # weaker separate one that falls (q3), the exit that falls, the shared self-draft
    replayed = {
        "int8": lambda c: 0.96,
        "q3": lambda c: 0.70 - 0.20 * min(c, 100) / 100,
        "exit12": lambda c: 0.55 - 0.25 * min(c, 100) / 100,
        "self": lambda c: 1.0,
        "target_vs_own_greedy": lambda c: 1.0,
    }
    cont = _view_rows("continuation", replayed, n_docs, T, rng)
    summary = study.agreement_summary(rows, CONTEXTS, k=K, test_range=[10, 100])
    summary["continuation"] = continuation_summary(cont, CONTEXTS, k=K, test_range=[10, 100])
    rows += cont
    summary["kinds"] = {
        "int8": study.SEPARATE,
        "q3": study.SEPARATE,
        "distilled": study.SEPARATE,
        "exit12": study.EXIT,
        "self": study.SHARED,
        "bigram": study.CONTROL,
    }
    summary["primary"] = "distilled"
    summary["readout"] = "synthetic: the continuation view decides"
    summary["roles"] = {"transformer": "self", "bigram": "bigram"}
    summary["draft_records"] = {
        "distilled": {
            "seed": 0,
            "train_s": 300.0,
            "curve": [{"step": s, "loss": 3.0 / (1 + s / 50)} for s in range(0, 400, 20)],
        }
    }
    return {"contexts": CONTEXTS, "primary": "distilled"}, rows, summary


def _k_sweep(rng) -> tuple[dict, list, dict]:
    """k_sweep: the self-draft at every fixed K and at an adaptive K; its table's rows are
    experiments.k_sweep.k_row's (no pooled prediction), its headline made up."""
    adaptive_arm = _self_arm("adaptive", "adaptive:self", 8)
    rows = _arm_rows([BASELINE_ARM, *(_self_arm(f"k{k}", k=k) for k in KS), adaptive_arm], rng)
    arms = summarize(rows)
    table = [
        {**k_row(s["k"], s), "method": a, "predicted_speedup_pooled": None}
        for a, s in arms.items()
        if a != "baseline"
    ]
    adaptive = arms["adaptive"]
    measured = {
        key: adaptive[key] for key in ("speedup", "acceptance_rate", "mean_accepted_length")
    }
    summary = {
        "roles": {"transformer": "k4"},
        "arms": arms,
        "ks": KS,
        "table": table,
        "adaptive": {"k_max": 8, "k_min": 1, "k_start": 4, "mean_k_used": 3.1, **measured},
        "headline": {
            "best_k_measured": 3,
            "best_speedup_measured": 1.4,
            "best_k_predicted": 3,
            "pooled_per_token_acceptance": None,
            "pooled_cost_ratio": None,
            "adaptive_speedup": adaptive["speedup"],
        },
    }
    return {"ks": KS}, rows, summary


def _distribution_check() -> dict:
    """One temperature's made-up distribution checks of the self-draft and the baseline."""
    chk = {
        "tvd": 0.05,
        "tvd_mean_per_prompt": 0.08,
        "chi2": 30.0,
        "dof": 28,
        "p_value": 0.36,
        "n_samples": 800,
        "detectable_tvd": stats.detectable_tvd(800, 28),
    }
    return {
        "n_samples_per_prompt": 200,
        "n_prompts": 4,
        "self": {**chk, "tvd_unverified": 0.02, "detects_unverified": False},
        "baseline": {**chk, "p_value": 0.52},
    }


def _sampling(rng) -> tuple[dict, list, dict]:
    """sampling: the self-draft at each temperature (its table's rows are
    experiments.speculative_sampling.temperature_rows'), no sequence check."""
    rows, table, by_t = [], [], {}
    for t in TEMPERATURES:
        cell = _arm_rows(
            [BASELINE_ARM, ("self", "self", K, 0.5, 0.3)], rng, cell={"temperature": t}
        )
        rows += cell
        arms = summarize(cell)
        by_t[str(t)] = {"arms": arms}
        table += temperature_rows(t, arms)
    summary = {
        "roles": {"transformer": "self"},
        "temperatures": TEMPERATURES,
        "by_temperature": by_t,
        "table": table,
        "distribution_check": {str(t): _distribution_check() for t in TEMPERATURES},
        "headline": {},
    }
    return {"temperatures": TEMPERATURES, "sequence": None}, rows, summary


PEER_ARMS = [
    BASELINE_ARM,
    ("ngram", "ngram", K, 0.3, 0.01),
    _self_arm(),
    ("hf_greedy", "hf:greedy", 0, 0, 0),
    ("hf_assisted", "hf:assisted", 0, 0, 0),
]


def _peers(rng) -> tuple[dict, list, dict]:
    """peers: ours beside Hugging Face's greedy and assisted generation (HF assisted faster)."""
    rows = _arm_rows(PEER_ARMS, rng, step={"hf_assisted": 0.007})
    arms = summarize(rows)
    table = [
        {
            "method": a,
            "implementation": "hf" if a.startswith("hf") else "ours",
            **_interval("tokens_per_s", s["tokens_per_s"], "median"),
            **_interval("speedup", s.get("speedup", {})),
            "speedup_vs_hf_greedy": 1.0,
            "identical_to_baseline": 1.0,
            "identical_to_hf_greedy": 1.0,
        }
        for a, s in arms.items()
    ]
    summary = {
        "roles": {"transformer": "self", "ngram": "ngram"},
        "arms": arms,
        "table": table,
        "peers_available": True,
        "peers_error": None,
        "headline": {},
    }
    return {}, rows, summary


def _implementations(rng) -> tuple[dict, list, dict]:
    """implementations: the cached and uncached baselines and the four variants' self-draft at
    each context; a target that recomputes its prefix costs more per step as context grows."""
    variants = variant_arms(list(IMPL_VARIANTS))
    cache = {"baseline": (True, True), "baseline_nocache": (False, False)}
    cache |= {v: (a["target_cache"], a["draft_cache"]) for v, a in variants.items()}
    contexts = [10, 20, 50, 100]
    rows = []
    for ctx in contexts:
        for p in range(N_PROMPTS):
            for arm, (target, draft) in cache.items():
                k = 0 if arm.startswith("baseline") else K
                step = 0.03 * (1.0 if target else 1 + ctx / 40)
                cost = 0.35 * (1.0 if draft else 1 + ctx / 40)
                variant = {"baseline": "cached", "baseline_nocache": "nocache"}.get(arm, arm)
                cell = {"context": ctx, "variant": variant, "draft_cache": draft}
                rows.append(_row(p, arm, "self:1" if k else "none", k, ctx, 0.85, step, cost,
                                 rng, cache=target, cell=cell))  # fmt: skip
    config = {
        "contexts": contexts,
        "n_prompts_by_context": {str(c): N_PROMPTS for c in contexts},
        "reference_context": 20,
        "draft": "self:1",
        "arms": {a: ("none" if a.startswith("baseline") else "self:1") for a in cache},
        "arm_cache": {a: {"target": t, "draft": d} for a, (t, d) in cache.items()},
        "variants": variants,
        "anchor_min": 500,
        "anchor_room": 64,
        "order": "interleaved",
        "warmup_tokens": 4,
        "split_seed": 0,
        "warmup": 1,
    }
    summary = {"roles": {"transformer": "self"}, **implementations_summary(rows, config)}
    return config, rows, summary


# the results that draw their rows when they are built, in the order they draw them
DRAWN_WHEN_BUILT = {
    "context_sweep": partial(_sweep, cache=True),
    "context_sweep_nocache": partial(_sweep, cache=False),
    "agreement": _agreement,
    "k_sweep": _k_sweep,
    "sampling": _sampling,
    "peers": _peers,
    "implementations": _implementations,
}


def _write_notebooks(folder: Path, only: set[str] | None) -> None:
    """An executed-looking notebook per chapter whose result directories `only` names (all
    when None): a stored output, and a cell that fails if the book executes it again."""
    nbdir = folder / "notebooks"
    nbdir.mkdir(parents=True, exist_ok=True)
    for nb_name, dirs in report.NOTEBOOKS.items():
        if only is not None and not set(dirs) & only:
            continue
        nb = nbformat.v4.new_notebook()
        nb.metadata["kernelspec"] = {
            "name": "specdec",
            "display_name": "specdec",
            "language": "python",
        }
        code = nbformat.v4.new_code_cell("raise RuntimeError('re-executed by the book')")
        code.outputs = [nbformat.v4.new_output("stream", name="stdout", text="stored\n")]
        empty = nbformat.v4.new_code_cell("import os  # no output")
        nb.cells = [nbformat.v4.new_markdown_cell(f"# {nb_name}\n\nSynthetic."), empty, code]
        nbformat.write(nb, nbdir / f"{nb_name}.ipynb")


def write_synthetic(
    root: Path, profile: str = "synthetic", only: set[str] | None = None, notebooks: bool = True
) -> Path:
    """A profile with every result directory (or only those in `only`) and executed notebooks.

    One generator draws every row: the single-context results' rows first, whichever results
    `only` names, then each other result's as it is built."""
    rng = np.random.default_rng(1)
    single = {name: _arm_rows(arms, rng) for name, (arms, _) in SINGLE.items()}
    builders = {name: partial(_single, name, rows) for name, rows in single.items()}
    builders |= {name: partial(build, rng) for name, build in DRAWN_WHEN_BUILT.items()}
    for name, build in builders.items():
        if only is None or name in only:
            _publish(root, profile, name, *build())
    if notebooks:
        _write_notebooks(root / profile, only)
    return root / profile


# --------------------------------------------------------------------------------------------
# specdec_study.pages on synthetic results (fast)


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    root = tmp_path_factory.mktemp("results")
    write_synthetic(root, "synthetic")
    write_synthetic(root, "partial", only={"baseline", "bigram"})
    return root


def test_earlier_study_is_one_divisor():
    er = report.earlier_recomputed()
    assert bool(er["matches_printed"].all())
    t = er.set_index(["strategy", "context"])["one_baseline_speedup"]
    assert round(t[("transformer draft", 10)], 2) == 1.83
    assert round(t[("transformer draft", 100)], 2) == 1.01
    assert report.earlier_baseline_time() == pytest.approx(273.80)


def test_load_results_and_missing(synthetic):
    full = report.load_results("synthetic", synthetic)
    assert full.has(*report.EXPERIMENTS)
    part = report.load_results("partial", synthetic)
    assert part.has("baseline", "bigram") and not part.has("context_sweep")
    assert "context_sweep" in report.missing_note(part, "context_sweep")
    assert report.load_results("nothing", synthetic).empty
    assert report.profiles_with_results(synthetic, include=["synthetic"]) == ["synthetic"]


def test_tables(synthetic):
    p = report.load_results("synthetic", synthetic)
    t = report.study_table(p)
    assert t is not None and t.iloc[0]["strategy"] == "baseline autoregressive"
    assert len(t) == 2 + 2 * len(CONTEXTS)  # baseline, bigram at 20, each draft at every context
    assert {"transformer draft (self)", "transformer draft (exit12)"} <= set(t["strategy"])
    assert set(t["context"]) >= {str(c) for c in CONTEXTS}
    for fn in (
        report.headline_table,
        report.k_sweep_table,
        report.sampling_table,
        report.peers_table,
        report.identity_table,
        report.env_table,
        report.config_table,
    ):
        df = fn(p)
        assert df is not None and len(df), fn.__name__
        assert "|" in report.md_table(df)
    part = report.load_results("partial", synthetic)
    assert report.study_table(part) is not None  # falls back to the single-context runs
    assert report.k_sweep_table(part) is None


def test_verdicts_from_numbers(synthetic):
    p = report.load_results("synthetic", synthetic)
    vs = {v.key: v for v in report.verdicts(p)}
    assert set(vs) == {"H1", "H2", "H3", "H4"}
    assert all(v.label in report.LABELS for v in vs.values())
    # the synthetic world: recomputation grows ~linearly, the baseline grows; replayed on the
    # target's continuation, the draft near the published level (int8, 0.96) is flat while a
    # weaker separate draft (q3) falls: H3 is supported and names q3 alone (an early exit that
    # falls is no test of H3)
    assert vs["H1"].label == "supported"
    assert vs["H2"].label == "supported" and "cache off" in vs["H2"].named
    assert (vs["H3"].label, vs["H3"].named) == ("supported", ("q3",))
    assert "`int8`" in vs["H3"].text and ", n=40" in vs["H3"].text
    per = report.h3_per_draft(p.get("agreement")).set_index("draft")
    assert per.loc["q3", "under H3's rule"] == "falls"
    assert per.loc["exit12", "under H3's rule"] == "not a test of H3"
    assert per.loc["self", "under H3's rule"] == "not a test of H3"
    assert not any("(n = " in v.text for v in vs.values())
    for v in vs.values():
        assert v.text and "nan" not in v.text.lower()
        assert v.scope == "synthetic on a CPU"
    kn = report.key_numbers(p)
    assert kn is not None and (kn["n"].astype(str) != "").all()
    glue = report.verdict_glue(list(vs.values()))
    assert glue["h2_verdict"] == vs["H2"].verdict and glue["h3_label"] == "supported"
    assert glue["h1_q"] == vs["H1"].numbers["Q"] and "n/a" not in glue["h2_off"]
    part = report.load_results("partial", synthetic)
    labels = {v.key: v.label for v in report.verdicts(part)}
    assert labels == dict.fromkeys(("H1", "H2", "H3", "H4"), "not tested")


def test_stale_results_degrade_to_not_tested_with_a_rerun_note(synthetic, tmp_path):
    """Results written before the agreement and sweep schema (no primary draft) give 'not
    tested' with the instruction to re-run, never a crash or a wrong verdict."""
    import shutil

    root = tmp_path / "r"
    shutil.copytree(synthetic / "synthetic", root / "old")
    for exp in ("agreement", "context_sweep"):
        f = root / "old" / exp / "summary.json"
        sm = json.loads(f.read_text())
        sm.pop("primary", None)
        sm.pop("continuation", None)
        f.write_text(json.dumps(sm))
    cf = root / "old" / "agreement" / "config.json"
    cfg = json.loads(cf.read_text())
    cfg.pop("primary", None)
    cf.write_text(json.dumps(cfg))
    vs = {v.key: v for v in report.verdicts(report.load_results("old", root))}
    assert vs["H3"].label == vs["H4"].label == "not tested"
    assert "re-run" in vs["H3"].text and "re-run" in vs["H4"].text
    glue = report.verdict_glue(list(vs.values()))
    assert glue["h3_label"] == "not tested" and "re-run" in glue["h3_missing"]


def test_ci_arithmetic():
    g = pd.DataFrame(
        {
            "prompt": [0, 0, 1, 1, 2, 2],
            "method": ["baseline"] * 6,
            "context": [10, 100] * 3,
            "wall_s": [1.0, 2.0, 1.0, 2.0, 2.0, 4.0],
            "new_tokens": [10] * 6,
            "accepted": [5, 4] * 3,
            "proposed": [10] * 6,
        }
    )
    d = report.growth(g, "baseline", 10, 100)
    assert d["value"] == pytest.approx(2.0) and d["ci_low"] == pytest.approx(2.0)
    a = report.acceptance_change(g, "baseline", 10, 100)
    assert a["value"] == pytest.approx(-0.1)
    assert report.ci({"value": 1.234, "ci_low": 1.1, "ci_high": 1.3}) == "1.23 [1.10, 1.30]"
    assert report.ci_pct({"value": 0.5, "ci_low": 0.4, "ci_high": 0.6}) == "50.0% [40.0, 60.0]"
    assert report.num(None) == "n/a" and report.pct(float("nan")) == "n/a"
    # n beside every interval: the interval's own, else the one the table knows
    assert d["n"] == 3 and d["ci_method"] == "constant"
    assert report.ci({**a, "n": 3}, 1, 100.0, " pts").endswith("], n=3")
    iv = {"value": 1.2, "ci_low": 1.1, "ci_high": 1.3}
    assert report.ci(iv, n=20) == "1.20 [1.10, 1.30], n=20"


def test_every_interval_in_the_tables_prints_its_n(synthetic):
    p = report.load_results("synthetic", synthetic)
    for fn in (report.study_table, report.headline_table, report.k_sweep_table,
               report.sampling_table, report.peers_table):  # fmt: skip
        df = fn(p)
        cells = [str(v) for v in df.to_numpy().ravel() if "[" in str(v)]
        assert cells, fn.__name__
        assert all(", n=" in c for c in cells), (fn.__name__, cells)
    s = report.sampling_table(p)
    assert (s["detectable TVD (80% power)"] != "-").all()
    assert s[s["arm"] == "self"]["TVD if unverified"].tolist() == ["0.020", "0.020"]


def axes_points(ax) -> int:
    """The data an axes shows: points of its lines, its bars and patches, and the offsets of
    its collections (scatter, error bars, filled bands)."""
    n = sum(len(line.get_xdata()) for line in ax.get_lines())
    n += sum(1 for patch in ax.patches if patch.get_visible())
    for c in ax.collections:
        n += len(c.get_offsets()) + len(getattr(c, "get_paths", list)())
    return n


def data_points(fig) -> int:
    return sum(axes_points(ax) for ax in fig.axes)


def test_figures(synthetic):
    """Each book figure draws data (not only axes) with a labelled x axis or a title. Planted
    bug it catches (seen failing): `context.time_per_token` skipping every arm's line, so
    `fig_baseline_growth` is axes without data (which passed `is not None`)."""
    p = report.load_results("synthetic", synthetic)
    part = report.load_results("partial", synthetic)
    figs = [
        report.fig_acceptance_vs_context,
        report.fig_agreement_vs_context,
        report.fig_training_curve,
        report.fig_speedup_vs_context,
        report.fig_baseline_growth,
        report.fig_prompt_confound,
        report.fig_measured_vs_predicted,
        report.fig_position_acceptance,
        report.fig_accepted_histogram,
        report.fig_time_split,
        report.fig_divergence_margins,
    ]
    for fn in figs:
        fig = fn(p)
        assert fig is not None, fn.__name__
        assert data_points(fig) > 0, fn.__name__  # something drawn, not just empty axes
        for ax in fig.axes:
            if axes_points(ax):
                assert ax.get_xlabel() or ax.get_title(), fn.__name__
    assert data_points(report.fig_earlier_study()) > 0
    assert report.fig_speedup_vs_context(part) is None


def test_position_acceptance_figure_plots_each_arm_s_stored_rates(synthetic):
    """Each draft arm's line is its summary's position_acceptance in percent at positions 1..K
    (the partial profile: single-context runs only). Planted bug it catches (seen failing):
    positions numbered from 0. It was checked only to be not None."""
    part = report.load_results("partial", synthetic)
    fig = report.fig_position_acceptance(part)
    want = {
        arm: s["position_acceptance"]
        for e in ("bigram", "transformer_draft")
        if part.get(e) is not None
        for arm, s in part.get(e).arms.items()
        if arm != "baseline" and s.get("k")
    }
    lines = {
        ln.get_label(): ln for ln in fig.axes[0].get_lines() if not ln.get_label().startswith("_")
    }
    assert want and set(lines) == set(want)
    for arm, rates in want.items():
        assert list(lines[arm].get_xdata()) == list(range(1, len(rates) + 1)), arm
        assert list(lines[arm].get_ydata()) == pytest.approx([100 * r for r in rates]), arm


def _drawn(fig):
    """Render a Figure (no pyplot) so that its ticks and legend have their final places."""
    import io

    fig.savefig(io.BytesIO(), format="png")
    return fig


def test_figures_read_plainly(synthetic):
    """Integer axes have integer ticks, context axes read 10, 20, 50 (not 2x10^1), legends sit
    beside or under the data, and the study's writers (the declared figures) draw with the same
    functions."""
    p = report.load_results("synthetic", synthetic)
    for fig in (report.fig_position_acceptance(p), report.fig_accepted_histogram(p)):
        ax = _drawn(fig).axes[0]
        lo, hi = ax.get_xlim()
        shown = [t for t in ax.get_xticks() if lo <= t <= hi]
        assert shown and all(float(t).is_integer() for t in shown), shown
        legend = ax.get_legend() or fig.legends[0]  # under the panels, never over the data
        box, axes = legend.get_window_extent(), ax.get_window_extent()
        assert box.x0 >= axes.x1 or box.y1 <= axes.y0
    ax = _drawn(report.fig_acceptance_vs_context(p)).axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == [str(c) for c in CONTEXTS]
    from specdec_study.reporting.figures import declared

    sweep, ks, bigram = p.get("context_sweep"), p.get("k_sweep"), p.get("bigram")
    out = synthetic / "figures-out"
    out.mkdir(exist_ok=True)
    declared.draw("context_sweep", sweep.summary, sweep.rows, out)
    declared.draw("k_sweep", ks.summary, ks.rows, out, files={"measured_vs_predicted.png"})
    declared.draw("bigram", bigram.summary, bigram.rows, out, files={"time_split.png"})
    names = {f.name for f in out.glob("*.png")}
    assert names == {"speedup_vs_context.png", "acceptance_vs_context.png",
                     "time_vs_context.png", "earlier_style_vs_paired.png",
                     "measured_vs_predicted.png", "time_split.png"}  # fmt: skip


# --------------------------------------------------------------------------------------------
# real builds


def _build(tmp_path: Path, profile: str, results: Path, *extra: str) -> subprocess.CompletedProcess:
    work = tmp_path / "book"
    return subprocess.run(
        [
            sys.executable,
            str(ROOT / "book" / "build.py"),
            "--profile",
            profile,
            "--results",
            str(results),
            "--workdir",
            str(work),
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )


def _html(tmp_path: Path, page: str) -> str:
    return (tmp_path / "book" / "_build" / "html" / f"{page}.html").read_text(encoding="utf-8")


def test_build_synthetic_partial(tmp_path):
    """A profile with only two experiments builds with -W: chapters degrade to notes, missing
    notebooks become placeholders, and stored notebooks are not re-executed."""
    results = tmp_path / "results"
    write_synthetic(results, "partial", only={"baseline", "bigram"})
    proc = _build(tmp_path, "partial", results)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert "stored" in _html(tmp_path, "book/experiments/01_baseline")  # output kept, not re-run
    assert "has not been run" in _html(tmp_path, "book/experiments/04_context_sweep")
    paradox = _html(tmp_path, "book/paradox")
    assert "not tested" in paradox and "273.80" in paradox
    # the claims command's list: no chapter, a CSV staged beside the results and linked
    claims_csv = tmp_path / "book" / "book" / "experiments" / "claims.csv"
    assert "partial/baseline/summary.json" in claims_csv.read_text(encoding="utf-8")
    assert "claims.csv" in _html(tmp_path, "book/reproducibility")
    strict = _build(tmp_path, "partial", results, "--strict")
    assert strict.returncode != 0


@pytest.mark.slow
def test_build_smoke_results_with_no_secret_in_the_book(smoke_batch, tmp_path, monkeypatch):
    """The book builds with -W from the real smoke profile (what CI builds), with fake secrets
    set: neither the built book nor the build's output contains them."""
    results = smoke_batch[0]
    for name, value in FAKE_SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("WANDB_MODE", "disabled")
    proc = _build(tmp_path, "smoke", results)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    pages = ("intro", "math", "paradox", "results", "reproducibility", "performance")
    for page in (f"book/{p}" for p in pages):
        assert "Traceback" not in _html(tmp_path, page)
    for nb in report.NOTEBOOKS:
        assert "has not been run" not in _html(tmp_path, f"book/experiments/{nb}")
    assert files_containing(tmp_path / "book" / "_build" / "html", FAKE_SECRETS.values()) == []
    assert not any(v in proc.stdout + proc.stderr for v in FAKE_SECRETS.values())


if __name__ == "__main__":
    out = write_synthetic(Path(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else "synthetic")
    print(out)
