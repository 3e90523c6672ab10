"""`python -m specdec_lib bench`: our decoders against Hugging Face `generate`, in one process.

Everything runs on the same loaded target, on a fixed set of held-out WikiText-2 prompts (the eval
half of `data.split_articles`; the same articles and anchors at both context lengths),
interleaved per prompt (`measure.paired.run_paired`, the order rotating with the prompt) after a
warm-up that also builds every kernel shape the run will use. Groups:

- `long_c100`, 128 new tokens: our baseline and HF greedy; our n-gram lookup and HF prompt
  lookup at K = 2, 4, 8; our best lossless configuration (`BEST_LONG`) and tree verification
  (`TREE_LONG`, in both long groups);
- `long_c20`, 128 new tokens: our baseline, HF prompt lookup at the K that was HF's best at
  context 100, `BEST_LONG` and `TREE_LONG` (the K sweep runs once, to keep the run short);
- `short_c100`, `short_c20`, 32 new tokens: our baseline, `BEST_SHORT`, HF prompt lookup at 4;
- loop-free (issue 23), at the longest context, 128 new tokens: `rp_c100`, greedy under a
  repetition penalty of 1.2 (`core.processors.RepetitionControl`, applied inside verification;
  HF gets its own `repetition_penalty`), and `t07_c100`, sampling at T = 0.7 (our lossless
  speculative sampling against HF's sampling and its prompt lookup with `do_sample`): our
  baseline, HF's autoregressive peer, HF prompt lookup at each K, `BEST_LONG`, `BEST_SHORT`
  and, on a CPU, `INT8W_LOOPFREE` (a weight-only int8 copy of the target as draft);
  speedup is also stratified by the repetition of our baseline's continuation (`strata`);
- identity: in float32 (unless the run is float32 already, or on a GPU, where a float32 copy
  of the target may not fit beside it: a T4 cannot) our n-gram at the largest K, both
  best configurations and HF greedy against our baseline, token for token (in bfloat16 our arms
  are compared too: the fast path is batch-invariant, so they must match there as well), and
  with the loop-free groups HF greedy under its repetition processor against our baseline under
  ours; the output says why HF greedy can differ in bfloat16 (kernels, not a bug);
- memory: the bytes the target holds (weights, packed weights, KV cache) and those the
  self-draft adds (pruned head, its packed copy, its KV cache), with the process's RSS.

`BEST_LONG` and `BEST_SHORT` are the arms `best` and `best_short`, running what those presets
resolve to on this machine and dtype (`drafters.presets`; `--presets auto`, the default: the
cached calibration, else a calibration run first, `calibrate_presets`; `--presets static`: the
static table); the output says what each resolved to and from what, and the JSON line records it
(`presets`) with the CPU kind (`cpu`: vendor, family, model, model name, precision flags) and
the cache key (`machine_key`).

Measured against predicted (a check that can fail): per arm, the decode phase's speedup (after
the prefill, which every arm pays alike) against Leviathan et al.'s prediction E / (c_call + v).
E is the expected tokens per target call, (1 - a^(d+1)) / (1 - a) averaged over the run's calls
of draft length d, with the per-token acceptance a fitted from the acceptance counts alone
(accepted / positions reached); c_call (a draft call) and v (its verification) are timed on their
own, away from the runs, at fixed positions of the baseline's output, against a baseline step
timed the same way (`calibrate`); c = c_call per draft token is Leviathan's cost ratio. The
accounting identity (mean accepted length x baseline step / in-loop time per call) is kept as an
internal consistency check (`accounting_ratio`), not as a target. The thread count is chosen as
the CLI and the study choose it (`runtime.choose_threads`: 1 and torch's default probed in
alternation, each count's fastest 1-row step plus its fastest verification of the largest K + 1
rows; `$SPECDEC_THREADS` overrides), with every number in the output.

It prints one table (tokens/s with 95% CIs, speedup over our baseline and over HF greedy,
acceptance, mean accepted length, cost ratio, measured/predicted speedup, share of repeated
4-grams, token identity), then the targets, and, as its last stdout line, one JSON object with
every figure and which targets were met; then it writes the run's result folder (`record`:
that object as summary.json, config.json, env.json and the printed table as bench.log, at once;
`results/embedded/bench/` by default). Every interval carries its n (prompts). `quick` runs
tiny settings (a smoke test); `groups` (`--groups long,short,loopfree`) picks the kinds of group;
`arms` (`--arms int8w,hf`) keeps only the arms named besides our baseline (`hf`: every HF arm).

Modules (the package re-exports none of them): `configs` (our configurations and their specs),
`run` (the run, `run_bench`), `record` (the run's result folder), `calibrate` (costs timed
apart, the ceiling, the prediction),
`calibrate_presets` (the presets' calibration, also `python -m specdec_lib calibrate`),
`numbers` (per-arm numbers), `memory`, `targets`, `strata` (speedup by repetition thirds),
`table` (printing), and apart from the bench
run `fastpath_cost` (what the batch-invariant fast path costs, its own `python -m`). Knows
nothing about notebooks or the experiments' result directories.
"""
