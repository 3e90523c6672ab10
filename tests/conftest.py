"""Shared fixtures: tiny random-init Gemma 3 models, a fast fake LM, reference decoders, a
speculative decode with its stats checked, and the embedded model's WikiText setup.

Nothing here downloads anything. The tiny Gemma models are built from `runner.tiny.text_config`
(the smoke profiles' config) with a sliding window of 4 tokens and a mix of sliding and full
attention layers, so that every sequence in the tests runs past the window. They use SDPA
attention: Gemma's eager attention computes its softmax in float32 even for float64 weights,
which would make "cached == uncached" comparisons in float64 meaningless.

The fake LM is a fixed random table of logits conditioned on the last one or two tokens; it is
cheap enough for the tests that need thousands of generations, and its exact next-token
distribution is known, so continuation distributions can be enumerated.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from types import SimpleNamespace
from typing import NoReturn

import pytest
import torch
from transformers import Gemma3ForCausalLM

from specdec_lib.core.cache import CachedLM
from specdec_lib.core.decode import Generation, speculative_decode
from specdec_lib.core.draft import Draft, Drafter
from specdec_study.runner.tiny import text_config

# .ci/run sets it: there a missing test dependency (Chromium, the embedded model's package) is a
# failure, not a skip, so that CI cannot go green without running those tests.
STRICT_ENV = "SPECDEC_STRICT"


def strict() -> bool:
    """Whether SPECDEC_STRICT asks a missing test dependency to fail (any value but 0/false/no)."""
    return os.environ.get(STRICT_ENV, "").strip().lower() not in ("", "0", "false", "no")


def skip_or_fail(reason: str) -> NoReturn:
    """Skip with reason; under SPECDEC_STRICT, fail with it instead."""
    if strict():
        pytest.fail(f"{reason} ({STRICT_ENV} is set: a missing dependency fails)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(autouse=True, scope="session")
def _no_machine_presets(tmp_path_factory):
    """The suite never reads this machine's preset calibration (`drafters.presets`): a user's
    cached `best` would change what a test's `--draft best` runs. Tests that want one write
    their own file and point $SPECDEC_PRESETS at it."""
    mp = pytest.MonkeyPatch()
    mp.setenv("SPECDEC_PRESETS", str(tmp_path_factory.mktemp("presets") / "presets.json"))
    yield
    mp.undo()


VOCAB = 96  # tiny Gemma vocabulary
WINDOW = 4  # sliding window of the tiny Gemma models
FAKE_VOCAB = 6  # small, so that multi-token continuations can be enumerated and binned


def tiny_gemma(
    seed: int,
    n_layers: int = 4,
    *,
    vocab: int = VOCAB,
    dtype: torch.dtype = torch.float64,
    window: int = WINDOW,
) -> Gemma3ForCausalLM:
    """A random-init Gemma3ForCausalLM. Untied embeddings and init 0.2 give greedy continuations
    that vary (a tied, near-zero init just repeats the last token forever)."""
    kinds = ("sliding_attention", "full_attention", "sliding_attention", "sliding_attention")
    cfg = text_config(vocab, 32, n_layers, 2, window=window, kinds=kinds, max_positions=512)
    torch.manual_seed(seed)
    model = Gemma3ForCausalLM(cfg).to(dtype).eval()
    model.requires_grad_(False)
    assert n_layers < 2 or set(cfg.layer_types) == {"sliding_attention", "full_attention"}
    return model


class FakeLM(torch.nn.Module):
    """logits[t] = table[ids[t - 1], ids[t]] (order 2) or table[ids[t]] (order 1).

    Has no cache: it must be wrapped as `CachedLM(model, use_cache=False)`, which feeds the whole
    sequence every call. Position 0 of an order-2 model uses a dedicated "no previous token" row.
    """

    def __init__(self, vocab: int = FAKE_VOCAB, seed: int = 0, order: int = 2, scale: float = 1.5):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        shape = (vocab + 1, vocab, vocab) if order == 2 else (vocab, vocab)
        table = torch.randn(*shape, generator=g, dtype=torch.float64) * scale
        self.table = torch.nn.Parameter(table, requires_grad=False)
        self.vocab, self.order = vocab, order

    def forward(self, input_ids, cache=None, use_cache=False, logits_to_keep=1, **kwargs):
        if use_cache or cache is not None:
            raise AssertionError("FakeLM has no KV cache: wrap it in CachedLM(use_cache=False)")
        ids = input_ids[0]
        if self.order == 2:
            prev = torch.cat([ids.new_full((1,), self.vocab), ids[:-1]])
            logits = self.table[prev, ids]  # [seq, V]
        else:
            logits = self.table[ids]
        if logits_to_keep:
            logits = logits[-logits_to_keep:]
        return SimpleNamespace(logits=logits[None])


@torch.no_grad()
def next_logits(model: torch.nn.Module, seq: list[int]) -> torch.Tensor:
    """[V] logits after seq, from one full uncached forward (no CachedLM involved)."""
    ids = torch.tensor([seq], dtype=torch.long)
    return model(input_ids=ids, use_cache=False, logits_to_keep=1).logits[0, -1]


def stepwise_greedy(
    model: torch.nn.Module, prompt: list[int], n: int, eos: int | None = None
) -> list[int]:
    """Reference greedy decoding: recompute the whole sequence without a cache at every step."""
    seq = list(prompt)
    out: list[int] = []
    for _ in range(n):
        tok = int(next_logits(model, seq).argmax())
        out.append(tok)
        seq.append(tok)
        if eos is not None and tok == eos:
            break
    return out


_GREEDY_MEMO: dict[tuple[int, tuple[int, ...]], list[int]] = {}


def greedy_continuation(model: torch.nn.Module, prompt: list[int], n: int) -> list[int]:
    """stepwise_greedy without EOS, memoised per (model, prompt) and extended on demand."""
    key = (id(model), tuple(prompt))
    have = _GREEDY_MEMO.setdefault(key, [])
    if len(have) < n:
        have.extend(stepwise_greedy(model, list(prompt) + have, n - len(have)))
    return have[:n]


def random_prompt(seed: int, length: int, vocab: int = VOCAB) -> list[int]:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab, (length,), generator=g).tolist()


@pytest.fixture(scope="module")
def single_thread():
    """Tiny models are dominated by thread synchronisation: one intra-op thread is many times
    faster on a small, busy machine. Restored after the module."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def target64() -> Gemma3ForCausalLM:
    return tiny_gemma(seed=0, n_layers=4)


@pytest.fixture(scope="session")
def draft64() -> Gemma3ForCausalLM:
    """A different seed and depth: a separate small model acting as the drafter."""
    return tiny_gemma(seed=1, n_layers=2)


@pytest.fixture(scope="session")
def wide_draft64() -> Gemma3ForCausalLM:
    """A draft whose embedding has more rows than the target's (like a padded vocabulary)."""
    return tiny_gemma(seed=2, n_layers=2, vocab=VOCAB + 16)


@pytest.fixture(scope="session")
def target32() -> Gemma3ForCausalLM:
    return tiny_gemma(seed=0, n_layers=4, dtype=torch.float32)


@pytest.fixture(scope="session")
def draft32() -> Gemma3ForCausalLM:
    return tiny_gemma(seed=1, n_layers=2, dtype=torch.float32)


@pytest.fixture(scope="session")
def fake_target() -> FakeLM:
    return FakeLM(seed=10, order=2)


@pytest.fixture(scope="session")
def fake_draft() -> FakeLM:
    """A different table (and order) than the target's: q differs from p everywhere."""
    return FakeLM(seed=11, order=1)


class OracleDrafter(Drafter):
    """Proposes the target's own greedy continuation (read from a precomputed reference), so
    every draft is accepted; with `wrong_at=j` the j-th token of every draft is replaced by a
    different id, which forces a rejection at exactly position j whenever j < K."""

    name = "oracle"

    def __init__(self, prompt: list[int], continuation: list[int], vocab: int, wrong_at=None):
        self.full = list(prompt) + list(continuation)
        self.vocab, self.wrong_at = vocab, wrong_at

    def propose(self, seq, k, sampling, generator) -> Draft:
        pos = len(seq)
        assert seq == self.full[:pos], "the decode left the greedy continuation"
        tokens = self.full[pos : pos + k]
        assert len(tokens) == k, "reference continuation too short for this test"
        if self.wrong_at is not None and self.wrong_at < k:
            tokens[self.wrong_at] = (tokens[self.wrong_at] + 1) % self.vocab
        return Draft(tokens)


def check_stats(gen, *, k: int, prompt_len: int, model_calls: int | None = None) -> None:
    """Every GenStats invariant, recomputed independently of GenStats' own properties."""
    s = gen.stats
    acc, prop = s.accepted_lengths, s.proposed_lengths
    assert s.new_tokens == len(gen.tokens)
    assert len(acc) == len(prop)
    assert all(0 <= n <= d <= k for n, d in zip(acc, prop, strict=True))
    emitted = sum(n + 1 for n in acc)
    assert emitted >= s.new_tokens
    if s.stopped_by == "max_new_tokens":
        assert emitted == s.new_tokens  # nothing is cut unless an EOS was emitted
    else:
        assert s.stopped_by == "eos"
        assert emitted - s.new_tokens <= acc[-1]  # only the last call was cut short
    assert s.accepted == sum(acc) and s.proposed == sum(prop)
    assert s.accepted <= s.proposed
    assert s.acceptance_rate == (s.accepted / s.proposed if s.proposed else 0.0)
    assert s.draft_calls == sum(d > 0 for d in prop)
    assert s.target_calls == len(acc) + (1 if prompt_len > 1 else 0)
    if model_calls is not None:
        assert s.target_calls == model_calls  # the count matches the forwards really made
    if acc:
        assert s.mean_accepted_length == pytest.approx(emitted / len(acc))
    pos = s.position_acceptance(k)
    for i in range(k):
        reached = [n for n, d in zip(acc, prop, strict=True) if d > i and n >= i]
        if reached:
            assert pos[i] == pytest.approx(sum(n > i for n in reached) / len(reached))
        else:
            assert pos[i] is None
    hist = s.accepted_histogram(k)
    assert sum(hist) == s.draft_calls
    for j in range(k + 1):
        assert hist[j] == sum(1 for n, d in zip(acc, prop, strict=True) if d and n == j)
    summary = s.summary(k)
    assert summary["new_tokens"] == s.new_tokens and summary["accepted_histogram"] == hist


def speculate(
    target: torch.nn.Module | CachedLM, drafter: Drafter, prompt: list[int], k: int, n: int, **kw
) -> Generation:
    """speculative_decode of n tokens on target (a model: in a fresh CachedLM) with every
    GenStats invariant checked, its target calls against the forwards really made."""
    lm = target if isinstance(target, CachedLM) else CachedLM(target)
    start = time.perf_counter()
    gen = speculative_decode(lm, drafter, prompt, k=k, max_new_tokens=n, **kw)
    elapsed = time.perf_counter() - start
    check_stats(gen, k=k, prompt_len=len(prompt), model_calls=lm.calls)
    # the timed parts are disjoint spans of the call (1 ns of slack for float rounding); catches
    # a span's end and start added, or subtracted from its total, found by make mutation
    s = gen.stats
    assert min(s.prefill_s, s.draft_s, s.verify_s) >= 0.0
    assert s.prefill_s + s.draft_s + s.verify_s <= s.wall_s + 1e-9
    assert s.wall_s <= elapsed + 1e-9
    return gen


# ------------------------------------------------------------------ the embedded Gemma 3 270M


def embedded_model(dtype: str):
    """The embedded model on the CPU in dtype; skips where its package is not installed (fails
    under SPECDEC_STRICT)."""
    from specdec_lib.models import embedded, loading

    if not embedded.embedded_available():
        skip_or_fail("the embedded model package is not installed")
    return loading.load_model("embedded", dtype=dtype, device="cpu")


def wikitext_prompts_for(tokenizer, n: int, context_tokens: int = 20) -> list:
    """n prompts from the bundled WikiText-2 eval articles (the split and prompts of seed 0)."""
    from specdec_lib.data import load_wikitext, make_prompts, split_articles

    _, eval_articles = split_articles(load_wikitext("bundled"), seed=0)
    return make_prompts(tokenizer, eval_articles, n, context_tokens, seed=0)


def greedy_cases(generator, prompts, new_tokens: int) -> list[tuple[list[int], list[int]]]:
    """(prompt ids, the generator's greedy tokens) for each prompt, at K = 4."""
    from specdec_lib.config import SamplingConfig, SpecConfig

    cfg = SpecConfig(4, new_tokens)
    return [
        (list(p.ids), generator.generate_ids(list(p.ids), cfg, SamplingConfig()).tokens)
        for p in prompts
    ]


def assert_same_greedy_tokens(spec, cases, new_tokens: int) -> None:
    """spec's greedy tokens after each case's prompt are the case's, token for token (fewer only
    at an EOS), and its drafter really drafted."""
    from specdec_lib.config import SamplingConfig, SpecConfig

    cfg = SpecConfig(4, new_tokens)
    proposed = 0
    for ids, want in cases:
        got = spec.generate_ids(ids, cfg, SamplingConfig())
        assert got.tokens == want
        assert len(got.tokens) == new_tokens or got.stats.stopped_by == "eos"
        proposed += got.stats.proposed
    assert proposed > 0  # the drafter really drafted


class WrongAt(Drafter):
    """The inner drafter's proposal with token `at` replaced: a rejection there, always."""

    def __init__(self, inner: Drafter, at: int):
        self.inner, self.at = inner, at

    def attach(self, target) -> None:
        self.inner.attach(target)

    def begin(self, prompt) -> None:
        self.inner.begin(prompt)

    def propose(self, seq, k, sampling, generator) -> Draft:
        tokens = list(self.inner.propose(seq, k, sampling, generator).tokens)
        if self.at < len(tokens):
            tokens[self.at] = (tokens[self.at] + 1) % VOCAB
        return Draft(tokens)


# ------------------------------------------------------------------------ the smoke batch

ROOT = Path(__file__).resolve().parents[1]
# Fake secrets the smoke batch runs with; no output may contain them (tests scan for them).
FAKE_SECRETS = {
    "HF_TOKEN": "hf_FakeTokenForSpecdecTests0123456789",
    "WANDB_API_KEY": "fakewandbkey0123456789abcdef0123456789ab",
}


def whole_summary(experiment: str, profile: str) -> dict:
    """A summary of the shape `experiment` declares (results.schema reads no other as a study
    result): the committed embedded result's, under `profile`, for tests whose subject is not
    the summary."""
    summary = json.loads((ROOT / "results/embedded" / experiment / "summary.json").read_text())
    summary.pop("per_prompt_csv", None)  # publish records its own
    return {**summary, "profile": profile}


def whole_config(experiment: str, profile: str) -> dict:
    """A config of the shape `experiment` declares (results.schema reads no other as a study
    result): the committed embedded result's, under `profile` and without its hash (publish
    adds it), for tests whose subject is not the config."""
    config = json.loads((ROOT / "results/embedded" / experiment / "config.json").read_text())
    config.pop("config_hash")
    return {**config, "profile": profile}


def run_smoke_batch(results: Path, profile: str = "smoke") -> None:
    """Every notebook on a tiny profile with papermill, into results/<profile>/notebooks."""
    import papermill as pm

    from specdec_study.pages import NOTEBOOKS

    out = results / profile / "notebooks"
    out.mkdir(parents=True, exist_ok=True)
    for nb in NOTEBOOKS:
        pm.execute_notebook(
            str(ROOT / "notebooks" / f"{nb}.ipynb"),
            str(out / f"{nb}.ipynb"),
            parameters={"profile": profile, "results_dir": str(results)},
            kernel_name="python3",
            cwd=str(ROOT),
            progress_bar=False,
            log_output=True,  # the kernel's output reaches our stderr (captured, then scanned)
        )


def smoke_snapshot(results: Path) -> dict[str, int]:
    return {
        str(p.relative_to(results)): p.stat().st_mtime_ns
        for p in results.glob("smoke/*/**/*")
        if p.is_file() and "notebooks" not in p.parts
    }


@pytest.fixture(scope="session")
def smoke_batch(tmp_path_factory):
    """The smoke batch run twice (the second run must reuse every result), with fake HF_TOKEN
    and WANDB_API_KEY set and W&B offline into results/wandb. Returns (results, first
    snapshot, second snapshot, captured log)."""
    pytest.importorskip("papermill")
    results = tmp_path_factory.mktemp("results")
    log = results / "batch.log"
    with pytest.MonkeyPatch.context() as mp:
        for name, value in FAKE_SECRETS.items():
            mp.setenv(name, value)
        mp.setenv("WANDB_MODE", "offline")
        mp.setenv("WANDB_DIR", str(results / "wandb"))
        mp.delenv("FORCE", raising=False)
        (results / "wandb").mkdir()
        import logging

        logger = logging.getLogger("papermill")
        level, handler = logger.level, logging.FileHandler(log)
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        try:
            run_smoke_batch(results)
            first = smoke_snapshot(results)
            run_smoke_batch(results)  # every experiment exists for the same config
            second = smoke_snapshot(results)
        finally:
            logger.removeHandler(handler)
            logger.setLevel(level)
            handler.close()
    return results, first, second, log


def files_containing(root: Path, needles) -> list[str]:
    """Files under root whose bytes contain any of needles."""
    hits = []
    for p in root.rglob("*"):
        if p.is_file():
            data = p.read_bytes()
            hits += [f"{p.relative_to(root)}: {n[:6]}..." for n in needles if n.encode() in data]
    return hits


def write_profile(folder: Path, name: str, edit) -> Path:
    """The smoke profile under another name, changed by edit(profile), written to folder."""
    import yaml

    prof = yaml.safe_load((ROOT / "profiles" / "smoke.yaml").read_text(encoding="utf-8"))
    prof["name"] = name
    edit(prof)
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(prof), encoding="utf-8")
    return path
