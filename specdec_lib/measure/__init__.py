"""Timing decoders fairly: `paired` runs arms over the same prompts, interleaved per prompt and
device-synchronised, and returns one row per (prompt, arm); `peers` runs Hugging Face `generate`
on the same prompts. Both the study's runner and the benchmark use it; it imports neither.

Knows nothing about experiments, profiles or files.
"""
