"""The gate (`gate:SPEC`, `drafters.gate`): lossless on the tiny float64 models (greedy output
equals stepwise greedy decoding and the wrapped drafter's own output, under forced rejections and
at the max_new_tokens edges), silent for `backoff` steps after a window of rejected drafts,
probing once after each back-off, and open again once a probe is accepted."""

from __future__ import annotations

import pytest
from conftest import VOCAB, OracleDrafter, greedy_continuation, random_prompt, speculate

from specdec_lib.core.draft import Draft
from specdec_lib.drafters.gate import GateDrafter
from specdec_lib.drafters.model import ModelDrafter
from specdec_lib.drafters.ngram import NgramDrafter
from specdec_lib.errors import SpecdecError

pytestmark = pytest.mark.usefixtures("single_thread")


class RightFrom(OracleDrafter):
    """The target's greedy continuation, wrong at its first token while the sequence is shorter
    than `right_from` tokens, right after."""

    name = "right_from"

    def __init__(self, prompt: list[int], continuation: list[int], right_from: int):
        super().__init__(prompt, continuation, VOCAB)
        self.right_from = right_from

    def propose(self, seq, k, sampling, generator) -> Draft:
        self.wrong_at = 0 if len(seq) < self.right_from else None
        return super().propose(seq, k, sampling, generator)


INNERS = {
    "ngram": lambda prompt, ref, draft: NgramDrafter(max_ngram=3),
    "model": lambda prompt, ref, draft: ModelDrafter(draft),
    "always_wrong": lambda prompt, ref, draft: OracleDrafter(prompt, ref, VOCAB, wrong_at=0),
    "wrong_at_2": lambda prompt, ref, draft: OracleDrafter(prompt, ref, VOCAB, wrong_at=2),
    "right_later": lambda prompt, ref, draft: RightFrom(prompt, ref, len(prompt) + 12),
}
# (prompt length, K): short and long prompts, K from 1 to 8
CASES = [(1, 3), (4, 1), (6, 5), (9, 8), (14, 4)]


@pytest.mark.parametrize("name", list(INNERS))
def test_gated_greedy_output_equals_stepwise_greedy_and_the_wrapped_drafters(
    name, target64, draft64
):
    """A small gate (window 2, at least 3 tokens, back-off 3) closes and reopens many times in 24
    tokens (a draft wrong at its third token keeps it open only at K >= 3); the tokens stay
    those of greedy decoding and of the same drafter without the gate."""
    held = 0
    for i, (length, k) in enumerate(CASES):
        prompt, n = random_prompt(300 + i, length), 24
        ref = greedy_continuation(target64, prompt, n + k)
        plain = speculate(target64, INNERS[name](prompt, ref, draft64), prompt, k, n)
        gate = GateDrafter(INNERS[name](prompt, ref, draft64), window=2, min_accepted=3, backoff=3)
        gated = speculate(target64, gate, prompt, k, n)
        assert gated.tokens == plain.tokens == ref[:n], (name, length, k)
        held += gate.held
    if name in ("always_wrong", "wrong_at_2", "right_later"):
        assert held > 0  # the gate really closed


@pytest.mark.parametrize("k", [1, 3, 4])
def test_gated_output_has_exact_lengths_at_the_max_new_tokens_edges(k, target64):
    prompt = random_prompt(17, 4)
    ref = greedy_continuation(target64, prompt, 3 * (k + 1) + 2)
    for n in (0, 1, k, k + 1, 2 * (k + 1) + 1, 3 * (k + 1) - 1):
        for wrong_at in (0, None):
            inner = OracleDrafter(prompt, ref, VOCAB, wrong_at=wrong_at)
            gate = GateDrafter(inner, window=1, min_accepted=1, backoff=2)
            gen = speculate(target64, gate, prompt, k, n)
            assert gen.tokens == ref[:n], (k, n, wrong_at)
            assert all(d <= n - 1 for d in gen.stats.proposed_lengths)


def test_the_gate_stops_drafting_an_always_wrong_drafter_and_probes_after_each_backoff(target64):
    """Window 4, at least 1 token, back-off 5, K = 4, 40 tokens, every draft rejected at its
    first token: 4 drafts, then 5 plain steps and 1 probe, over and over; the last call has
    nothing to draft (one token left). Without the gate every call but the last drafts.
    Catches: the gate never closing, closing before its window is full, a back-off of 4 or 6,
    no probe after it, the probe reopening the gate though it was rejected."""
    prompt, k, n = random_prompt(8, 4), 4, 40
    ref = greedy_continuation(target64, prompt, n + k)
    plain = speculate(target64, OracleDrafter(prompt, ref, VOCAB, wrong_at=0), prompt, k, n)
    gate = GateDrafter(
        OracleDrafter(prompt, ref, VOCAB, wrong_at=0), window=4, min_accepted=1, backoff=5
    )
    gated = speculate(target64, gate, prompt, k, n)
    assert gated.tokens == plain.tokens == ref[:n]
    want = [4] * 4 + ([0] * 5 + [4]) * 5 + [0] * 6
    assert gated.stats.proposed_lengths == want
    assert plain.stats.proposed_lengths == [min(k, n - 1 - i) for i in range(n)]
    assert gated.stats.accepted == plain.stats.accepted == 0
    assert gate.held == 30 and gated.stats.target_calls == plain.stats.target_calls


def test_the_gate_opens_again_once_the_drafter_is_right(target64):
    """Wrong while the sequence is shorter than prompt + 12 tokens, right after: the gate closes
    after 4 rejected drafts, and the first probe past the switch is accepted whole, which
    reopens it; from there every call drafts K and accepts it all. Catches: a gate that stays
    closed after an accepted probe, or that never probes."""
    prompt, k, n = random_prompt(9, 5), 4, 60
    ref = greedy_continuation(target64, prompt, n + k)
    gate = GateDrafter(
        RightFrom(prompt, ref, len(prompt) + 12), window=4, min_accepted=1, backoff=5
    )
    gen = speculate(target64, gate, prompt, k, n)
    assert gen.tokens == ref[:n]
    s = gen.stats
    # tokens 0-3 by rejected drafts, 4-8 plain steps, 9 a rejected probe, 10-14 plain, then a
    # probe at 15 tokens (past the switch) that is accepted whole, and full drafts to the end
    assert s.proposed_lengths[:11] == [4] * 4 + [0] * 5 + [4] + [0]
    assert s.accepted_lengths[:10] == [0] * 10
    probe = s.proposed_lengths.index(4, 10)
    assert probe == 15 and s.accepted_lengths[probe] == 4
    after = list(zip(s.proposed_lengths[probe:], s.accepted_lengths[probe:], strict=True))
    assert all(d == a == min(k, d) for d, a in after) and all(d for d, _ in after[:-1])
    assert gate.held == 10


def test_every_sequence_starts_with_the_gate_open(target64):
    """A gate closed at the end of one sequence drafts at the first step of the next."""
    prompt, k = random_prompt(10, 4), 3
    ref = greedy_continuation(target64, prompt, 30)
    gate = GateDrafter(
        OracleDrafter(prompt, ref, VOCAB, wrong_at=0), window=2, min_accepted=1, backoff=50
    )
    first = speculate(target64, gate, prompt, k, 20)
    assert first.stats.proposed_lengths[2:] == [0] * 18 and gate.closed_for > 0
    second = speculate(target64, gate, prompt, k, 20)
    assert second.stats.proposed_lengths[:3] == [3, 3, 0] and second.tokens == ref[:20]


@pytest.mark.parametrize(("window", "min_accepted", "backoff"), [(0, 1, 1), (1, -1, 1), (1, 1, 0)])
def test_the_gate_refuses_settings_that_cannot_work(window, min_accepted, backoff):
    with pytest.raises(SpecdecError):
        GateDrafter(NgramDrafter(), window=window, min_accepted=min_accepted, backoff=backoff)
