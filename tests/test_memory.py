"""Memory: a hub model goes straight onto a CUDA device as it is read (no full copy in host
memory on the way), and env.json records the process's host and GPU memory peaks. CPU-only:
the placement decision and the kwargs from_pretrained receives are checked, not a real GPU."""

from __future__ import annotations

import importlib.util
from types import SimpleNamespace

import torch

from specdec_lib.models import loading
from specdec_study.environment import tracking


def test_weights_go_straight_onto_a_cuda_device_with_accelerate(monkeypatch):
    assert loading.placement(torch.device("cpu")) == {}
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: object())
    assert loading.placement(torch.device("cuda:0")) == {"device_map": {"": "cuda:0"}}
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    assert loading.placement(torch.device("cuda:0")) == {}  # no accelerate: load, then move


def test_from_pretrained_receives_the_placement(monkeypatch):
    seen = []

    def from_pretrained(source, **kwargs):
        seen.append(kwargs)
        # the loader asks for transformers' loading report (a mismatched checkpoint is refused)
        return ("model", {}) if kwargs.get("output_loading_info") else "model"

    monkeypatch.setattr(loading.AutoModelForCausalLM, "from_pretrained", from_pretrained)
    where = {"device_map": {"": "cuda:0"}}
    assert loading._load_weights("x", torch.float32, True, None, where) == "model"
    assert seen[0]["device_map"] == {"": "cuda:0"} and seen[0]["attn_implementation"] == "sdpa"
    loading._load_weights("x", torch.float32, True, None)
    assert "device_map" not in seen[1]


def test_memory_peaks_are_in_mib_and_gpu_only_on_cuda():
    peaks = tracking.memory_peaks("cpu")
    # a process that imported torch holds tens to thousands of MiB: catches KiB or bytes
    assert 20 < peaks["peak_host_rss_mib"] < 10**6
    assert peaks["peak_gpu_mib"] is None


def test_env_json_records_the_memory_peaks(monkeypatch):
    from specdec_study.runner import execute

    model = torch.nn.Linear(2, 2)
    loaded = SimpleNamespace(model=model, dtype=torch.float32)
    monkeypatch.setattr(execute, "load_target", lambda S: loaded)
    monkeypatch.setattr(execute, "thread_choice", lambda S: {"threads": 1})
    env = execute.run_environment(
        SimpleNamespace(), {"dtype": "auto"}, 1.0, SimpleNamespace(resumed=0)
    )
    assert env["peak_host_rss_mib"] > 20 and env["peak_gpu_mib"] is None


def test_a_multimodal_gemma3_loads_as_its_text_model_with_the_same_logits(tmp_path, capfd, caplog):
    """Gemma 3 4B's layout (a Gemma3ForConditionalGeneration with a vision tower): only the text
    model is loaded, no vision weight is in memory, and the logits are the full model's."""
    from transformers import Gemma3ForCausalLM

    from specdec_study.runner.tiny import tiny_random_model

    full = tiny_random_model("float32", vocab=64, hidden=32, layers=2, conditional=True)
    full.model.save_pretrained(tmp_path)
    full.tokenizer.save_pretrained(tmp_path)
    capfd.readouterr()
    lm = loading.load_model(str(tmp_path), dtype="float32", device="cpu")
    said = capfd.readouterr()
    # no line per vision weight, printed or logged
    assert "UNEXPECTED" not in said.out + said.err + caplog.text
    assert isinstance(lm.model, Gemma3ForCausalLM)
    assert not [n for n, _ in lm.model.named_parameters() if "vision" in n or "multi_modal" in n]
    assert lm.vocab_size == full.vocab_size
    ids = torch.tensor([[2, 5, 6, 7, 9, 11]])
    with torch.no_grad():
        want = full.model(input_ids=ids).logits
        got = lm.model(input_ids=ids).logits
    torch.testing.assert_close(got, want)
