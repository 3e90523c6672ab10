"""What an executed experiment notebook shows: a reading generated from one result directory.

`reading(path)` returns Markdown: what was run (model, dtype, device, arms, prompts, tokens), the
headline numbers with their 95% intervals and n, a table with chosen columns (rounded, with units,
no index, no empty cells), and each figure with a caption that says what to look at.
`display_reading(path)` displays it in a notebook. What each experiment runs, each figure's
caption, and an experiment's own headline, "What it showed" lines and table (where it declares
them; else one line or row per arm) are read from the experiments' declarations
(`results.catalog`), so no experiment is named here. Reads only the files of
results/SCHEMA.md; knows nothing about models, and judges nothing (verdicts are the book's, from
rules written before the numbers).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from specdec_study.experiments.speculative_sampling import sequence_family
from specdec_study.reporting.format import md_code, md_text
from specdec_study.reporting.format import md_table as markdown_table
from specdec_study.reporting.number_format import DASH, fmt, interval
from specdec_study.reporting.number_format import interval_of as _ci
from specdec_study.reporting.number_format import is_number as _finite
from specdec_study.results import catalog


def what(experiment: str) -> str:
    """The one line that says what `experiment` runs (its declaration's), or its name."""
    found = catalog.declared().get(experiment)
    return found[1].what if found else experiment


def captions() -> dict[str, str]:
    """Each declared figure's caption by file stem (the first declaration of a file wins)."""
    out: dict[str, str] = {}
    for _, e in catalog.declared().values():
        for f in e.figures:
            out.setdefault(f.stem, f.caption)
    return out


WHAT = {e: decl.what for e, (_, decl) in catalog.declared().items()}  # experiment -> its line
CAPTIONS = captions()  # figure stem -> its caption


# (column, header, kind): kind "x" ratio, "%" share, "s" seconds, "n" count, "t" tokens/s, ""
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("context", "context (tokens)", "n"),
    ("temperature", "temperature", ""),
    ("k", "K", "n"),
    ("method", "arm", ""),
    ("draft", "draft", ""),
    ("implementation", "implementation", ""),
    ("n_prompts", "n (prompts)", "n"),
    ("speedup", "speedup (95% CI)", "x"),
    ("earlier_style_speedup", "earlier-study-style speedup", "x"),
    ("predicted_speedup_leviathan", "predicted (Leviathan)", "x"),
    ("predicted_speedup_calibrated", "predicted (calibrated)", "x"),
    ("acceptance_rate", "acceptance (95% CI)", "%"),
    ("agreement", "agreement (95% CI)", "%"),
    ("mean_accepted_length", "tokens per target call", ""),
    ("tokens_per_s", "tokens/s (95% CI)", "t"),
    ("total_wall_s", "total time (s)", "s"),
    ("identical_to_baseline", "identical to greedy", "%"),
)


def md_table(rows: Sequence[dict[str, str]]) -> str:
    """A Markdown table: no index column, every cell filled (a dash where a row lacks it)."""
    return markdown_table(rows, missing=DASH)


def table_rows(table: Sequence[dict[str, Any]]) -> list[dict[str, str]]:
    """A summary's flat table with the chosen columns, intervals joined, empty columns dropped."""
    out: list[dict[str, str]] = []
    for t in table:
        row: dict[str, str] = {}
        for col, head, kind in COLUMNS:
            if col not in t:
                continue
            lo = t.get(f"{col}_ci_low", t.get("ci_low") if col == "agreement" else None)
            hi = t.get(f"{col}_ci_high", t.get("ci_high") if col == "agreement" else None)
            n = t.get("n_prompts")
            row[head] = interval(t[col], lo, hi, kind, n) if _finite(t[col]) else fmt(t[col], kind)
        out.append(row)
    keep = [h for h in dict.fromkeys(h for r in out for h in r) if any(r[h] != DASH for r in out)]
    return [{h: r.get(h, DASH) for h in keep} for r in out]


def arm_rows(arms: dict[str, Any], config_arms: dict[str, str]) -> list[dict[str, str]]:
    """One table row per arm (speed, acceptance, identity); columns empty in all rows dropped."""
    rows = []
    for m, s in arms.items():
        row = {
            "arm": f"`{m}`",
            "draft": f"`{config_arms.get(m, s.get('draft', DASH))}`",
            "K": fmt(s.get("k"), "n"),
            "n (prompts)": fmt(s.get("n_prompts"), "n"),
            "tokens/s (median, 95% CI)": _ci(s.get("tokens_per_s"), "t"),
            "speedup (95% CI)": _ci(s.get("speedup"), "x") if m != "baseline" else "1 (reference)",
            "acceptance (95% CI)": _ci(s.get("acceptance_rate"), "%"),
            "tokens per target call": _ci(s.get("mean_accepted_length"), ""),
            "identical to greedy": fmt(s.get("identical_fraction"), "%"),
        }
        rows.append(row)
    keep = [h for h in rows[0] if any(r[h] not in (DASH, "`none`") for r in rows)] if rows else []
    return [{h: r[h] for h in keep} for r in rows]


def _load(path: Path) -> tuple[dict, dict, dict]:
    read = lambda name: json.loads((path / name).read_text(encoding="utf-8"))  # noqa: E731
    return read("summary.json"), read("config.json"), read("env.json")


def _timed(config: dict) -> bool:
    """Whether the run generated on prompts (timed, arms interleaved), not teacher-forced on
    documents (the agreement: no generation, no timing)."""
    return not (config.get("n_prompts") is None and config.get("n_documents") is not None)


def _sample_size(config: dict) -> str:
    """'6 prompts, 32 new tokens each', or for the teacher-forced agreement (no generation)
    '40 documents, 64 teacher-forced positions each'."""
    if not _timed(config):
        return (
            f"{config['n_documents']} documents, "
            f"{config.get('continuation_tokens')} teacher-forced positions each"
        )
    return f"{config.get('n_prompts')} prompts, {config.get('max_new_tokens')} new tokens each"


def what_was_run(summary: dict, config: dict, env: dict) -> str:
    """The reading's 'What was run' paragraph: experiment, profile, target, n, settings and arms."""
    exp = summary.get("experiment", "?")
    arms = config.get("arms") or {}
    parts = [
        f"**What was run.** {md_code(exp)}: {what(exp)}. Profile {md_code(config.get('profile'))}, "
        f"target {md_code(config.get('target'))} in "
        f"{md_text(env.get('dtype', config.get('dtype')))} on "
        f"{md_text(env.get('device', config.get('device')))}"
        + (
            f" ({md_text(env['cpu_model'])})"
            if env.get("cpu_model") and env.get("device") == "cpu"
            else ""
        )
        + f"; n = {_sample_size(config)}",
    ]
    if config.get("context_tokens"):
        parts.append(f", {config['context_tokens']} tokens of context")
    for key, label in (("contexts", "contexts"), ("ks", "draft lengths K"),
                       ("temperatures", "temperatures")):  # fmt: skip
        if config.get(key):
            parts.append(f", {label} {', '.join(str(v) for v in config[key])}")
    parts.append(".")
    if arms:
        parts.append(
            " Arms: " + ", ".join(f"{md_code(m)} ({md_code(d)})" for m, d in arms.items()) + "."
        )
    if _timed(config) and "arms" in config:
        parts.append(
            " Arms run interleaved per prompt after a warm-up; intervals are 95% bootstrap "
            "intervals over prompts (paired for speedups)."
        )
    return "".join(parts)


def _headline_arms(summary: dict) -> list[str]:
    arms = summary.get("arms") or {}
    out = []
    for m, s in arms.items():
        n = s.get("n_prompts")
        if m == "baseline":
            out.append(f"`baseline`: {_ci(s.get('tokens_per_s'), 't')} tokens/s (median, n = {n})")
            continue
        bits = [f"speedup {_ci(s.get('speedup'), 'x')}"]
        if s.get("acceptance_rate"):
            bits.append(f"acceptance {_ci(s.get('acceptance_rate'), '%')}")
        bits.append(f"{fmt(s.get('identical_fraction'), '%')} of outputs identical to greedy")
        out.append(f"`{m}`: " + ", ".join(bits) + f" (n = {n})")
    return out


def declared(experiment: str | None) -> Any:
    """The declaration (`results.declare.Experiment`) of `experiment`, None when none is."""
    found = catalog.declared().get(experiment or "")
    return found[1] if found else None


def headline(summary: dict, config: dict) -> list[str]:
    """The headline's lines for a result: its declaration's `headline` where it has one (a
    table per context or K), else one line per arm."""
    decl = declared(summary.get("experiment"))
    if decl is not None and decl.headline is not None:
        return decl.headline(summary, config)
    return _headline_arms(summary)


def _extra_tables(summary: dict) -> list[str]:
    out = []
    if ident := summary.get("identity_by_dtype"):
        rows = [
            {"dtype": d, "n (prompts)": fmt(v.get("n_prompts"), "n"),
             "new tokens": fmt(v.get("max_new_tokens"), "n"),
             "identical to greedy": fmt(v.get("identical_fraction"), "%"),
             "first divergence (token positions)": ", ".join(
                 str(p) for p in v.get("divergence_positions") or []) or DASH}
            for d, v in ident.items()
        ]  # fmt: skip
        out.append("Greedy token identity of the draft arm per dtype (reduced precision can flip "
                   "a near-tie between the two top logits):\n\n" + md_table(rows))  # fmt: skip
    if checks := summary.get("distribution_check"):
        rows = []
        for t, chk in checks.items():
            for m, c in chk.items():
                if not isinstance(c, dict):
                    continue
                rows.append({
                    "temperature": t, "sampler": m,
                    "prompts x samples": f"{chk.get('n_prompts')} x "
                    f"{chk.get('n_samples_per_prompt')}",
                    "TVD": fmt(c.get("tvd"), ""), "chi-square": fmt(c.get("chi2"), ""),
                    "dof": fmt(c.get("dof"), "n"), "p": fmt(c.get("p_value"), ""),
                    "detectable TVD (80% power)": fmt(c.get("detectable_tvd"), ""),
                    "TVD if unverified": fmt(c.get("tvd_unverified"), ""),
                })  # fmt: skip
        out.append("First sampled token against the target's exact distribution:\n\n"
                   + md_table(rows))  # fmt: skip
    if seq := sequence_family(summary.get("sequence_check") or {}):
        rows = []
        for t, chk in seq.items():
            for m, c in chk.items():
                paths = c.get("paths_tested") or {}
                rows.append({
                    "temperature": t, "sampler": m, "verdict": c.get("verdict"),
                    "tokens tested": fmt(c.get("n_tested"), "n"), "p": fmt(c.get("p_value"), ""),
                    "detectable TVD (80% power)": fmt(c.get("detectable_tvd"), ""),
                    **{k: fmt(paths.get(k, 0), "n") for k in c.get("needed_paths") or []},
                })  # fmt: skip
        out.append("Positions 1..m against the target's exact conditionals (tested tokens per "
                   "verifier path; verdict rule in "
                   "`experiments.speculative_sampling.sequence_verdict`, all checks one Bonferroni "
                   "family, `sequence_family`):\n\n"
                   + md_table(rows))  # fmt: skip
    return out


# the hypotheses whose Q an experiment's files feed (reporting.claims.VERDICT_SOURCES), and where
# the book decides them
PARADOX = "book/paradox.md"


def bears_on(experiment: str) -> list[str]:
    """The hypotheses (H1..H4) whose verdicts read this experiment's files."""
    from specdec_study.reporting.claims import VERDICT_SOURCES

    return [h for h, files in VERDICT_SOURCES.items()
            if any(f.split("/")[0] == experiment for f in files)]  # fmt: skip


def _side(d: Any, null: float) -> str:
    """Where an interval dict lies against `null`: above, below, or across it."""
    if not isinstance(d, dict) or not (_finite(d.get("ci_low")) and _finite(d.get("ci_high"))):
        return "without an interval"
    if d["ci_low"] > null:
        return f"its interval above {fmt(null, 'x')}"
    if d["ci_high"] < null:
        return f"its interval below {fmt(null, 'x')}"
    return f"its interval includes {fmt(null, 'x')}: no difference shown at this n"


def _shown_arms(summary: dict) -> list[str]:
    out = []
    for m, s in (summary.get("arms") or {}).items():
        n = s.get("n_prompts")
        if m == "baseline":
            tps = s.get("tokens_per_s")
            if isinstance(tps, dict) and len(summary.get("arms") or {}) == 1:
                out.append(f"the target alone generated {_ci({**tps, 'n': None}, 't')} tokens/s "
                           f"(median over n = {n} prompts)")  # fmt: skip
            continue
        sp = s.get("speedup")
        if not isinstance(sp, dict):
            continue
        out.append(f"`{m}` ran at {_ci({**sp, 'n': None}, 'x')} the baseline's speed "
                   f"(n = {n} prompts; {_side(sp, 1.0)})")  # fmt: skip
    return out


def showed(summary: dict) -> str | None:
    """**What it showed**: the run's result in words, read from the files (intervals against
    1x, first against last cell of a sweep, the sampling checks' outcomes), and the hypotheses
    its files feed, with where the book decides them."""
    exp = summary.get("experiment", "")
    decl = declared(exp)
    shown = decl.showed if decl is not None and decl.showed is not None else _shown_arms
    lines = shown(summary)
    parts = []
    if lines:
        parts.append("**What it showed.** " + "; ".join(lines) + ".")
    if hs := bears_on(exp):
        parts.append(f"These files feed {', '.join(hs)}, decided in the paradox chapter "
                     f"(`{PARADOX}`), where each rule says when it was fixed.")  # fmt: skip
    return " ".join(parts) or None


def reading(path: Path) -> str:
    """The Markdown reading of one result directory (without its figures)."""
    path = Path(path)
    summary, config, env = _load(path)
    parts = [f"### {md_code(summary.get('experiment'))}", what_was_run(summary, config, env)]
    if hl := headline(summary, config):
        parts.append("**Headline** (point estimate [95% interval]):\n\n"
                     + "\n".join(f"- {h}" for h in hl))  # fmt: skip
    decl = declared(summary.get("experiment"))
    if decl is not None and decl.table is not None and summary.get("table"):
        parts.append(md_table(decl.table(summary["table"])))
    elif summary.get("table"):
        rows = table_rows(summary["table"])
        parts.append(md_table(rows))
    elif summary.get("arms"):
        parts.append(md_table(arm_rows(summary["arms"], config.get("arms") or {})))
    parts += _extra_tables(summary)
    if shown := showed(summary):
        parts.append(shown)
    files = sorted(p.name for p in path.iterdir() if p.suffix in (".csv", ".json"))
    parts.append(
        "Files: " + ", ".join(f"`{f}`" for f in files) + f" in `{path.parent.name}/{path.name}/` "
        "(see `results/SCHEMA.md`)."
    )
    return "\n\n".join(parts)


def figures(path: Path) -> list[tuple[Path, str]]:
    """(png, caption) for each figure of a result directory."""
    by_stem = captions()
    return [
        (png, by_stem.get(png.stem, png.stem.replace("_", " ")))
        for png in sorted(Path(path).glob("figures/*.png"))
    ]


def display_reading(path: Path, display: Callable[..., Any] | None = None) -> None:
    """Display the reading, then each figure followed by its caption (in a notebook)."""
    from IPython.display import Image, Markdown
    from IPython.display import display as ipy_display

    display = display or ipy_display
    display(Markdown(reading(path)))
    for i, (png, caption) in enumerate(figures(path), start=1):
        display(Image(filename=str(png)))
        display(Markdown(f"*Figure {i} (`{png.name}`).* {caption}"))
