"""The configurations of ours that the benchmark runs: the K sweep, the contexts and lengths, a
`Config` (a drafter spec and its K), the best lossless ones (the registry's presets), and the
drafter a spec builds. Knows nothing about timing, Hugging Face or printing."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from specdec_lib.config import SamplingConfig
from specdec_lib.core.draft import Drafter
from specdec_lib.core.processors import NO_CONTROL, RepetitionControl
from specdec_lib.drafters.registry import PRESETS, SELF_KEEP, SELF_LAYERS, DraftContext, build
from specdec_lib.models import LoadedModel
from specdec_study.results.declare import BASELINE

KS = (2, 4, 8)
CONTEXTS = (20, 100)
LONG_TOKENS = 128
SHORT_TOKENS = 32
IDENTITY_TOKENS = 64
GROUP_KINDS = ("long", "short", "loopfree")  # `bench --groups`, in the order they run


@dataclass(frozen=True)
class Decoding:
    """How a group decodes: its sampling settings and the repetition control that every arm,
    ours and Hugging Face's, applies to the target's logits."""

    tag: str  # the group's name prefix
    sampling: SamplingConfig = SamplingConfig()
    control: RepetitionControl = NO_CONTROL


GREEDY = Decoding("long")
# The loop-free groups (issue 23): greedy under CTRL's repetition penalty of 1.2 (HF's
# `repetition_penalty`), and sampling at T = 0.7 (top-k and top-p off), each against HF with the
# same settings. A no-repeat n-gram ban is left out: it rejects every copied n-gram by
# construction, so it measures the ban rather than the drafters.
LOOPFREE = (
    Decoding("rp", control=RepetitionControl(repetition_penalty=1.2)),
    Decoding("t07", sampling=SamplingConfig(temperature=0.7)),
)


@dataclass(frozen=True)
class Config:
    """One of our configurations: a drafter spec (see `make_drafter`) and its K."""

    name: str
    draft: str
    k: int


# Our best lossless configurations on the embedded Gemma 3 270M (long: prompt lookup at the K
# whose verification fills one row chunk of the fast path; short: lookup, else the shared-body
# drafter) as the registry's static table has them: the bench's arms `best` and `best_short` run
# what the presets resolve to on the machine (`drafters.presets`, `run.resolve_presets`), these
# where no calibration is cached, so that `generate --draft best` runs what the bench measured.
BEST_LONG = Config("best", PRESETS["best"].spec, PRESETS["best"].k)
BEST_SHORT = Config("best_short", PRESETS["best_short"].spec, PRESETS["best_short"].k)
# Tree verification (`drafters.tree`): every earlier match of the suffix and the bigram's two top
# successors in one call of at most 16 nodes, the shared-body chain when nothing matches. An arm
# of its own beside `best`, with no preset: in a reduced precision its one call is not
# batch-invariant, so it need not match the baseline token for token (`numbers._best` never
# calls such an arm best); `generate --draft tree+shared:16:4 --k 8` runs it.
TREE_LONG = Config("tree", "tree+shared:16:4", 8)
# The loop-free groups' computed draft (issue 23): a weight-only int8 copy of the target on int8
# kernels with its head pruned to the 32,768 most frequent ids (`drafters.int8pack`, drafting
# through its lean Gemma forward). Its cost, acceptance and speedup on the machine at hand are in
# the bench's result folder (results/embedded/bench-loopfree/). No preset: it runs on the CPU only;
# `generate --draft int8w:32768 --k 4` runs it.
INT8W_LOOPFREE = Config("int8w", "int8w:32768", 4)
BASELINE_CONFIG = Config(BASELINE, "none", 1)


def ngram_configs(ks: Sequence[int]) -> list[Config]:
    """Our n-gram prompt lookup at each K of the sweep."""
    return [Config(f"ngram_k{k}", "ngram", k) for k in ks]


def all_configs(ks: Sequence[int] = KS) -> list[Config]:
    """Every configuration of ours that a run with this K sweep times (`quick`: K = 4 only).
    Each runs from the command line as `generate --draft DRAFT --k K`; the best ones by their
    preset's name alone (`best`, `best_short`)."""
    return [BASELINE_CONFIG, *ngram_configs(ks), BEST_LONG, BEST_SHORT, TREE_LONG, INT8W_LOOPFREE]


def make_drafter(
    spec: str, loaded: LoadedModel, fit_ids: Callable[[], list[int]], k: int = 4
) -> Drafter:
    """A drafter by spec, through the one grammar (`drafters.registry`); k: the run's K."""
    return build(spec, DraftContext(loaded, fit_ids, k=k))


def _self_spec(loaded: LoadedModel) -> str:
    """The library's self-draft, scaled down for models smaller than the embedded one."""
    cfg = loaded.model.config
    cfg = cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg
    layers = max(1, min(SELF_LAYERS, int(cfg.num_hidden_layers)))
    keep = min(SELF_KEEP, max(loaded.vocab_size // 2, 1))
    return f"self:{layers}:{keep}"
