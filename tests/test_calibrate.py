"""The benchmark's positions and ceiling (`bench.calibrate`): `baseline_prefixes` cuts each of the
first prompts' baseline output at evenly spaced positions that leave room after them, and
`ceiling` verifies the baseline's own next tokens, all accepted exactly when they are the
target's greedy continuation."""

from __future__ import annotations

from types import SimpleNamespace

from conftest import greedy_continuation, random_prompt

from specdec_lib.core.cache import CachedLM
from specdec_study.bench.calibrate import CEILING_KS, baseline_prefixes, ceiling

PROMPTS = [SimpleNamespace(ids=[100 + i, 200 + i]) for i in range(3)]


def base_row(prompt: int, tokens: list[int]) -> dict:
    return {"method": "baseline", "prompt": prompt, "tokens": list(tokens)}


def test_baseline_prefixes_by_hand():
    """Eight baseline tokens, two positions, room 4: j = 0 and 1 x (8 - 4) // 2 = 2, for prompts
    0 and 1 only (rows out of order, another arm's row ignored). Planted bugs it catches (each
    seen failing): the room ignored (j = 4 for the second position), the prompt's ids left out
    of the prefix."""
    toks = [10, 11, 12, 13, 14, 15, 16, 17]
    rows = [
        base_row(1, [t + 10 for t in toks]),
        {"method": "ngram", "prompt": 0, "tokens": [1, 2, 3]},
        base_row(0, toks),
        base_row(2, toks),
    ]
    got = baseline_prefixes(rows, PROMPTS, 2, 2, room=4)
    assert got == [
        ([100, 200], toks),
        ([100, 200, 10, 11], toks[2:]),
        ([101, 201], [t + 10 for t in toks]),
        ([101, 201, 20, 21], [t + 10 for t in toks][2:]),
    ]


def test_ceiling_accepts_all_only_on_the_targets_own_continuation(target64, single_thread):
    """On the target's greedy continuation every K's verification accepts all K tokens; the same
    with one wrong token does not. Planted bug it catches (seen failing): `all_accepted` never
    updated (a ceiling measured on rejected drafts reported as all accepted)."""
    prompt = random_prompt(5, 6)
    prompts = [SimpleNamespace(ids=prompt)]
    cont = greedy_continuation(target64, prompt, 2 * max(CEILING_KS))
    good = ceiling(CachedLM(target64), [base_row(0, cont)], prompts, 1, 2, repeats=1)
    assert good["all_accepted"] is True and good["n_positions"] == 2
    assert set(good["by_k"]) == {str(k) for k in CEILING_KS}
    wrong = list(cont)
    wrong[1] = (wrong[1] + 1) % target64.config.vocab_size  # inside every K >= 2's draft
    bad = ceiling(CachedLM(target64), [base_row(0, wrong)], prompts, 1, 2, repeats=1)
    assert bad["all_accepted"] is False


def test_calibration_times_verification_under_the_arms_repetition_control(
    target64, single_thread, monkeypatch
):
    """Each arm's verification is timed with its own repetition control, as its decode loop
    runs it (under a penalty, processing K + 1 rows of logits is part of a call's cost). Planted
    bug it catches (seen failing): `verify_step` called without the control, which left the
    processing out of the loop-free groups' calibrated cost."""
    from specdec_lib.core.draft import Draft
    from specdec_lib.core.processors import NO_CONTROL, RepetitionControl
    from specdec_lib.measure.paired import Arm, Method
    from specdec_study.bench import calibrate as cal

    rp = RepetitionControl(repetition_penalty=1.2)
    lm = CachedLM(target64)

    class Fixed:  # proposes two fixed tokens
        def attach(self, lm):
            pass

        def process_with(self, control):
            pass

        def begin(self, prompt):
            pass

        def propose(self, seq, k, sampling, generator):
            return Draft([3, 4])

    def arm(name: str, control: RepetitionControl) -> Arm:
        gen = cal.Generator(None, Fixed(), lm, (), control)
        return Arm(Method(name, k=2), gen)

    seen: list[tuple[int, RepetitionControl]] = []
    real = cal.verify_step

    def spy(lm_, seq, draft, sampling, gen, control=NO_CONTROL):
        seen.append((len(draft.tokens), control))
        return real(lm_, seq, draft, sampling, gen, control)

    monkeypatch.setattr(cal, "verify_step", spy)
    out = cal.calibrate([arm("baseline", rp), arm("x", rp), arm("plain", NO_CONTROL)],
                        [random_prompt(7, 6)], repeats=1)  # fmt: skip
    assert set(out) == {"x", "plain"}
    assert [c for _, c in seen] == [rp, rp, NO_CONTROL]
