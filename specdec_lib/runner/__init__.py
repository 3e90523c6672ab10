"""Running experiments: arms over prompts, paired and interleaved, into rows. Knows nothing about
summaries, verdicts or how results are presented."""
