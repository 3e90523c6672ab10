"""Stated (not measured) costs of the real pair's calls on a Colab T4, and the quick profile's
time estimate from them, printed offline: `python -m specdec_study.runner.t4 [profile]`.

No T4 timing of the 4B exists in this repository, so a call's seconds are derived from the
models' shapes (`runner.real_shapes`: the parameter formula of each config) and the T4's
datasheet, under three stated assumptions, as a roofline:

    seconds(tokens x rows) = max(weights in bfloat16 / (320 GB/s x BANDWIDTH_SHARE),
                                 2 x params x tokens x rows / (8.1 TFLOP/s x COMPUTE_SHARE),
                                 layers x HOST_PER_LAYER)

- BANDWIDTH_SHARE 0.6: a decode step reads every weight once, so at batch one it is bound by
  the memory bandwidth; a plain device copy reaches roughly 70% of a GDDR6 card's peak, and a
  step's many matrix-vector kernels less.
- COMPUTE_SHARE 0.5 of the FP32 rate: the T4 (sm_75) has no bfloat16 tensor-core path, so
  bfloat16 products run on the FP32 units at best; the card throttles its clock under load.
- HOST_PER_LAYER 0.3 ms: an eager transformers forward launches its kernels from Python on
  Colab's two-core host, a floor per decoder layer that a small model's step can hit.

So a batch of rows costs one step until its arithmetic catches up with the weight reads
(`ridge_rows`), which is why the agreement decodes its continuations in batches. The notebook
itself measures the loaded target (`estimate.measured_costs`) and prints that instead.

What it does not know: the T4's real achieved bandwidth and bfloat16 throughput (only a GPU
run can say; `make gpu-check` measures them), attention's own reads and products (the KV cache,
a few percent at these contexts), tokenization and Python work between calls, set-up, and the
downloads (about 11 GB for the quick profile's three models).
"""

from __future__ import annotations

import sys

from specdec_study.runner.estimate import Calls, Costs, estimate_table, minutes, work
from specdec_study.runner.real_shapes import DRAFT, SECOND_DRAFT, SHAPES, TARGET

T4_BANDWIDTH = 320e9  # bytes/s, NVIDIA T4 datasheet (GDDR6)
T4_FP32 = 8.1e12  # FLOP/s, NVIDIA T4 datasheet, single precision
BANDWIDTH_SHARE = 0.6  # assumed: see the module's docstring
COMPUTE_SHARE = 0.5  # assumed
HOST_PER_LAYER = 0.3e-3  # s, assumed
BYTES = 2  # bfloat16, what `dtype: auto` picks on a T4
QUICK = "colab-t4-quick"
BUDGET_MINUTES = 20.0  # issue 39: the quick path's runs inside 20 minutes on a T4
# the quick profile's drafts that are models of their own: their shapes
MODELS = {f"model:{name}": name for name in (DRAFT, SECOND_DRAFT)}
NOT_INCLUDED = (
    "not included: the first cell's set-up (clone, installs, licence checks, Drive) and the "
    "downloads, about 11 GB for the 4B, the 1B and the 270M, which take minutes more"
)


def call_seconds(model: str, tokens: int) -> float:
    """Stated seconds of one forward of `tokens` tokens (all rows together) of `model` (a hub
    id of `real_shapes.SHAPES`) on a T4 in bfloat16: the roofline of the module's docstring."""
    shape = SHAPES[model]
    params = shape.params()
    memory = params * BYTES / (T4_BANDWIDTH * BANDWIDTH_SHARE)
    compute = 2 * params * tokens / (T4_FP32 * COMPUTE_SHARE)
    return max(memory, compute, shape.layers * HOST_PER_LAYER)


def nocache_growth(c0: int, c1: int, new_tokens: int) -> float:
    """The 4B baseline's time per token without a KV cache at context c1 over c0, at the stated
    costs: each call feeds the prompt and, on average, half the new tokens (`estimate.generation`);
    with the cache a step is one token, the same at both contexts (growth 1)."""
    fed = lambda c: 1 + c + new_tokens // 2  # noqa: E731
    return call_seconds(TARGET, fed(c1)) / call_seconds(TARGET, fed(c0))


def ridge_rows(model: str = TARGET) -> int:
    """The most rows a decode step of `model` takes at the price of one (the arithmetic of that
    many rows still under the weight reads)."""
    one = call_seconds(model, 1)
    rows = 1
    while call_seconds(model, rows + 1) <= one:
        rows += 1
    return rows


def _costs_of(model: str, calls: list[Calls], k: int) -> Costs:
    """`model`'s stated Costs at every size these calls use (so nothing is interpolated)."""
    sizes = {1, k + 1, *(c.tokens * c.batch for c in calls)}
    batches = {c.batch for c in calls if c.batch > 1}
    return Costs(
        {n: call_seconds(model, n) for n in sorted(sizes)},
        "a T4, stated",
        {b: call_seconds(model, b) for b in sorted(batches)},
    )


def t4_costs(works: dict[str, list[Calls]], k: int = 4) -> Costs:
    """The stated T4 costs of these works: the 4B target's, and each model draft's it knows
    the shape of."""
    calls = [c for w in works.values() for c in w]
    target = _costs_of(TARGET, [c for c in calls if c.model == ""], k)
    drafts = {
        spec: _costs_of(name, [c for c in calls if c.model == spec], k)
        for spec, name in MODELS.items()
        if any(c.model == spec for c in calls)
    }
    return Costs(target.seconds, target.device, target.batched, drafts)


def quick_works(profile: str = QUICK) -> tuple[dict[str, list[Calls]], int]:
    """The calls of the quick notebook's experiments on `profile` (from the configs it would
    run, as `estimate.print_estimate` counts them), and the profile's K."""
    import tempfile

    from specdec_study.results.catalog import QUICK as QUICK_NOTEBOOK
    from specdec_study.runner.experiments import RUNNERS
    from specdec_study.runner.session import setup

    with tempfile.TemporaryDirectory() as tmp:
        study = setup(profile, results_dir=tmp)
        works = {
            e.name: work(e.name, RUNNERS[e.name].config(study)) for e in QUICK_NOTEBOOK.experiments
        }
        return works, int(study.profile.get("k", 4))


def stated_line() -> str:
    """The assumptions, in one line, with the 4B's and the 1B's step they give."""
    gb = {m: SHAPES[m].params() * BYTES / 1e9 for m in (TARGET, DRAFT)}
    return (
        f"stated T4 costs (no T4 measured): a step reads the weights in bfloat16 (the 4B "
        f"{gb[TARGET]:.2f} GB, the 1B {gb[DRAFT]:.2f} GB) at {BANDWIDTH_SHARE:.0%} of "
        f"{T4_BANDWIDTH / 1e9:.0f} GB/s: {1000 * call_seconds(TARGET, 1):.1f} ms and "
        f"{1000 * call_seconds(DRAFT, 1):.1f} ms; longer calls at {COMPUTE_SHARE:.0%} of "
        f"{T4_FP32 / 1e12:.1f} TFLOP/s (no bfloat16 tensor cores on sm_75), so a step of up to "
        f"{ridge_rows()} rows costs one; at least {1000 * HOST_PER_LAYER:.1f} ms per layer"
    )


def t4_estimate(profile: str = QUICK) -> tuple[str, tuple[float, float]]:
    """The printed estimate of the quick notebook on `profile` at the stated T4 costs, and its
    (low, high) minutes."""
    works, k = quick_works(profile)
    costs = t4_costs(works, k)
    total = [0.0, 0.0]
    for calls in works.values():
        lo, hi = minutes(calls, costs)
        total = [total[0] + lo, total[1] + hi]
    text = "\n".join([stated_line(), estimate_table(works, costs, k), NOT_INCLUDED])
    return text, (total[0], total[1])


def print_t4_estimate(profile: str = QUICK) -> tuple[float, float]:
    """Print `t4_estimate(profile)`; return its (low, high) minutes."""
    text, span = t4_estimate(profile)
    print(text)
    return span


def main(argv: list[str] | None = None) -> int:
    """`python -m specdec_study.runner.t4 [profile]`: the estimate at the stated T4 costs."""
    args = sys.argv[1:] if argv is None else argv
    print_t4_estimate(args[0] if args else QUICK)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
