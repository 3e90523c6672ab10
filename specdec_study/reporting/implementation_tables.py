"""The positive control (`implementations`) for the book: its table (per variant and context:
tokens per call, the paired speedup, the earlier study's single-divisor speedup, n) and its shape
per variant (single-divisor speedup at the lowest and highest context, their ratio, the rule's
label), both from the stored summary. The label is the one `experiments.implementations.shape_label`
decides, recomputed from the stored intervals so that a summary written before a label existed
reads the same. Knows nothing about how the rows were measured; text it reads is returned as
data (the book escapes it).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from specdec_study.experiments.implementations import (
    REPRODUCES,
    SHAPE_FALL,
    SHAPE_RULE,
    shape_label,
)
from specdec_study.reporting.figures.implementation_figures import variant_name
from specdec_study.reporting.format import ci, md_code


def _summary(p: Any) -> dict[str, Any] | None:
    res = p.get("implementations")
    return None if res is None else res.summary


def identical_to_own_baseline(rows: Any, variant: dict[str, Any], context: int) -> str:
    """'45/48': prompts at `context` whose speculative output equals, token for token, that of
    the variant's own baseline (the cached baseline is the rows' `identical` reference; in
    reduced precision a target that recomputes its prefix rounds otherwise, so an uncached
    variant is compared with the uncached baseline). A dash without rows."""
    if rows is None or not len(rows) or "tokens" not in rows:
        return "-"
    at = rows[rows["context"] == context]
    spec = at[at["method"] == variant["speculative"]].set_index("prompt")["tokens"]
    base = at[at["method"] == variant["baseline"]].set_index("prompt")["tokens"]
    both = [i for i in spec.index if i in base.index]
    same = sum(list(spec[i]) == list(base[i]) for i in both)
    return f"{same}/{len(both)}"


def implementations_table(p: Any) -> pd.DataFrame | None:
    """One row per (variant, context): tokens per target call, the speedup paired with the
    variant's own baseline at that context, the earlier study's single-divisor speedup (its
    baseline at the reference context over the row), each '1.23 [1.10, 1.35], n=12', n, and how
    many outputs equal the variant's own baseline's. None without a result."""
    s = _summary(p)
    if not s or not s.get("table"):
        return None
    rows = getattr(p.get("implementations"), "rows", None)
    variants = s.get("variants") or {}
    ref = s.get("reference_context", 20)
    return pd.DataFrame(
        [
            {
                "variant": variant_name(str(t["variant"])),
                "context": int(t["context"]),
                "tokens / call": ci(t.get("tokens_per_call"), 2),
                "paired speedup": ci(t.get("paired_speedup"), 2, suffix="x"),
                f"speedup vs baseline at {ref}": ci(t.get("single_divisor_speedup"), 2, suffix="x"),
                "n": int(t["n_prompts"]),
                "identical to its baseline": identical_to_own_baseline(
                    rows, variants.get(t["variant"]) or {}, int(t["context"])
                )
                if t["variant"] in variants
                else "-",
            }
            for t in s["table"]
        ]
    )


def implementations_shape(p: Any) -> dict[str, dict[str, Any]]:
    """Variant -> {name, lo, hi, single_divisor_lo, single_divisor_hi, ratio, tokens_ratio (each a
    {value, ci_low, ci_high, n} dict), label, ratio_text, tokens_ratio_text}: what the chapter
    glues. Empty without a result."""
    s = _summary(p)
    if not s:
        return {}
    out = {}
    for v, ch in (s.get("changes") or {}).items():
        ratio, tokens = ch.get("single_divisor_ratio"), ch.get("tokens_per_call_ratio")
        out[v] = {
            "name": variant_name(str(v)),
            "lo": ch.get("lo"),
            "hi": ch.get("hi"),
            "single_divisor_lo": ch.get("single_divisor_lo"),
            "single_divisor_hi": ch.get("single_divisor_hi"),
            "ratio": ratio,
            "tokens_ratio": tokens,
            "label": shape_label(ratio, tokens),
            "ratio_text": ci(ratio, 2),
            "tokens_ratio_text": ci(tokens, 2),
        }
    return out


def implementations_rule() -> str:
    """The shape rule's text, as the analysis states it (fixed before the numbers)."""
    return SHAPE_RULE


def implementations_glue(p: Any) -> dict[str, Any]:
    """What the chapter glues for the positive control, by name: the draft, n, the reference
    context; per variant `impl_<variant>_{lo,hi,ratio,tokens,label,identical}` (formatted text;
    `identical` is the lowest share of prompts, over contexts, whose output equals the cached
    greedy baseline's); and `impl_reproduce`, the variants the shape rule says reproduce the
    published shape ("none" when none does). Empty without a result."""
    s = _summary(p)
    if not s:
        return {}
    table = s.get("table") or []
    out: dict[str, Any] = {
        "impl_draft": md_code(str(s.get("draft", "?"))),  # result text: literal
        "impl_ref": int(s.get("reference_context", 20)),
        "impl_n": min((int(t["n_prompts"]) for t in table), default=0),
    }
    shapes = implementations_shape(p)
    for v, sh in shapes.items():
        same = [float(t["identical_fraction"]) for t in table if t["variant"] == v]
        out[f"impl_{v}_lo"] = _bare(sh["single_divisor_lo"], "x")
        out[f"impl_{v}_hi"] = _bare(sh["single_divisor_hi"], "x")
        out[f"impl_{v}_ratio"] = _bare(sh["ratio"])
        out[f"impl_{v}_ratio_value"] = f"{float((sh['ratio'] or {}).get('value', 'nan')):.2f}"
        out[f"impl_{v}_tokens"] = _bare(sh["tokens_ratio"])
        out[f"impl_{v}_label"] = sh["label"]
        out[f"impl_{v}_identical"] = f"{100 * min(same):.0f}%" if same else "n/a"
    names = [sh["name"] for sh in shapes.values() if sh["label"] == REPRODUCES]
    out["impl_reproduce"] = ", ".join(names) if names else "none"
    # whether every variant's one-divisor ratio lies wholly below the rule's fall threshold
    out["impl_all_fall"] = bool(shapes) and all(
        float((sh["ratio"] or {}).get("ci_high", float("nan"))) < SHAPE_FALL
        for sh in shapes.values()
    )
    return out


def _bare(d: dict[str, Any] | None, suffix: str = "") -> str:
    """'0.71 [0.65, 0.76]' (the n is said once, in the chapter's text); 'n/a' when missing."""
    d = d or {}
    try:
        v, lo, hi = (float(d[k]) for k in ("value", "ci_low", "ci_high"))
    except (KeyError, TypeError, ValueError):
        return "n/a"
    return f"{v:.2f}{suffix} [{lo:.2f}, {hi:.2f}]"


def slowest_block(p: Any) -> dict[str, Any] | None:
    """The positive control's slowest (arm, context) block against that arm's median at the
    same context: {method, context, prompt, wall_s, median_s, ratio}; None without rows. A
    data-quality check the chapter prints (a cold start or a disturbed machine shows here)."""
    res = p.get("implementations")
    if res is None or res.rows is None or len(res.rows) == 0:
        return None
    df = res.rows
    med = df.groupby(["method", "context"])["wall_s"].transform("median")
    ratio = df["wall_s"] / med
    i = ratio.idxmax()
    row = df.loc[i]
    return {
        "method": str(row["method"]),
        "context": int(row["context"]),
        "prompt": int(row["prompt"]),
        "wall_s": float(row["wall_s"]),
        "median_s": float(med.loc[i]),
        "ratio": float(ratio.loc[i]),
    }
