"""The sampling experiment's pure pieces (06): the total-variation distance between the target's
exact next-token distribution and a draft's.

Torch-free; knows nothing about models or how the distributions were obtained.
"""

from __future__ import annotations

import numpy as np


def tvd_between(p: np.ndarray, q: np.ndarray) -> float | None:
    """TVD of two distributions over ids, the shorter padded with zeros (a draft's vocabulary
    can be narrower than the target's)."""
    if not q.sum():
        return None  # the drafter proposed nothing: every first token comes from the target
    v = max(p.size, q.size)
    pp, qq = np.zeros(v), np.zeros(v)
    pp[: p.size], qq[: q.size] = p, q
    return float(0.5 * np.abs(pp - qq).sum())
