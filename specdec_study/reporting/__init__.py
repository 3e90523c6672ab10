"""Presenting results: number formatting, tables, the earlier study, verdict prose, figures and
the generated readings of result directories. Torch-free; reads files, never measures."""
