"""Running experiments (torch): the study's context (`context`: profile, loaded targets and
drafters), arms over prompts paired and interleaved into rows (`measure.paired`), one module per
experiment that builds its config, arms and rows (`single`, `context_sweep`, `agreement`,
`k_sweep`, `sampling`, `peers`; each declared in its `analysis` module, listed in
`results.catalog`), and one path that reuses, computes, tracks and publishes a result (`execute`;
its figures are drawn by the `draw` the caller gives `Study`). Knows nothing about how rows are
summarized (`analysis`) or presented (`reporting`, the book)."""
