"""The weight-only int8 draft (`int8w[:KEEP]`): greedy speculation with it reproduces stepwise
greedy decoding (forced rejections, max_new_tokens edges), its sampled q is a distribution over
the full vocabulary (zero outside a pruned head's ids), its weights really are int8 tensors, one
int8 linear matches the dequantised float product, and it refuses in one line where the kernel
cannot run."""

from __future__ import annotations

import pytest
import torch
from conftest import VOCAB, WrongAt, check_stats, greedy_continuation, random_prompt, tiny_gemma
from test_divergent_drafts import CASES, loaded_of

from specdec_lib.config import SamplingConfig
from specdec_lib.core.cache import CachedLM
from specdec_lib.core.decode import speculative_decode
from specdec_lib.core.draft import NoDrafter
from specdec_lib.core.processors import RepetitionControl
from specdec_lib.core.sampling import make_generator
from specdec_lib.drafters.int8pack import (
    Int8Linear,
    Int8WeightDrafter,
    LeanInt8LM,
    int8_bytes,
    quantize_rows,
)
from specdec_lib.drafters.perturbed import decoder_linears
from specdec_lib.drafters.registry import DraftContext, build, parse
from specdec_lib.errors import SpecdecError

pytestmark = pytest.mark.usefixtures("single_thread")

KEEP = 48  # a pruned head: half the tiny vocabulary


def int8w(target: torch.nn.Module, keep: int = KEEP) -> Int8WeightDrafter:
    fit = list(range(VOCAB)) + list(range(KEEP))  # ids below KEEP are the most frequent
    return build(f"int8w:{keep}", DraftContext(loaded_of(target), lambda: fit))


@pytest.mark.parametrize("wrong_at", [None, 0, 2])
@pytest.mark.parametrize("keep", [KEEP, VOCAB])
def test_greedy_speculation_with_the_int8_draft_reproduces_stepwise_greedy(
    target32, keep, wrong_at
):
    drafter = int8w(target32, keep)
    if wrong_at is not None:
        drafter = WrongAt(drafter, wrong_at)
    accepted = 0
    for i, (n, k, new) in enumerate(CASES):
        prompt = random_prompt(60 + i, n)
        gen = speculative_decode(CachedLM(target32), drafter, prompt, k=k, max_new_tokens=new)
        assert gen.tokens == greedy_continuation(target32, prompt, new), (keep, n, k, new)
        check_stats(gen, k=k, prompt_len=n)
        accepted += gen.stats.accepted
        if wrong_at is not None and new > k:
            assert gen.stats.accepted < gen.stats.proposed  # the rejection really happened
    if wrong_at is None:
        assert accepted > 0  # the int8 copy agrees with its target somewhere


def test_a_pruned_heads_q_is_a_distribution_over_the_full_vocabulary_zero_outside_keep(target32):
    drafter = int8w(target32)
    assert drafter.keep == KEEP and drafter.token_map.tolist() == list(range(KEEP))
    sampling = SamplingConfig(temperature=0.7)
    draft = drafter.propose(random_prompt(5, 9), 3, sampling, make_generator(0))
    assert draft.q.shape == (3, VOCAB) and all(t < KEEP for t in draft.tokens)
    assert torch.allclose(draft.q.sum(-1), torch.ones(3, dtype=draft.q.dtype))
    assert draft.q[:, KEEP:].abs().sum() == 0
    prompt = random_prompt(6, 10)
    gen = speculative_decode(
        CachedLM(target32), drafter, prompt, k=4, max_new_tokens=12, sampling=sampling
    )
    check_stats(gen, k=4, prompt_len=len(prompt))
    assert len(gen.tokens) == 12


@pytest.mark.parametrize("keep", [KEEP, VOCAB])
def test_the_lean_forward_gives_the_module_paths_logits_past_the_sliding_window(target32, keep):
    """The Gemma int8w copy drafts through LeanInt8LM; its logits equal (float32 rounding) those
    of the same int8 copy run by Hugging Face's modules, over a prompt longer than the tiny
    model's sliding window (4), one-token steps, a rollback, a multi-token extend after it and
    a kept path of moved rows.
    Planted bugs seen failing: the sliding window left out (every key visible); the rotary
    angle of the local layers' base used for every layer."""
    drafter = int8w(target32, keep)
    lean = drafter.lm
    assert isinstance(lean, LeanInt8LM)
    ref = CachedLM(lean.model, vocab_size=lean.vocab_size)
    lean.reset()
    ref.reset()
    prompt = random_prompt(7, 11)
    steps = [(prompt, 3), *[([t], 1) for t in random_prompt(8, 6)]]
    for ids, n in steps:
        a, b = lean.extend(ids, n), ref.extend(ids, n)
        assert a.shape == b.shape and torch.allclose(a, b, atol=1e-4, rtol=1e-4)
    lean.rollback(9)
    ref.rollback(9)
    more = random_prompt(9, 5)
    a, b = lean.extend(more, 5), ref.extend(more, 5)
    assert torch.allclose(a, b, atol=1e-4, rtol=1e-4) and len(lean) == len(ref) == 14
    lean.keep(9, [0, 2, 4])  # a tree call's accepted path: rows moved next to the prefix
    ref.keep(9, [0, 2, 4])
    assert lean.tokens == ref.tokens and len(lean) == 12
    a, b = lean.extend([5], 1), ref.extend([5], 1)
    assert torch.allclose(a, b, atol=1e-4, rtol=1e-4)


def test_the_draft_holds_its_weights_as_int8_and_shares_embeddings_and_norms(target32):
    before = {k: v.clone() for k, v in target32.state_dict().items()}
    model = int8w(target32, VOCAB).lm.model
    assert not list(decoder_linears(model)) and not isinstance(model.lm_head, torch.nn.Linear)
    layers = [m for m in model.modules() if isinstance(m, Int8Linear)]
    assert len(layers) == 7 * len(target32.model.layers) + 1  # q k v o gate up down, the head
    assert all(m.qweight.dtype == torch.int8 for m in layers)
    floats = sum(lin.weight.numel() for _, lin in decoder_linears(target32))
    floats += target32.lm_head.weight.numel()
    scales = sum(m.scales.numel() * m.scales.element_size() for m in layers)
    assert int8_bytes(model) == floats + scales  # one byte per weight, a scale per row
    shared = ["model.embed_tokens.weight", "model.norm.weight"]
    shared += [f"model.layers.0.{n}.weight" for n in ("input_layernorm", "self_attn.q_norm")]
    assert all(model.get_parameter(n) is target32.get_parameter(n) for n in shared)  # no copy
    assert all(torch.equal(before[k], v) for k, v in target32.state_dict().items())


@pytest.mark.parametrize(("kernel_dtype", "tol"), [(torch.float32, 1e-5), (torch.bfloat16, 2e-2)])
def test_one_int8_linear_matches_the_dequantised_float_product(kernel_dtype, tol):
    g = torch.Generator().manual_seed(0)
    linear = torch.nn.Linear(64, 40, bias=True)
    with torch.no_grad():
        linear.weight.copy_(torch.randn(40, 64, generator=g))
        linear.weight[3] = 0  # an all-zero row keeps scale 1 and stays zero
    x = torch.randn(2, 5, 64, generator=g)
    layer = Int8Linear.of(linear, kernel_dtype)
    want = x @ layer.dequantized().T + linear.bias  # its scales are in kernel_dtype
    got = layer(x)
    assert got.shape == (2, 5, 40) and got.dtype == torch.float32
    assert (got - want).abs().max() <= tol * want.abs().max()
    q, s = quantize_rows(linear.weight)
    assert torch.equal(q, layer.qweight) and q.dtype == torch.int8 and q.abs().max() == 127
    err = (q.float() * s[:, None] - linear.weight).abs()
    assert err.le(s[:, None] / 2 + 1e-7).all()  # rounded to nearest on the row's grid
    assert s[3] == 1 and q[3].eq(0).all()


def test_refusals_are_one_line(target64):
    meta = tiny_gemma(0, 2, dtype=torch.float32).to("meta")
    for call, needle in [
        (lambda: int8w(target64), "float32, bfloat16 or float16"),
        (lambda: int8w(meta), "CPU only"),
        (lambda: parse("int8w:x"), "int8w[:KEEP]"),
        (lambda: parse("int8w:0"), "int8w[:KEEP]"),
    ]:
        with pytest.raises(SpecdecError) as e:
            call()
        assert "\n" not in str(e.value) and needle in str(e.value)
    assert parse("int8w").args == (16384,) and parse("int8w:32768").args == (32768,)


def test_the_loopfree_bench_runs_the_int8_draft_and_keeps_only_the_arms_named():
    """`bench --groups loopfree --quick --arms int8w`: our baseline and the int8 draft alone, the
    greedy one token-identical to the baseline under the repetition penalty."""
    import io

    from test_bench import articles, loaded_tiny

    from specdec_study.bench.run import run_bench

    loaded = loaded_tiny(torch.float32, n_layers=2, seed=0)
    result = run_bench(
        "tiny",
        n_prompts=2,
        quick=True,
        groups="loopfree",
        arms="int8w",
        loaded=loaded,
        articles=articles(),
        out=io.StringIO(),
    )
    rp, t07 = result["groups"]["rp_c20"], result["groups"]["t07_c20"]
    assert set(rp["arms"]) == set(t07["arms"]) == {"baseline", "int8w"}
    assert rp["arms"]["int8w"]["identical_to_baseline"] == 1.0
    assert rp["arms"]["int8w"]["draft"] == "int8w:32768" and result["arms_kept"] == ["int8w"]
    assert rp["best_ours"] == "int8w" and rp["best_hf"] is None


RP = RepetitionControl(repetition_penalty=1.2)


def greedy_under(target: torch.nn.Module, prompt: list[int], new: int) -> list[int]:
    """The autoregressive baseline's tokens under the repetition penalty."""
    gen = speculative_decode(
        CachedLM(target), NoDrafter(), prompt, k=1, max_new_tokens=new, control=RP
    )
    return gen.tokens


@pytest.mark.parametrize("spec", ["self:4", "shared", "adaptive:self:4"])
def test_under_a_repetition_penalty_a_draft_that_is_the_target_is_always_accepted(target64, spec):
    """The decode loop hands the drafter the verifier's control (`process_with`): a drafter
    computing the target's own logits (a wrapped one too) processes them too, so no guess is
    rejected."""
    drafter = build(spec, DraftContext(loaded_of(target64), lambda: list(range(VOCAB))))
    for i, (n, k, new) in enumerate(CASES):
        prompt = random_prompt(80 + i, n)
        gen = speculative_decode(
            CachedLM(target64), drafter, prompt, k=k, max_new_tokens=new, control=RP
        )
        assert gen.tokens == greedy_under(target64, prompt, new), (spec, n, k, new)
        assert gen.stats.accepted == gen.stats.proposed, (spec, n, k, new)


STRONG = RepetitionControl(repetition_penalty=3.0)  # changes the tiny target's choices often


@pytest.mark.parametrize("keep", [KEEP, VOCAB])
def test_the_int8_draft_under_a_repetition_penalty_is_lossless_and_agrees_more_processed(
    target32, keep
):
    accepted = []
    for told in (True, False):  # False: the drafter is never told (its logits unprocessed)
        drafter = int8w(target32, keep)
        if not told:
            drafter.process_with = lambda control: None
        total = 0
        for i, (n, k, new) in enumerate(CASES):
            prompt = random_prompt(90 + i, n)
            gen = speculative_decode(
                CachedLM(target32), drafter, prompt, k=k, max_new_tokens=new, control=STRONG
            )
            want = speculative_decode(
                CachedLM(target32), NoDrafter(), prompt, k=1, max_new_tokens=new, control=STRONG
            )
            assert gen.tokens == want.tokens, (keep, n, k, new)
            check_stats(gen, k=k, prompt_len=n)
            total += gen.stats.accepted
        accepted.append(total)
    assert accepted[0] > accepted[1]
