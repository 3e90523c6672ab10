"""The ladder of perturbed drafts (`drafters.perturbed`: `quant:BITS[:GROUP]` and
`noise:PERMILLE[:SEED]`): greedy decoding with them is lossless, more bits or less noise agree
more with the target, the weights are what the spec says (a symmetric grid, seeded noise of the
asked size), the target is left alone and bad specs are refused in one line."""

from __future__ import annotations

import pytest
import torch
from conftest import VOCAB, WrongAt, check_stats, greedy_continuation, random_prompt, tiny_gemma

from specdec_lib.core.cache import CachedLM
from specdec_lib.core.decode import speculative_decode
from specdec_lib.core.draft import Drafter
from specdec_lib.drafters.perturbed import NoiseDrafter, QuantDrafter, decoder_linears
from specdec_lib.drafters.registry import DraftContext, build, parse
from specdec_lib.errors import SpecdecError
from specdec_lib.models import LoadedModel
from specdec_study.runner.teacher_forced import teacher_forced_guesses

pytestmark = pytest.mark.usefixtures("single_thread")

CASES = [(1, 3, 9), (6, 4, 1), (9, 2, 12), (14, 5, 16)]  # (prompt length, K, new tokens)


def draft(spec: str, target: torch.nn.Module) -> Drafter:
    dtype = next(target.parameters()).dtype
    loaded = LoadedModel(target, None, "tiny", dtype, torch.device("cpu"), VOCAB)
    return build(spec, DraftContext(loaded, lambda: list(range(VOCAB))))


def weights(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {n: lin.weight for n, lin in decoder_linears(model)}


@pytest.mark.parametrize("wrong_at", [None, 1])
@pytest.mark.parametrize("spec", ["quant:4:0", "quant:2:0", "noise:300"])
def test_greedy_decoding_with_a_perturbed_draft_is_stepwise_greedy(target32, spec, wrong_at):
    drafter = draft(spec, target32)
    wrapped = drafter if wrong_at is None else WrongAt(drafter, wrong_at)
    rejected = False
    for i, (n, k, new) in enumerate(CASES):
        prompt = random_prompt(60 + i, n)
        gen = speculative_decode(CachedLM(target32), wrapped, prompt, k=k, max_new_tokens=new)
        assert gen.tokens == greedy_continuation(target32, prompt, new), (spec, n, k, new)
        check_stats(gen, k=k, prompt_len=n)
        rejected |= gen.stats.accepted < gen.stats.proposed
    assert rejected  # the verifier really had something to reject


def agreement(target: torch.nn.Module, drafters: dict[str, Drafter]) -> dict[str, float]:
    """Teacher-forced agreement with the target's greedy token over a few random sequences."""
    hits = dict.fromkeys(drafters, 0)
    total = 0
    for s in range(6):
        seq = random_prompt(100 + s, 24)
        want, guesses = teacher_forced_guesses(target, drafters, seq, 23)
        total += len(want)
        for m, g in guesses.items():
            hits[m] += sum(a == b for a, b in zip(want, g, strict=True))
    return {m: h / total for m, h in hits.items()}


def test_more_bits_or_less_noise_agree_more_with_the_target(target32):
    specs = ["quant:8", "quant:2", "noise:10", "noise:1000"]
    agree = agreement(target32, {s: draft(s, target32) for s in specs})
    assert agree["quant:8"] > 0.9 and agree["quant:8"] > agree["quant:2"] + 0.5, agree
    assert agree["noise:10"] > 0.8 and agree["noise:10"] > agree["noise:1000"] + 0.5, agree


def relative_error(target: torch.nn.Module, spec: str) -> float:
    got, want = weights(draft(spec, target).lm.model), weights(target)
    num = sum((got[n] - want[n]).pow(2).sum() for n in want)
    return float((num / sum(w.pow(2).sum() for w in want.values())).sqrt())


def test_quantization_error_falls_with_bits_and_with_smaller_groups(target32):
    errors = [relative_error(target32, f"quant:{b}") for b in range(2, 9)]
    assert all(a > b > 0 for a, b in zip(errors, errors[1:], strict=False)), errors
    assert relative_error(target32, "quant:4:8") < relative_error(target32, "quant:4:0")


@pytest.mark.parametrize(("bits", "group"), [(2, 0), (3, 0), (3, 16), (8, 32)])
def test_quantized_weights_lie_on_a_symmetric_grid_of_2q_plus_1_levels(target32, bits, group):
    q = 2 ** (bits - 1) - 1
    for name, w in weights(draft(f"quant:{bits}:{group}", target32).lm.model).items():
        rows = w.reshape(w.shape[0], -1, group) if group else w[:, None, :]  # [out, groups, g]
        scale = rows.abs().amax(-1, keepdim=True) / q
        levels = rows / scale
        assert torch.allclose(levels, levels.round(), atol=1e-4), name
        assert len(torch.unique(rows[0, 0])) <= 2 * q + 1, name


def test_noise_has_the_asked_size_per_row_and_depends_on_the_seed_only(target32):
    want = weights(target32)
    assert all(
        torch.equal(want[n], w) for n, w in weights(draft("noise:0", target32).lm.model).items()
    )
    a, b = (
        weights(draft("noise:200:3", target32).lm.model),
        weights(draft("noise:200:3", target32).lm.model),
    )
    c = weights(draft("noise:200:4", target32).lm.model)
    assert all(torch.equal(a[n], b[n]) for n in want)
    assert not any(torch.equal(a[n], c[n]) for n in want)
    for n, w in want.items():
        rms = w.pow(2).mean(-1).sqrt()  # [out]
        ratio = ((a[n] - w).pow(2).mean(-1).sqrt() / rms).mean()
        assert 0.15 < ratio < 0.25, (n, float(ratio))  # std = 200/1000 of the row's rms


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize(
    ("spec", "cls"), [("quant:3:16", QuantDrafter), ("noise:50", NoiseDrafter)]
)
def test_the_draft_is_a_perturbed_copy_and_the_target_is_untouched(spec, cls, dtype):
    target = tiny_gemma(0, 4, dtype=dtype)
    before = {k: v.clone() for k, v in target.state_dict().items()}
    drafter = draft(spec, target)
    model = drafter.lm.model
    assert type(drafter) is cls and isinstance(drafter, Drafter)
    assert all(torch.equal(before[k], v) for k, v in target.state_dict().items())
    assert not set(map(id, model.parameters())) & set(map(id, target.parameters()))  # own weights
    mine, theirs = model.state_dict(), target.state_dict()
    perturbed = {f"{n}.weight" for n in weights(target)}
    for k, v in theirs.items():
        assert mine[k].dtype == dtype and mine[k].device == v.device
        assert torch.equal(mine[k], v) != (k in perturbed), k  # only the layers' linears differ


BAD = [
    ("quant:9", "BITS must be in 2..8"),
    ("quant:1", "BITS must be in 2..8"),
    ("quant", "quant:BITS[:GROUP]"),
    ("quant:4:x", "'x' is not an integer"),
    ("quant:4:2:1", "takes 1 to 2"),
    ("noise:", "empty arguments"),
    ("noise", "noise:PERMILLE[:SEED]"),
    ("noise:-1", "'-1' is not an integer"),
]


@pytest.mark.parametrize(("spec", "needle"), BAD)
def test_a_bad_spec_is_refused_in_one_line(spec, needle):
    with pytest.raises(SpecdecError) as e:
        parse(spec)
    assert "\n" not in str(e.value) and needle in str(e.value) and repr(spec) in str(e.value)


def test_a_group_that_does_not_divide_a_layer_is_refused_at_build_in_one_line(target32):
    assert parse("quant:4:7").args == (4, 7)
    with pytest.raises(SpecdecError) as e:
        draft("quant:4:7", target32)
    msg = str(e.value)
    assert "\n" not in msg and "group 7 does not divide" in msg and "32 input columns" in msg


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_on_cuda_the_draft_stays_there_and_the_noise_is_the_cpus(target32):
    gpu = tiny_gemma(0, 4, dtype=torch.bfloat16).cuda()
    cpu = tiny_gemma(0, 4, dtype=torch.bfloat16)
    for spec in ("noise:100:2", "quant:4:16"):
        on_gpu, on_cpu = weights(draft(spec, gpu).lm.model), weights(draft(spec, cpu).lm.model)
        for n, w in on_gpu.items():
            assert w.is_cuda and torch.allclose(w.float().cpu(), on_cpu[n].float(), atol=1e-2), n
