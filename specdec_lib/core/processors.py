"""Repetition control as a logits processor applied inside verification (issue 23).

`RepetitionControl` holds Hugging Face's two repetition settings with HF's semantics
(`RepetitionPenaltyLogitsProcessor`, `NoRepeatNGramLogitsProcessor`):
- `repetition_penalty` r: every token that occurs anywhere in the sequence so far (prompt
  included) has its logit divided by r where positive, multiplied by r where negative;
- `no_repeat_ngram_size` n: a token that would complete an n-gram already present in the sequence
  gets logit -inf (nothing is banned while the sequence is shorter than n - 1 tokens).

`process(logits, prefix, drafts)` processes the K + 1 rows of one verification call: row i is the
target's distribution after prefix + drafts[:i], so it is processed against exactly that sequence,
the accepted-so-far draft tokens included. Greedy speculation then takes the argmax of processed
rows and stays token-identical to step-by-step greedy decoding under the same processing;
speculative sampling rejects against the processed p and stays exact for it. A proposal only needs
to be checked against the processed target (a sampling draft's q is whatever it sampled from), so
every drafter honours the control except tree verification, whose one call reads its own argmax;
the drafters that compute logits (model drafters, the shared-body drafter) also process their own
with it (`Drafter.process_with`, called by the decode loop), or their guesses would follow the
unprocessed model and be rejected wherever the penalty changes the target's choice.

Knows nothing about models, caches or drafters; loads torch only to process logits.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from specdec_lib.errors import SpecdecError

if TYPE_CHECKING:  # the settings load no torch (the CLI checks them before loading anything)
    import torch

MAX_NGRAM = 64  # longer n-grams never repeat in practice; the bound keeps the lookup cheap


@dataclass(frozen=True)
class RepetitionControl:
    """HF's `repetition_penalty` (1.0: off) and `no_repeat_ngram_size` (0: off)."""

    repetition_penalty: float = 1.0
    no_repeat_ngram_size: int = 0

    def __post_init__(self) -> None:
        r = self.repetition_penalty
        if isinstance(r, bool) or not isinstance(r, (int, float)) or not math.isfinite(r) or r <= 0:
            raise SpecdecError(f"repetition penalty must be a finite number > 0, got {r!r}")
        n = self.no_repeat_ngram_size
        if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= MAX_NGRAM:
            raise SpecdecError(
                f"no-repeat n-gram size must be an integer in [0, {MAX_NGRAM}] (0: off), got {n!r}"
            )

    @property
    def active(self) -> bool:
        """Whether it changes any logit at all."""
        return self.repetition_penalty != 1.0 or self.no_repeat_ngram_size > 0

    def hf_kwargs(self) -> dict[str, float | int]:
        """The same settings as `GenerationConfig` fields (only those that are on)."""
        out: dict[str, float | int] = {}
        if self.repetition_penalty != 1.0:
            out["repetition_penalty"] = float(self.repetition_penalty)
        if self.no_repeat_ngram_size:
            out["no_repeat_ngram_size"] = int(self.no_repeat_ngram_size)
        return out

    def describe(self) -> str:
        """Short text for tables: `rp1.2`, `nr3`, `rp1.2+nr3` or `off`."""
        parts = []
        if self.repetition_penalty != 1.0:
            parts.append(f"rp{self.repetition_penalty:g}")
        if self.no_repeat_ngram_size:
            parts.append(f"nr{self.no_repeat_ngram_size}")
        return "+".join(parts) or "off"

    def process(
        self, logits: torch.Tensor, prefix: Sequence[int], drafts: Sequence[int] = ()
    ) -> torch.Tensor:
        """[m, V] logits -> processed copy; row i is processed against prefix + drafts[:i]
        (m <= len(drafts) + 1). A reduced-precision input is processed in float32, as HF's
        `generate` processes its scores; float32 and float64 stay as they are."""
        import torch

        if not self.active:
            return logits
        m = logits.shape[0]
        if m > len(drafts) + 1:
            raise ValueError(f"{m} rows of logits for {len(drafts)} draft tokens")
        wide = logits.dtype in (torch.float32, torch.float64)
        out = logits.clone() if wide else logits.float()
        seq = list(prefix)
        if self.repetition_penalty != 1.0:
            self._penalise(out, seq, drafts)
        if self.no_repeat_ngram_size:
            self._ban(out, seq, drafts)
        return out

    def _penalise(self, out: torch.Tensor, seq: list[int], drafts: Sequence[int]) -> None:
        """Every row at once over the prefix's tokens, then each draft token new to the
        sequence over the rows after it: the same element-wise rule as row by row, in a few
        tensor calls instead of several per row."""
        import torch

        r = self.repetition_penalty
        seen = set(seq)
        if seen:
            idx = torch.tensor(sorted(seen), device=out.device)
            s = out[:, idx]  # [m, P]
            out[:, idx] = torch.where(s < 0, s * r, s / r)
        for i, t in enumerate(drafts[: out.shape[0] - 1]):  # rows i + 1.. saw drafts[i]
            if t in seen:
                continue
            seen.add(t)
            s = out[i + 1 :, t]
            out[i + 1 :, t] = torch.where(s < 0, s * r, s / r)

    def _ban(self, out: torch.Tensor, seq: list[int], drafts: Sequence[int]) -> None:
        import torch

        n = self.no_repeat_ngram_size
        seen: dict[tuple[int, ...], set[int]] = {}
        for j in range(len(seq) - n + 1):  # every n-gram of the prefix
            seen.setdefault(tuple(seq[j : j + n - 1]), set()).add(seq[j + n - 1])
        for i in range(out.shape[0]):
            if i:  # the n-gram that drafts[i - 1] completes joins the seen ones
                seq.append(drafts[i - 1])
                if len(seq) >= n:
                    seen.setdefault(tuple(seq[len(seq) - n : -1]), set()).add(seq[-1])
            if len(seq) + 1 < n:
                continue
            banned = seen.get(tuple(seq[len(seq) - n + 1 :]) if n > 1 else (), ())
            if banned:
                out[i, torch.tensor(sorted(banned), device=out.device)] = float("-inf")


NO_CONTROL = RepetitionControl()
TREE_NO_CONTROL = (
    "tree verification cannot apply a repetition control (its one call reads the target's own "
    "argmax); use a chain drafter"
)
