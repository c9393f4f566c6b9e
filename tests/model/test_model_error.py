"""The model-error term's distance and how it joins an interval (the forms and their fits:
tests/model/test_error_forms_shipped.py)."""

import math

import pytest

from sim.model.model_error import Z90, load_distance, widen


def test_distance_is_to_the_nearest_calibrated_load():
    assert load_distance(8, [1, 8]) == 0.0
    assert load_distance(4, [1, 8]) == pytest.approx(math.log(2))
    assert load_distance(64, [2]) == pytest.approx(math.log(32))
    with pytest.raises(ValueError):
        load_distance(0, [1])


def test_widen_joins_the_term_with_the_interval():
    lo, hi = widen(2.0, (1.0, 4.0), 0.0)
    assert (lo, hi) == pytest.approx((1.0, 4.0))
    lo, hi = widen(2.0, None, 0.1)
    assert lo == pytest.approx(2.0 * math.exp(-Z90 * 0.1))
    assert hi == pytest.approx(2.0 * math.exp(Z90 * 0.1))
    # each end the farther of the two: here the term below, the inputs above
    lo, hi = widen(2.0, (1.9, 3.0), 0.2)
    assert lo == pytest.approx(2.0 * math.exp(-Z90 * 0.2)) and hi == 3.0
