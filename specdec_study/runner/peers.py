"""07: Hugging Face generate (greedy, prompt lookup, assisted) beside our baseline, n-gram lookup
and transformer draft on the same prompts, interleaved per prompt (`specdec_lib.measure.huggingface`
wraps HF).

Builds the config, arms and rows; the summary is `analysis.peers`'. Without a usable
`specdec_lib.measure.huggingface` it runs our arms only and says why in the summary.
"""

from __future__ import annotations

from typing import Any

from specdec_lib.drafters.registry import parse
from specdec_lib.drafters.self_draft import early_exit_model
from specdec_lib.measure.paired import Arm, Method
from specdec_lib.models import LoadedModel
from specdec_study.analysis.peers import HF_ARMS, drop_acceptance, peers_summary
from specdec_study.analysis.summary import summarize
from specdec_study.results.catalog import BASELINE
from specdec_study.results.store import ExperimentResult
from specdec_study.runner.execute import Progress, Run, execute, paired_by_config
from specdec_study.runner.prompts import prompts_for
from specdec_study.runner.session import (
    Session,
    arm_name,
    base_config,
    build_arms,
    get_drafter,
    load_target,
)


def assistant_for(study: Session, loaded: LoadedModel):
    """(model, tokenizer) for HF assisted generation: the transformer draft as a model of its own
    (model:ID, with its own tokenizer, which HF needs where the vocabulary sizes differ), or for
    the self-draft the target's early exit with its full head (the target's tokenizer)."""
    spec = study.profile["drafts"]["transformer"]
    if spec.startswith("model:"):  # the draft our arm already loaded: no second copy in memory
        drafter = get_drafter(study, loaded, spec)
        return drafter.lm.model, drafter.tokenizer or loaded.tokenizer
    layers = parse(spec).args[0]  # self[:LAYERS[:KEEP]]
    return early_exit_model(loaded.model, layers), loaded.tokenizer


def peers_problem() -> str | None:
    """Why `specdec_lib.measure.huggingface` (Hugging Face's side) cannot be used here; None when it
    can."""
    try:
        import specdec_lib.measure.huggingface  # noqa: F401 - an optional side: its failure is reported

        return None
    except Exception as exc:  # noqa: BLE001 - reported in the summary, not fatal
        return f"{type(exc).__name__}: {exc}"


def our_specs(study: Session) -> dict[str, str]:
    """Arm name -> spec of our arms in 07: the n-gram and the transformer drafts."""
    d = study.profile["drafts"]
    return {arm_name(d["ngram"]): d["ngram"], arm_name(d["transformer"]): d["transformer"]}


def peers_config(study: Session, peers_error: str | None) -> dict[str, Any]:
    """07's config; HF's arms are in it only where `specdec_lib.measure.huggingface` can run
    them."""
    e = study.exp("peers")
    hf = {m: f"hf:{mode}" for m, mode in HF_ARMS.items()} if not peers_error else {}
    return {
        **base_config(study, "peers"),
        "n_prompts": int(e["n_prompts"]),
        "context_tokens": int(e["context_tokens"]),
        "max_new_tokens": int(e["max_new_tokens"]),
        "arms": {BASELINE: "none", **our_specs(study), **hf},
    }


def peers_default_config(study: Session) -> dict[str, Any]:
    """07's config with HF's arms as this environment can run them."""
    return peers_config(study, peers_problem())


def run_peers(study: Session) -> ExperimentResult:
    """07: Hugging Face generate (greedy, prompt lookup, assisted) beside our baseline, n-gram
    lookup and transformer draft on the same prompts, interleaved per prompt."""
    peers_error = peers_problem()
    if peers_error:
        print(
            f"specdec_lib.measure.huggingface is not usable ({peers_error}); running our arms only"
        )
    cfg = peers_config(study, peers_error)
    return execute(study, "peers", cfg, lambda on_row: _peers(study, cfg, peers_error, on_row))


def hf_arms(study: Session, loaded: LoadedModel, k: int) -> list[Arm]:
    """One arm per Hugging Face mode; assisted generation with the transformer draft."""
    from specdec_lib.measure.huggingface import (
        HFGenerator,  # optional: only once it imported cleanly
    )

    assistant, assistant_tok = assistant_for(study, loaded)
    arms = []
    for m, mode in HF_ARMS.items():
        if mode == "assisted":
            gen = HFGenerator(loaded, mode, k, assistant, assistant_tok)
        else:
            gen = HFGenerator(loaded, mode, k)
        arms.append(Arm(Method(m, f"hf:{mode}", k), gen))
    return arms


def _peers(study: Session, cfg: dict[str, Any], peers_error: str | None, on_row: Progress) -> Run:
    loaded = load_target(study)
    k = cfg["k"]
    arms = build_arms(study, loaded, our_specs(study), k)
    if not peers_error:
        arms += hf_arms(study, loaded, k)

    def hook(row: dict[str, Any]) -> None:
        if row["draft"] == "hf:greedy":
            row["k"] = 0  # HF greedy drafts nothing
        on_row(row)

    prompts = prompts_for(study, loaded, cfg["n_prompts"], cfg["context_tokens"])
    rows = paired_by_config(arms, prompts, cfg, progress="peers", on_row=hook)
    sm = summarize(rows)
    drop_acceptance(sm)
    summary = peers_summary(rows, sm, len(prompts), peers_error)
    return Run(rows, summary)
