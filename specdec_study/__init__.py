"""specdec_study: the study of speculative decoding that the book presents, built on the library
(`specdec_lib`, which never imports this package).

The data path reads one way: `environment` (where it runs) feeds `runner`, which turns a profile
into rows through the library; `results` stores them; `analysis` summarizes them (torch-free);
`reporting` draws and words them (torch-free); `bench` compares with Hugging Face. `study` (the
notebooks') and `pages` (the book's) are the only facades; `cli` is the command line.

An experiment (and the paradox's decomposition) keeps its name in each layer:
`runner/<name>.py` measures its rows, `analysis/<name>.py` declares it and summarizes them,
`reporting/<name>.py` and `reporting/figures/<name>.py` (where they exist) present them. The one
exception is experiment 06, whose modules are `speculative_sampling.py` so that no file shares a
name with the library's `core/sampling.py` (the sampling primitive).
"""
