"""Models that load whole or not at all (issue 38, case 5 and part of 10): a checkpoint whose
weights do not fill its model (renamed layers, another architecture's config over these weights)
or that cannot be read (a truncated safetensors file, a pickle that weights_only refuses) is
refused in one line naming it, for the target and for a `model:` draft, never run with random
weights."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file
from test_models import save_tiny_model

from specdec_lib.errors import SpecdecError
from specdec_lib.models.loading import load_model
from specdec_study import cli


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("tiny")
    save_tiny_model(d)
    return d


def renamed_layers(d: Path) -> None:
    weights = load_file(d / "model.safetensors")
    renamed = {k.replace("layers.1.", "layerz.1."): v for k, v in weights.items()}
    save_file(renamed, d / "model.safetensors", metadata={"format": "pt"})


def llama_config(d: Path) -> None:
    config = json.loads((d / "config.json").read_text())
    config.update(model_type="llama", architectures=["LlamaForCausalLM"])
    (d / "config.json").write_text(json.dumps(config))


def truncated(d: Path) -> None:
    data = (d / "model.safetensors").read_bytes()
    (d / "model.safetensors").write_bytes(data[: len(data) // 2])


class NotAWeight:
    pass


def pickled(d: Path) -> None:
    (d / "model.safetensors").unlink()
    torch.save({"model.embed_tokens.weight": NotAWeight()}, d / "pytorch_model.bin")


BROKEN = {
    "renamed layers": (renamed_layers, "missing from the checkpoint"),
    "another architecture": (llama_config, "in the checkpoint but not in the model"),
    "a truncated file": (truncated, "could not be read"),
    "a pickle": (pickled, "could not be"),
}


@pytest.fixture(params=list(BROKEN))
def broken(request, tiny, tmp_path) -> tuple[Path, str]:
    d = tmp_path / "broken"
    shutil.copytree(tiny, d)
    spoil, says = BROKEN[request.param]
    spoil(d)
    return d, says


def test_a_whole_checkpoint_loads(tiny):
    assert load_model(str(tiny), dtype="float32", device="cpu").vocab_size > 0


def test_a_checkpoint_that_does_not_fill_its_model_is_refused_in_one_line(broken):
    d, says = broken
    with pytest.raises(SpecdecError, match=says) as e:
        load_model(str(d), dtype="float32", device="cpu")
    assert "\n" not in str(e.value) and str(d) in str(e.value)


@pytest.mark.parametrize("role", ["target", "draft"])
def test_generate_refuses_a_mismatched_target_or_model_draft_in_one_line(
    role, tiny, broken, capsys
):
    d, says = broken
    target, draft = (d, f"model:{tiny}") if role == "target" else (tiny, f"model:{d}")
    argv = ["generate", "--target", str(target), "--draft", draft, "--prompt", "w0 w1",
            "--max-new-tokens", "4", "--device", "cpu", "--dtype", "float32"]  # fmt: skip
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("specdec: error:") and says in err, err
