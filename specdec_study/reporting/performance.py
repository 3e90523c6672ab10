"""The performance chapter's reading of a bench run's folder (`results/<profile>/bench/`, written
by `python -m specdec_lib bench`, `bench.record`): its summary.json is one JSON object with every
number of the run, and every number this module prints is read from that object (none is typed
here); its env.json's `header` says how, when and where it ran.

`read_bench(path)` reads a folder; `bench_dirs(directory)` reads every bench folder of a
profile, and `machines_table` says per folder the CPU kind it ran on and what the presets `best`
and `best_short` resolved to there (`drafters.presets`; a run from before the calibration ran the
static table); `arms_table`, `ceiling_table`, `targets_table`,
`repetition_markdown`, `tree_identity_markdown` and `provenance_markdown` turn it into the
chapter's tables and sentences (`targets_table`, the bench's own thresholds, is for the
command line and the tests, not the chapter); `page_markdown` is all of them in the chapter's
order (what the tests compare between a folder and a changed copy).

Torch-free; knows nothing about how the bench was run or timed, only its files' keys.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pandas as pd

from specdec_lib.drafters.presets import cpu_words
from specdec_lib.errors import SpecdecError
from specdec_study.bench.record import BENCH_RUN, LOOPFREE_RUN
from specdec_study.reporting.format import central, ci, md_code, md_table, md_text, num, pct

# BENCH_RUN: the main run's folder; LOOPFREE_RUN: the loop-free groups (greedy under a repetition
# penalty, sampling at T = 0.7) as a run of their own (`bench --groups loopfree`), which may come
# from another machine than BENCH_RUN: the chapter shows it in its own section, with its own
# header, never merged into one table
BENCH_RUNS = (BENCH_RUN, LOOPFREE_RUN)
BENCH_GLOB = "bench*"  # every bench folder of a profile: one per CPU kind and set of groups
PRESET_KEYS = {"best": "best_long", "best_short": "best_short"}  # preset -> its arm in the JSON
# the header's CPU numbers, for a run whose summary predates the `cpu` field
_HEADER_CPU = re.compile(r"family (?P<family>\d+) model (?P<model>\d+)")
# the header's date and machine: "... on 2026-12-06 at commit abc1234, <machine>, bfloat16, ..."
_RUN = re.compile(
    r" on (?P<date>\d{4}-\d{2}-\d{2}) at commit \w+, (?P<machine>.+?), "
    r"(?:bfloat16|float32|float16)\b"
)


def _json_object(path: Path) -> dict[str, Any]:
    """A file of a bench folder that must hold one JSON object (a one-line SpecdecError if not)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise SpecdecError(f"performance: cannot read {path} ({e.strerror})") from None
    except ValueError:
        raise SpecdecError(f"performance: {path} is not JSON (a damaged bench folder)") from None
    if not isinstance(data, dict):
        raise SpecdecError(f"performance: {path} is not a JSON object (a damaged bench folder)")
    return data


def read_bench(path: Path) -> dict[str, Any]:
    """A bench folder's summary.json, with env.json's `header` (the run's command, date, commit
    and machine, in one line) under `_header`; a missing or damaged folder is one line."""
    path = Path(path)
    if not path.is_dir():
        raise SpecdecError(
            f"performance: no bench folder {path} (python -m specdec_lib bench --out {path})"
        )
    summary = _json_object(path / "summary.json")
    env = _json_object(path / "env.json")
    _json_object(path / "config.json")
    if not isinstance(summary.get("groups"), dict):
        raise SpecdecError(f"performance: {path / 'summary.json'} has no bench groups")
    return {**summary, "_header": str(env.get("header") or "")}


def _group_label(name: str, g: dict[str, Any]) -> str:
    """A setting's context and length, and for a loop-free group its decoding as the file says
    (sampling temperature, repetition control)."""
    extra = ""
    if g.get("loop_free"):
        t = float((g.get("sampling") or {}).get("temperature") or 0.0)
        extra = f", sampling at T = {num(t, 1)}" if t > 0 else ", greedy"
        rc = g.get("repetition_control")
        extra += f", repetition control `{rc}`" if rc and rc != "off" else ""
    return (
        f"{g.get('context_tokens')} context, {g.get('max_new_tokens')} new tokens{extra} ({name})"
    )


def strata_table(bench: dict[str, Any]) -> pd.DataFrame:
    """The bench's speedups by the repetition of our baseline's continuation (thirds over every
    group's prompts): ours (the group's best) and HF's best over our baseline, and ours over
    HF's, each with its interval and n."""
    thirds = (bench.get("repetition_strata") or {}).get("thirds") or {}
    rows = []
    for name in ("low", "middle", "high"):
        t = thirds.get(name)
        if not t:
            continue
        rows.append(
            {
                "repetition third": name,
                "4-gram repetition": f"{num(t.get('rep4_min'), 2)}-{num(t.get('rep4_max'), 2)}",
                "groups": ", ".join(f"`{x}`" for x in t.get("groups") or []),
                "ours x our baseline": _ci_n(t.get("ours_vs_baseline"), 2, "x"),
                "HF's x our baseline": _ci_n(t.get("hf_vs_baseline"), 2, "x"),
                "ours x HF's": _ci_n(t.get("ours_vs_hf"), 2, "x"),
            }
        )
    return pd.DataFrame(rows)


def _ci_n(d: Any, nd: int = 2, suffix: str = "", n_said: Any = None, scale: float = 1.0) -> str:
    """ci() with its n, which is left out when it is `n_said` (the table's heading says it)."""
    if not isinstance(d, dict):
        return "-"
    text = ci(d, nd, scale, suffix)
    return text.removesuffix(f", n={n_said}") if n_said is not None else text


def arms_table(bench: dict[str, Any], group: str | None = None) -> pd.DataFrame:
    """One row per group and arm, ours and Hugging Face's side by side: tokens/s (median over
    prompts), the paired speedups against our baseline and against HF greedy, acceptance, the
    share of outputs token-identical to our baseline, the continuations' 4-gram repetition;
    every interval a 95% bootstrap interval with its n. `group`: that setting's rows only."""
    rows = []
    for gname, g in bench.get("groups", {}).items():
        if group is not None and gname != group:
            continue
        n = g.get("n_prompts") if group is not None else None
        for arm, a in g.get("arms", {}).items():
            rows.append(
                {
                    "setting": _group_label(gname, g),
                    "arm": f"`{arm}`" + (" (HF)" if a.get("implementation") == "hf" else ""),
                    "draft, K": f"`{a.get('draft')}`, {a.get('k')}" if a.get("k") else "-",
                    "tokens/s": _ci_n(a.get("tokens_per_s"), 1, n_said=n),
                    "x our baseline": _ci_n(a.get("speedup"), 2, "x", n),
                    "x HF greedy": _ci_n(a.get("speedup_vs_hf_greedy"), 2, "x", n),
                    "acceptance": _ci_n(a.get("acceptance_rate"), 1, "%", n, 100.0),
                    "identical": pct(a.get("identical_to_baseline"), 0),
                    "4-gram repetition": _ci_n(a.get("repetition_4gram"), 2, n_said=n),
                }
            )
    return pd.DataFrame(rows)


def ceiling_table(bench: dict[str, Any]) -> pd.DataFrame:
    """Per K: the speedup a perfect, free draft would give (K + 1 tokens per verification) and
    the verification's cost in baseline steps that bounds it."""
    c = bench.get("ceiling") or {}
    by_k = sorted((c.get("by_k") or {}).items(), key=lambda kv: int(kv[0]))
    return pd.DataFrame(
        [
            {
                "K": k,
                "ceiling": num(v.get("ceiling"), 2, "x"),
                "verification cost (baseline steps)": num(v.get("verify_cost"), 2),
            }
            for k, v in by_k
        ]
    )


def best_arms(bench: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """Group -> (our fastest lossless arm, HF's fastest arm), as the bench named them."""
    return {n: (g.get("best_ours"), g.get("best_hf")) for n, g in bench.get("groups", {}).items()}


def ceiling_markdown(bench: dict[str, Any]) -> str:
    """What the ceiling is, its n, and how far our best arm is from it at its K."""
    c = bench.get("ceiling") or {}
    by_k = c.get("by_k") or {}
    if not by_k:
        return "The bench run has no ceiling."
    text = (
        f"The ceiling is measured on {c.get('n_positions')} positions of the baseline's own "
        "continuations: each verification is given the baseline's next K tokens (all accepted, "
        "so K + 1 tokens per call) and timed against a one-position call at the same sequences. "
        "No chain draft can beat it at that K on this machine, however good its guesses."
    )
    best = bench.get("best_long") or {}
    k = best.get("k") or 0
    ks = sorted(int(x) for x in by_k)
    below = [x for x in ks if x <= k]
    above = [x for x in ks if x >= k]
    bracket = sorted({*(below[-1:]), *(above[:1])})
    where = " and ".join(f"{num(by_k[str(x)]['ceiling'], 2, 'x')} at K = {x}" for x in bracket)
    top = max(bench.get("contexts") or [0])
    for gname, g in bench.get("groups", {}).items():
        arm = (g.get("arms") or {}).get(best.get("name", ""))
        if arm and bracket and g.get("context_tokens") == top:
            text += (
                f" Our best long-continuation arm (`{best.get('name')}`, K = {k}) reaches "
                f"{ci(arm['speedup'], 2, suffix='x')} in `{gname}`; the ceiling is {where}."
            )
            break
    return text


def repetition_markdown(bench: dict[str, Any]) -> str:
    """What the 4-gram repetition is (share of generated 4-grams seen before in prompt or
    output, our baseline's) and whether the more repetitive settings have the larger best
    speedups, read from each group's numbers (the tables show them per setting)."""
    points = []
    for gname, g in bench.get("groups", {}).items():
        base = (g.get("arms") or {}).get("baseline") or {}
        ours = (g.get("arms") or {}).get(g.get("best_ours")) or {}
        points.append((central(base.get("repetition_4gram")), central(ours.get("speedup")), gname))
    return (
        "The 4-gram repetition of a continuation is the share of its generated 4-grams that "
        "already occurred earlier in the prompt or the output (the tables' last column, our "
        "baseline's row for the setting). Prompt lookup and n-gram drafts copy earlier text, so "
        "they gain exactly where the continuation repeats itself. " + _repetition_reading(points)
    )


def _span(values: list[float], nd: int, suffix: str = "") -> str:
    lo, hi = num(min(values), nd, suffix), num(max(values), nd, suffix)
    return lo if lo == hi else f"{num(min(values), nd)}-{hi}"


def _repetition_reading(points: list[tuple[float, float, str]]) -> str:
    """Whether the more repetitive half of the settings has the larger speedups, said from the
    numbers (repetition, best speedup, group) of each setting."""
    points = sorted(p for p in points if p[0] == p[0] and p[1] == p[1])  # no NaN
    if len(points) < 2:
        return ""
    low, high = points[: len(points) // 2], points[len(points) // 2 :]
    names = lambda ps: ", ".join(f"`{p[2]}`" for p in ps)  # noqa: E731
    said = (
        f"the more repetitive settings ({names(high)}: repetition "
        f"{_span([p[0] for p in high], 2)}) get best speedups of "
        f"{_span([p[1] for p in high], 2, 'x')}, the less repetitive ones ({names(low)}: "
        f"{_span([p[0] for p in low], 2)}) {_span([p[1] for p in low], 2, 'x')}"
    )
    if min(p[1] for p in high) > max(p[1] for p in low):
        return (
            f"In this run {said}. A copying draft's large speedups measure how much a greedy "
            "base model repeats itself: for text that does not repeat, the less repetitive "
            "settings are the fairer guide."
        )
    return f"In this run {said}: repetition alone does not order the speedups."


def tree_identity_markdown(bench: dict[str, Any]) -> str:
    """The tree's share of outputs token-identical to our baseline in the run's dtype, per
    group, and in the float32 identity check."""
    tree = (bench.get("tree") or {}).get("name", "tree")
    per_group = [
        f"`{gname}`: {pct(g['arms'][tree].get('identical_to_baseline'), 0)} of "
        f"{g.get('n_prompts')} prompts"
        for gname, g in bench.get("groups", {}).items()
        if tree in (g.get("arms") or {})
    ]
    ident = bench.get("identity") or {}
    frac = (ident.get("identical_fraction") or {}).get(tree)
    text = (
        f"The tree draft (`{(bench.get('tree') or {}).get('draft')}`, K = "
        f"{(bench.get('tree') or {}).get('k')}) is fast, but in {bench.get('dtype')} its "
        "outputs equal our baseline's only on some prompts: "
        + "; ".join(per_group)
        + ". The bench never calls it best (the best arm must be identical on every prompt); "
        "{ref}`token identity <token-identity>` in the Results chapter says why batched calls "
        "differ in reduced precision."
    )
    if frac is not None:
        text += (
            f" In {ident.get('dtype')} ({ident.get('prompts')} prompts, "
            f"{ident.get('max_new_tokens')} new tokens) {pct(frac, 0)} of its outputs are "
            "identical"
            + (
                ", so the differences are rounding, not a wrong verifier."
                if frac >= 1.0
                else ": some differences remain at full precision, which rounding does not explain."
            )
        )
    return text


def targets_table(bench: dict[str, Any]) -> pd.DataFrame:
    """The bench's own targets: value (with its interval where it has one), threshold, met."""
    rows = []
    for name, t in (bench.get("targets") or {}).items():
        # the file keeps no direction: a target is "at most" when "at least" contradicts `met`
        at_most = (float(t["value"]) >= float(t["threshold"])) != bool(t.get("met"))
        rows.append(
            {
                "target": f"`{name}`",
                "value": ci(t["ci"], 3) if isinstance(t.get("ci"), dict) else num(t["value"], 3),
                "threshold": ("<= " if at_most else ">= ") + num(t.get("threshold"), 2),
                "met": "met" if t.get("met") else "missed",
            }
        )
    return pd.DataFrame(rows)


def bench_machine(bench: dict[str, Any]) -> str:
    """The machine a bench ran on, as its header names it ('2-core Intel Xeon ... with AMX'),
    else its device as the JSON says."""
    m = _RUN.search(str(bench.get("_header", "")))
    return m.group("machine") if m else str(bench.get("device", "an unrecorded machine"))


def bench_cpu(bench: dict[str, Any]) -> dict[str, Any] | None:
    """The CPU kind a bench ran on, machine-readable: the summary's `cpu` field (in a run
    measured before the bench recorded it, the header's family and model numbers and its words,
    marked `from_header`); else the numbers the header names; None on a GPU or where neither
    says."""
    cpu = bench.get("cpu")
    if isinstance(cpu, dict):
        return cpu
    m = _HEADER_CPU.search(str(bench.get("_header", "")))
    if m is None or str(bench.get("device", "cpu")) != "cpu":
        return None
    return {"family": int(m["family"]), "model": int(m["model"]), "from_header": True}


def cpu_text(bench: dict[str, Any]) -> str:
    """The CPU kind in words, from `bench_cpu` (the header's machine where the JSON has no
    `cpu` field), else the device."""
    cpu = bench_cpu(bench)
    if cpu is None:
        return str(bench.get("device", "an unrecorded machine"))
    if cpu.get("from_header"):
        return str(cpu.get("words") or bench_machine(bench))
    return cpu_words(cpu)


def preset_resolution(bench: dict[str, Any], preset: str) -> dict[str, Any]:
    """What a preset ran in a bench: the summary's `presets` entry, or for a run measured before
    presets were resolved per machine, its `best_long` / `best_short` arm from the static
    table."""
    got = (bench.get("presets") or {}).get(preset)
    if isinstance(got, dict):
        return got
    arm = bench.get(PRESET_KEYS[preset]) or {}
    return {
        "draft": arm.get("draft"),
        "k": arm.get("k"),
        "source": "fallback",
        "why": "static table (the run predates the calibration)",
    }


def _preset_cell(bench: dict[str, Any], preset: str) -> str:
    r = preset_resolution(bench, preset)
    if not r.get("draft"):
        return "-"
    k = f", K = {r['k']}" if r.get("k") is not None else ""
    source = "calibrated" if r.get("source") == "calibration" else "static table"
    return f"{md_code(r['draft'])}{k} ({source})"


def _best_speedup(bench: dict[str, Any], preset: str) -> str:
    """The preset's arm's speedup over our baseline in the bench, per group of the preset's
    length where it ran (the loop-free groups' too: their names say their decoding)."""
    arm = (bench.get(PRESET_KEYS[preset]) or {}).get("name", preset)
    cells = [
        f"{md_code(gname)} {ci(g['arms'][arm].get('speedup'), 2, suffix='x')}"
        for gname, g in (bench.get("groups") or {}).items()
        if arm in (g.get("arms") or {}) and g.get("max_new_tokens") == max_tokens(bench, preset)
    ]
    return "; ".join(cells) or "-"


def max_tokens(bench: dict[str, Any], preset: str) -> Any:
    """The continuation length a preset is chosen for in this bench."""
    return bench.get("long_tokens") if preset == "best" else bench.get("short_tokens")


def bench_dirs(directory: Path) -> dict[str, dict[str, Any]]:
    """Every bench folder of a profile's directory (`BENCH_GLOB`), by name, read."""
    return {p.name: read_bench(p) for p in sorted(Path(directory).glob(BENCH_GLOB)) if p.is_dir()}


def machines_table(benches: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """Per bench run: the CPU kind and dtype it ran in, its groups, what `best` and
    `best_short` resolved to there (and from what) and their speedups over our baseline in the
    run's groups of their length. Every value is the run's, escaped."""
    rows = []
    for run, b in benches.items():
        rows.append(
            {
                "run": md_code(run),
                "CPU kind": md_text(cpu_text(b)),
                "dtype": md_text(b.get("dtype")),
                "groups": ", ".join(
                    md_code(g) for g in b.get("groups_run") or b.get("groups") or []
                ),
                "best": _preset_cell(b, "best"),
                "best x our baseline": _best_speedup(b, "best"),
                "best_short": _preset_cell(b, "best_short"),
                "best_short x our baseline": _best_speedup(b, "best_short"),
            }
        )
    return pd.DataFrame(rows)


def baseline_vs_hf(bench: dict[str, Any]) -> str | None:
    """Our baseline over Hugging Face greedy at the run's longest context, as the run's own
    target records it ('0.86x [0.81, 0.93], n=10'); None where the run did not measure it."""
    got = (bench.get("targets") or {}).get(
        f"baseline_vs_hf_greedy_c{max(bench.get('contexts') or [0])}"
    )
    if not isinstance(got, dict):
        return None
    return ci(got.get("ci") or got.get("value"), 2, suffix="x")


def machines_markdown(benches: dict[str, dict[str, Any]]) -> str:
    """One line per CPU kind that ran the bench, and in it per dtype (the runs' folders in
    brackets): what `best` and `best_short` ran there and from what, and our baseline over
    Hugging Face greedy in each run that measured it. The other speedups are in each run's own
    tables."""
    kinds: dict[str, dict[tuple[str, str], list[str]]] = {}
    for run, b in benches.items():
        said = ", ".join(f"{md_code(p)}: {_preset_cell(b, p)}" for p in PRESET_KEYS)
        key = (md_text(b.get("dtype")), said)
        kinds.setdefault(md_text(cpu_text(b)), {}).setdefault(key, []).append(run)
    lines = []
    for cpu, settings in kinds.items():
        parts = []
        for (dtype, said), runs in settings.items():
            got = {r: g for r in runs if (g := baseline_vs_hf(benches[r])) is not None}
            ratios = "; ".join(g if len(got) == 1 else f"{md_code(r)} {g}" for r, g in got.items())
            tail = f"; our baseline x HF greedy {ratios}" if got else ""
            parts.append(f"{dtype} ({', '.join(md_code(r) for r in runs)}): {said}{tail}")
        lines.append(f"- {cpu}: " + ". ".join(parts))
    return "\n".join(lines)


def bench_date(bench: dict[str, Any]) -> str | None:
    """The day the bench ran, as its header says, or None."""
    m = _RUN.search(str(bench.get("_header", "")))
    return m.group("date") if m else None


def provenance_markdown(bench: dict[str, Any], run: str = BENCH_RUN) -> str:
    """Where the numbers come from: the run's folder, the command, the machine, dtype and n per
    arm (the run's conditions and its own targets stay in its files)."""
    loopfree = run == LOOPFREE_RUN
    where = "in this section" if loopfree else "outside the Machines section and the last one"
    date = bench_date(bench)
    groups = " --groups loopfree" if loopfree else ""
    return (
        f"Every number {where} is read from `{run}/`, written by "
        f"`python -m specdec_lib bench --target {bench.get('target')}{groups}`"
        + (f" on {date}" if date else "")
        + f": {bench.get('n_prompts')} prompts per group, on a {bench_machine(bench)}, "
        f"{bench.get('dtype')}."
    )


def headline_markdown(bench: dict[str, Any]) -> str:
    """Our best against HF's best at each context, with the paired ratio and its interval."""
    out = []
    for name, t in sorted((bench.get("targets") or {}).items()):
        if name.startswith("best_vs_hf_best_c"):
            out.append(
                f"- context {name.rsplit('_c', 1)[-1]}: `{t.get('ours')}` "
                f"{num(t.get('ours_speedup_over_baseline'), 2, 'x')} over our baseline, "
                f"`{t.get('hf')}` {num(t.get('hf_speedup_over_baseline'), 2, 'x')}; ours over "
                f"HF's, paired: {ci(t.get('ci'), 2, suffix='x')}"
            )
    return "\n".join(out)


def arms_markdown(bench: dict[str, Any]) -> str:
    """One table per setting (context and continuation length), ours and HF's arms together."""
    out = []
    for gname, g in bench.get("groups", {}).items():
        t = arms_table(bench, gname).drop(columns="setting")
        if (t["x HF greedy"] == "-").all():
            t = t.drop(columns="x HF greedy")
        out.append(
            f"**{_group_label(gname, g)}**: n = {g.get('n_prompts')} prompts for every interval "
            f"(HF: Hugging Face's `generate`)\n\n{md_table(t)}"
        )
    return "\n\n".join(out)


def page_markdown(bench: dict[str, Any]) -> str:
    """The chapter's generated content, in order (the page itself adds the headings)."""
    return "\n\n".join(
        [
            provenance_markdown(bench),
            headline_markdown(bench),
            arms_markdown(bench),
            ceiling_markdown(bench),
            md_table(ceiling_table(bench)),
            repetition_markdown(bench),
            tree_identity_markdown(bench),
        ]
    )


def bench_point(bench: dict[str, Any], group: str, arm: str, key: str) -> float:
    """One arm's point estimate (value or median) of one key, for tests and prose."""
    return central(bench["groups"][group]["arms"][arm][key])
