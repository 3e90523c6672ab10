"""analysis.stats' distances worked out by hand (a survivor of `make mutation`)."""

from __future__ import annotations

import numpy as np
import pytest

from specdec_lib.analysis import stats

P = np.array([0.5, 0.25, 0.25, 0.0])


def test_tvd_by_hand():
    """Samples 0, 0, 1, 3 against p = (1/2, 1/4, 1/4, 0): empirical (1/2, 1/4, 0, 1/4), so
    TVD = 1/2 (|1/2 - 1/2| + |1/4 - 1/4| + |0 - 1/4| + |1/4 - 0|) = 1/4; the third term is p's mass
    on unseen tokens. Samples 0, 0, 1, 2 match p exactly: 0.
    Catches: counts multiplied by n instead of divided, the unseen mass subtracted, not added."""
    assert stats.tvd([0, 0, 1, 3], P) == pytest.approx(0.25)
    assert stats.tvd([0, 0, 1, 2], P) == pytest.approx(0.0)
    assert stats.tvd([3, 3], P) == pytest.approx(1.0)  # all mass where p has none
