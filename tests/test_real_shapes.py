"""The GPU check's real-shapes part (`runner.real_shapes`): the real pair's counts from the
configs, checked against published counts, and the same build-and-time code run on a CPU with
both configs scaled down (the check at scale 1 needs a GPU)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch

from specdec_study.runner import real_shapes
from specdec_study.runner.real_shapes import DRAFT, SHAPES, TARGET

SCALE = 32
CONTEXT = 40  # beyond both scaled sliding windows (32 and 16): the local layers' masks are used


def test_the_formula_gives_the_published_counts_of_the_real_models():
    # keras-hub's gemma3_presets: gemma3_1b 999,885,952; gemma3_4b_text 3,880,099,328 (its text
    # model at 262,144 ids); the hub's 4B has 64 ids more, 64 x 2560 parameters more
    assert SHAPES[DRAFT].params() == 999_885_952
    assert replace(SHAPES[TARGET], vocab=262_144).params() == 3_880_099_328
    assert SHAPES[TARGET].params() == 3_880_099_328 + 64 * 2560


def test_the_real_pair_is_counted_without_being_built():
    pair = real_shapes.real_pair()
    target, draft = pair["target"], pair["draft"]
    assert (target["params"], draft["params"]) == (3_880_263_168, 999_885_952)
    # the checkpoint's Gemma3ForConditionalGeneration (SigLIP tower and projector), on meta
    assert target["params_with_vision"] == 4_300_079_472
    assert target["weight_bytes"] == {
        "bfloat16": 2 * 3_880_263_168,
        "float16": 2 * 3_880_263_168,
        "float32": 4 * 3_880_263_168,
    }
    both = pair["pair_weight_bytes"]
    assert both["bfloat16"] == 2 * (3_880_263_168 + 999_885_952) < 15e9 < both["float32"]


def test_scaling_keeps_the_vocabularies_a_global_layer_and_the_real_shape_at_1():
    assert SHAPES[TARGET].scaled(1) is SHAPES[TARGET]
    for name in (TARGET, DRAFT):
        small = SHAPES[name].scaled(SCALE)
        assert small.vocab == SHAPES[name].vocab and small.layers == 2
        assert small.layer_types() == ["sliding_attention", "full_attention"]
    real = SHAPES[TARGET].layer_types()
    assert len(real) == 34 and [i for i, t in enumerate(real) if t == "full_attention"] == [
        5, 11, 17, 23, 29
    ]  # fmt: skip


@pytest.fixture(scope="module")
def scaled_check():
    return real_shapes.measure(torch.device("cpu"), scale=SCALE, context=CONTEXT, repeats=1)


def test_the_real_shapes_check_runs_scaled_down_on_a_cpu(scaled_check):
    assert scaled_check["ok"] is True and scaled_check["scale"] == SCALE
    assert scaled_check["real_pair"]["target"]["params"] == 3_880_263_168
    by_dtype = scaled_check["by_dtype"]
    assert set(by_dtype) == {"bfloat16", "float16", "float32"}
    assert "skipped" not in by_dtype["float32"]  # a CPU runs float32 always
    for dtype, r in by_dtype.items():
        if "skipped" in r:
            assert "\n" not in r["skipped"]
            continue
        # by hand, target: 262,208 x 80 embedding + 2 layers x (q/k/v/o 2 x 80 x 8 x (8 + 4)
        # = 15,360, MLP 3 x 80 x 320 = 76,800, norms 4 x 80 + 2 x 8 = 336) + final norm 80;
        # draft: 262,144 x 36 + 2 x (2 x 36 x 8 x (4 + 1) = 2,880, 3 x 36 x 216 = 23,328,
        # 4 x 36 + 2 x 8 = 160) + 36
        hand = {"target": 20_976_640 + 2 * 92_496 + 80, "draft": 9_437_184 + 2 * 26_368 + 36}
        assert r["params"] == r["params_by_formula"] == hand
        itemsize = getattr(torch, dtype).itemsize
        assert r["weight_bytes"] == itemsize * (hand["target"] + hand["draft"]) > 0
        assert r["allocated_bytes"] is None  # CUDA statistics only
        for key in ("target_step_s", "target_verify_s", "draft_step_s", "draft_verify_s"):
            assert math.isfinite(r[key]) and r[key] > 0
        assert r["c"] == r["draft_step_s"] / r["target_step_s"] > 0
        assert r["v"] == r["target_verify_s"] / r["target_step_s"] > 0


def test_a_dtype_the_device_cannot_run_is_skipped_with_one_line(monkeypatch):
    def out_of_memory(*args, **kwargs):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2 GiB\ndetails")

    monkeypatch.setattr(real_shapes, "build", out_of_memory)
    result = real_shapes.measure(torch.device("cpu"), scale=SCALE, dtypes=(torch.float32,))
    assert result["by_dtype"] == {
        "float32": {"skipped": "CUDA out of memory. Tried to allocate 2 GiB"}
    }
    assert result["ok"] is None  # nothing measured: neither passed nor failed
