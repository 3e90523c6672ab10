"""The positive control (`implementations`) for the book: its table (per variant and context:
tokens per call, the paired speedup, the earlier study's single-divisor speedup, n) and its shape
per variant (single-divisor speedup at the lowest and highest context, their ratio, the rule's
label), both from the stored summary. The label is the one `analysis.implementations.shape_label`
decides, recomputed from the stored intervals so that a summary written before a label existed
reads the same. Knows nothing about how the rows were measured; text it reads is returned as
data (the book escapes it).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from specdec_lib.analysis.implementations import SHAPE_RULE, shape_label
from specdec_lib.reporting.figures.implementations import variant_name
from specdec_lib.reporting.format import ci


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
