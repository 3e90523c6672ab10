"""A causal LM as drafter, with its own KV cache that follows the sequence.

Before each proposal the draft's cache is rolled back to the longest prefix it shares with the
sequence (rejected draft tokens are dropped, accepted ones kept), the missing ids are fed, and K
tokens are decoded one at a time. Greedy: argmax. Sampling: each token is drawn from q, the draft's
logits processed exactly like the target's, and q is returned for the verifier. Under a
repetition control (`process_with`: the penalty the verifier applies to the target's logits) the
draft's logits are processed by it too, against the sequence and the tokens drafted so far, so
that its guesses follow the processed target (unprocessed, an int8 copy of the embedded target
agreed with its greedy tokens under a penalty of 1.2 on 36% of them, processed on 82%).

`vocab_size` slices the draft's logits to the ids it shares with the target; `token_map` maps a
pruned head's rows back to vocabulary ids (a self-draft with a frequency-pruned LM head). A
target whose vocabulary is larger than the draft's (Gemma 3 4B: 262,208 ids; 1B: 262,144) can
emit or be prompted with an id the draft's embedding has no row for: the draft reads `stand_in`
there instead (its input only; the sequence is untouched), so it guesses worse at worst, and the
verifier decides as always, which keeps decoding lossless.
Knows nothing about the verifier or the target.
"""

from __future__ import annotations

import copy

import torch

from specdec_lib.core.cache import CachedLM
from specdec_lib.core.draft import Draft, Drafter
from specdec_lib.core.processors import NO_CONTROL, RepetitionControl
from specdec_lib.core.sampling import argmax_rows, logits_to_probs, sample
from specdec_lib.drafters.registry import DraftContext


def choose(
    logits: torch.Tensor,  # [1, V_head]
    sampling,
    generator: torch.Generator,
    token_map: torch.Tensor | None = None,  # [V_head] vocabulary id of each head row
    full_vocab: int | None = None,  # width of q when token_map is set
    control: RepetitionControl = NO_CONTROL,
    prefix: list[int] | None = None,  # the sequence the token follows (for the control)
) -> tuple[int, torch.Tensor | None]:
    """One draft token from a head's logits: (vocabulary id, q over the full vocabulary, None
    when greedy). q is exactly the distribution the token was drawn from. An active control
    processes the logits against prefix first (a pruned head's rows spread over the full
    vocabulary, -inf elsewhere)."""
    if control.active:
        if token_map is not None:
            full = logits.new_full((1, full_vocab), float("-inf"))
            full[0, token_map] = logits[0]
            logits, token_map = full, None
        logits = control.process(logits, prefix or [])
    if sampling.greedy:
        row = int(argmax_rows(logits)[0])
        return (int(token_map[row]) if token_map is not None else row), None
    probs = logits_to_probs(logits, sampling)[0]  # [V_head]
    row = sample(probs, generator)
    if token_map is not None:
        full = torch.zeros(full_vocab, dtype=probs.dtype, device=probs.device)
        full[token_map] = probs
        return int(token_map[row]), full
    return row, probs


class ModelDrafter(Drafter):
    """A causal LM that drafts on its own KV cache, greedy or sampled with its q."""

    name = "model"

    def __init__(
        self,
        model: torch.nn.Module,
        *,
        vocab_size: int | None = None,
        token_map: torch.Tensor | None = None,  # [V_head] vocabulary id of each head row
        full_vocab: int | None = None,  # width of q when token_map is set
        use_cache: bool = True,
        stand_in: int | None = None,  # what the draft reads for an id it cannot embed
        tokenizer=None,  # the draft's own (Hugging Face assisted generation needs it)
    ):
        self.lm = CachedLM(model, use_cache=use_cache, vocab_size=vocab_size)
        self.control: RepetitionControl = NO_CONTROL  # the verifier's (`process_with`)
        self.token_map = token_map
        self.full_vocab = full_vocab
        self.tokenizer = tokenizer
        embedding = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else None
        self.embed_limit: int | None = getattr(embedding, "num_embeddings", None)
        if stand_in is None:
            cfg = getattr(model, "config", None)
            cfg = cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg
            stand_in = getattr(cfg, "pad_token_id", None)
        self.stand_in = int(stand_in or 0)

    def embeddable(self, ids: list[int]) -> list[int]:
        """ids as the draft reads them: an id without a row in its embedding -> `stand_in`."""
        limit = self.embed_limit
        if limit is None or not ids or max(ids) < limit:
            return ids
        return [t if t < limit else self.stand_in for t in ids]

    def begin(self, prompt: list[int]) -> None:
        """Empty the draft model's cache for the new sequence."""
        self.lm.reset()

    def with_cache(self, use_cache: bool) -> ModelDrafter:
        """A copy whose draft model runs with its KV cache on or off (itself if already so)."""
        if self.lm.use_cache == use_cache:
            return self
        new = copy.copy(self)
        new.lm = CachedLM(self.lm.model, use_cache=use_cache, vocab_size=self.lm.vocab_size)
        return new

    def process_with(self, control: RepetitionControl) -> None:
        """Process the draft's logits with the verifier's repetition control from now on."""
        self.control = control

    def _choose(
        self, logits: torch.Tensor, sampling, generator, prefix: list[int]
    ) -> tuple[int, torch.Tensor | None]:
        return choose(
            logits, sampling, generator, self.token_map, self.full_vocab, self.control, prefix
        )

    def propose(self, seq, k, sampling, generator) -> Draft:
        """k tokens decoded by the draft model (greedy or sampled), with their q when sampled."""
        todo = self.lm.sync_to(self.embeddable(seq))
        logits = self.lm.extend(todo, 1)  # [1, V]
        tokens: list[int] = []
        qs: list[torch.Tensor] = []
        for i in range(k):
            tok, q = self._choose(logits, sampling, generator, [*seq, *tokens])
            tokens.append(tok)
            if q is not None:
                qs.append(q)
            if i + 1 < k:
                logits = self.lm.extend([tok], 1)
        return Draft(tokens, torch.stack(qs) if qs else None)

    def predictor(self):
        """The draft model's greedy token after each prefix, from one uncached forward."""
        model, vsize, tmap = self.lm.model, self.lm.vocab_size, self.token_map

        def predict(ids: list[int]) -> list[int]:
            from specdec_lib.core.cache import check_finite

            dev = next(model.parameters()).device
            fed = torch.tensor([self.embeddable(list(ids))], device=dev)  # [1, n]
            with torch.inference_mode():
                logits = model(input_ids=fed, use_cache=False).logits  # [1, n, V]
            logits = logits[0] if vsize is None else logits[0, :, :vsize]
            check_finite(logits, self.lm.dtype)  # NaN would argmax to a token silently
            best = argmax_rows(logits)
            return (tmap[best] if tmap is not None else best).tolist()

        return predict


def build(args: tuple[str], ctx: DraftContext) -> ModelDrafter:
    """`model:ID_OR_PATH`: any causal LM sharing the target's tokenizer."""
    from specdec_lib.models.loading import load_model
    from specdec_lib.models.pairing import shared_vocab_size

    draft = load_model(args[0], dtype=ctx.dtype, device=ctx.device)
    return ModelDrafter(
        draft.model,
        vocab_size=shared_vocab_size(ctx.target, draft),
        use_cache=ctx.use_cache,
        tokenizer=draft.tokenizer,
    )
