"""Batch invariance by construction: on the invariant fast path a position's logits are the same
bits whether it is scored alone (a decode step), inside a verification of k positions, at the
end of a prefill or through the body and the head apart; in float32 on every CPU, and in
bfloat16 where oneDNN can pack (skipped, with the reason, elsewhere). Tiny random Gemma models,
nothing downloaded."""

from __future__ import annotations

import pytest
import torch
from conftest import tiny_gemma

from specdec_lib.core.cache import CachedLM
from specdec_lib.core.fastpath import (
    ROWS,
    WIDE,
    PackedLinear,
    in_fixed_rows,
    packing_available,
    positions_end,
)

pytestmark = pytest.mark.usefixtures("single_thread")  # tests that want 2 threads say so

BYTE_VOCAB = 3 + 256
N_POSITIONS = 400
KS = (2, 5, 9, 16, 17)


def _needs(dtype: torch.dtype) -> None:
    """Skip, printing why, where the fast path does not serve dtype invariantly."""
    if dtype != torch.float32 and not packing_available(dtype):
        reason = f"oneDNN cannot pack {dtype} on this CPU: the fast path does not serve it here"
        print(reason)
        pytest.skip(reason)


@pytest.fixture
def threads(request):
    before = torch.get_num_threads()
    torch.set_num_threads(request.param)
    yield request.param
    torch.set_num_threads(before)


def _ids(n: int, seed: int = 0) -> list[int]:
    g = torch.Generator().manual_seed(seed)
    return [2, *torch.randint(3, BYTE_VOCAB, (n,), generator=g).tolist()]


@pytest.mark.parametrize("threads", [1, 2], indirect=True)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["float32", "bfloat16"])
def test_every_position_scores_the_same_bits_alone_or_among_others(dtype, threads):
    """Positions 1..400 (across BUCKET edges, the sliding window of 16 and the buffer's growth
    past 256) scored one per call, then tiled in calls of k for each k in KS; a prefill that
    keeps only its last position's logits; and the body and the head run apart."""
    _needs(dtype)
    model = tiny_gemma(5, 4, vocab=BYTE_VOCAB, dtype=dtype, window=16)
    ids = _ids(N_POSITIONS + 1)
    lm = CachedLM(model, invariant=True)
    assert lm.invariant and lm.packed == (dtype != torch.float32)
    lm.reset()
    lm.extend(ids[:1], 1)
    alone = torch.cat([lm.extend([ids[p]], 1) for p in range(1, N_POSITIONS + 1)])  # [400, V]
    bad: list[tuple] = []
    for k in KS:
        lm.reset()
        lm.extend(ids[:1], 1)
        got = []
        for p in range(1, N_POSITIONS + 1, k):
            n = min(k, N_POSITIONS + 1 - p)
            got.append(lm.extend(ids[p : p + n], n))
        together = torch.cat(got)
        assert together.shape == alone.shape
        rows = (together != alone).any(-1).nonzero().flatten().tolist()
        bad += [("k", k, "position", r + 1) for r in rows]
    for p in (7, 8, 63, 64, 257, N_POSITIONS):  # logits_to_keep=1: the head sees the last row
        lm.reset()
        if not torch.equal(lm.extend(ids[: p + 1], 1)[0], alone[p - 1]):
            bad.append(("prefill to", p))
    for start in (1, 60, 250):  # the shared-body drafter's path: body per token, head at once
        lm.reset()
        lm.extend(ids[:start], 1)
        hidden = torch.cat([lm.hidden([ids[p]]) for p in range(start, start + 9)])  # [9, H]
        if not torch.equal(lm.head(hidden), alone[start - 1 : start + 8]):
            bad.append(("body and head apart from", start))
    assert not bad, bad[:10]


@pytest.mark.parametrize("threads", [1, 2], indirect=True)
def test_a_wide_float32_head_is_invariant_too(threads):
    """The LM-head-sized float32 weight (W @ x^T path): row p alone == row p in any call."""
    g = torch.Generator().manual_seed(0)
    lin = torch.nn.Linear(64, WIDE + 8, bias=True)
    with torch.no_grad():
        lin.weight.copy_(torch.randn(lin.weight.shape, generator=g))
        lin.bias.copy_(torch.randn(lin.bias.shape, generator=g))
    head = PackedLinear(lin, pack=False, invariant=True)
    x = torch.randn(1, 40, 64, generator=g) * torch.exp(torch.randn(1, 40, 64, generator=g))
    with torch.inference_mode():
        alone = []
        for p in range(40):
            with positions_end(p + 1):
                alone.append(head(x[:, p : p + 1])[0])
        alone = torch.cat(alone)  # [40, out]
        assert torch.allclose(
            alone, torch.nn.functional.linear(x[0], lin.weight, lin.bias), atol=1e-3, rtol=1e-4
        )
        for k in (2, 5, 9, 17):
            for start in range(0, 40 - k + 1, 7):
                with positions_end(start + k):
                    got = head(x[:, start : start + k])[0]
                assert torch.equal(got, alone[start : start + k]), (k, start)


def test_fixed_rows_give_the_fixed_shape_products_bits_slot_by_position():
    """in_fixed_rows returns exactly the ROWS-row product's rows, position p in slot p % ROWS."""
    g = torch.Generator().manual_seed(1)
    w = torch.randn(48, 32, generator=g)
    x = torch.randn(11, 32, generator=g)

    def fn(chunk):
        assert chunk.shape == (ROWS, 32)
        return chunk @ w.t()

    first = 5
    got = in_fixed_rows(x, fn, first)
    for i in range(11):
        p = first + i
        chunk = torch.zeros(ROWS, 32)
        chunk[p % ROWS] = x[i]
        assert torch.equal(got[i], fn(chunk)[p % ROWS]), i


def test_float32_invariant_view_stays_close_to_the_stock_model():
    model = tiny_gemma(6, 4, vocab=BYTE_VOCAB, dtype=torch.float32, window=16)
    ids = _ids(140, seed=3)
    ref, got = CachedLM(model, fast=False), CachedLM(model, invariant=True)
    for lm in (ref, got):
        lm.reset()
        lm.extend(ids[:100], 1)
    assert torch.allclose(ref.extend(ids[100:109], 9), got.extend(ids[100:109], 9), atol=1e-4)
    assert torch.allclose(ref.extend(ids[109:110], 1), got.extend(ids[109:110], 1), atol=1e-4)


def test_float32_stays_on_the_stock_kernels_unless_asked(monkeypatch):
    model = tiny_gemma(6, 2, vocab=BYTE_VOCAB, dtype=torch.float32, window=16)
    monkeypatch.delenv("SPECDEC_INVARIANT", raising=False)
    assert not CachedLM(model).invariant
    monkeypatch.setenv("SPECDEC_INVARIANT", "1")
    assert CachedLM(model).invariant
    assert not CachedLM(model, fast=False).invariant


def test_float32_view_wraps_only_the_wide_head_and_gives_the_stock_bits(monkeypatch):
    """Default float32 view: the decoder's linear layers stay the model's own modules, the
    Gemma-wide head runs as PackedLinear, and decode steps give the stock model's logits bit
    for bit (after a prefill and verifications that agree with it to rounding)."""
    monkeypatch.delenv("SPECDEC_INVARIANT", raising=False)
    model = tiny_gemma(6, 2, vocab=WIDE + 8, dtype=torch.float32, window=16)
    fast, ref = CachedLM(model), CachedLM(model, fast=False)
    assert fast.fast and not fast.packed and not fast.invariant
    wrapped = [m for m in fast.runner.modules() if isinstance(m, PackedLinear)]
    assert [w.source for w in wrapped] == [model.lm_head]
    assert fast.runner.model is model.model  # the body is shared, not copied
    ids = _ids(60, seed=4)
    for lm in (fast, ref):
        lm.reset()
    # the prefill's last row: the view's 2-D product against the stock strided one
    assert torch.allclose(fast.extend(ids[:40], 1), ref.extend(ids[:40], 1), atol=1e-4, rtol=1e-5)
    for start, k in ((40, 1), (41, 5), (46, 1), (47, 9)):
        got, want = fast.extend(ids[start : start + k], k), ref.extend(ids[start : start + k], k)
        if k == 1:  # the same kernels; several rows: the head's W @ x^T, same values to rounding
            assert torch.equal(got, want)
        else:
            assert torch.allclose(got, want, atol=1e-4, rtol=1e-5)
    monkeypatch.setenv("SPECDEC_INVARIANT", "1")
    inv = CachedLM(model)
    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    assert len([m for m in inv.runner.modules() if isinstance(m, PackedLinear)]) == len(linears)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["float32", "bfloat16"])
def test_greedy_speculation_on_the_invariant_path_reproduces_greedy_decoding(dtype):
    from specdec_lib.core.decode import autoregressive_decode, speculative_decode
    from specdec_lib.drafters.bigram import BigramDrafter
    from specdec_lib.drafters.ngram import NgramDrafter

    _needs(dtype)
    model = tiny_gemma(7, 4, vocab=BYTE_VOCAB, dtype=dtype, window=16)
    p = _ids(30, seed=7)
    base = autoregressive_decode(CachedLM(model, invariant=True), p, max_new_tokens=80).tokens
    fit = base + _ids(200, seed=57)
    for drafter, k in [
        (NgramDrafter(fallback=BigramDrafter.fit(fit, BYTE_VOCAB)), 8),
        (BigramDrafter.fit(fit, BYTE_VOCAB), 3),
    ]:
        lm = CachedLM(model, invariant=True)
        assert speculative_decode(lm, drafter, p, k=k, max_new_tokens=80).tokens == base
