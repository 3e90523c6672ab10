"""A causal LM as drafter, with its own KV cache that follows the sequence.

Before each proposal the draft's cache is rolled back to the longest prefix it shares with the
sequence (rejected draft tokens are dropped, accepted ones kept), the missing ids are fed, and K
tokens are decoded one at a time. Greedy: argmax. Sampling: each token is drawn from q, the draft's
logits processed exactly like the target's, and q is returned for the verifier.

`vocab_size` slices the draft's logits to the ids it shares with the target; `token_map` maps a
pruned head's rows back to vocabulary ids (a self-draft with a frequency-pruned LM head).
Knows nothing about the verifier or the target.
"""

from __future__ import annotations

import torch

from specdec_lib.cache import CachedLM
from specdec_lib.drafters.base import Draft, Drafter
from specdec_lib.sampling import logits_to_probs, sample


def choose(
    logits: torch.Tensor,  # [1, V_head]
    sampling,
    generator: torch.Generator,
    token_map: torch.Tensor | None = None,  # [V_head] vocabulary id of each head row
    full_vocab: int | None = None,  # width of q when token_map is set
) -> tuple[int, torch.Tensor | None]:
    """One draft token from a head's logits: (vocabulary id, q over the full vocabulary, None
    when greedy). q is exactly the distribution the token was drawn from."""
    if sampling.greedy:
        row = int(logits[0].argmax())
        return (int(token_map[row]) if token_map is not None else row), None
    probs = logits_to_probs(logits, sampling)[0]  # [V_head]
    row = sample(probs, generator)
    if token_map is not None:
        full = torch.zeros(full_vocab, dtype=probs.dtype, device=probs.device)
        full[token_map] = probs
        return int(token_map[row]), full
    return row, probs


class ModelDrafter(Drafter):
    name = "model"

    def __init__(
        self,
        model: torch.nn.Module,
        *,
        vocab_size: int | None = None,
        token_map: torch.Tensor | None = None,  # [V_head] vocabulary id of each head row
        full_vocab: int | None = None,  # width of q when token_map is set
        use_cache: bool = True,
    ):
        self.lm = CachedLM(model, use_cache=use_cache, vocab_size=vocab_size)
        self.token_map = token_map
        self.full_vocab = full_vocab

    def begin(self, prompt: list[int]) -> None:
        self.lm.reset()

    def _choose(self, logits: torch.Tensor, sampling, generator) -> tuple[int, torch.Tensor | None]:
        return choose(logits, sampling, generator, self.token_map, self.full_vocab)

    def propose(self, seq, k, sampling, generator) -> Draft:
        todo = self.lm.sync_to(seq)
        logits = self.lm.extend(todo, 1)  # [1, V]
        tokens: list[int] = []
        qs: list[torch.Tensor] = []
        for i in range(k):
            tok, q = self._choose(logits, sampling, generator)
            tokens.append(tok)
            if q is not None:
                qs.append(q)
            if i + 1 < k:
                logits = self.lm.extend([tok], 1)
        return Draft(tokens, torch.stack(qs) if qs else None)
