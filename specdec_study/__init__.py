"""specdec_study: the study of speculative decoding that the book presents, built on the library
(`specdec_lib`, which never imports this package).

The data path reads one way: `environment` (where it runs) feeds `runner`, which turns a profile
into rows through the library; `results` stores them; `analysis` summarizes them (torch-free);
`reporting` draws and words them (torch-free); `bench` compares with Hugging Face. `study` (the
notebooks') and `pages` (the book's) are the only facades; `cli` is the command line.

An experiment is one module of `experiments/` (its declaration, config, run, summary and
figures; `experiments/README.md` has the design), found by `results.catalog`; no two modules
share a file name (`tests/test_layers.py`). Its torch side stays in the runner, behind the
`runner.lab.Lab` the module is handed, in modules named for what they do
(`runner/interleaved.py`, `continuations.py`, `teacher_forced.py`, `distribution.py`,
`hf_arms.py`). Book pages' helpers name what they hold (`reporting/implementation_tables.py`,
`reporting/figures/implementation_figures.py`, `reporting/decomposition_tables.py`).
Experiment 06's module is `speculative_sampling.py` and 02's (`bigram`) is `bigram_draft.py`,
so that no file shares a name with the library's `core/sampling.py` (the sampling primitive)
or `drafters/bigram.py` (the bigram drafter).
"""
