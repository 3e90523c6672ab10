"""07: Hugging Face generate (greedy, prompt lookup, assisted) beside our baseline, n-gram lookup
and transformer draft on the same prompts, interleaved per prompt (`specdec_lib.peers` wraps HF).

Builds the config, arms and rows, and summarizes them. Without a usable `specdec_lib.peers` it
runs our arms only and says why in the summary.
"""

from __future__ import annotations

import numpy as np

from specdec_lib.analysis import stats
from specdec_lib.analysis.summary import summarize
from specdec_lib.results.catalog import BASELINE
from specdec_lib.results.store import ExperimentResult
from specdec_lib.runner.context import (
    Study,
    arm_name,
    base_config,
    build_arms,
    get_drafter,
    load_target,
)
from specdec_lib.runner.execute import Run, execute, paired
from specdec_lib.runner.paired import Arm, Method
from specdec_lib.runner.prompts import prompts_for


def assistant_for(S: Study, loaded):
    """(model, tokenizer) for HF assisted generation: the transformer draft as a model of its own
    (model:ID, with its own tokenizer, which HF needs where the vocabulary sizes differ), or for
    the self-draft the target's early exit with its full head (the target's tokenizer)."""
    spec = S.profile["drafts"]["transformer"]
    if spec.startswith("model:"):  # the draft our arm already loaded: no second copy in memory
        drafter = get_drafter(S, loaded, spec)
        return drafter.lm.model, drafter.tokenizer or loaded.tokenizer
    from specdec_lib.drafters.registry import parse
    from specdec_lib.drafters.self_draft import early_exit_model

    layers = parse(spec).args[0]  # self[:LAYERS[:KEEP]]
    return early_exit_model(loaded.model, layers), loaded.tokenizer


HF_ARMS = {"hf-greedy": "greedy", "hf-prompt-lookup": "prompt_lookup", "hf-assisted": "assisted"}
ACCEPTANCE_KEYS = (
    "acceptance_rate",
    "mean_accepted_length",
    "position_acceptance",
    "accepted_histogram",
    "draft_share_of_time",
    "draft_s_per_token",
    "verify_s_per_call",
    "cost_ratio",
    "per_token_acceptance_iid",
    "predicted_speedup_leviathan",
    "verify_cost_ratio",
    "predicted_speedup_calibrated",
    "acceptance_rate_pooled",
)


def run_peers(S: Study) -> ExperimentResult:
    """07: Hugging Face generate (greedy, prompt lookup, assisted) beside our baseline, n-gram
    lookup and transformer draft on the same prompts, interleaved per prompt."""
    e = S.exp("peers")
    d = S.profile["drafts"]
    ours = {arm_name(d["ngram"]): d["ngram"], arm_name(d["transformer"]): d["transformer"]}
    try:
        import specdec_lib.peers  # noqa: F401

        peers_error = None
    except Exception as exc:  # noqa: BLE001 - reported in the summary, not fatal
        peers_error = f"{type(exc).__name__}: {exc}"
        print(f"specdec_lib.peers is not usable ({peers_error}); running our arms only")
    cfg = {
        **base_config(S, "peers"),
        "n_prompts": int(e["n_prompts"]),
        "context_tokens": int(e["context_tokens"]),
        "max_new_tokens": int(e["max_new_tokens"]),
        "arms": {
            BASELINE: "none",
            **ours,
            **({m: f"hf:{mode}" for m, mode in HF_ARMS.items()} if not peers_error else {}),
        },
    }

    def compute(on_row):
        from specdec_lib import plots

        loaded = load_target(S)
        k = cfg["k"]
        arms = build_arms(S, loaded, ours, k)
        if not peers_error:
            from specdec_lib.peers import HFGenerator

            assistant, assistant_tok = assistant_for(S, loaded)
            for m, mode in HF_ARMS.items():
                if mode == "assisted":
                    gen = HFGenerator(loaded, mode, k, assistant, assistant_tok)
                else:
                    gen = HFGenerator(loaded, mode, k)
                arms.append(Arm(Method(m, f"hf:{mode}", k), gen))

        def hook(row):
            if row["draft"] == "hf:greedy":
                row["k"] = 0
            on_row(row)

        prompts = prompts_for(S, loaded, cfg["n_prompts"], cfg["context_tokens"])
        rows = paired(
            arms,
            prompts,
            max_new_tokens=cfg["max_new_tokens"],
            warmup=cfg["warmup"],
            progress="peers",
            on_row=hook,
        )
        sm = summarize(rows)
        for m in HF_ARMS:
            for key in ACCEPTANCE_KEYS:
                sm.get(m, {}).pop(key, None)
        toks = {(r["method"], r["prompt"]): r["tokens"] for r in rows}
        n = len(prompts)
        hf_base = "hf-greedy" if "hf-greedy" in sm else None
        hf_wall = (
            np.array(
                [
                    r["wall_s"]
                    for r in sorted(
                        (r for r in rows if r["method"] == hf_base), key=lambda r: r["prompt"]
                    )
                ]
            )
            if hf_base
            else None
        )
        table = []
        for m, s in sm.items():
            sp = s.get("speedup") or {}
            wall = np.array(
                [
                    r["wall_s"]
                    for r in sorted(
                        (r for r in rows if r["method"] == m), key=lambda r: r["prompt"]
                    )
                ]
            )
            table.append(
                {
                    "method": m,
                    "implementation": "hf" if m in HF_ARMS else "ours",
                    "tokens_per_s": s["tokens_per_s"]["median"],
                    "tokens_per_s_ci_low": s["tokens_per_s"]["ci_low"],
                    "tokens_per_s_ci_high": s["tokens_per_s"]["ci_high"],
                    "speedup": sp.get("value", 1.0 if m == BASELINE else None),
                    "speedup_ci_low": sp.get("ci_low"),
                    "speedup_ci_high": sp.get("ci_high"),
                    "speedup_vs_hf_greedy": stats.paired_speedup(hf_wall, wall).value
                    if hf_wall is not None
                    else None,
                    "identical_to_baseline": s["identical_fraction"],
                    "identical_to_hf_greedy": float(
                        np.mean([toks[(m, i)] == toks[(hf_base, i)] for i in range(n)])
                    )
                    if hf_base
                    else None,
                }
            )
        summary = {
            "arms": sm,
            "table": table,
            "peers_available": peers_error is None,
            "peers_error": peers_error,
            "headline": {
                t["method"]: {
                    "speedup": t["speedup"],
                    "identical_to_baseline": t["identical_to_baseline"],
                }
                for t in table
            },
        }
        return Run(rows, summary, lambda dd: plots.peers(summary, dd / "peers_speed.png"))

    return execute(S, "peers", cfg, compute)
