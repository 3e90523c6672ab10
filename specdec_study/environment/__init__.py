"""Where the study runs, not what it measures: the machine and threads (`runtime`), the profiles
(`profiles`), Colab setup (`colab`), the hub downloads (`hub`), W&B tracking and the environment
record (`tracking`), secrets kept out of every file (`secrets`), the scrubbing of what is kept
(`scrub`) and the batch lock (`batch`). A layer of leaves: nothing here imports the rest of the
study (tests/test_layers.py); the GPU check and the real shapes, which run experiments, are the
runner's, and the book's provenance is the reporting's.

Knows nothing about drafting, verification or how an experiment is analysed.
"""
