"""Where the study runs, not what it measures: the machine and threads (`runtime`), the profiles
(`profiles`), Colab setup (`colab`), the hub downloads (`hub`), W&B tracking and the environment
record (`tracking`), secrets kept out of every file (`secrets`), provenance for the book
(`provenance`), the batch lock (`batch`) and the GPU check (`gpu_check`).

Knows nothing about drafting, verification or how an experiment is analysed.
"""
