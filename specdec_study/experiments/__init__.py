"""The study's experiments, one module each: its declaration (`results.declare.Experiment`:
name, reading line, config and summary shapes, figures with their drawings), its config and
run (functions of the `runner.lab.Lab` the runner hands them), its summary, and, for the module
that leads a notebook, that notebook (`NOTEBOOK`, a `results.declare.Notebook` listing the
experiments it runs, its own and those it imports from sibling modules). `quick.py` holds the
quick notebook (`QUICK`, with `QUICK_PROFILE`), of 04's experiments and outside the study.

Found by `results.catalog`, which imports every module of this package and collects their
`NOTEBOOK`s (ordered by name): adding an experiment adds its module (and its notebook's page in
`_toc.yml`), no list elsewhere names it. A module here imports no runner module and no torch
(the catalog and the book stay torch-free; `tests/test_layers.py` checks it) and never the
catalog (which imports it).
"""
