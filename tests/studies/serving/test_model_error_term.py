"""The model-error term of serving answers: where it applies, how a crossing widens."""

import math

import pytest

from sim.model.model_error import DEFAULT_GAIN_SIGMA, DEFAULT_LEVEL_SIGMA, Z90
from sim.scenario.load import load_scenario, with_overrides
from sim.studies.serving.model_error import (
    DEFAULT_ORIGIN,
    crossing_band,
    join_ends,
    measured_batches,
    model_error_term,
)
from tests.conftest import ROOT

SERVING = ROOT / "scenarios" / "kimi-k25-8xpcie-eagle3-serving.toml"


def test_the_term_grows_with_the_distance_to_the_measured_batches():
    sc = load_scenario(SERVING)
    assert measured_batches(sc) == (1.0, 8.0)
    at8, at32 = model_error_term(sc, 8.0), model_error_term(sc, 32.0)
    assert not at8.active and at8.level(100.0, [90.0, 110.0]) == [90.0, 110.0]
    assert at32.origin == DEFAULT_ORIGIN and "9 public curves" in DEFAULT_ORIGIN
    assert at32.level_sigma == pytest.approx(DEFAULT_LEVEL_SIGMA * math.log(4))
    assert at32.gain_sigma == pytest.approx(DEFAULT_GAIN_SIGMA * math.log(4))
    lo, hi = at32.gain(1.2, [1.19, 1.21])
    assert lo < 1.19
    assert hi == pytest.approx(1.2 * math.exp(Z90 * at32.gain_sigma))


def test_a_scenario_overrides_the_default():
    sc = with_overrides(load_scenario(SERVING), {"serving.model_error.gain": 0.2})
    term = model_error_term(sc, 16.0)
    assert term.gain_per_log_batch == 0.2 and term.level_per_log_batch == DEFAULT_LEVEL_SIGMA
    assert term.origin.startswith("serving.model_error (the other: default")


def test_a_crossing_widens_to_the_loads_whose_band_holds_one():
    """ln g = 0.2 - 0.1 ln x crosses at x = e^2; with a constant band 0.05 (Z90 sigma) it
    holds 1 for |0.2 - 0.1 ln x| <= 0.05: x in [e^1.5, e^2.5]."""
    xs = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0]
    gains = [math.exp(0.2 - 0.1 * math.log(x)) for x in xs]
    lo, hi = crossing_band(xs, gains, [0.05 / Z90] * len(xs), math.exp(2.0))
    assert lo == pytest.approx(math.exp(1.5), rel=0.02)
    assert hi == pytest.approx(math.exp(2.5), rel=0.02)
    # a band wider than the grid leaves its ends open
    assert crossing_band(xs, gains, [1.0] * len(xs), math.exp(2.0)) == (None, None)


def test_joined_ends_stay_open_and_round_users_up():
    assert join_ends((4.0, 5.0), (3.2, 7.5), integer=True) == (4.0, 8.0)
    assert join_ends((4.0, None), (3.0, 7.0), integer=False) == (3.0, None)
