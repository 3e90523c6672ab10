"""specdec: speculative decoding for Gemma, measured.

The data path reads one way: `environment` (where it runs) and `models` (loading) feed `core`
(sampling, verification, the KV-cached decode loops) and `drafters`; `measure` times arms paired
and interleaved; `runner` turns a profile into rows; `results` stores them; `analysis` summarizes
them (torch-free); `reporting` draws and words them (torch-free); `bench` compares with Hugging
Face. `study` (the notebooks') and `report` (the book's) are the only facades.

`ROOT` is the repository (profiles/, data/, results/ sit under it).
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
