"""The gains' width by part and its bounds (sim/validation/interval_width.py), by hand."""

from __future__ import annotations

import math

import pytest

from sim.model.model_error import Z90
from sim.validation.interval_public import Figure
from sim.validation.interval_width import (
    band_alone,
    bias_terms,
    gain_widths,
    in_quadrature,
    narrowest,
    width_lines,
    with_bias,
)


def _gain(curve: str, measured: float, distance: float, half: float = 0.05) -> Figure:
    """A gain predicted 1.0 with an inputs' interval exp(+-half)."""
    return Figure(
        curve, "f", measured, 1.0, (math.exp(-half), math.exp(half)), (), True, True, distance
    )


FIGS = [
    _gain("a", math.exp(0.1), 1.0),
    _gain("b", math.exp(-0.2), 2.0),
    _gain("c", math.exp(0.3), 1.0),
    _gain("c", math.exp(0.02), 0.5),
]


def test_the_parts_are_the_inputs_the_term_fitted_without_the_curve_and_their_join():
    parts = gain_widths(FIGS)
    # curve a's s is fitted on b and c: s^2 = mean((r / d)^2) over their three figures
    s_a = math.sqrt((0.1**2 + 0.3**2 + 0.04**2) / 3)
    assert parts[0].inputs == pytest.approx(0.1)
    assert parts[0].model == pytest.approx(2 * Z90 * s_a * 1.0)
    assert parts[0].joined == pytest.approx(max(0.1, parts[0].model))
    assert parts[0].log_error == pytest.approx(0.1) and parts[1].distance == 2.0


def test_in_quadrature_adds_the_inputs_variance_to_the_term_fitted_with_it():
    """Without inputs' variance it is the term alone, s fitted without the curve; the more
    the other curves' inputs explain of their errors, the smaller the s they leave."""
    tiny = [_gain(f.curve, f.measured, f.distance, half=1e-9) for f in FIGS]
    bare = in_quadrature(tiny)
    s_a = math.sqrt((0.2**2 / 4 + 0.3**2 + 0.04**2) / 3)  # (r / d)^2 of b and c's figures
    assert math.log(bare[0].interval[1]) == pytest.approx(Z90 * s_a * 1.0, rel=1e-6)
    explained = [tiny[0], *(_gain(f.curve, f.measured, f.distance, half=0.3) for f in FIGS[1:])]
    lo, hi = in_quadrature(explained)[0].interval
    assert math.log(hi) == pytest.approx(-math.log(lo))
    assert math.log(hi) < math.log(bare[0].interval[1])


def test_the_narrowest_interval_holds_the_share_asked_and_no_more():
    c, out = narrowest(FIGS, coverage=0.5)
    # |r| / d: 0.1, 0.1, 0.3, 0.04 -> the 50% quantile (a figure's own) is 0.1
    assert c == pytest.approx(0.1)
    assert sum(f.inside for f in out) >= 2
    c0, flat = narrowest(FIGS, coverage=0.75, linear=False)  # |r|: 0.02, 0.1, 0.2, 0.3
    assert c0 == pytest.approx(0.2) and sum(f.inside for f in flat) == 3
    lines = width_lines(FIGS)
    assert lines[0].startswith("| gains of |") and any("in quadrature" in x for x in lines)


def test_the_band_alone_drops_the_inputs_interval():
    s_a = math.sqrt((0.1**2 + 0.3**2 + 0.04**2) / 3)  # fitted on b and c, as above
    lo, hi = band_alone(FIGS)[0].interval
    assert math.log(hi) == pytest.approx(Z90 * s_a) and math.log(lo) == pytest.approx(-Z90 * s_a)


def test_a_one_sided_term_is_fitted_without_the_curve_and_moves_the_interval():
    """Curve a's (b, s) from b and c's figures (r, d): (-0.2, 2), (0.3, 1), (0.02, 0.5):
    b = sum(r d) / sum(d^2), s^2 = mean(((r - b d) / d)^2)."""
    rd = [(-0.2, 2.0), (0.3, 1.0), (0.02, 0.5)]
    b = sum(r * d for r, d in rd) / sum(d * d for _, d in rd)
    s = math.sqrt(sum(((r - b * d) / d) ** 2 for r, d in rd) / 3)
    assert bias_terms(FIGS)["a"] == pytest.approx((b, s))
    lo, hi = with_bias(FIGS)[0].interval  # d = 1: the band exp(b +- Z90 s), wider than 0.05
    assert math.log(lo) == pytest.approx(min(b - Z90 * s, b - 0.05))
    assert math.log(hi) == pytest.approx(max(b + Z90 * s, b + 0.05))
