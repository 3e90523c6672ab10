"""The decoding core: sampling, verification (chain and tree), the KV-cached decode loops and the
CPU fast path. Pure functions over tensors and one cached model view; knows nothing about
experiments, result files or the book."""
