"""One setup measured in several experiments, side by side: why its speedup reads differently.

The transformer draft at the profile's K (e.g. `self:18:16384`, K = 4) runs in the transformer
draft experiment, at every context of the context sweep, as `k4` in the K sweep, in the
sampling experiment and among the peers. Each has its own prompts, counts, context, new tokens
and paired baseline measured at another time, so its speedup differs. `measurements(dir)` lists
every such measurement from the result files; `explanation(rows)` says which of those
conditions differ and whether the intervals overlap (a rule fixed here, before any numbers).
Knows nothing about models.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CONDITIONS = (
    ("n", "prompts"),
    ("new tokens", "new tokens per prompt"),
    ("context", "context tokens"),
    ("temperature", "temperature"),
    ("dtype", "dtype"),
)


def _read(d: Path, name: str) -> dict[str, Any]:
    p = d / name
    return json.loads(p.read_text(encoding="utf-8")) if p.is_file() else {}


def setup_of(profile_dir: Path) -> tuple[str, int] | None:
    """(drafter spec, K) of the transformer draft experiment's drafting arm."""
    d = Path(profile_dir) / "transformer_draft"
    cfg, summ = _read(d, "config.json"), _read(d, "summary.json")
    arm = (summ.get("roles") or {}).get("transformer")
    arms = summ.get("arms") or {}
    if arm not in arms:
        arm = next((m for m in arms if m != "baseline"), None)
    if arm is None:
        return None
    spec = arms[arm].get("draft") or (cfg.get("arms") or {}).get(arm)
    return spec, int(arms[arm].get("k") or cfg.get("k") or 0)


def _cells(summary: dict) -> list[tuple[str, Any, dict]]:
    """(cell key, cell value, arms) for a summary with arms at top level or per context/T."""
    out: list[tuple[str, Any, dict]] = []
    if summary.get("arms"):
        out.append(("", None, summary["arms"]))
    for key, name in (("by_context", "context"), ("by_temperature", "temperature")):
        for cell, v in (summary.get(key) or {}).items():
            out.append((name, cell, v.get("arms") or {}))
    return out


def measurements(profile_dir: Path) -> list[dict[str, Any]]:
    """Every greedy, KV-cached measurement of the transformer draft's (spec, K) in the profile's
    result files (the cache-off sweep and sampling change the setup, so they are left out)."""
    profile_dir = Path(profile_dir)
    setup = setup_of(profile_dir)
    if setup is None:
        return []
    spec, k = setup
    rows = []
    for d in sorted(p for p in profile_dir.iterdir() if (p / "summary.json").is_file()):
        cfg, summ, env = _read(d, "config.json"), _read(d, "summary.json"), _read(d, "env.json")
        if summ.get("use_cache") is False or summ.get("by_temperature"):
            continue  # greedy with the KV cache only: the setup the chapters compare
        arms_cfg = cfg.get("arms") or {}
        for cell_key, cell, arms in _cells(summ):
            for m, s in arms.items():
                if (s.get("draft") or arms_cfg.get(m)) != spec or s.get("k") != k:
                    continue
                if not s.get("speedup"):
                    continue
                sp = s["speedup"]
                context = cell if cell_key == "context" else cfg.get("context_tokens")
                rows.append(
                    {
                        "experiment": d.name,
                        "arm": m,
                        "cell": f"{cell_key} {cell}" if cell_key else "",
                        "n": s.get("n_prompts"),
                        "new tokens": cfg.get("max_new_tokens"),
                        "context": None if context is None else int(context),
                        "temperature": float(cell) if cell_key == "temperature" else 0.0,
                        "dtype": env.get("dtype"),
                        "speedup": sp.get("value"),
                        "ci_low": sp.get("ci_low"),
                        "ci_high": sp.get("ci_high"),
                        "acceptance": (s.get("acceptance_rate") or {}).get("value"),
                        "commit": (env.get("git_commit") or "")[:8],
                    }
                )
    return sorted(rows, key=lambda r: (r["experiment"], r["context"] or 0))


def overlap(rows: list[dict[str, Any]]) -> bool:
    """The rule: the measurements agree when one value lies inside every 95% interval."""
    lows = [r["ci_low"] for r in rows if r["ci_low"] is not None]
    highs = [r["ci_high"] for r in rows if r["ci_high"] is not None]
    return bool(lows and highs) and max(lows) <= min(highs)


def explanation(rows: list[dict[str, Any]], spec: str, k: int) -> str:
    """Markdown: why the repeated measurements of one drafter at K differ, or that there is one."""
    if len(rows) < 2:
        return f"`{spec}` at K = {k} was measured only once in these results: nothing to reconcile."
    vals = ", ".join(f"{r['speedup']:.2f}x" for r in rows if r["speedup"] is not None)
    differ = []
    for key, label in CONDITIONS:
        seen = sorted({r[key] for r in rows if r[key] is not None})
        if len(seen) > 1:
            differ.append(f"{label} ({', '.join(str(v) for v in seen)})")
    parts = [
        f"The same drafter, `{spec}` at K = {k}, appears {len(rows)} times in these results, "
        f"with speedups {vals}. Each is a separate measurement against its own paired baseline, "
        "run at a different time on the same kind of machine"
    ]
    if differ:
        parts.append(", and they differ in " + "; ".join(differ))
    parts.append(
        ". A longer context makes every target call dearer and changes acceptance; fewer new "
        "tokens give the prefill a larger share of the time; other prompts draw other documents. "
    )
    ref = next((r["context"] for r in rows if r["experiment"] == "transformer_draft"), None)
    same = [r for r in rows if ref is not None and r["context"] == ref]
    if len(same) > 1:
        listed = ", ".join(f"{r['speedup']:.2f}x in `{r['experiment']}`" for r in same)
        parts.append(
            f"At one context ({ref} tokens) there are {len(same)} measurements "
            f"({listed}); their "
            f"intervals {'share' if overlap(same) else 'do not share'} a common value. "
        )
    if overlap(rows):
        parts.append(
            "All their 95% intervals share a common value, so the spread is what their prompt "
            "counts allow: no measurement contradicts another."
        )
    else:
        parts.append(
            "Their 95% intervals do not all share a common value, so at least one difference is "
            "more than sampling noise over prompts: read it with the conditions above, not as "
            "the same number measured twice."
        )
    return "".join(parts)
