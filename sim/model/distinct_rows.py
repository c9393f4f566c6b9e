"""The distinct rows of an array, compared bit for bit (``distinct_rows``): the sampled
solves take each distinct row once (their rows are independent, so a row's bits do not
depend on the others).
"""

from __future__ import annotations

import numpy as np

__all__ = ["distinct_rows"]


def distinct_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first, again) of the distinct rows of ``rows`` (n, w), compared bit for bit:
    ``first`` the index of one row of each, ``again`` (n,) each row's index in ``first``
    (rows[first][again] == rows). The order of the distinct rows is the order of their
    bytes, not np.unique(axis=0)'s field-by-field order, which cost ten times as much;
    the rows are solved independently, so their order changes no bit."""
    flat = np.ascontiguousarray(rows)
    whole = flat.view(np.dtype((np.void, flat.shape[1] * flat.itemsize))).reshape(-1)
    _, first, again = np.unique(whole, return_index=True, return_inverse=True)
    return first, again.reshape(-1)
