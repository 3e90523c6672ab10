"""A target with a larger vocabulary than its draft (Gemma 3 4B: 262,208 ids, 1B: 262,144),
imitated by tiny models (96 vs 80 ids): the target may emit, and a prompt may hold, ids the
draft's embedding has no row for. The model drafter reads a stand-in there, so decoding neither
crashes (an IndexError on a CPU, a device-side assert on CUDA) nor loses exactness; and NaN
logits on the paths that bypass CachedLM stop with a SpecdecError instead of becoming a token."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from conftest import VOCAB, random_prompt, stepwise_greedy, tiny_gemma
from scipy.stats import chi2 as chi2_dist

from specdec_lib.config import SamplingConfig
from specdec_lib.core.cache import CachedLM
from specdec_lib.core.decode import speculative_decode
from specdec_lib.drafters.model import ModelDrafter
from specdec_lib.errors import SpecdecError
from specdec_study import study
from specdec_study.analysis import stats

pytestmark = pytest.mark.usefixtures("single_thread")
DRAFT_VOCAB = 80  # the target (conftest) has VOCAB = 96


@pytest.fixture(scope="module")
def narrow_draft():
    return tiny_gemma(seed=1, n_layers=2, vocab=DRAFT_VOCAB)


def drafter_for(draft) -> ModelDrafter:
    return ModelDrafter(draft, vocab_size=DRAFT_VOCAB)


def prompt_with_unembeddable_ids(seed: int, length: int = 12) -> list[int]:
    prompt = random_prompt(seed, length)
    prompt[-1] = VOCAB - 1  # the draft's first read is an id it has no row for
    assert max(prompt) >= DRAFT_VOCAB
    return prompt


def test_the_draft_reads_a_stand_in_for_ids_it_cannot_embed(narrow_draft):
    drafter = drafter_for(narrow_draft)
    assert drafter.embed_limit == DRAFT_VOCAB
    ids = [3, DRAFT_VOCAB, 5, VOCAB - 1]
    assert drafter.embeddable(ids) == [3, drafter.stand_in, 5, drafter.stand_in]
    assert drafter.embeddable([1, 2]) == [1, 2] and drafter.stand_in < DRAFT_VOCAB


@pytest.mark.parametrize("k", [1, 4])
def test_greedy_with_a_narrower_draft_equals_stepwise_greedy(target64, narrow_draft, k):
    for seed in range(3):
        prompt = prompt_with_unembeddable_ids(100 + seed)
        expected = stepwise_greedy(target64, prompt, 16)
        gen = speculative_decode(
            CachedLM(target64), drafter_for(narrow_draft), prompt, k=k, max_new_tokens=16
        )
        assert gen.tokens == expected


def test_sampling_at_t1_over_many_seeds_reaches_unembeddable_ids_without_a_crash(
    target64, narrow_draft
):
    drafter, lm = drafter_for(narrow_draft), CachedLM(target64)
    emitted_high = 0
    for seed in range(40):
        sampling = SamplingConfig(temperature=1.0, seed=seed)
        prompt = random_prompt(200 + seed, 8)
        gen = speculative_decode(lm, drafter, prompt, k=4, max_new_tokens=24, sampling=sampling)
        assert len(gen.tokens) == 24 and all(0 <= t < VOCAB for t in gen.tokens)
        emitted_high += sum(t >= DRAFT_VOCAB for t in gen.tokens[:-1])  # then fed to the draft
    assert emitted_high > 0, "no seed emitted an id the draft cannot embed: the test proved little"


def test_first_token_after_an_unembeddable_id_follows_the_target(target64, narrow_draft):
    """Chi-square goodness of fit of 1500 first tokens (K = 2, T = 1) against the target's exact
    p, after a prompt ending in an id the draft cannot read. Power: the same test rejects the
    draft's own distribution (asserted below), so a verifier that let q through would fail."""
    prompt = prompt_with_unembeddable_ids(300, 8)
    sampling = SamplingConfig(temperature=1.0)
    gen = type("G", (), {})()
    gen.lm, gen.drafter = CachedLM(target64), drafter_for(narrow_draft)
    samples = study.first_token_samples(gen, prompt, 2, sampling, range(1500))
    p = study.exact_next_probs(gen, prompt, sampling)
    r = stats.goodness_of_fit(samples, p)
    assert chi2_dist.sf(r["chi2"], r["dof"]) > 1e-3, r
    with torch.no_grad():
        q_logits = narrow_draft(
            input_ids=torch.tensor([gen.drafter.embeddable(prompt)]), logits_to_keep=1
        ).logits[0, -1]
    q = np.zeros(VOCAB)
    q[:DRAFT_VOCAB] = torch.softmax(q_logits, -1).numpy()
    draws = np.random.default_rng(0).choice(VOCAB, size=1500, p=q / q.sum())
    r_q = stats.goodness_of_fit(draws.tolist(), p)
    assert chi2_dist.sf(r_q["chi2"], r_q["dof"]) < 1e-3


def test_agreement_reads_stand_ins(target64, narrow_draft):
    ids = prompt_with_unembeddable_ids(400)
    n = len(ids) - 1
    _, guesses = study.teacher_forced_guesses(
        target64, {"narrow": drafter_for(narrow_draft)}, ids, n
    )
    assert len(guesses["narrow"]) == n and all(0 <= g < DRAFT_VOCAB for g in guesses["narrow"])


# ------------------------------------------------------------------ NaN logits off CachedLM


@pytest.fixture(scope="module")
def nan_target(target64):
    bad = copy.deepcopy(target64)
    with torch.no_grad():
        bad.lm_head.weight[7] = float("nan")  # logit 7 is NaN everywhere: argmax would hide it
    return bad


def test_nan_logits_stop_the_agreement_pass(nan_target, target64, narrow_draft):
    prompt, cont = random_prompt(500, 6), random_prompt(501, 4)
    seq = [*prompt, *cont]
    with pytest.raises(SpecdecError, match="NaN or infinite"):
        study.teacher_forced_guesses(nan_target, {}, seq, len(cont))
    with pytest.raises(SpecdecError, match="NaN or infinite"):
        study.teacher_forced_guesses(target64, {"bad": ModelDrafter(nan_target)}, seq, len(cont))


def test_nan_logits_stop_top2_margin(nan_target):
    from specdec_lib.measure.paired import Arm, Method, top2_margin

    generator = type("G", (), {})()
    generator.target = type("T", (), {"model": nan_target})()
    generator.lm = CachedLM(nan_target)
    with pytest.raises(SpecdecError, match="NaN or infinite"):
        top2_margin(Arm(Method("x"), generator), random_prompt(502, 5))


# ------------------------------------------------- the Colab pair's classes, tiny (smoke-pair)


@pytest.fixture(scope="module")
def tiny_pair():
    """Target: a tiny Gemma3ForConditionalGeneration with 16 ids more than its tokenizer;
    draft: a tiny Gemma3ForCausalLM over the same tokenizer (study.tiny_random_model)."""
    target = study.tiny_random_model("float64", vocab=256, extra_vocab=16, conditional=True)
    draft = study.tiny_random_model("float64", vocab=256, layers=2, seed=1)
    assert type(target.model).__name__ == "Gemma3ForConditionalGeneration"
    assert (target.vocab_size, draft.vocab_size) == (272, 256)
    return target, draft


def test_hf_assisted_generation_gets_both_tokenizers_when_vocab_sizes_differ(tiny_pair):
    from specdec_lib.measure.huggingface import hf_generate

    target, draft = tiny_pair
    prompt = target.tokenizer.encode("The castle was built in the")
    greedy, _ = hf_generate(target, prompt, max_new_tokens=6, mode="greedy")
    tokens, _ = hf_generate(
        target,
        prompt,
        max_new_tokens=6,
        mode="assisted",
        k=3,
        assistant=draft.model,
        assistant_tokenizer=draft.tokenizer,
    )
    assert len(tokens) == len(greedy) == 6
    with pytest.raises(SpecdecError, match="needs both tokenizers"):
        hf_generate(target, prompt, max_new_tokens=2, mode="assisted", k=2, assistant=draft.model)


def test_hf_generate_stops_on_nan_logits(tiny_pair):
    from specdec_lib.measure.huggingface import hf_generate

    target, _ = tiny_pair
    bad = copy.copy(target)
    bad.model = copy.deepcopy(target.model)
    with torch.no_grad():
        bad.model.lm_head.weight[9] = float("nan")
    with pytest.raises(SpecdecError, match="NaN or infinite"):
        hf_generate(bad, [2, 5, 6, 7], max_new_tokens=3, mode="greedy")


def test_self_draft_finds_the_decoder_of_a_conditional_generation_model(tiny_pair):
    from specdec_lib.drafters.self_draft import SelfDrafter, decoder_path

    target, _ = tiny_pair
    assert decoder_path(target.model) == "model.language_model"  # not the vision tower
    prompt = target.tokenizer.encode("In 1850 the river")
    base = speculative_decode(CachedLM(target.model), ModelDrafter(target.model), prompt, k=0,
                              max_new_tokens=12)  # fmt: skip
    drafter = SelfDrafter(target.model, n_layers=2, vocab_size=target.vocab_size)
    assert drafter.lm.model.model.language_model.config.num_hidden_layers == 2
    assert target.model.model.language_model.config.num_hidden_layers == 4  # untouched
    gen = speculative_decode(CachedLM(target.model), drafter, prompt, k=3, max_new_tokens=12)
    assert gen.tokens == base.tokens and gen.stats.proposed > 0


def test_gpu_check_skips_with_one_line_without_cuda(tmp_path, monkeypatch, capsys):
    import json

    from specdec_study.runner import gpu_check

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    out = tmp_path / "report.json"
    assert gpu_check.main(["--out", str(out)]) == 0
    printed = capsys.readouterr().out.strip().splitlines()
    assert printed == [
        "gpu-check: SKIPPED: no CUDA device is visible here (run it on a GPU machine)"
    ]
    report = json.loads(out.read_text())
    assert report["status"] == "skipped"
    # without a GPU the report still says what the real pair's weights need, from the configs
    pair = report["real_pair"]
    assert (pair["target"]["params"], pair["draft"]["params"]) == (3_880_263_168, 999_885_952)
