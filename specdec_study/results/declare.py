"""What declares an experiment: its name, one line for the reading, the
shape of its summary.json and of its config.json (TypedDicts that `results.schema` checks on
write and on read), its figures (file, caption) and the profile section it runs with where a
profile names none; and a notebook (name, title, text, the experiments it runs). Also the keys
every study summary has (`StudySummary`) and every study config has (`StudyConfig`, and the
paired and single-context configs several experiments share). Stdlib only.

A declaration is data, read by the torch-free half (catalog, readings, schema, the book). The
experiment modules of the `specdec_study.experiments` package also carry their own code in it:
its config and run (`build_config`, `run`: functions of a `runner.lab.Lab`, which the runner
hands them, so that the module imports no runner and no torch), its summary from rows
(`summarize`) and each figure's drawing (`Figure.draw`); the layers that use them find them
there (`runner.experiments.RUNNERS`, `analysis.from_rows.SUMMARIZED`,
`reporting.figures.declared.draw`), and its reading (`headline`, `showed`, `table`:
`reporting.readings`).

Knows nothing about any particular experiment nor about the order of the study
(`results.catalog` finds the notebooks).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

BASELINE = "baseline"  # the arm every speedup is paired against (draft "none")


class PerPromptRecord(TypedDict):
    """summary.json's record of per_prompt.csv as published (`results.schema.PER_PROMPT_RECORD`)."""

    rows: int
    sha256: str


class _StudyKeys(TypedDict):
    experiment: str
    profile: str
    roles: dict[str, str]  # role (bigram, transformer, ngram) -> the profile's arm for it


class StudySummary(_StudyKeys, total=False):
    """The keys every study experiment's summary.json has, whatever it measures (the runner
    writes them); an experiment's declared summary extends it with its own (and its headline)."""

    per_prompt_csv: PerPromptRecord  # absent from results published before it was recorded


class _StudyConfigKeys(TypedDict):
    experiment: str
    profile: str
    target: str
    dtype: str
    device: str
    data_source: str
    seed: int
    split_seed: int
    k: int
    warmup: int
    arms: dict[str, str]  # arm -> its drafter spec (the baseline's: "none")


class StudyConfig(_StudyConfigKeys, total=False):
    """The keys every study experiment's config.json has, whatever it measures: what
    `runner.session.base_config` starts each config with, and the arms it runs. An experiment's
    declared config extends it with its own keys. The config's hash (`config_hash`) names the
    stored result, so a shape declares the keys the runner writes and never changes them."""

    tiny: dict[str, Any]  # the tiny random models' options, where the profile builds them
    tiny_draft: dict[str, Any]
    config_hash: str  # added on publication: in config.json, not in the config hashed


class PairedConfig(StudyConfig):
    """A timed experiment's config: arms paired with the baseline on the same prompts, each
    generating `max_new_tokens` tokens."""

    n_prompts: int
    max_new_tokens: int


class SingleContextConfig(PairedConfig):
    """A paired experiment at one visible context (`context_tokens` tokens of each prompt):
    01 baseline, 02 bigram, 07 peers, and the base of 03, 05 and 06."""

    context_tokens: int


@dataclass(frozen=True)
class Figure:
    """One figure of a result directory: `figures/<file>`, shown with `caption`; drawn by `draw`,
    (summary, rows) -> matplotlib Figure or None (None: no file, for want of data), whose
    docstring's first line is the figure's alt text."""

    file: str
    caption: str
    draw: Callable[[dict[str, Any], Sequence[dict[str, Any]]], Any] = field(compare=False)

    @property
    def stem(self) -> str:
        """The file name without `.png` (what readings key captions by)."""
        return self.file.removesuffix(".png")


@dataclass(frozen=True)
class Experiment:
    """One result directory of the study, run by the notebook cell `call` (always
    `study.run(study_run, "<name>")`: `runner.experiments.RUNNERS[name]`, with `study_run` the
    Session that `study.setup` returned); `what`: one line for the reading; its figures.
    `schema`: its section of results/SCHEMA.md (markdown: its summary's, config's and extra
    files' keys; `notebooks/make_notebooks.py` writes it under `### <name>`, with the figures).
    `defaults`: the profile section (`experiments.<name>`) a profile without that section runs
    it with; a profile's own section overrides its keys.
    None: every profile that runs the experiment must name it (a profile without it is refused
    in one line). `summary`: the shape of its summary.json (a TypedDict extending
    `StudySummary`), refused on write and on read where it differs
    (`results.schema.shape_problem`); None: unchecked. `config_shape`: the shape of its
    config.json (a TypedDict extending `StudyConfig`), refused likewise before it runs and on
    read (`results.schema.config_problem`); None: unchecked.
    `build_config` and `run`: the experiment's config (from the profile alone, loading no model)
    and its run, each a function of the `runner.lab.Lab` the runner hands it; `summarize`: its
    summary sections from its rows, (rows, config, stated summary) -> dict (what
    `analysis.from_rows` checks the book's numbers with). Every experiment of the catalog has a
    run and a config (`runner.experiments.bound` refuses one without); one without `summarize`
    has its book's numbers read from its summary.
    `headline` and `showed`: its reading's lines (`reporting.readings` joins them), the
    headline's from (summary, config) and "What it showed"'s from the summary, each a list of
    str; None: one line per arm (`readings._headline_arms`, `readings._shown_arms`). They print
    numbers with `reporting.number_format` and `reporting.reading_lines`, which import no
    catalog. `table`: the reading's table from its summary's `table` rows (each row a dict of
    header -> printed cell); None: the summary's chosen columns (`readings.table_rows`)."""

    name: str
    what: str
    figures: tuple[Figure, ...] = ()
    schema: str = field(default="", compare=False)
    defaults: dict[str, Any] | None = field(default=None, hash=False)
    summary: Any = None
    config_shape: Any = None
    build_config: Callable[[Any], dict[str, Any]] | None = field(default=None, compare=False)
    run: Callable[[Any], Any] | None = field(default=None, compare=False)
    summarize: Callable[[list[dict[str, Any]], dict[str, Any], dict[str, Any]], dict[str, Any]] | None = (
        field(default=None, compare=False)
    )
    headline: Callable[[dict[str, Any], dict[str, Any]], list[str]] | None = field(
        default=None, compare=False
    )
    showed: Callable[[dict[str, Any]], list[str]] | None = field(default=None, compare=False)
    table: Callable[[Sequence[dict[str, Any]]], list[dict[str, str]]] | None = field(
        default=None, compare=False
    )

    @property
    def call(self) -> str:
        """The notebook cell's call: every experiment runs by its name, the one lookup by a name
        a user types (`study.run`)."""
        return f'study.run(study_run, "{self.name}")'


@dataclass(frozen=True)
class Notebook:
    """One notebook: `notebooks/<name>.ipynb`, its title and text, and its experiments (their
    declarations, in the order the notebook runs them)."""

    name: str
    title: str
    text: str
    experiments: tuple[Experiment, ...]
