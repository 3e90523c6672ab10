"""Hugging Face `generate` on the same loaded model: the peers our decoders are measured against.

`hf_generate` runs one prompt (greedy, or sampling with our temperature / top-k / top-p, and
with HF's own repetition penalty / no-repeat n-grams where a `RepetitionControl` asks) in one of
three modes and returns the new token ids and the
wall time of the `generate` call:
- "greedy": `generate(do_sample=False)`, the autoregressive peer;
- "prompt_lookup": `prompt_lookup_num_tokens=k` (HF's n-gram lookup, its default
  `max_matching_ngram_size`), the peer of our n-gram drafter;
- "assisted": `assistant_model=assistant` drafting `num_assistant_tokens=k` with the "constant"
  schedule and no confidence cut-off, so every round drafts k tokens as ours do. Where the two
  models' vocabulary sizes differ (Gemma 3 4B: 262,208, 1B: 262,144) the pinned transformers
  only runs its "universal assisted decoding", which needs both tokenizers: `tokenizer` (the
  target's) and `assistant_tokenizer` are passed then, and only then (it refuses them otherwise).
Every mode runs a logits processor that stops on NaN/inf logits (`cache.check_finite`), which
`generate` would otherwise turn into a token silently.
The generation config is built fresh (not the checkpoint's, which may carry sampling settings),
with our EOS ids, a pad id, `max_new_tokens` and nothing else, so HF neither warns nor stops
for any other reason than ours: after max_new_tokens or an EOS, which it keeps, as we do.

`HFGenerator` wraps a mode as a Generator-like object (`generate_ids(ids, spec, sampling)`), so
the HF peers run interleaved with our arms in `measure.paired.run_paired`.

Knows nothing about our decoders, drafters or result files.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import time
from typing import Any

import torch
from transformers import GenerationConfig, LogitsProcessor, LogitsProcessorList

from specdec_lib.config import SamplingConfig, SpecConfig
from specdec_lib.core.cache import CachedLM, check_finite
from specdec_lib.core.decode import Generation, GenStats, device_sync
from specdec_lib.core.processors import NO_CONTROL, RepetitionControl
from specdec_lib.errors import SpecdecError
from specdec_lib.models import LoadedModel
from specdec_lib.models.pairing import eos_token_ids

MODES = ("greedy", "prompt_lookup", "assisted")


def _sampling_fields(sampling: SamplingConfig | None) -> dict[str, Any]:
    """GenerationConfig's sampling fields for ours (top-k 0 and top-p 1 are off in both; HF's
    own default top-k of 50 is turned off)."""
    if sampling is None or sampling.greedy:
        return {"do_sample": False}
    return {
        "do_sample": True,
        "temperature": float(sampling.temperature),
        "top_k": int(sampling.top_k),
        "top_p": float(sampling.top_p),
    }


def _generation_config(
    loaded: LoadedModel,
    max_new_tokens: int,
    sampling: SamplingConfig | None = None,
    **extra: Any,
) -> GenerationConfig:
    eos = eos_token_ids(loaded)
    pad = loaded.tokenizer.pad_token_id
    pad = int(pad) if pad is not None else (eos[0] if eos else 0)
    return GenerationConfig(
        **_sampling_fields(sampling),
        max_new_tokens=int(max_new_tokens),
        eos_token_id=eos or None,
        pad_token_id=pad,
        bos_token_id=loaded.tokenizer.bos_token_id,
        use_cache=True,
        return_dict_in_generate=False,
        **extra,
    )


@contextlib.contextmanager
def _quiet_transformers(quiet: bool):
    """Silence transformers' logger: assisted generation calls the assistant's `generate` with
    both a config and keyword arguments, which logs a deprecation notice we cannot avoid."""
    log = logging.getLogger("transformers")
    old = log.level
    if quiet:
        log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(old)


class FiniteLogits(LogitsProcessor):
    """Raises SpecdecError on a NaN/inf score instead of letting argmax pick a token; with
    `banned_ok` a -inf (a token `no_repeat_ngram_size` banned: HF runs our processor last) is
    not an error."""

    def __init__(self, dtype: torch.dtype, banned_ok: bool = False):
        self.dtype = dtype
        self.banned_ok = banned_ok

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        checked = scores.masked_fill(scores == float("-inf"), 0.0) if self.banned_ok else scores
        check_finite(checked, self.dtype)  # scores: [batch, V]
        return scores


def _text_vocab(model: torch.nn.Module) -> int:
    cfg = model.config
    cfg = cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg
    return int(cfg.vocab_size)


def _assistant_model(assistant: Any) -> torch.nn.Module:
    model = (
        assistant if isinstance(assistant, torch.nn.Module) else getattr(assistant, "model", None)
    )
    if not isinstance(model, torch.nn.Module):
        raise SpecdecError("mode 'assisted' needs an assistant model (a LoadedModel or a model)")
    return model


@torch.inference_mode()
def hf_generate(
    loaded: LoadedModel,
    prompt_ids: list[int],
    *,
    max_new_tokens: int,
    mode: str,
    k: int | None = None,
    assistant: Any = None,
    assistant_tokenizer: Any = None,
    sampling: SamplingConfig | None = None,
    control: RepetitionControl = NO_CONTROL,
) -> tuple[list[int], float]:
    """(new token ids, wall seconds of `model.generate`) for one prompt: greedy, or sampling
    with `sampling`'s temperature, top-k and top-p (torch's global RNG seeded with its seed);
    `control` becomes HF's own `repetition_penalty` / `no_repeat_ngram_size`."""
    if mode not in MODES:
        raise SpecdecError(f"unknown Hugging Face mode {mode!r}; use one of {', '.join(MODES)}")
    if not prompt_ids:
        raise SpecdecError("the prompt is empty: give at least one token")
    if mode != "greedy" and (k is None or int(k) < 1):
        raise SpecdecError(f"mode {mode!r} needs k >= 1, got {k!r}")
    model = loaded.model
    input_ids = torch.tensor([list(prompt_ids)], dtype=torch.long, device=loaded.device)
    kwargs: dict[str, Any] = {
        "attention_mask": torch.ones_like(input_ids),
        "logits_processor": LogitsProcessorList(
            [FiniteLogits(loaded.dtype, banned_ok=control.no_repeat_ngram_size > 0)]
        ),
    }
    extra: dict[str, Any] = dict(control.hf_kwargs())
    restore = None
    if mode == "prompt_lookup":
        extra["prompt_lookup_num_tokens"] = int(k)
    elif mode == "assisted":
        helper = _assistant_model(assistant)
        if _text_vocab(helper) != _text_vocab(model):
            if assistant_tokenizer is None:
                assistant_tokenizer = getattr(assistant, "tokenizer", None)
            if assistant_tokenizer is None:
                raise SpecdecError(
                    f"the assistant's vocabulary ({_text_vocab(helper)} ids) differs from the "
                    f"target's ({_text_vocab(model)}): Hugging Face needs both tokenizers; "
                    "pass assistant_tokenizer"
                )
            kwargs["tokenizer"] = loaded.tokenizer
            kwargs["assistant_tokenizer"] = assistant_tokenizer
        # HF reads the draft length from the assistant's own generation config; give it a private
        # copy (an early-exit view shares the target's config object) and put it back afterwards.
        restore = (helper, helper.generation_config)
        own = copy.deepcopy(helper.generation_config)
        own.num_assistant_tokens = int(k)
        own.num_assistant_tokens_schedule = "constant"
        own.assistant_confidence_threshold = 0.0
        helper.generation_config = own
        kwargs["assistant_model"] = helper
    config = _generation_config(loaded, max_new_tokens, sampling, **extra)
    if sampling is not None and not sampling.greedy:
        torch.manual_seed(sampling.seed)
    try:
        device_sync(loaded.device)
        t0 = time.perf_counter()
        with _quiet_transformers(mode == "assisted"):
            out = model.generate(input_ids, generation_config=config, **kwargs)
        device_sync(loaded.device)
        wall = time.perf_counter() - t0
    finally:
        if restore is not None:
            restore[0].generation_config = restore[1]
    sequence = out.sequences if hasattr(out, "sequences") else out
    return [int(t) for t in sequence[0, input_ids.shape[1] :].tolist()], wall


class HFGenerator:
    """A Hugging Face mode shaped like `generate.Generator` for `measure.paired.run_paired`:
    `generate_ids` returns the tokens and stats holding only the token count and wall time."""

    def __init__(
        self,
        loaded: LoadedModel,
        mode: str,
        k: int | None = None,
        assistant=None,
        assistant_tokenizer=None,
        control: RepetitionControl = NO_CONTROL,
    ):
        if mode not in MODES:
            raise SpecdecError(f"unknown Hugging Face mode {mode!r}; use one of {', '.join(MODES)}")
        self.target = loaded
        self.lm = CachedLM(loaded.model)  # only .device is read (run_paired's top-2 margin)
        self.mode, self.k, self.assistant = mode, k, assistant
        self.assistant_tokenizer = assistant_tokenizer
        self.control = control

    def generate_ids(self, ids, spec: SpecConfig, sampling: SamplingConfig) -> Generation:
        """Generation through Hugging Face `generate` in this mode (greedy or sampling, with
        this generator's repetition control), as a Generation."""
        tokens, wall = hf_generate(
            self.target,
            list(ids),
            max_new_tokens=spec.max_new_tokens,
            mode=self.mode,
            k=None if self.mode == "greedy" else (self.k or spec.k),
            assistant=self.assistant,
            assistant_tokenizer=self.assistant_tokenizer,
            sampling=sampling,
            control=self.control,
        )
        eos = set(eos_token_ids(self.target))
        stats = GenStats(new_tokens=len(tokens), wall_s=float(wall))
        if tokens and tokens[-1] in eos:
            stats.stopped_by = "eos"
        return Generation(tokens, stats)
