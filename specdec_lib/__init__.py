"""specdec_lib: speculative decoding, the library. Start reading at `core/decode.py`
(`speculative_decode`: the one decode loop; `NoDrafter` is the baseline) and `core/verify.py`
(the accept/reject decision, greedy and lossless rejection sampling).

`models` loads a target and a draft; `core` holds sampling, verification, the KV cache and its
CPU fast paths and the decode loop; `drafters` proposes tokens (one module each, named by the spec
grammar in `drafters/registry.py`); `measure` times arms paired and interleaved and runs the
Hugging Face peers; `generate` is the one-call API. It knows nothing of profiles, result files,
notebooks or the book: those are the study's (`specdec_study`), which imports this package and is
never imported by it (`__main__` is the one exception: `python -m specdec_lib` runs the study's
command line, kept for the commands users already type).

`ROOT` is the repository (data/ sits under it).
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
