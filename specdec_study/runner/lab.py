"""What an experiment module of `specdec_study.experiments` runs with: the session and the
runner's services (the target, arms, prompts, paired runs, `execute`), bound to the
experiment's declaration. The runner hands a `Lab` to the declaration's `build_config` and
`run` (`runner.experiments.RUNNERS`), so that an experiment module imports no runner module and
no torch: the catalog, which imports every experiment module, stays torch-free and below the
runner (no import cycle through `runner.session`, which reads the declarations' defaults).

Beside those, each torch helper that an experiment needs and the runner keeps is one method
named for what it does (`hf_problem`, `hf_arms`: Hugging Face's arms, `runner.hf_arms`;
`distribution_checks`, `sequence_checks`: the sampling checks, `runner.distribution`;
`load_target(dtype=...)` and `target_dtype`: the target in another dtype and the name of its
own, the transformer draft's identity per dtype; `interleaved_rows`: 04's interleaved blocks,
`runner.interleaved`; `drafters`, `draft_kinds`, `teacher_forced`: the drafts, how each relates
to the target and their teacher-forced guesses, `runner.teacher_forced`; `article_tokens` and
`continuer`: the eval articles' tokens and the target's greedy continuations, the agreement's,
`runner.continuations`), never a hook that calls any function.
Knows nothing about what any experiment measures.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from specdec_lib.config import SamplingConfig
from specdec_lib.core.draft import Drafter
from specdec_lib.data import Prompt, article_token_ids
from specdec_lib.measure.paired import WARMUP_TOKENS, Arm
from specdec_lib.models import LoadedModel
from specdec_study.results.declare import Experiment
from specdec_study.results.store import Checkpoint, ExperimentResult
from specdec_study.runner import continuations, distribution, hf_arms
from specdec_study.runner.execute import Progress, Run, execute, paired
from specdec_study.runner.interleaved import interleaved_rows
from specdec_study.runner.prompts import eval_articles, prompts_for
from specdec_study.runner.session import (
    Session,
    arm_name,
    base_config,
    build_arms,
    get_drafter,
    load_target,
    make_arm,
)
from specdec_study.runner.teacher_forced import draft_kind, teacher_forced_guesses


class Lab:
    """One experiment's view of a session: its profile section, the keys every config starts
    with, the target, arms and prompts, the paired run and the one path that reuses, computes
    and publishes its result."""

    # new tokens per arm in a warm-up where a section does not say (`measure.paired`)
    warmup_tokens: int = WARMUP_TOKENS

    def __init__(self, study: Session, experiment: Experiment):
        self.study = study
        self.experiment = experiment

    @property
    def name(self) -> str:
        """The experiment's name (its result directory)."""
        return self.experiment.name

    @property
    def profile(self) -> dict[str, Any]:
        """The session's profile."""
        return self.study.profile

    @property
    def overrides(self) -> dict[str, Any]:
        """The notebook's overrides (`Session.overrides`; `section` applies them to the keys a
        section has)."""
        return self.study.overrides

    def section(self, experiment: str | None = None) -> dict[str, Any]:
        """The profile's section for the experiment (its declared defaults under it), with the
        notebook's overrides (`Session.exp`); another experiment's where its config reads it
        (04's cache-off sweep runs on `context_sweep`'s prompts)."""
        return self.study.exp(experiment or self.name)

    def profile_section(self, experiment: str) -> dict[str, Any] | None:
        """Another experiment's section as the profile gives it (its declared defaults under it),
        without the notebook's overrides; None when there is none (`Session.section`: 04's
        positive control takes the context sweep's anchors from it)."""
        return self.study.section(experiment)

    def base_config(self) -> dict[str, Any]:
        """The keys every config starts with (`runner.session.base_config`)."""
        return base_config(self.study, self.name)

    def execute(
        self, config: dict[str, Any], compute: Callable[[Progress], Run]
    ) -> ExperimentResult:
        """Reuse the stored result for `config`, or compute and publish it (`runner.execute`)."""
        return execute(self.study, self.name, config, compute)

    def load_target(self, dtype: str | None = None) -> LoadedModel:
        """The profile's target, loaded once per process (per dtype: `dtype`, e.g. "float32",
        in place of the profile's)."""
        return load_target(self.study, dtype=dtype)

    def target_dtype(self) -> str:
        """The name of the dtype the profile's target is loaded in ("float32", "bfloat16"; the
        torch dtype's name without its `torch.` prefix), loading it."""
        return str(load_target(self.study).dtype).removeprefix("torch.")

    def arm(self, loaded: LoadedModel, name: str, spec: str, k: int, **kwargs: Any) -> Arm:
        """An arm named `name` drafting with `spec` at K (`runner.session.make_arm`)."""
        return make_arm(self.study, loaded, name, spec, k, **kwargs)

    def arms(
        self, loaded: LoadedModel, specs: dict[str, str], k: int, *, use_cache: bool = True
    ) -> list[Arm]:
        """The baseline first, then one arm per (name -> spec), each at K, with the KV cache on
        or off (`runner.session.build_arms`)."""
        return build_arms(self.study, loaded, specs, k, use_cache=use_cache)

    def drafters(
        self, loaded: LoadedModel, specs: dict[str, str], *, use_cache: bool = True
    ) -> dict[str, Drafter]:
        """Name -> the drafter of each spec on the target (`runner.session.get_drafter`: built
        once per target, spec and cache setting)."""
        return {
            m: get_drafter(self.study, loaded, s, use_cache=use_cache) for m, s in specs.items()
        }

    @staticmethod
    def draft_kinds(loaded: LoadedModel, drafters: dict[str, Drafter]) -> dict[str, str]:
        """Name -> how each draft relates to the target: shares its hidden states, an early exit
        of it, a separate computation or a context-free control (`runner.teacher_forced`)."""
        return {m: draft_kind(d, loaded.model) for m, d in drafters.items()}

    @staticmethod
    def arm_name(spec: str) -> str:
        """A short arm name for a drafter spec (`runner.session.arm_name`):
        model:google/gemma-3-1b-pt -> gemma-3-1b-pt, self:L:KEEP -> self."""
        return arm_name(spec)

    @staticmethod
    def hf_problem() -> str | None:
        """Why Hugging Face's side (`specdec_lib.measure.huggingface`) cannot run here; None when
        it can (`runner.hf_arms.peers_problem`; the peers run their own arms only without it)."""
        return hf_arms.peers_problem()

    def hf_arms(self, loaded: LoadedModel, modes: dict[str, str], k: int) -> list[Arm]:
        """One arm per (name -> Hugging Face generate mode) on the target at K, assisted
        generation with the profile's transformer draft (`runner.hf_arms.hf_arms`)."""
        return hf_arms.hf_arms(self.study, loaded, modes, k)

    @staticmethod
    def distribution_checks(
        gens: dict[str, tuple[Any, int]],
        prompts: Sequence[Any],
        sampling: SamplingConfig,
        n_samples: int,
        t: float,
        checkpoint: Checkpoint | None = None,
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Per method (name -> (generator, K)): whether its first sampled token follows the
        target's exact distribution over `n_samples` seeds a prompt, and the rows of samples
        (`runner.distribution.distribution_checks`; resumable per method and prompt)."""
        return distribution.distribution_checks(gens, prompts, sampling, n_samples, t, checkpoint)

    @staticmethod
    def sequence_checks(
        gens: dict[str, tuple[Any, int]],
        prompt: Sequence[int],
        sampling: SamplingConfig,
        cfg: dict[str, Any],
        t: float,
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Per method (name -> (generator, K)): its tokens at positions 1..m after `prompt`
        against the target's exact conditionals (`runner.distribution.sequence_checks`)."""
        return distribution.sequence_checks(gens, prompt, sampling, cfg, t)

    def prompts(self, loaded: LoadedModel, n: int, context: int, **kwargs: Any) -> list[Prompt]:
        """The profile's `n` prompts of `context` eval tokens (`runner.prompts.prompts_for`)."""
        return prompts_for(self.study, loaded, n, context, **kwargs)

    def article_tokens(self, loaded: LoadedModel) -> list[list[int]]:
        """The token ids of every eval article, in the tokenizer of `loaded`
        (`runner.prompts.eval_articles`), indexed as a prompt's `article`."""
        return article_token_ids(loaded.tokenizer, eval_articles(self.study))

    def continuer(
        self, loaded: LoadedModel, cfg: dict[str, Any]
    ) -> Callable[[list[list[int]]], list[list[int]]]:
        """prompts -> the target's greedy continuation of each, as the config says (the agreement's
        `continuation_by` run or batched plain greedy decoding; `runner.continuations`)."""
        return continuations.continuer(self.study, loaded, cfg)

    @staticmethod
    def teacher_forced(
        loaded: LoadedModel, drafters: dict[str, Drafter], seq: Sequence[int], n: int
    ) -> tuple[list[int], dict[str, list[int]]]:
        """The target's greedy next token at the last n positions of seq and each draft's guess
        there, teacher-forced in one call (`runner.teacher_forced.teacher_forced_guesses`)."""
        return teacher_forced_guesses(loaded.model, drafters, seq, n)

    def interleaved_rows(
        self, loaded: LoadedModel, cfg: dict[str, Any], arms: list[Arm], on_row: Progress
    ) -> list[dict[str, Any]]:
        """The arms over the config's prompts at each of its contexts, interleaved: prompt by
        prompt, each prompt's contexts in a seeded order, each (prompt, context) block paired
        after its own warm-up and checkpointed (`runner.interleaved`: 04's timed sweeps and its
        positive control)."""
        return interleaved_rows(self.study, loaded, cfg, arms, on_row)

    @staticmethod
    def paired(
        arms: list[Arm],
        prompts: Sequence[Any],
        cfg: dict[str, Any],
        *,
        progress: str,
        on_row: Progress,
        sampling: SamplingConfig | None = None,
        warmup: int | None = None,
        extra_cols: dict[str, Any] | None = None,
    ) -> list[dict[str, Any]]:
        """The arms over the prompts, paired and interleaved, resumable (`runner.execute.paired`),
        for the config's `max_new_tokens`; greedy and with the config's `warmup` unless `sampling`
        or `warmup` say otherwise, each row given the `extra_cols`."""
        return paired(
            arms,
            prompts,
            max_new_tokens=cfg["max_new_tokens"],
            warmup=cfg["warmup"] if warmup is None else warmup,
            sampling=sampling,
            progress=progress,
            on_row=on_row,
            extra_cols=extra_cols,
        )

    @staticmethod
    def result(
        rows: list[dict[str, Any]], summary: dict[str, Any], extra: dict[str, Any] | None = None
    ) -> Run:
        """What a computation hands `execute` to publish."""
        return Run(rows, summary, extra)
