"""The benchmark and its Hugging Face peers on tiny random Gemma models (nothing downloaded): HF
greedy, prompt lookup and assisted generation reproduce our greedy output in float32; the packed
bfloat16 fast path and the growing KV cache give bit-identical logits; `bench --quick` prints
its table and ends with one JSON line holding every figure."""

from __future__ import annotations

import io
import json

import pytest
import torch
from conftest import tiny_gemma

from specdec_lib.config import SamplingConfig, SpecConfig
from specdec_lib.core.cache import CachedLM
from specdec_lib.core.decode import autoregressive_decode
from specdec_lib.core.fastpath import packing_available
from specdec_lib.data import Article
from specdec_lib.drafters.presets import cpu_words
from specdec_lib.drafters.self_draft import early_exit_model
from specdec_lib.errors import SpecdecError
from specdec_lib.measure.huggingface import HFGenerator, hf_generate
from specdec_lib.models import LoadedModel
from specdec_study.bench.configs import all_configs
from specdec_study.bench.run import run_bench
from specdec_study.reporting import performance as perf

pytestmark = pytest.mark.usefixtures("single_thread")

BYTE_VOCAB = 3 + 256  # pad 0, eos 1, bos 2, then one id per byte


class ByteTokenizer:
    """A tiny offline tokenizer: one id per UTF-8 byte, after pad/eos/bos."""

    pad_token_id, eos_token_id, bos_token_id = 0, 1, 2
    all_special_ids = [0, 1, 2]

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        ids = [b + 3 for b in text.encode("utf-8")]
        return [self.bos_token_id, *ids] if add_special_tokens else ids

    def decode(self, ids, skip_special_tokens: bool = False) -> str:
        return bytes(i - 3 for i in ids if i >= 3).decode("utf-8", errors="replace")

    def __len__(self) -> int:
        return BYTE_VOCAB

    def get_vocab(self) -> dict[str, int]:
        return {f"<{i}>": i for i in range(BYTE_VOCAB)}


def loaded_tiny(dtype: torch.dtype, n_layers: int = 4, seed: int = 0) -> LoadedModel:
    model = tiny_gemma(seed, n_layers, vocab=BYTE_VOCAB, dtype=dtype, window=16)
    model.generation_config.eos_token_id = 1
    return LoadedModel(model, ByteTokenizer(), "tiny", dtype, torch.device("cpu"), BYTE_VOCAB)


@pytest.fixture(scope="module")
def tiny32() -> LoadedModel:
    return loaded_tiny(torch.float32)


def prompt(seed: int, n: int = 12) -> list[int]:
    g = torch.Generator().manual_seed(seed)
    return [2, *torch.randint(3, BYTE_VOCAB, (n,), generator=g).tolist()]


# ----------------------------------------------------------------------------- peers


@pytest.mark.parametrize("seed", range(4))
def test_hf_greedy_equals_our_autoregressive_output_in_float32(tiny32, seed):
    p = prompt(seed)
    ours = autoregressive_decode(CachedLM(tiny32.model), p, max_new_tokens=24, eos_ids=[1])
    tokens, wall = hf_generate(tiny32, p, max_new_tokens=24, mode="greedy")
    assert tokens == ours.tokens
    assert wall > 0


@pytest.mark.parametrize("k", [1, 3])
def test_hf_prompt_lookup_and_assisted_are_lossless_too(tiny32, k):
    p = prompt(10 + k)
    ours = autoregressive_decode(CachedLM(tiny32.model), p, max_new_tokens=20, eos_ids=[1]).tokens
    lookup, _ = hf_generate(tiny32, p, max_new_tokens=20, mode="prompt_lookup", k=k)
    helper = early_exit_model(tiny32.model, 2)
    assisted, _ = hf_generate(tiny32, p, max_new_tokens=20, mode="assisted", k=k, assistant=helper)
    assert lookup == ours
    assert assisted == ours


def test_assisted_leaves_the_shared_generation_config_alone(tiny32):
    before = tiny32.model.generation_config.to_dict()
    helper = early_exit_model(tiny32.model, 1)
    hf_generate(tiny32, prompt(3), max_new_tokens=6, mode="assisted", k=5, assistant=helper)
    assert tiny32.model.generation_config.to_dict() == before
    assert helper.generation_config is tiny32.model.generation_config


def test_hf_stops_after_eos_like_ours(tiny32):
    p = prompt(5)
    ref = autoregressive_decode(CachedLM(tiny32.model), p, max_new_tokens=8).tokens
    eos = ref[3]
    tiny32.model.generation_config.eos_token_id = eos
    try:
        tokens, _ = hf_generate(tiny32, p, max_new_tokens=8, mode="greedy")
        ours = autoregressive_decode(CachedLM(tiny32.model), p, max_new_tokens=8, eos_ids=[eos])
    finally:
        tiny32.model.generation_config.eos_token_id = 1
    assert tokens == ours.tokens == ref[: ref.index(eos) + 1]


def test_hf_generator_runs_like_a_generator(tiny32):
    gen = HFGenerator(tiny32, "prompt_lookup", 2)
    out = gen.generate_ids(prompt(7), SpecConfig(2, 10), SamplingConfig())
    assert out.stats.new_tokens == len(out.tokens) == 10 and out.stats.wall_s > 0
    # sampling (the loop-free bench group's peers): seeded like ours, so a seed repeats its draws
    t1 = [SamplingConfig(temperature=1.0, seed=s) for s in (3, 3, 4)]
    a, b, c = (gen.generate_ids(prompt(7), SpecConfig(2, 10), t).tokens for t in t1)
    assert a == b and len(a) == 10 and a != c


@pytest.mark.parametrize(
    "kw", [{"mode": "beam"}, {"mode": "prompt_lookup"}, {"mode": "assisted", "k": 2}]
)
def test_hf_generate_rejects_bad_requests(tiny32, kw):
    with pytest.raises(SpecdecError):
        hf_generate(tiny32, prompt(1), max_new_tokens=4, **kw)


# ----------------------------------------------------------------------------- fast path


def _script(lm: CachedLM, ids: list[int]) -> list[torch.Tensor]:
    """Prefill, steps, verifications and rollbacks, past the capacity of the first buffer."""
    out = []
    lm.reset()
    out.append(lm.extend(ids[:30], 1))
    out.append(lm.extend(ids[30:35], 5))
    lm.rollback(32)
    out.append(lm.extend(ids[32:33], 1))
    out.append(lm.extend(ids[33:300], 4))
    lm.rollback(290)
    out.append(lm.extend(ids[290:299], 9))
    assert lm.cache.get_seq_length() == len(lm.tokens) == 299
    return out


def test_growing_cache_and_2d_linears_give_bit_identical_logits_in_float32():
    model = tiny_gemma(3, 4, vocab=BYTE_VOCAB, dtype=torch.float32, window=16)
    ids = [int(i) for i in torch.randint(3, BYTE_VOCAB, (300,), generator=torch.Generator())]
    fast = CachedLM(model)
    assert fast.fast and not fast.packed
    ref = _script(CachedLM(model, fast=False), ids)
    got = _script(fast, ids)
    for a, b in zip(ref, got, strict=True):
        assert torch.equal(a, b)


needs_packing = pytest.mark.skipif(not packing_available(), reason="oneDNN packing unavailable")


@needs_packing
def test_bfloat16_fast_path_stays_close_to_the_stock_model():
    model = tiny_gemma(6, 4, vocab=BYTE_VOCAB, dtype=torch.bfloat16, window=16)
    ids = [int(i) for i in torch.randint(3, BYTE_VOCAB, (300,), generator=torch.Generator())]
    ref = _script(CachedLM(model, fast=False), ids)
    got = _script(CachedLM(model), ids)
    for a, b in zip(ref, got, strict=True):
        assert (a.float() - b.float()).abs().max() < 0.1 * a.float().abs().max()


@pytest.mark.parametrize("window", [None, 5])
def test_invariant_attention_is_causal_sliding_attention(window):
    """invariant_attention against SDPA with an explicit causal (and sliding) mask, float32."""
    from types import SimpleNamespace

    from specdec_lib.core.fastpath import BUFFER_ATTR, invariant_attention

    g = torch.Generator().manual_seed(0)
    heads, kv_heads, d, length, m = 4, 2, 8, 70, 6
    buf_k = torch.zeros(1, kv_heads, 128, d)
    buf_v = torch.zeros(1, kv_heads, 128, d)
    buf_k[:, :, :length] = torch.randn(1, kv_heads, length, d, generator=g)
    buf_v[:, :, :length] = torch.randn(1, kv_heads, length, d, generator=g)
    buf_k[:, :, length:] = 7.0  # stale entries past the length must not matter
    key, value = buf_k[:, :, :length], buf_v[:, :, :length]
    setattr(key, BUFFER_ATTR, buf_k)
    setattr(value, BUFFER_ATTR, buf_v)
    q = torch.randn(1, heads, m, d, generator=g)
    module = SimpleNamespace(num_key_value_groups=heads // kv_heads)
    got, _ = invariant_attention(module, q, key, value, None, scaling=0.3, sliding_window=window)
    qpos = torch.arange(length - m, length)[:, None]
    kpos = torch.arange(length)[None, :]
    mask = kpos <= qpos
    if window is not None:
        mask &= (qpos - kpos) < window
    ref = torch.nn.functional.scaled_dot_product_attention(
        q, key.repeat_interleave(2, 1), value.repeat_interleave(2, 1), attn_mask=mask, scale=0.3
    )
    assert torch.allclose(got, ref.transpose(1, 2), atol=1e-5)


@needs_packing
@pytest.mark.parametrize("seed", range(3))
def test_bfloat16_greedy_speculation_reproduces_greedy_decoding_exactly(seed):
    from specdec_lib.core.decode import speculative_decode
    from specdec_lib.drafters.bigram import BigramDrafter
    from specdec_lib.drafters.ngram import NgramDrafter

    model = tiny_gemma(seed, 4, vocab=BYTE_VOCAB, dtype=torch.bfloat16, window=16)
    p = prompt(seed, 30)
    base = autoregressive_decode(CachedLM(model), p, max_new_tokens=60).tokens
    fit = base + prompt(seed + 50, 200)
    for drafter, k in [
        (NgramDrafter(fallback=BigramDrafter.fit(fit, BYTE_VOCAB)), 8),
        (BigramDrafter.fit(fit, BYTE_VOCAB), 3),
    ]:
        spec = speculative_decode(CachedLM(model), drafter, p, k=k, max_new_tokens=60)
        assert spec.tokens == base


@needs_packing
def test_packed_path_leaves_the_model_alone_and_shares_packed_weights():
    from specdec_lib.core.fastpath import _PACKED

    model = tiny_gemma(4, 4, vocab=BYTE_VOCAB, dtype=torch.bfloat16, window=16)
    lm = CachedLM(model)
    lm.reset()
    lm.extend([2, 5, 9], 1)
    assert all(isinstance(m, torch.nn.Linear) for m in [model.lm_head])  # untouched
    draft = CachedLM(early_exit_model(model, 2))
    draft.reset()
    draft.extend([2, 5, 9], 1)
    layer0 = model.model.layers[0].self_attn.q_proj
    assert layer0 in _PACKED
    n_packed = sum(1 for m in model.modules() if m in _PACKED)
    assert n_packed == sum(isinstance(m, torch.nn.Linear) for m in model.modules())


# ----------------------------------------------------------------------------- bench


def articles() -> list[Article]:
    from specdec_lib.data import load_wikitext, split_articles

    _, held_out = split_articles(load_wikitext("bundled"), seed=0)
    return held_out[:12]


def test_bench_quick_prints_a_table_and_one_json_line_last_and_writes_its_folder(tmp_path):
    loaded = loaded_tiny(torch.bfloat16, n_layers=4, seed=0)
    twin = loaded_tiny(torch.float32, n_layers=4, seed=0)
    out = io.StringIO()
    result = run_bench(
        "tiny",
        n_prompts=2,
        quick=True,
        loaded=loaded,
        loaded_fp32=twin,
        articles=articles(),
        out=out,
        result_dir=tmp_path / "smoke" / "bench",
    )
    lines = out.getvalue().strip().splitlines()
    assert lines[0].startswith("group")
    last = json.loads(lines[-1])
    assert last == json.loads(json.dumps(result))
    folder = perf.read_bench(tmp_path / "smoke" / "bench")  # the folder: the same numbers
    assert {k: v for k, v in folder.items() if k != "_header"} == last
    log = (tmp_path / "smoke" / "bench" / "bench.log").read_text(encoding="utf-8")
    assert log == f"# {folder['_header']}\n" + "\n".join(lines[:-1]) + "\n"
    assert folder["_header"].startswith("`python -m specdec_lib bench --target tiny --groups ")
    assert perf.bench_machine(folder) == f"{last['cpu']['cores']}-core {cpu_words(last['cpu'])}"
    config = json.loads((tmp_path / "smoke" / "bench" / "config.json").read_text())
    assert (config["quick"], config["n_prompts"], config["ks"]) == (True, 2, last["ks"])
    env = json.loads((tmp_path / "smoke" / "bench" / "env.json").read_text())
    assert env["dtype"] == "bfloat16" and env["machine_key"] == last["machine_key"]
    assert env["torch"] == torch.__version__ and env["date"] == perf.bench_date(folder)
    assert last["quick"] is True and last["n_prompts"] == 2
    long = last["groups"]["long_c20"]["arms"]
    assert {"baseline", "hf_greedy", "ngram_k4", "hf_prompt_lookup_k4", "best", "tree"} <= set(long)
    for arm in long.values():
        assert arm["tokens_per_s"]["median"] > 0
        assert 0.0 <= arm["repetition_4gram"]["median"] <= 1.0
    if packing_available():  # bfloat16 too: the packed fast path is batch-invariant
        for name in ("ngram_k4", "best"):
            assert long[name]["identical_to_baseline"] == 1.0
    assert "acceptance_rate" in long["ngram_k4"] and "cost_ratio" in long["best"]
    for name in ("ngram_k4", "best", "tree"):  # predicted from a fitted a and costs timed apart
        arm = long[name]
        assert 0.0 <= arm["fitted_acceptance"] <= 1.0
        assert arm["predicted_speedup"] > 0 and arm["draft_call_cost"] >= 0
        assert arm["measured_over_predicted"] == pytest.approx(
            arm["decode_speedup"] / arm["predicted_speedup"]
        )
        assert arm["accounting_ratio"] > 0
    for arm in long.values():  # n beside every interval
        assert arm["tokens_per_s"]["n"] == 2 and arm["speedup"]["n"] == 2
    assert set(last["threads"]) >= {"threads", "chosen_by", "step_s"}
    for preset, arm in (("best", "best_long"), ("best_short", "best_short")):  # what it ran
        p = last["presets"][preset]
        assert (p["draft"], p["k"]) == (last[arm]["draft"], last[arm]["k"])
        assert p["source"] == "fallback" and f"preset {preset} -> " in out.getvalue()
    assert isinstance(last["cpu"]["flags"], list) and last["machine_key"].endswith("|tiny")
    assert "prediction_agreement" in last["targets"]
    assert last["identity"]["all_identical"] is True  # float32: every configuration lossless
    mem = last["memory"]
    assert mem["target_bytes"] > 0 and mem["self_draft_extra_bytes"] > 0
    for name, t in last["targets"].items():
        assert set(t) >= {"value", "threshold", "met"}, name
    assert "short_best_vs_baseline_c20" in last["targets"]
    ceiling = last["ceiling"]  # the baseline's own next K tokens, verified in one call
    assert ceiling["n_positions"] == 2 and set(ceiling["by_k"]) == {"1", "2", "4", "8", "16"}
    for k, c in ceiling["by_k"].items():
        assert c["ceiling"] == pytest.approx((int(k) + 1) / c["verify_cost"])
    if packing_available():  # batch-invariant: the baseline's tokens verify as they decoded
        assert ceiling["all_accepted"] is True


def test_bench_full_path_runs_both_contexts_with_hf_at_its_best_k_at_context_20():
    """The non-quick path (both contexts, the K sweep), on one prompt and 8 tokens."""
    loaded = loaded_tiny(torch.float32, n_layers=2, seed=1)
    result = run_bench(
        "tiny", n_prompts=1, max_new_tokens=8, loaded=loaded, articles=articles(), out=io.StringIO()
    )
    g100, g20 = result["groups"]["long_c100"]["arms"], result["groups"]["long_c20"]["arms"]
    sweep = [n for n in g100 if n.startswith("hf_prompt_lookup_k")]
    assert len(sweep) == 3 and {"ngram_k2", "ngram_k4", "ngram_k8", "tree"} <= set(g100)
    assert [n for n in g20 if n.startswith("hf_")] == [
        max(sweep, key=lambda n: g100[n]["speedup"]["value"])
    ]
    assert {"short_c100", "short_c20"} <= set(result["groups"])
    assert result["identity"]["note"].startswith("the run itself is float32")
    ours = {  # every arm of ours is one that `generate --draft` runs (tests/test_registry.py)
        (a["draft"], a["k"])
        for g in result["groups"].values()
        for a in g["arms"].values()
        if a["implementation"] == "ours"
    }
    assert ours == {(c.draft, c.k if c.draft != "none" else 0) for c in all_configs()}


def test_wide_float32_weights_multiply_several_rows_off_the_one_row_path():
    """An LM-head-sized float32 linear takes 2+ rows through oneDNN's packed product (W @ x^T
    where oneDNN cannot): the same values as F.linear up to summation order; one row stays on
    F.linear exactly and packs nothing."""
    from specdec_lib.core.fastpath import WIDE, PackedLinear, packed_bytes

    g = torch.Generator().manual_seed(0)
    lin = torch.nn.Linear(64, WIDE + 8, bias=True)
    with torch.no_grad():
        lin.weight.copy_(torch.randn(lin.weight.shape, generator=g))
        lin.bias.copy_(torch.randn(lin.bias.shape, generator=g))
    fast = PackedLinear(lin, pack=False)
    for rows in (1, 2, 5, 9):
        x = torch.randn(1, rows, 64, generator=g)
        ref = torch.nn.functional.linear(x, lin.weight, lin.bias)
        got = fast(x)
        assert got.shape == ref.shape == (1, rows, WIDE + 8)
        if rows == 1:
            assert torch.equal(got, ref)
            assert packed_bytes(lin) == 0
        else:
            assert torch.allclose(got, ref, atol=1e-4, rtol=1e-5)
    packed = packing_available(torch.float32)
    assert (packed_bytes(lin) >= lin.weight.numel() * 4) if packed else packed_bytes(lin) == 0


def test_bench_loads_no_float32_twin_of_the_target_on_a_gpu():
    from types import SimpleNamespace

    from specdec_study.bench.run import fp32_identity_wanted

    def loaded(dtype, device):
        return SimpleNamespace(dtype=dtype, device=torch.device(device))

    assert fp32_identity_wanted(loaded(torch.bfloat16, "cpu"), None)
    assert not fp32_identity_wanted(loaded(torch.float32, "cpu"), None)
    assert not fp32_identity_wanted(loaded(torch.bfloat16, "cuda"), None)  # a T4 cannot hold it
    assert fp32_identity_wanted(loaded(torch.bfloat16, "cuda"), loaded(torch.float32, "cuda"))


# ----------------------------------------------------------------------------- honesty


def test_fitted_acceptance_is_accepted_over_positions_reached():
    from specdec_study.bench.calibrate import fitted_acceptance

    # calls (accepted, proposed): (2, 4) reached 3, (4, 4) reached 4, (0, 3) reached 1, (0, 0) none
    assert fitted_acceptance([2, 4, 0, 0], [4, 4, 3, 0]) == pytest.approx(6 / 8)
    assert fitted_acceptance([0], [0]) is None


def _rows(
    method: str, walls: list[float], acc: list[int], prop: list[int], busy: float
) -> list[dict]:
    return [
        {
            "method": method,
            "prompt": i,
            "wall_s": w,
            "prefill_s": 0.0,
            "new_tokens": 10,
            "draft_s": busy / 2,
            "verify_s": busy / 2,
            "accepted_lengths": acc,
            "proposed_lengths": prop,
        }
        for i, w in enumerate(walls)
    ]


def test_measured_over_predicted_can_fail_where_the_accounting_identity_cannot():
    """The same run against two calibrations: costs that match the run give agreement, costs
    timed 3x cheaper give a prediction 3x too high; the accounting identity is 1 either way."""
    from specdec_study.bench.calibrate import _decode_prediction

    # baseline: 10 tokens in 1 s (0.1 s a step); the arm: every call of 4 drafts accepts 1
    # (2 tokens a call, 5 calls), each call 0.1 s of draft + verification: 2x faster
    rows = _rows("baseline", [1.0, 1.0], [], [], 0.0)
    rows += _rows("arm", [0.5, 0.5], [1] * 5, [4] * 5, 0.5)
    honest = {"c_call": 0.4, "v": 0.6, "c": 0.1, "n_positions": 4}
    a = _decode_prediction(rows, "arm", honest)
    assert a["fitted_acceptance"] == pytest.approx(0.5)  # 1 of 2 reached positions per call
    assert a["decode_speedup"] == pytest.approx(2.0)
    assert a["accounting_ratio"] == pytest.approx(1.0)
    e = (1 - 0.5**5) / 0.5  # Leviathan's expected tokens per call at a = 0.5, d = 4
    assert a["predicted_speedup"] == pytest.approx(e / 1.0)
    cheap = {"c_call": 0.4 / 3, "v": 0.6 / 3, "c": 0.1 / 3, "n_positions": 4}
    b = _decode_prediction(rows, "arm", cheap)
    assert b["measured_over_predicted"] == pytest.approx(a["measured_over_predicted"] / 3)
    assert b["accounting_ratio"] == pytest.approx(1.0)


def test_thread_choice_alternates_and_keeps_each_counts_fastest(monkeypatch):
    from specdec_study.environment import runtime

    seen: list[int] = []
    set_threads = torch.set_num_threads

    def spy(n: int) -> None:
        seen.append(n)
        set_threads(n)

    model = tiny_gemma(1, 2, vocab=BYTE_VOCAB, dtype=torch.float32, window=16)
    monkeypatch.setattr(torch, "set_num_threads", spy)
    timed = runtime.probe_threads(model, (1, 2), rounds=3, steps=2, rows=5)
    assert set(timed) == {1, 2} and all(set(t) == {1, 5} for t in timed.values())
    assert all(0 < v < 60 for t in timed.values() for v in t.values())
    assert seen[:6] == [1, 2, 1, 2, 1, 2]  # in alternation, not one count then the other


def test_thread_probe_keeps_the_fastest_step_of_each_count(monkeypatch):
    """A scripted clock: rounds = 3, counts (1, 2), 2 steps each, in probing order
        round 1: 1 -> 0.5, 0.3    2 -> 0.2, 0.4
        round 2: 1 -> 0.1, 0.6    2 -> 0.9, 0.25
        round 3: 1 -> 0.7, 0.8    2 -> 0.15, 0.3
    The fastest step is 0.1 s with 1 thread (round 2) and 0.15 s with 2 (round 3).
    Catches: the last step kept (0.8, 0.3), the first (0.5, 0.2), the slowest (0.8, 0.9), the
    mean (0.5, 0.375), or the counts' timings swapped."""
    from types import SimpleNamespace

    from specdec_study.environment import runtime

    steps = [0.5, 0.3, 0.2, 0.4, 0.1, 0.6, 0.9, 0.25, 0.7, 0.8, 0.15, 0.3]
    ticks: list[float] = []
    now = 0.0
    for d in steps:  # perf_counter is read before and after each step
        ticks += [now, now + d]
        now += d + 1.0
    clock = iter(ticks)
    monkeypatch.setattr(runtime, "time", SimpleNamespace(perf_counter=lambda: next(clock)))
    model = tiny_gemma(1, 2, vocab=BYTE_VOCAB, dtype=torch.float32, window=16)
    step_s = runtime.probe_threads(model, (1, 2), rounds=3, steps=2)
    assert step_s == {1: {1: pytest.approx(0.1)}, 2: {1: pytest.approx(0.15)}}
    assert next(clock, None) is None  # every step was timed, nothing else


def test_thread_probe_times_the_verification_after_the_steps_of_each_count(monkeypatch):
    """A scripted clock: rounds = 2, counts (1, 2), in each 2 one-row steps then 2 calls of
    rows = 4, in probing order
        round 1: 1 -> steps 0.5, 0.4  calls 2.0, 1.5    2 -> steps 0.6, 0.7  calls 1.2, 1.1
        round 2: 1 -> steps 0.3, 0.9  calls 1.8, 2.5    2 -> steps 0.8, 0.2  calls 0.9, 1.3
    Fastest: 1 thread 0.3 (step) and 1.5 (call); 2 threads 0.2 and 0.9. Catches: the calls
    timed as steps or the other way round, the verification left out, its fastest not kept,
    or a count's verification timed under the other count."""
    from types import SimpleNamespace

    from specdec_study.environment import runtime

    durations = [0.5, 0.4, 2.0, 1.5, 0.6, 0.7, 1.2, 1.1, 0.3, 0.9, 1.8, 2.5, 0.8, 0.2, 0.9, 1.3]
    ticks: list[float] = []
    now = 0.0
    for d in durations:
        ticks += [now, now + d]
        now += d + 1.0
    clock = iter(ticks)
    monkeypatch.setattr(runtime, "time", SimpleNamespace(perf_counter=lambda: next(clock)))
    model = tiny_gemma(1, 2, vocab=BYTE_VOCAB, dtype=torch.float32, window=16)
    timed = runtime.probe_threads(model, (1, 2), rounds=2, steps=2, rows=4)
    assert timed == {
        1: {1: pytest.approx(0.3), 4: pytest.approx(1.5)},
        2: {1: pytest.approx(0.2), 4: pytest.approx(0.9)},
    }
    assert next(clock, None) is None  # every call was timed, nothing else


def fake_probe(step: dict[int, float], verify: dict[int, float]):
    """A probe that measures nothing: these fastest times per count, a step and a verification
    of the rows asked for."""

    def probe(model, counts, rounds, rows):
        assert tuple(counts) == (1, 2) and rows == 8
        return {n: {1: step[n], rows: verify[n]} for n in counts}

    return probe


@pytest.mark.parametrize(("verify", "want"), [({1: 0.030, 2: 0.020}, 2), ({1: 0.020, 2: 0.030}, 1)])
def test_thread_choice_follows_the_verification_when_the_steps_tie(monkeypatch, verify, want):
    """One-row steps tie at 10 ms; a verification of K + 1 = 8 rows takes 30 ms with one thread
    and 20 ms with two (and the other way round): the cheaper step + verification wins, and
    every figure is recorded. Catches: the choice made on the steps alone (1 thread on the tie,
    what the probe did before it timed a verification), the sum's terms dropped or swapped."""
    from specdec_study.environment import runtime

    monkeypatch.delenv("SPECDEC_THREADS", raising=False)
    model = tiny_gemma(1, 2, vocab=BYTE_VOCAB, dtype=torch.float32, window=16)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        probe = fake_probe({1: 0.010, 2: 0.010}, verify)
        got = runtime.choose_threads(model, rows=8, rounds=3, probe=probe)
        assert got["threads"] == want == torch.get_num_threads()
        assert got["chosen_by"] == "timing" and got["verify_rows"] == 8
        assert got["step_s"] == {"1": 0.010, "2": 0.010}
        assert got["verify_s"] == {"1": verify[1], "2": verify[2]}
        assert got["cost_s"] == {"1": 0.010 + verify[1], "2": 0.010 + verify[2]}
    finally:
        torch.set_num_threads(before)


def test_thread_choice_weighs_the_step_and_the_verification_alike(monkeypatch):
    """Two threads win the verification by 5 ms and lose the step by 8 ms: one thread, whose
    step + verification is 3 ms cheaper. Catches: the choice made on the verification alone."""
    from specdec_study.environment import runtime

    monkeypatch.delenv("SPECDEC_THREADS", raising=False)
    model = tiny_gemma(1, 2, vocab=BYTE_VOCAB, dtype=torch.float32, window=16)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        probe = fake_probe({1: 0.010, 2: 0.018}, {1: 0.025, 2: 0.020})
        assert runtime.choose_threads(model, rows=8, probe=probe)["threads"] == 1
    finally:
        torch.set_num_threads(before)


def test_runtime_setup_probes_the_widest_call_it_warms(monkeypatch):
    """The CLI and the study hand setup their widest call, K + 1 rows; the probe times it."""
    from specdec_study.environment import runtime

    asked: list[int] = []

    def choose(model, *, rows=1, **kw):
        asked.append(rows)
        return {"threads": 1, "chosen_by": "timing", "step_s": {}}

    monkeypatch.setattr(runtime, "_CHOICE", None)
    monkeypatch.setattr(runtime, "_WARM", {})
    monkeypatch.setattr(runtime, "choose_threads", choose)
    monkeypatch.setattr(runtime, "warm_kernels", lambda model, max_rows: 0.0)
    runtime.setup(torch.nn.Linear(1, 1), 6)
    assert asked == [6]


def test_specdec_threads_overrides_the_timing(monkeypatch):
    from specdec_study.environment import runtime

    model = tiny_gemma(1, 2, vocab=BYTE_VOCAB, dtype=torch.float32, window=16)
    before = torch.get_num_threads()
    try:
        monkeypatch.setenv("SPECDEC_THREADS", "1")
        assert runtime.choose_threads(model) == {
            "threads": 1,
            "chosen_by": "SPECDEC_THREADS",
            "step_s": None,
        }
        monkeypatch.setenv("SPECDEC_THREADS", "two")
        with pytest.raises(SpecdecError):
            runtime.choose_threads(model)
        monkeypatch.delenv("SPECDEC_THREADS")
        torch.set_num_threads(2)
        got = runtime.choose_threads(model, rows=3, rounds=2)
        assert got["chosen_by"] == "timing" and set(got["step_s"]) == {"1", "2"}
        assert set(got["verify_s"]) == set(got["cost_s"]) == {"1", "2"}
        assert torch.get_num_threads() == got["threads"]
    finally:
        torch.set_num_threads(before)


# ----------------------------------------------------------------------------- memory, JSON


def test_the_cache_holds_its_buffers_as_allocated_and_nothing_before_the_first_call():
    lm = CachedLM(tiny_gemma(2, 2, vocab=BYTE_VOCAB, dtype=torch.float32, window=16))
    assert lm.cache_tensors() == []
    lm.reset()
    lm.extend(prompt(0, 20), 1)
    tensors = lm.cache_tensors()
    assert len(tensors) == 2 * 2  # keys and values per layer
    assert all(t.shape[-2] >= len(lm.tokens) for t in tensors)  # capacity, not the length
    lm.rollback(5)
    assert [t.shape for t in lm.cache_tensors()] == [t.shape for t in tensors]  # a crop keeps it


@needs_packing
def test_packed_bytes_count_every_packed_linear_once_and_nothing_unpacked():
    from specdec_lib.core.fastpath import packed_bytes

    model = tiny_gemma(4, 2, vocab=BYTE_VOCAB, dtype=torch.bfloat16, window=16)
    assert packed_bytes(model) == 0
    lm = CachedLM(model)
    lm.reset()
    lm.extend([2, 5, 9], 1)
    weights = sum(
        m.weight.element_size() * m.weight.numel()
        for m in model.modules()
        if isinstance(m, torch.nn.Linear)
    )
    assert packed_bytes(model) >= weights // 2 > 0  # a reordered copy of every linear's weight
    assert packed_bytes(model.lm_head) < packed_bytes(model)


def test_the_benchs_json_is_cleaned_by_the_one_store_clean():
    import numpy as np

    from specdec_study.results.store import clean

    raw = {1: np.int64(3), "x": (np.float32(0.5), float("nan")), "y": {2: np.float64("inf")}}
    assert clean(raw) == {"1": 3, "x": [0.5, None], "y": {"2": None}}
    assert json.loads(json.dumps(clean(raw), allow_nan=False)) == clean(raw)
    assert type(clean(np.int64(3))) is int and clean(True) is True


def test_bench_loopfree_groups_run_every_arm_under_the_groups_settings():
    """`bench --groups loopfree --quick`: greedy under the repetition penalty and sampling at
    T = 0.7, each with HF's peers under the same settings; every arm's repetition, the speedup
    by repetition thirds, the issue-23 targets with interval and n, and the float32 check that
    HF greedy (with and without HF's own repetition processor) matches our baseline."""
    loaded = loaded_tiny(torch.bfloat16, n_layers=2, seed=0)
    twin = loaded_tiny(torch.float32, n_layers=2, seed=0)
    out = io.StringIO()
    result = run_bench(
        "tiny",
        n_prompts=2,
        quick=True,
        groups="loopfree",
        loaded=loaded,
        loaded_fp32=twin,
        articles=articles(),
        out=out,
    )
    assert set(result["groups"]) == {"rp_c20", "t07_c20"} and result["groups_run"] == ["loopfree"]
    rp, t07 = result["groups"]["rp_c20"], result["groups"]["t07_c20"]
    assert rp["repetition_control"] == "rp1.2" and rp["sampling"]["temperature"] == 0.0
    assert t07["sampling"]["temperature"] == 0.7 and t07["repetition_control"] == "off"
    assert {"baseline", "hf_greedy", "hf_prompt_lookup_k4", "best", "best_short"} <= set(rp["arms"])
    assert {"baseline", "hf_sample", "hf_prompt_lookup_k4", "best"} <= set(t07["arms"])
    for g in (rp, t07):
        for arm in g["arms"].values():
            assert 0.0 <= arm["repetition_4gram"]["median"] <= 1.0
    assert t07["arms"]["best"]["identical_to_baseline"] is None  # draws differ by construction
    if packing_available():  # greedy under the control stays token-identical in bfloat16 too
        assert rp["arms"]["best"]["identical_to_baseline"] == 1.0
    targets = result["targets"]
    for gname in ("rp_c20", "t07_c20"):
        t = targets[f"loopfree_best_vs_baseline_{gname}"]
        assert t["threshold"] == 1.5 and t["ci"]["n"] == 2
        assert targets[f"best_vs_hf_best_{gname}"]["threshold"] == 1.3
    strata = result["repetition_strata"]
    assert sum(t["n"] for t in strata["thirds"].values()) == 4  # 2 groups x 2 prompts
    assert result["identity"]["identical_fraction"]["hf_greedy"] == 1.0
    assert result["identity"]["identical_fraction"]["hf_greedy_rp"] == 1.0
    text = out.getvalue()
    assert "speedup by repetition" in text and "kernels, not a bug" in text
    assert "loopfree_best_vs_baseline_rp_c20" in text and "n=2 (n < 10)" in text


@pytest.mark.parametrize("groups", ["", "long,loops", "fast"])
def test_bench_refuses_unknown_groups_in_one_line(groups):
    from specdec_study.bench.run import Settings

    with pytest.raises(SpecdecError, match="--groups takes"):
        Settings.of(2, None, True, groups)
