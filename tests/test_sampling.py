"""logits_to_probs (temperature, top-k, top-p, greedy) and seeded inverse-CDF sampling."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.stats import chisquare

from specdec_lib.config import SamplingConfig
from specdec_lib.core.sampling import (
    argmax_rows,
    greedy_ids,
    logits_to_probs,
    make_generator,
    sample,
    uniform,
)
from specdec_lib.errors import SpecdecError


def log_probs(*probs: float) -> torch.Tensor:
    """[1, V] logits whose softmax is exactly the given distribution (up to float32 rounding)."""
    return torch.tensor([probs], dtype=torch.float64).log()


def test_temperature_scales_logits_before_softmax():
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0], [0.5, 0.5, 3.0, -2.0]])
    for t in (0.3, 1.0, 2.5):
        got = logits_to_probs(logits, SamplingConfig(temperature=t))
        assert got.dtype == torch.float32
        torch.testing.assert_close(got, torch.softmax(logits / t, -1))
        torch.testing.assert_close(got.sum(-1), torch.ones(2))


def test_lower_temperature_sharpens_the_distribution():
    logits = torch.tensor([[2.0, 1.0, 0.0]])
    top = [float(logits_to_probs(logits, SamplingConfig(temperature=t))[0, 0]) for t in (2, 1, 0.5)]
    assert top[0] < top[1] < top[2]


def test_greedy_is_one_hot_of_argmax_per_row():
    logits = torch.tensor([[0.1, 3.0, -1.0, 2.9], [5.0, 1.0, 1.0, 1.0], [-3.0, -2.0, -1.0, -0.5]])
    got = logits_to_probs(logits, SamplingConfig(temperature=0))
    expected = torch.zeros(3, 4)
    expected[0, 1] = expected[1, 0] = expected[2, 3] = 1.0
    assert torch.equal(got, expected)


def test_greedy_ignores_top_k_and_top_p():
    logits = torch.tensor([[0.1, 3.0, -1.0, 2.9]])
    got = logits_to_probs(logits, SamplingConfig(temperature=0, top_k=1, top_p=0.1))
    assert got[0].tolist() == [0.0, 1.0, 0.0, 0.0]


@pytest.mark.parametrize("k", [1, 2, 3, 5, 7])
def test_top_k_keeps_exactly_the_k_largest(k):
    logits = torch.randn(4, 8, generator=torch.Generator().manual_seed(k), dtype=torch.float64)
    probs = logits_to_probs(logits, SamplingConfig(temperature=1.0, top_k=k))
    assert ((probs > 0).sum(-1) == k).all()
    for row in range(4):
        kept = set(torch.nonzero(probs[row]).flatten().tolist())
        assert kept == set(torch.topk(logits[row], k).indices.tolist())
        # renormalised softmax over the kept logits
        expected = torch.softmax(logits[row, sorted(kept)].float(), -1)
        torch.testing.assert_close(probs[row, sorted(kept)], expected)


def test_top_k_at_or_above_vocab_is_a_no_op():
    logits = torch.tensor([[1.0, 2.0, 3.0]])
    full = logits_to_probs(logits, SamplingConfig(temperature=1.0))
    for k in (3, 10):
        assert torch.equal(logits_to_probs(logits, SamplingConfig(temperature=1.0, top_k=k)), full)


@pytest.mark.parametrize(
    ("top_p", "kept"),
    [
        (0.3, 1),
        (0.45, 1),  # the first token alone (0.5) reaches it
        (0.51, 2),  # the crossing token is kept
        (0.75, 2),
        (0.85, 3),
        (0.97, 4),
        (1.0, 4),
    ],
)
def test_top_p_keeps_the_smallest_prefix_reaching_p(top_p, kept):
    probs_in = (0.5, 0.3, 0.15, 0.05)
    # shuffled order: the prefix is by probability, not by token id
    perm = [2, 0, 3, 1]
    logits = log_probs(*[probs_in[i] for i in perm])
    got = logits_to_probs(logits, SamplingConfig(temperature=1.0, top_p=top_p))[0]
    kept_ids = {perm.index(i) for i in range(kept)}  # ids of the `kept` most likely tokens
    assert set(torch.nonzero(got).flatten().tolist()) == kept_ids
    mass = sum(probs_in[:kept])
    for i in kept_ids:
        assert float(got[i]) == pytest.approx(probs_in[perm[i]] / mass, rel=1e-5)
    assert float(got.sum()) == pytest.approx(1.0, abs=1e-6)


def test_top_p_applies_after_temperature_and_top_k():
    logits = log_probs(0.4, 0.3, 0.2, 0.1)
    # top-k 3 -> (0.4, 0.3, 0.2) / 0.9; top-p 0.7 keeps 0.444 + 0.333 = 0.778 >= 0.7: two tokens
    got = logits_to_probs(logits, SamplingConfig(temperature=1.0, top_k=3, top_p=0.7))[0]
    assert torch.nonzero(got).flatten().tolist() == [0, 1]
    assert float(got[0]) == pytest.approx(4 / 7, rel=1e-5)
    # at temperature 0.5 the first token has 0.4^2 / (0.16 + 0.09 + 0.04) = 0.55: still two kept
    got = logits_to_probs(logits, SamplingConfig(temperature=0.5, top_k=3, top_p=0.7))[0]
    assert torch.nonzero(got).flatten().tolist() == [0, 1]
    assert float(got[0]) == pytest.approx(16 / 25, rel=1e-5)


def test_top_p_always_keeps_the_most_likely_token():
    logits = log_probs(0.9, 0.05, 0.05)
    got = logits_to_probs(logits, SamplingConfig(temperature=1.0, top_p=0.01))[0]
    assert got.tolist() == [1.0, 0.0, 0.0]


@pytest.mark.parametrize(
    "kwargs", [{"temperature": -0.1}, {"top_k": -1}, {"top_k": 1.5}, {"top_p": 0}, {"top_p": 1.2}]
)
def test_sampling_config_rejects_invalid_settings(kwargs):
    with pytest.raises(SpecdecError):
        SamplingConfig(**kwargs)


def test_sample_never_returns_zero_probability_entries():
    probs = torch.tensor([0.0, 0.2, 0.0, 0.0, 0.5, 0.0, 0.3, 0.0])
    g = make_generator(0)
    draws = {sample(probs, g) for _ in range(3000)}
    assert draws == {1, 4, 6}


def test_sample_handles_tiny_mass_next_to_zeros():
    probs = torch.tensor([0.0, 1e-30, 0.0])
    g = make_generator(0)
    assert {sample(probs, g) for _ in range(200)} == {1}


def test_sample_follows_the_distribution():
    probs = torch.tensor([0.1, 0.0, 0.25, 0.4, 0.25])
    g = make_generator(3)
    n = 8000
    counts = np.bincount([sample(probs, g) for _ in range(n)], minlength=5)
    assert counts[1] == 0
    keep = [0, 2, 3, 4]
    pvalue = chisquare(counts[keep], probs[keep].double().numpy() * n).pvalue
    assert pvalue > 1e-3


def test_sample_accepts_unnormalised_weights():
    g1, g2 = make_generator(5), make_generator(5)
    w = torch.tensor([2.0, 0.0, 6.0, 2.0])
    a = [sample(w, g1) for _ in range(300)]
    b = [sample(w / 10, g2) for _ in range(300)]
    assert a == b


def test_sample_is_seed_deterministic_and_seeds_differ():
    probs = torch.softmax(torch.randn(50, generator=torch.Generator().manual_seed(1)), -1)

    def draws(seed):
        g = make_generator(seed)
        return [sample(probs, g) for _ in range(100)]

    assert draws(7) == draws(7)
    assert draws(7) != draws(8)


def test_uniform_is_cpu_float64_in_unit_interval():
    u = uniform(1000, make_generator(0))
    assert u.dtype == torch.float64 and u.device.type == "cpu"
    assert float(u.min()) >= 0.0 and float(u.max()) < 1.0
    assert math.isclose(float(u.mean()), 0.5, abs_tol=0.05)


@pytest.mark.parametrize(
    ("u", "expected"),
    [(0.0, 2), (0.25, 2), (0.5, 4), (0.75, 4), (1 - 2**-53, 4)],
)
def test_sample_boundary_draws_never_land_on_zero_probability(u, expected, monkeypatch):
    """Draws exactly on a CDF step (u = 0, or u * total equal to a partial sum) must pick the
    next token with mass, never a zero-probability one before or after it."""
    import specdec_lib.core.sampling as sampling_module

    monkeypatch.setattr(
        sampling_module, "uniform", lambda n, g: torch.full((n,), u, dtype=torch.float64)
    )
    probs = torch.tensor([0.0, 0.0, 0.5, 0.0, 0.5, 0.0])  # cdf 0 0 .5 .5 1 1
    assert sample(probs, make_generator(0)) == expected


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_greedy_ids_take_the_first_of_tied_maxima_as_argmax_does(dtype):
    g = torch.Generator().manual_seed(0)
    # coarse values over a Gemma-wide row: many ties, the maximum several times in every row
    logits = torch.randint(-50, 8, (9, 262144), generator=g).to(dtype)
    logits[:, [5, 1000, 200000]] = 8
    logits[3, 7] = 9  # one row with a single maximum
    ids = greedy_ids(logits)
    assert ids == logits.argmax(-1).tolist()
    assert ids[0] == 5 and ids[3] == 7
    assert torch.equal(argmax_rows(logits[:1]), logits[:1].argmax(-1))


def test_greedy_ids_of_random_rows_equal_argmax():
    g = torch.Generator().manual_seed(1)
    for n in (1, 2, 5, 16):
        logits = torch.randn(n, 4099, generator=g)
        assert greedy_ids(logits) == logits.argmax(-1).tolist()
