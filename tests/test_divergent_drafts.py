"""Drafts that compute apart from the target (`exit:L`, `int8`, `distilled`): greedy output equals
uncached stepwise greedy decoding whatever they propose (forced rejections, max_new_tokens edges);
the distillation lowers its loss, records its data and curve, and caches its layers behind a
marker written last; each refuses in one line where it cannot work."""

from __future__ import annotations

import copy
import json
import shutil

import pytest
import torch
from conftest import VOCAB, WrongAt, check_stats, greedy_continuation, random_prompt, tiny_gemma

from specdec_lib.core.cache import CachedLM
from specdec_lib.core.decode import speculative_decode
from specdec_lib.core.draft import Drafter
from specdec_lib.drafters import distilled as D
from specdec_lib.drafters.quantized import int8_copy
from specdec_lib.drafters.registry import DraftContext, build, parse
from specdec_lib.errors import SpecdecError
from specdec_lib.models import LoadedModel

pytestmark = pytest.mark.usefixtures("single_thread")

TINY = D.DistillConfig(
    n_layers=2, steps=14, batch=2, seq_len=16, lr=3e-3, warmup=2, top_k=8, vocab_keep=48
)
CASES = [(1, 3, 9), (5, 4, 0), (6, 4, 1), (9, 2, 2), (14, 5, 5), (20, 4, 13)]  # (len, K, new)


def loaded_of(model: torch.nn.Module, tokenizer=None) -> LoadedModel:
    dtype = next(model.parameters()).dtype
    return LoadedModel(model, tokenizer, "tiny", dtype, torch.device("cpu"), VOCAB)


@pytest.fixture(scope="module")
def tokenizer():
    from specdec_study.study import tiny_tokenizer

    return tiny_tokenizer(VOCAB)


@pytest.fixture(scope="module")
def distilled_dir(tmp_path_factory, tokenizer, target32):
    import os

    root = tmp_path_factory.mktemp("specdec-cache")
    before = os.environ.get("SPECDEC_CACHE")
    os.environ["SPECDEC_CACHE"] = str(root)
    try:
        yield D.ensure_distilled(loaded_of(target32, tokenizer), TINY, progress=False)
    finally:
        if before is None:
            os.environ.pop("SPECDEC_CACHE", None)
        else:
            os.environ["SPECDEC_CACHE"] = before


def drafter_for(spec: str, target: torch.nn.Module, distilled_dir) -> Drafter:
    spec = f"distilled:{distilled_dir}" if spec == "distilled" else spec
    return build(spec, DraftContext(loaded_of(target), lambda: list(range(VOCAB))))


@pytest.mark.parametrize("wrong_at", [None, 0, 2])
@pytest.mark.parametrize("spec", ["exit:1", "exit:3", "int8", "distilled"])
def test_divergent_drafts_reproduce_stepwise_greedy(target32, distilled_dir, spec, wrong_at):
    drafter = drafter_for(spec, target32, distilled_dir)
    if wrong_at is not None:
        drafter = WrongAt(drafter, wrong_at)
    for i, (n, k, new) in enumerate(CASES):
        prompt = random_prompt(40 + i, n)
        gen = speculative_decode(CachedLM(target32), drafter, prompt, k=k, max_new_tokens=new)
        assert gen.tokens == greedy_continuation(target32, prompt, new), (spec, n, k, new)
        check_stats(gen, k=k, prompt_len=n)
        if wrong_at is not None and new > k:
            assert gen.stats.accepted < gen.stats.proposed  # the rejection really happened


def test_int8_copy_of_a_float64_target_is_lossless_and_leaves_the_target_alone(target64):
    before = {k: v.clone() for k, v in target64.state_dict().items()}
    drafter = drafter_for("int8", target64, None)
    quantized = [m for m in drafter.lm.model.modules() if "quantized" in type(m).__module__]
    assert quantized and not any("quantized" in type(m).__module__ for m in target64.modules())
    prompt = random_prompt(7, 12)
    gen = speculative_decode(CachedLM(target64), drafter, prompt, k=4, max_new_tokens=15)
    assert gen.tokens == greedy_continuation(target64, prompt, 15)
    assert all(torch.equal(before[k], v) for k, v in target64.state_dict().items())


def test_exit_runs_the_first_layers_with_the_full_head(target32):
    drafter = drafter_for("exit:2", target32, None)
    assert drafter.keep is None and drafter.token_map is None and drafter.n_layers == 2
    assert drafter.lm.model.lm_head is target32.lm_head  # the full head, shared
    assert parse("exit:12").args == (12,)


def test_distillation_lowers_the_loss_and_records_its_run(distilled_dir, target32):
    rec = D.training_record(distilled_dir)
    losses = [c["loss"] for c in rec["curve"]]
    assert len(losses) == TINY.steps and [c["step"] for c in rec["curve"]][-1] == TINY.steps
    assert sum(losses[-3:]) / 3 < sum(losses[:3]) / 3
    assert rec["recipe"]["seed"] == 0 and rec["recipe"]["steps"] == TINY.steps
    assert rec["data"]["tokens"] == TINY.tokens and rec["data"]["articles_used"]
    assert rec["data"]["source"].startswith("bundled:") and rec["loss_vocabulary"] == 48
    assert rec["timing"]["wall_s"] > 0 and rec["source_layers"] == [0, 1]
    assert distilled_dir.parent.name and distilled_dir.name.startswith("distilled-")
    assert json.loads((distilled_dir / D.MARKER).read_text())["layers"] == [0, 1]
    drafter = drafter_for("distilled", target32, distilled_dir)
    assert drafter.training_record() == rec  # what the study copies into its results


def test_the_draft_shares_the_targets_embeddings_and_head_and_owns_its_layers(
    distilled_dir, target32
):
    draft = D.load_distilled(loaded_of(target32), distilled_dir)
    assert draft.lm_head is target32.lm_head
    assert draft.model.embed_tokens is target32.model.embed_tokens
    assert len(draft.model.layers) == 2
    assert not torch.equal(
        draft.model.layers[0].mlp.up_proj.weight, target32.model.layers[0].mlp.up_proj.weight
    )


def test_training_never_sees_an_eval_article(tokenizer):
    from specdec_lib.data import load_wikitext, split_articles

    _, data = D.fit_windows(tokenizer, TINY)
    _, held_out = split_articles(load_wikitext("bundled"), seed=TINY.split_seed)
    assert not set(data["articles_used"]) & {a.title for a in held_out}


def test_a_cached_draft_is_reused_not_retrained(distilled_dir, target32, tokenizer, monkeypatch):
    monkeypatch.setenv("SPECDEC_CACHE", str(distilled_dir.parent))
    monkeypatch.setattr(D, "distill", lambda *a, **k: pytest.fail("retrained a cached draft"))
    assert D.ensure_distilled(loaded_of(target32, tokenizer), TINY) == distilled_dir
    as64 = copy.deepcopy(target32).to(torch.float64)  # the same weights loaded in another dtype
    assert D.cache_dir(loaded_of(as64), TINY) == distilled_dir


def test_an_incomplete_directory_is_refused_in_one_line(tmp_path, distilled_dir):
    partial = tmp_path / "half"
    partial.mkdir()
    (partial / D.WEIGHTS).write_bytes((distilled_dir / D.WEIGHTS).read_bytes())
    (partial / D.RECORD).write_text((distilled_dir / D.RECORD).read_text())
    assert not D.is_complete(partial)
    for call in (lambda: D.training_record(partial), lambda: parse(f"distilled:{partial}")):
        with pytest.raises(SpecdecError) as e:
            call()
        assert "\n" not in str(e.value) and str(partial) in str(e.value)


def test_refusals_are_one_line(target32):
    meta = tiny_gemma(0, 2, dtype=torch.float32).to("meta")
    fake = torch.nn.Sequential(torch.nn.Linear(4, 4))
    for call, needle in [
        (lambda: int8_copy(meta), "CPU only"),
        (lambda: drafter_for("exit:9", target32, None), "layers must be in [1, 4]"),
        (lambda: D.draft_skeleton(fake, (0,)), "lm_head"),
        (lambda: parse("exit"), "exit:LAYERS"),
        (lambda: parse("int8:3"), "takes no arguments"),
    ]:
        with pytest.raises(SpecdecError) as e:
            call()
        assert "\n" not in str(e.value) and needle in str(e.value)


@pytest.mark.parametrize(
    "marker, weights",
    [
        ('{"layers": []}', None),
        ('{"layers": "ab"}', None),
        ('{"layers": [0, 0]}', None),
        ("{not json", None),
        ("{}", None),
        ("[1]", None),
        (None, b"garbage, not safetensors"),
    ],
)
def test_a_damaged_distilled_draft_is_refused_in_one_line(
    tmp_path, distilled_dir, target32, marker, weights
):
    """Issue 38, case 5 and 10: a marker that is not {"layers": [...]} or weights that are not
    safetensors: one line naming the file, never a traceback."""
    bad = tmp_path / "bad"
    shutil.copytree(distilled_dir, bad)
    if marker is not None:
        (bad / D.MARKER).write_text(marker)
    if weights is not None:
        (bad / D.WEIGHTS).write_bytes(weights)
    with pytest.raises(SpecdecError) as e:
        drafter_for("distilled", target32, bad)
    assert "\n" not in str(e.value) and str(bad) in str(e.value)
