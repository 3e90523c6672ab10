"""Torch-free analysis: rows and samples in, summaries and intervals out."""
