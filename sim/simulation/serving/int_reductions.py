"""Sums and minima of 1-D integer arrays (token counts) as Python ints, through the list for
a few elements (a ufunc reduction's call costs more than Python's loop over a few)."""

from __future__ import annotations

import numpy as np

__all__ = [
    "LIST_ROWS",
    "int_min",
    "int_sum",
]


#: Elements up to which ``int_sum`` and ``int_min`` take a 1-D integer array through its
#: list (a ufunc reduction's call costs more than Python's loop over a few; measured
#: crossing at 30-50 elements); beyond, the reduction. A speed knob only: integer sums
#: and minima of token counts are exact either way.
LIST_ROWS = 32


def int_sum(values: np.ndarray) -> int:
    """The sum of a 1-D integer array (token counts), as a Python int."""
    if values.shape[0] <= LIST_ROWS:
        return sum(values.tolist())
    return int(np.add.reduce(values))


def int_min(values: np.ndarray) -> int:
    """The least of a non-empty 1-D integer array (token counts), as a Python int."""
    if values.shape[0] <= LIST_ROWS:
        return min(values.tolist())
    return int(np.minimum.reduce(values))
