"""specdec_study: the study of speculative decoding that the book presents, built on the library
(`specdec_lib`, which never imports this package).

The data path reads one way: `environment` (where it runs) feeds `runner`, which turns a profile
into rows through the library; `results` stores them; `analysis` summarizes them (torch-free);
`reporting` draws and words them (torch-free); `bench` compares with Hugging Face. `study` (the
notebooks') and `pages` (the book's) are the only facades; `cli` is the command line.

An experiment is one module of `experiments/` (its declaration, config, run, summary and
figures; `experiments/README.md` has the design), found by `results.catalog`. The experiments of
notebook 04 are not yet moved: each keeps its name in each layer, `runner/<name>.py`
measures its rows, `analysis/<name>.py` declares it and summarizes them, `reporting/<name>.py`
and `reporting/figures/<name>.py` (where they exist) present them. A moved experiment whose
torch side the runner keeps reaches it through a runner module named for what it does
(`runner/hf_arms.py`, `runner/distribution.py`). Experiment
06's module is `speculative_sampling.py` and 02's (`bigram`) is `bigram_draft.py`, so that no
file shares a name with the library's `core/sampling.py` (the sampling primitive) or
`drafters/bigram.py` (the bigram drafter).
"""
