"""Running experiments (torch): the study's session (`session`: profile, loaded targets and
drafters), arms over prompts paired and interleaved into rows (`specdec_lib.measure.paired`);
the experiments (`specdec_study.experiments`) run through the `lab` the runner hands them, and
the torch helpers they need stay here: `peers`, Hugging Face's arms; `distribution`, the
sampling checks; `session.load_target` in another dtype, the transformer draft's identity;
`interleaved`, 04's interleaved blocks of prompts and contexts; `teacher_forced`, how a draft
relates to the target and its teacher-forced guesses; `continuations`, the target's greedy
continuations the agreement scores on. And one path that reuses, computes, tracks and publishes
a result (`execute`; its figures are drawn by the `draw` the caller gives `Session`). Beside
them, what runs experiments for a check rather than a result: the GPU check (`gpu_check`) and
the real pair's shapes with random weights (`real_shapes`). Knows nothing about how rows are
summarized (`analysis`) or presented (`reporting`, the book)."""
