"""One set of figures for the notebooks' result directories, the book and W&B (which logs the result
directory's PNGs): `arms` (one setting: speedups, per-position acceptance, accepted lengths, time
split, K sweep, sampling, peers), `context_length` (against context length), `book` (what each
chapter shows, from a profile), `style` (one look: Figures without pyplot state, legends outside,
integer and plain log ticks). Every drawing function returns a Figure or None; `save` writes one,
`show` displays one in a notebook.
"""

from specdec_study.reporting.figures.style import new_figure, save, show

__all__ = ["new_figure", "save", "show"]
