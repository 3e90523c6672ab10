"""The public generation API: a loaded target, one drafter and its caches, text or ids in.

`Generator` is what the CLI, the experiment runner and the benchmark share. It checks prompts
against the model's context window and returns plain dicts for JSON. Knows nothing about files
or W&B.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from specdec_lib.config import SamplingConfig, SpecConfig
from specdec_lib.core.cache import CachedLM
from specdec_lib.core.decode import Generation, speculative_decode
from specdec_lib.core.draft import Drafter
from specdec_lib.core.processors import NO_CONTROL, RepetitionControl
from specdec_lib.drafters.registry import build_drafter
from specdec_lib.errors import SpecdecError
from specdec_lib.models import LoadedModel
from specdec_lib.models.loading import load_model
from specdec_lib.models.pairing import eos_token_ids

STATS_KEYS = (
    "new_tokens",
    "target_calls",
    "proposed",
    "accepted",
    "acceptance_rate",
    "mean_accepted_length",
    "wall_s",
)


@functools.lru_cache(maxsize=4)
def _fit_ids_cached(tokenizer_key: int, tokenizer, source: str, seed: int) -> tuple[int, ...]:
    from specdec_lib.data import fit_token_ids, load_wikitext, split_articles

    fit, _ = split_articles(load_wikitext(source), seed=seed)
    return tuple(fit_token_ids(tokenizer, fit))


def fit_ids_for(tokenizer, source: str = "auto", seed: int = 0) -> list[int]:
    """Token ids of the WikiText-2 fit split (the articles no prompt is drawn from)."""
    return list(_fit_ids_cached(id(tokenizer), tokenizer, source, seed))


def context_window(loaded: LoadedModel) -> int:
    """The target's maximum number of positions (2**30 when its config does not say)."""
    cfg = loaded.model.config
    cfg = cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg
    return int(getattr(cfg, "max_position_embeddings", 0) or 1 << 30)


@dataclass
class Generator:
    """A target, a drafter and the cached LM they decode with: prompt in, Generation out."""

    target: LoadedModel
    drafter: Drafter
    lm: CachedLM
    eos: tuple[int, ...]
    control: RepetitionControl = NO_CONTROL  # processes the target's logits in verification

    @classmethod
    def load(
        cls,
        target: str,
        draft: str = "none",
        *,
        dtype: str = "auto",
        device: str = "auto",
        use_cache: bool = True,
        data_source: str = "auto",
        k: int = 4,
        control: RepetitionControl = NO_CONTROL,
    ) -> Generator:
        """Load the target by name and build the drafter spec `draft` beside it."""
        loaded = load_model(target, dtype=dtype, device=device)
        return cls.from_loaded(
            loaded,
            draft,
            dtype=dtype,
            device=device,
            use_cache=use_cache,
            data_source=data_source,
            k=k,
            control=control,
        )

    @classmethod
    def from_loaded(
        cls,
        loaded: LoadedModel,
        draft: str | Drafter = "none",
        *,
        dtype: str = "auto",
        device: str = "auto",
        use_cache: bool = True,
        data_source: str = "auto",
        k: int = 4,
        control: RepetitionControl = NO_CONTROL,
    ) -> Generator:
        """draft: a spec (`drafters.registry`) or a drafter; k: the run's K (adaptive's cap);
        control: the repetition control applied to the target's logits."""
        if isinstance(draft, str):
            draft = build_drafter(
                draft,
                loaded,
                fit_ids=lambda: fit_ids_for(loaded.tokenizer, data_source),
                dtype=dtype,
                device=device,
                use_cache=use_cache,
                k=k,
            )
        lm = CachedLM(loaded.model, use_cache=use_cache)
        return cls(loaded, draft, lm, tuple(eos_token_ids(loaded)), control)

    def check_prompt(self, ids: list[int], max_new_tokens: int) -> None:
        """Refuse an empty prompt or one that with max_new_tokens exceeds the context window."""
        if not ids:
            raise SpecdecError("the prompt is empty: give at least one token")
        window = context_window(self.target)
        if len(ids) + max_new_tokens > window:
            raise SpecdecError(
                f"prompt of {len(ids)} tokens + max_new_tokens {max_new_tokens} exceeds the "
                f"model's context window of {window} tokens: shorten the prompt or generate less"
            )

    def generate_ids(
        self, ids: list[int], spec: SpecConfig, sampling: SamplingConfig
    ) -> Generation:
        """Speculative decoding from prompt ids: the new tokens and their statistics."""
        self.check_prompt(ids, spec.max_new_tokens)
        return speculative_decode(
            self.lm,
            self.drafter,
            list(ids),
            k=spec.k,
            max_new_tokens=spec.max_new_tokens,
            sampling=sampling,
            eos_ids=self.eos,
            control=self.control,
        )

    def encode(self, text: str) -> list[int]:
        """The prompt's token ids, with the tokenizer's special tokens; refuses blank text."""
        if not text.strip():
            raise SpecdecError("the prompt is empty or whitespace: give some text")
        return list(self.target.tokenizer.encode(text, add_special_tokens=True))

    def generate_text(self, text: str, spec: SpecConfig, sampling: SamplingConfig) -> dict:
        """Decode from text: {'token_ids', 'text', 'stats'} of the continuation."""
        gen = self.generate_ids(self.encode(text), spec, sampling)
        summary = gen.stats.summary(spec.k)
        return {
            "token_ids": gen.tokens,
            "text": self.target.tokenizer.decode(gen.tokens, skip_special_tokens=True),
            "stats": {key: summary[key] for key in STATS_KEYS},
        }
