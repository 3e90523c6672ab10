"""Moved to specdec_lib.reporting.readings (kept so that callers of `present.show` still work)."""

from specdec_lib.reporting.readings import CAPTIONS, figures, reading, show

__all__ = ["CAPTIONS", "figures", "reading", "show"]
