"""The numbers page one states, read from a profile's result files: our best speedups from the
bench runs (on text that loops and on text that does not), the experiments' headline speedups,
how long the profile's experiments took on each kind of machine, and the one figure of page one.

Every value is a string ready for glue, or a `Speedup` whose parts are read from a file; a
setting that a profile did not measure gives None, never a number. Knows nothing about how the
bench or the experiments were run, only their files' keys; decides no verdict.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specdec_lib.errors import SpecdecError
from specdec_study.reporting.format import as_float, central, ci, finite, num
from specdec_study.reporting.performance import (  # noqa: F401 - bench_machine: for page one
    BENCH_RUNS,
    bench_machine,
    read_bench,
)
from specdec_study.reporting.runs import machine_kinds
from specdec_study.results.read import Profile


@dataclass(frozen=True)
class Speedup:
    """One arm's paired speedup over our baseline in one bench setting, as the file has it."""

    setting: str  # the bench group's name
    arm: str  # the arm's name in the bench
    draft: str  # its drafter spec
    k: int
    interval: dict[str, Any]  # value, ci_low, ci_high, n

    @property
    def text(self) -> str:
        """'2.33x [2.08, 2.79], n=10'."""
        return ci(self.interval, 2, suffix="x")

    @property
    def value(self) -> float:
        return central(self.interval)


def bench_runs(p: Profile) -> dict[str, dict[str, Any]]:
    """The profile's bench runs whose folders exist and read ({folder name: bench}); one that
    does not read is left out (the performance chapter says why)."""
    found = {}
    for name in BENCH_RUNS:
        path = Path(p.root) / p.name / name
        if path.is_dir():
            try:
                found[name] = read_bench(path)
            except SpecdecError:
                continue
    return found


def arm_speedup(bench: dict[str, Any], group: str, arm: str) -> Speedup | None:
    a = ((bench.get("groups") or {}).get(group) or {}).get("arms", {}).get(arm)
    if not isinstance(a, dict) or not finite(central(a.get("speedup"))):
        return None
    return Speedup(group, arm, str(a.get("draft")), int(a.get("k") or 0), a["speedup"])


def _top_group(bench: dict[str, Any], *, tokens: Any, loop_free: bool, sampled: bool) -> str | None:
    """The group at the longest context with this continuation length and decoding kind."""
    found = []
    for name, g in (bench.get("groups") or {}).items():
        t = as_float((g.get("sampling") or {}).get("temperature") or 0.0)
        if bool(g.get("loop_free")) != loop_free or (t > 0) != sampled:
            continue
        if tokens is not None and g.get("max_new_tokens") != tokens:
            continue
        found.append((as_float(g.get("context_tokens")), name))
    return max(found)[1] if found else None


def best_ours(bench: dict[str, Any], group: str | None) -> Speedup | None:
    """Our fastest lossless arm of a group, as the bench named it."""
    if group is None:
        return None
    g = (bench.get("groups") or {}).get(group) or {}
    return arm_speedup(bench, group, str(g.get("best_ours")))


def looping(bench: dict[str, Any]) -> dict[str, Speedup | None]:
    """Plain greedy text (which a base model makes loop): the best arm on the long and on the
    short continuations at the longest context."""
    long_g = _top_group(bench, tokens=bench.get("long_tokens"), loop_free=False, sampled=False)
    short_g = _top_group(bench, tokens=bench.get("short_tokens"), loop_free=False, sampled=False)
    return {"long": best_ours(bench, long_g), "short": best_ours(bench, short_g)}


def loop_free(bench: dict[str, Any]) -> dict[str, Speedup | None]:
    """Text that does not loop: greedy under the repetition control (the copying n-gram draft,
    and the best arm) and sampling (the best arm), at the longest context."""
    greedy = _top_group(bench, tokens=None, loop_free=True, sampled=False)
    sampled = _top_group(bench, tokens=None, loop_free=True, sampled=True)
    copy = (bench.get("best_long") or {}).get("name")
    return {
        "greedy_copy": arm_speedup(bench, greedy, str(copy)) if greedy else None,
        "greedy_best": best_ours(bench, greedy),
        "sampled_best": best_ours(bench, sampled),
    }


def identical_span(benches: list[dict[str, Any]], prefix: str) -> str | None:
    """The lowest and highest share of prompts whose output equals our baseline's, over every
    greedy setting of the benches and every arm whose name starts with `prefix` ('30-40%');
    None when no such arm was compared."""
    shares = [
        as_float(a.get("identical_to_baseline"))
        for b in benches
        for g in (b.get("groups") or {}).values()
        for name, a in (g.get("arms") or {}).items()
        if name.startswith(prefix) and finite(a.get("identical_to_baseline"))
    ]
    if not shares:
        return None
    lo, hi = (f"{100 * x:.0f}" for x in (min(shares), max(shares)))
    return f"{lo}%" if lo == hi else f"{lo}-{hi}%"


def full_precision_check(bench: dict[str, Any]) -> str | None:
    """The bench's identity check in full precision in words: how many of its arms were
    identical on every prompt, its dtype, prompts and length; None without one."""
    ident = bench.get("identity") or {}
    frac = ident.get("identical_fraction") or {}
    if not frac:
        return None
    same = sum(as_float(v) >= 1.0 for v in frac.values())
    return (
        f"{same} of {len(frac)} arms (the tree and Hugging Face greedy among them) identical on "
        f"every prompt in {ident.get('dtype')} ({ident.get('prompts')} prompts of "
        f"{ident.get('max_new_tokens')} new tokens)"
        if {"tree", "hf_greedy"} <= set(frac)
        else f"{same} of {len(frac)} arms identical on every prompt in {ident.get('dtype')} "
        f"({ident.get('prompts')} prompts of {ident.get('max_new_tokens')} new tokens)"
    )


def temperature(bench: dict[str, Any], group: str) -> str:
    """A group's sampling temperature as the file has it ('0.7')."""
    g = (bench.get("groups") or {}).get(group) or {}
    return num((g.get("sampling") or {}).get("temperature"), 1)


def hf_best(bench: dict[str, Any], group: str) -> Speedup | None:
    """Hugging Face's fastest arm of a group over our baseline."""
    g = (bench.get("groups") or {}).get(group) or {}
    return arm_speedup(bench, group, str(g.get("best_hf")))


def experiment_speedup(p: Profile, experiment: str) -> Speedup | None:
    """The headline arm's paired speedup of a single-context experiment (bigram, transformer
    draft) in the profile's batch."""
    r = p.get(experiment)
    if r is None:
        return None
    h = r.summary.get("headline") or {}
    arm = str(h.get("arm"))
    draft = str((r.config.get("arms") or {}).get(arm, arm))
    if not finite(central(h.get("speedup"))):
        return None
    return Speedup(experiment, arm, draft, int(r.config.get("k") or 0), h["speedup"])


def evaluate_minutes(p: Profile) -> list[tuple[str, float, int]]:
    """(machine, minutes, experiments) per kind of machine that computed the profile's
    experiments: the sum of their `wall_s_experiment`, as each env.json records it."""
    out = []
    for key, names in machine_kinds(p).items():
        secs = [as_float(p.get(e).env.get("wall_s_experiment")) for e in names]
        secs = [s for s in secs if finite(s)]
        cpu = key[2] if key[2] != "None" else key[1]
        machine = cpu if cpu != "None" else key[0]
        out.append((machine, sum(secs) / 60, len(names)))
    return out


def speedup_figure(settings: list[tuple[str, Speedup | None, Speedup | None]]) -> Any:
    """Our best and Hugging Face's best over our baseline per setting (95% intervals), one
    panel, settings as rows: None when no setting has a number."""
    rows = [(label, ours, hf) for label, ours, hf in settings if ours is not None]
    if not rows:
        return None
    from specdec_study.reporting.figures.style import new_figure

    # narrow, legend below: the figure keeps legible text when a phone scales it to its width
    fig, (ax,) = new_figure(1, 4.8, 1.4 + 0.55 * len(rows))
    for j, (who, dy, marker) in enumerate(
        (("our best", -0.12, "o"), ("Hugging Face's best", 0.12, "s"))
    ):
        pts = [(i, r[1 + j]) for i, r in enumerate(rows) if r[1 + j] is not None]
        ys = [i + dy for i, _ in pts]
        vs = [s.value for _, s in pts]
        lo = [s.value - as_float(s.interval.get("ci_low")) for _, s in pts]
        hi = [as_float(s.interval.get("ci_high")) - s.value for _, s in pts]
        ax.errorbar(vs, ys, xerr=[lo, hi], fmt=marker, capsize=3, label=who)
    ax.axvline(1.0, color="grey", lw=1, ls="--")
    ax.set_yticks(range(len(rows)), [r[0] for r in rows])
    ax.invert_yaxis()
    ax.set_xlabel("speedup over our greedy baseline (95% CI)")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.28), ncol=2, frameon=False)
    return fig


def quick_target_calls(profile: str = "colab-t4-quick") -> tuple[int, int] | None:
    """(fewest, most) target calls of the quick notebook's experiments on `profile`, counted by
    the notebook's own estimator (runner/estimate.py) from the configs it would run; None when
    the profile cannot be set up here (a batched call counts once). What a call costs is
    measured only on the T4 itself."""
    import tempfile

    from specdec_study.results.catalog import QUICK
    from specdec_study.runner import estimate
    from specdec_study.runner.experiments import RUNNERS
    from specdec_study.runner.session import setup as setup_context

    try:
        with tempfile.TemporaryDirectory() as tmp:
            study = setup_context(profile, results_dir=tmp)
            calls = [
                c
                for e in QUICK.experiments
                for c in estimate.work(e.name, RUNNERS[e.name].config(study))
                if c.model == estimate.TARGET  # not a draft model's own calls
            ]
    except (SpecdecError, OSError, KeyError, ValueError):
        return None
    return round(sum(c.low for c in calls)), round(sum(c.high for c in calls))
