"""Torch-free result files: the catalog of experiments and notebooks, the schema that validates a
result directory, and the store that writes one atomically under a lock. Knows nothing about
models or how a result was measured."""
