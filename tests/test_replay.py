"""Acceptance by replay (analysis.replay): the counts of a greedy chain run from one 0/1 vector of
teacher-forced matches along the target's own greedy continuation, checked by hand and against
real speculative runs, exactly."""

from __future__ import annotations

import copy

import pytest
import torch
from conftest import random_prompt, speculate, stepwise_greedy

from specdec_lib.drafters.model import ModelDrafter
from specdec_study.analysis import replay as R
from specdec_study.runner.teacher_forced import teacher_forced_guesses


@pytest.mark.parametrize(
    ("matches", "k", "expected"),
    [
        # all match, n = 10, K = 4: call 1 drafts 4, accepts 4, emits 5 (pos 5); call 2 drafts
        # min(4, 10 - 5 - 1) = 4, accepts 4, emits 5 (pos 10): 2 calls, 8 / 8
        ([1] * 10, 4, R.Replay(8, 8, 2, 10)),
        # none match, n = 5: every call emits 1; drafts 4, 3, 2, 1, 0 = 10 proposed
        ([0] * 5, 4, R.Replay(0, 10, 5, 5)),
        # 1 1 0 | 1 | 0 0 ...: call 1 accepts 2 (pos 3: matches[2] is the target's token, not
        # checked); call 2 at pos 3 drafts 4: 1 then 0 -> accepts 1 (pos 5); call 3 at pos 5
        # drafts min(4, 8 - 5 - 1) = 2: matches[5] = 1, matches[6] = 1 -> accepts 2 (pos 8)
        ([1, 1, 0, 1, 0, 1, 1, 0], 4, R.Replay(5, 10, 3, 8)),
        # K = 1: pos 0 drafts 1, accepted (pos 2: matches[1] is the target's own token); pos 2
        # drafts min(1, 4 - 2 - 1) = 1, accepted (pos 4): 2 calls
        ([1, 0, 1, 1], 1, R.Replay(2, 2, 2, 4)),
        ([], 4, R.Replay(0, 0, 0, 0)),
        ([1], 4, R.Replay(0, 0, 1, 1)),  # max_new_tokens 1: the call drafts nothing
    ],
)
def test_replay_counts_a_chain_run_by_hand(matches, k, expected):
    """Planted bugs it catches: drafting K on the last call instead of min(K, left - 1);
    counting the bonus token as accepted; not skipping the target's own token after a
    rejection."""
    assert R.replay_chain(matches, k) == expected


def _noisy_copy(model: torch.nn.Module, scale: float, seed: int) -> torch.nn.Module:
    m = copy.deepcopy(model)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in m.parameters():
            if p.ndim == 2:
                p.add_(torch.randn(p.shape, generator=g) * scale * p.std())
    return m


@pytest.mark.parametrize("scale", [0.0, 0.05, 0.3])
def test_replayed_acceptance_equals_real_runs_exactly(target32, draft32, scale):
    """The replay from teacher-forced matches along the target's own greedy continuation gives
    the accepted / proposed / calls of real greedy speculative runs, run by run, for drafts
    from perfect (scale 0) to poor, and a separate small model; max_new_tokens edges included
    (n = 1, 2, K + 1, and a length the last call must shorten). Planted bug it catches: a replay
    that scores the draft against the document's text rather than the target's continuation,
    or one that drafts K on the last call."""
    drafts = {"noisy": _noisy_copy(target32, scale, seed=7), "separate": draft32}
    checked = 0
    for name, model in drafts.items():
        for seed, n in ((0, 1), (1, 2), (2, 5), (3, 23), (4, 40)):
            prompt = random_prompt(100 + seed, 9)
            g = stepwise_greedy(target32, prompt, n)
            drafter = ModelDrafter(model)
            gen = speculate(target32, drafter, prompt, k=4, n=n)
            assert gen.tokens == g  # the run emits the target's own greedy continuation
            target_next, guesses = teacher_forced_guesses(
                target32, {name: ModelDrafter(model)}, prompt + g[:-1], n
            )
            assert target_next == g
            matches = [int(a == b) for a, b in zip(guesses[name], g, strict=True)]
            r = R.replay_chain(matches, 4)
            s = gen.stats
            assert (r.accepted, r.proposed, r.calls) == (s.accepted, s.proposed, s.target_calls - 1)
            checked += 1
    assert checked == 10


def _rows(draft: str, context: int, matches: dict[int, list[int]]) -> list[dict]:
    return [
        {
            "draft": draft,
            "context": context,
            "prompt": d,
            "matches": m,
            "agree": sum(m),
            "positions": len(m),
        }
        for d, m in matches.items()
    ]


def test_continuation_summary_changes_by_hand():
    """Two documents, K = 4, 10 tokens each. Context 10: all match -> 2 calls each (5 tokens
    per call); context 100: none match -> 10 calls each (1 token per call). Tokens per call
    ratio 1 / 5 = 0.2; acceptance 8/8 -> 0/(4+4+4+4+4+4+3+2+1+0 = 30): change -1; rejection
    ratio (1 - 0) / (1 - 1) is infinite. Planted bug: the ratio inverted (5.0)."""
    rows = _rows("d", 10, {0: [1] * 10, 1: [1] * 10}) + _rows("d", 100, {0: [0] * 10, 1: [0] * 10})
    s = R.continuation_summary(rows, [10, 100], k=4, test_range=[10, 100])
    ch = s["changes"]["d"]
    assert ch["tokens_per_call"]["value"] == pytest.approx(0.2)
    assert ch["acceptance"]["value"] == pytest.approx(-1.0)
    assert s["by_draft"]["d"]["100"]["proposed"] == 60
    assert s["by_draft"]["d"]["10"]["tokens_per_call"] == pytest.approx(5.0)
    assert s["levels"]["d"] == pytest.approx(1.0)


def test_a_replay_row_without_its_continuation_is_left_out_of_the_continuation_check():
    """A consistency row with no tokens (a file written without the column, as the book's
    synthetic results are) cannot say which continuation it scored: the check leaves it out
    instead of failing or counting it as the same."""
    where = {"article": 0, "anchor": 7, "context": 10}
    base = {**where, "method": "baseline", "draft": "none", "k": 4, "tokens": [1, 2, 3]}
    for tokens in (None, []):
        row = {**where, "draft": "target_vs_own_greedy", "matches": [1, 1, 1]}
        rows = [row if tokens is None else {**row, "tokens": tokens}]
        chk = R.replay_check(rows, {}, [base], {"baseline": "none"}, 4)
        assert chk["continuations"] == {"same": 0, "compared": 0}
    rows = [{**where, "draft": "target_vs_own_greedy", "matches": [1, 1], "tokens": [1, 2]}]
    chk = R.replay_check(rows, {}, [base], {"baseline": "none"}, 4)
    assert chk["continuations"] == {"same": 1, "compared": 1}
