"""``int_sum`` and ``int_min`` (a batch's token counts through their list up to
``LIST_ROWS`` elements, by the ufunc's reduction beyond) are numpy's sum and minimum."""

from __future__ import annotations

import numpy as np
import pytest

from sim.simulation.serving.int_reductions import LIST_ROWS, int_min, int_sum


@pytest.mark.parametrize("size", [1, 2, LIST_ROWS - 1, LIST_ROWS, LIST_ROWS + 1, 1000])
def test_both_sides_of_the_cut_are_numpys(size):
    rng = np.random.default_rng(size)
    values = rng.integers(-(2**40), 2**40, size)
    for array in (values, values[::-1], values[: size // 2 + 1]):
        assert int_sum(array) == int(array.sum()) and type(int_sum(array)) is int
        assert int_min(array) == int(array.min()) and type(int_min(array)) is int


def test_empty_arrays_sum_to_zero_and_have_no_minimum():
    empty = np.zeros(0, dtype=np.int64)
    assert int_sum(empty) == 0
    with pytest.raises(ValueError):
        int_min(empty)
