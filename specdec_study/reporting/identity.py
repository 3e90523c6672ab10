"""The book's token-identity table and sentences, from a profile's transformer_draft result:
per dtype how many outputs equal greedy decoding, and where and by what margin the others
diverge. Knows nothing about decoding."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from specdec_study.reporting.format import finite, num, pct
from specdec_study.results.read import Profile


def identity_table(p: Profile) -> pd.DataFrame | None:
    """Per dtype: how many outputs match greedy decoding; where and by what margin they differ."""
    res = p.get("transformer_draft")
    ident = (res.summary.get("identity_by_dtype") or {}) if res else {}
    if not ident:
        return None
    out = []
    for dt, d in ident.items():
        margins = [m for m in (d.get("divergence_margins") or []) if finite(m)]
        pos = [x for x in (d.get("divergence_positions") or []) if finite(x)]
        out.append(
            {
                "dtype": d.get("dtype", dt),
                "prompts": str(d.get("n_prompts")),
                "new tokens": str(d.get("max_new_tokens")),
                "identical to greedy baseline": pct(d.get("identical_fraction"), 0),
                "divergences": str(len(pos)),
                "median position of first difference": num(np.median(pos), 0) if pos else "-",
                "median top-2 margin there": num(np.median(margins), 3) if margins else "-",
                "largest margin there": num(max(margins), 3) if margins else "-",
            }
        )
    return pd.DataFrame(out)


def identity_sentence(p: Profile) -> str:
    """One sentence per dtype: how many outputs matched greedy decoding, and the margins (or
    that there are none to show)."""
    ident = _identity(p)
    parts = []
    for dt, d in ident.items():
        margins = [float(m) for m in (d.get("divergence_margins") or []) if finite(m)]
        s = (
            f"In `{d.get('dtype', dt)}`, {pct(d.get('identical_fraction'), 0)} of "
            f"{d.get('n_prompts')} outputs are token-identical to greedy decoding"
        )
        if margins:
            s += (
                f"; where they differ, the target's top-2 margin at the first differing token "
                f"has median {num(np.median(margins), 3)} (largest {num(max(margins), 3)})"
            )
        parts.append(s + ".")
    if ident and not any(_differing(d) for d in ident.values()):
        parts.append(
            "No output differed from greedy decoding in any dtype, so there is no margin to "
            "plot: the rounding argument above says where a difference could come from, not "
            "that one was seen."
        )
    return " ".join(parts)


def _identity(p: Profile) -> dict[str, dict[str, Any]]:
    res = p.get("transformer_draft")
    return (res.summary.get("identity_by_dtype") or {}) if res else {}


def _differing(d: dict[str, Any]) -> int:
    """How many of a dtype's outputs differ from greedy decoding."""
    n = int(d.get("n_prompts") or 0)
    return n - round(float(d.get("identical_fraction") or 0.0) * n)


def identity_clause(p: Profile) -> str:
    """The introduction's promise about token identity, as the result files bear it out: why
    outputs differ where some did, that none did where none did (then no margin is plotted)."""
    ident = _identity(p)
    if not ident:
        return "and whether bf16 and fp32 outputs are token-identical to greedy decoding"
    counts = ", ".join(
        f"{_differing(d)} of {d.get('n_prompts')} in {d.get('dtype', dt)}"
        for dt, d in ident.items()
    )
    if any(_differing(d) for d in ident.values()):
        return f"and why bf16 outputs are not always token-identical ({counts} differed)"
    return (
        "and whether bf16 and fp32 outputs are token-identical to greedy decoding (here every "
        f"output was: {counts} differed, so there is no divergence to explain)"
    )


def identity_margins(p: Profile) -> dict[str, list[float]]:
    """Per dtype: the target's top-2 margins at each first difference from greedy."""
    ident = _identity(p)
    return {
        d.get("dtype", k): [float(m) for m in (d.get("divergence_margins") or []) if finite(m)]
        for k, d in ident.items()
    }
