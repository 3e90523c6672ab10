"""The shared-body drafter: the target's own layers, on the target's own KV cache, with a
frequency-pruned LM head as the guess, so that verification is the full LM head alone.

A separate self-draft (`self_draft.SelfDrafter` with all layers) computes, token by token, the
very hidden states the target then recomputes in its verification pass. This drafter computes
them once: for each draft position it runs the target's body on one token (the call a greedy
decoding step makes, extending the target's own cache), guesses the next token from a head
restricted to the `keep` most frequent ids (a [keep, H] matrix instead of [V, H]), and returns
the K + 1 hidden states with the draft (`Draft.target_hidden`). The verifier applies the full
LM head to all of them in one product and accepts or rejects as usual; the loop then crops the
rejected positions from the target's cache.

A guess is wrong only where the target's choice lies outside the kept ids (greedy: the pruned
argmax equals the full one whenever the full one is kept) or, sampling, by the usual
min(1, p/q) rule, q being the pruned head's distribution. Under the verifier's repetition control
(`process_with`) the pruned head's logits are processed by it too. The body runs on one position per
call, like the baseline, so the hidden states are the baseline's; the head's product over K + 1
rows may round differently from one row's (as every verification's does).

Per token this costs one body step and a small head, plus the full head once per verification
over K + 1 rows (on a memory-bound CPU about what one row costs). Needs the KV cache and a
decoder laid out as `.model` / `.lm_head`. Knows nothing about the verifier.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

import torch

from specdec_lib.core.draft import Draft, Drafter
from specdec_lib.core.processors import NO_CONTROL, RepetitionControl
from specdec_lib.drafters.model import choose
from specdec_lib.drafters.registry import SELF_KEEP, DraftContext
from specdec_lib.drafters.self_draft import frequent_ids, pruned_linear
from specdec_lib.errors import SpecdecError

if TYPE_CHECKING:
    from specdec_lib.core.cache import CachedLM


class SharedBodyDrafter(Drafter):
    """The target's own body on the target's own cache, with a pruned head."""

    name = "shared"

    def __init__(self, keep_ids: torch.Tensor, full_vocab: int):
        if keep_ids.ndim != 1 or keep_ids.numel() == 0:
            raise SpecdecError("the shared-body drafter needs a non-empty 1-D tensor of kept ids")
        self.keep_ids, self.full_vocab = keep_ids, full_vocab
        self.target: CachedLM | None = None
        self.control: RepetitionControl = NO_CONTROL  # the verifier's (`process_with`)
        # the pruned head per target model (weak: a dropped model frees its pruned head)
        self._heads: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def process_with(self, control: RepetitionControl) -> None:
        """Process the pruned head's logits with the verifier's repetition control."""
        self.control = control

    def attach(self, target: CachedLM) -> None:
        """Keep the target whose body and cache the drafts run on (it needs a KV cache)."""
        if not target.use_cache:
            raise SpecdecError("the shared-body drafter needs the target's KV cache")
        self.target = target

    def small_head(self) -> torch.nn.Module:
        """The target's LM head restricted to the kept ids (built once per model)."""
        t = self.target
        head = self._heads.get(t.model)
        if head is None:
            from specdec_lib.core.fastpath import PackedLinear

            full = getattr(t.model, "lm_head", None)
            if full is None:
                raise SpecdecError(f"{type(t.model).__name__} has no lm_head to prune")
            small = pruned_linear(full, self.keep_ids)  # [keep, H]
            head = PackedLinear(small, pack=t.packed) if t.fast else small
            self._heads[t.model] = head
        return head

    def propose(self, seq, k, sampling, generator) -> Draft:
        """k tokens by the target's body and the pruned head, with their hidden states."""
        t = self.target
        if t is None:
            raise SpecdecError("the shared-body drafter was not attached to a target")
        if len(t) != len(seq) - 1:
            raise SpecdecError("the target's cache does not hold the sequence but its last token")
        head = self.small_head()
        token_map = self.keep_ids.to(t.device)
        hidden = [t.hidden([seq[-1]])]  # [1, H] each
        tokens: list[int] = []
        qs: list[torch.Tensor] = []
        for _ in range(k):
            logits = t.head(hidden[-1], head)
            prefix = [*seq, *tokens]
            tok, q = choose(
                logits, sampling, generator, token_map, self.full_vocab, self.control, prefix
            )
            tokens.append(tok)
            if q is not None:
                qs.append(q)
            hidden.append(t.hidden([tok]))
        return Draft(tokens, torch.stack(qs) if qs else None, torch.cat(hidden))  # [k + 1, H]


def shared_drafter(ctx: DraftContext, keep: int) -> SharedBodyDrafter:
    """The shared-body drafter keeping the `keep` most frequent ids (at most the vocabulary)."""
    v = ctx.target.vocab_size
    return SharedBodyDrafter(frequent_ids(ctx.fit_ids(), v, min(keep, v)), v)


def shared_fallback(ctx: DraftContext) -> SharedBodyDrafter:
    """The shared-body drafter as another drafter's fallback (`lookup+shared`, `tree+shared`):
    its head scaled down to half the vocabulary for models smaller than the embedded one."""
    return shared_drafter(ctx, min(SELF_KEEP, max(ctx.target.vocab_size // 2, 1)))


def build(args: tuple[int], ctx: DraftContext) -> SharedBodyDrafter:
    """`shared[:KEEP]`: the target's own body, head pruned to the KEEP most frequent ids."""
    return shared_drafter(ctx, args[0])
