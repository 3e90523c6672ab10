"""The torch side of 07 (`specdec_study.experiments.peers`): whether Hugging Face's side
(`specdec_lib.measure.huggingface`) can run here, and one arm per HF generate mode on the loaded
target, assisted generation with the profile's transformer draft. Reached through the
`runner.lab.Lab` the experiment is handed (`Lab.hf_problem`, `Lab.hf_arms`).
"""

from __future__ import annotations

from specdec_lib.drafters.registry import parse
from specdec_lib.drafters.self_draft import early_exit_model
from specdec_lib.measure.paired import Arm, Method
from specdec_lib.models import LoadedModel
from specdec_study.runner.session import Session, get_drafter


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


def hf_arms(study: Session, loaded: LoadedModel, modes: dict[str, str], k: int) -> list[Arm]:
    """One arm per (arm name -> Hugging Face generate mode); assisted generation with the
    transformer draft."""
    from specdec_lib.measure.huggingface import (
        HFGenerator,  # optional: only once it imported cleanly
    )

    assistant, assistant_tok = assistant_for(study, loaded)
    arms = []
    for m, mode in modes.items():
        if mode == "assisted":
            gen = HFGenerator(loaded, mode, k, assistant, assistant_tok)
        else:
            gen = HFGenerator(loaded, mode, k)
        arms.append(Arm(Method(m, f"hf:{mode}", k), gen))
    return arms
