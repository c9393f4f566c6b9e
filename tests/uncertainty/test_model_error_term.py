"""The model-error term of serving answers: where it applies, how a crossing widens."""

import math
from dataclasses import replace

import pytest

from sim.model.model_error import (
    DEFAULT_GAIN_CEILING,
    DEFAULT_GAIN_SCALE,
    DEFAULT_LEVEL,
    Z90,
    gain_sigma,
)
from sim.scenario.load import load_scenario
from sim.scenario.overrides import with_overrides
from sim.uncertainty.model_error import (
    DEFAULT_ORIGIN,
    TermOrigin,
    crossing_band,
    join_ends,
    measured_batches,
    model_error_term,
)
from tests.conftest import ROOT

SERVING = ROOT / "scenarios" / "kimi-k25-8xpcie-eagle3-serving.toml"


def test_the_term_grows_with_the_distance_to_the_measured_batches():
    """The shipped Kimi scenario measures plain decoding at batch 8 (a decode point) and
    the speculative iteration at batch 1 only: plain decoding's level is exact at 8, a
    gain (both arms) is at ln 8 from its nearest measured speculative batch. Levels:
    s sqrt(d); gains: a (1 - exp(-d / d0)), the shipped defaults."""

    def gain(d: float) -> float:
        return DEFAULT_GAIN_CEILING * (1.0 - math.exp(-d / DEFAULT_GAIN_SCALE))

    sc = load_scenario(SERVING)
    assert measured_batches(sc) == (1.0, 8.0)
    assert measured_batches(sc, "plain") == (1.0, 8.0)
    assert measured_batches(sc, "speculative") == (1.0,)
    at8, at32 = model_error_term(sc, 8.0), model_error_term(sc, 32.0)
    assert at8.level(100.0, [90.0, 110.0], speculative=False) == [90.0, 110.0]
    assert at8.gain_sigma == pytest.approx(gain(math.log(8)))
    assert at32.origin.text == DEFAULT_ORIGIN and "24 public curves" in DEFAULT_ORIGIN
    assert (at32.origin.kind, at32.origin.label) == ("default", "default")
    assert at32.arm_level_sigma(False) == pytest.approx(DEFAULT_LEVEL * math.sqrt(math.log(4)))
    assert at32.arm_level_sigma(True) == pytest.approx(DEFAULT_LEVEL * math.sqrt(math.log(32)))
    assert at32.level_sigma == pytest.approx(DEFAULT_LEVEL * math.sqrt(math.log(32)))
    assert at32.gain_sigma == pytest.approx(gain(math.log(32)))
    lo, hi = at32.gain(1.2, [1.19, 1.21])
    assert lo < 1.19
    assert hi == pytest.approx(1.2 * math.exp(Z90 * at32.gain_sigma))


def test_a_measured_verify_pass_calibrates_the_speculative_arm():
    sc = load_scenario(SERVING)
    points = [p.model_dump() for p in sc.timing.points]
    verify = {**points[0], "kind": "verify", "batch": 8, "tokens": 4}
    sc = with_overrides(sc, {"timing.points": [*points, verify]})
    assert measured_batches(sc, "speculative") == (1.0, 8.0)
    assert not model_error_term(sc, 8.0).active


def test_a_scenario_overrides_the_default():
    sc = with_overrides(load_scenario(SERVING), {"serving.model_error.gain_ceiling": 0.2})
    term = model_error_term(sc, 16.0)
    assert term.gain_law.ceiling == 0.2 and term.gain_law.scale == DEFAULT_GAIN_SCALE
    assert term.level_per_sqrt_log_batch == DEFAULT_LEVEL
    assert term.gain_sigma == pytest.approx(gain_sigma(0.2, DEFAULT_GAIN_SCALE, math.log(16)))
    assert term.origin.text.startswith("serving.model_error (the rest: default")
    assert term.origin == TermOrigin("scenario_and_default", "serving.model_error")
    own = with_overrides(sc, {"serving.model_error": {"level_per_sqrt_log_load": 0.1,
                              "gain_ceiling": 0.2, "gain_log_load_scale": 0.5}})  # fmt: skip
    term = model_error_term(own, 16.0)
    assert term.origin == TermOrigin("scenario", "serving.model_error")
    assert term.origin.text == "serving.model_error"
    assert term.level_sigma == pytest.approx(0.1 * math.sqrt(math.log(16)))
    assert term.gain_sigma == pytest.approx(0.2 * (1.0 - math.exp(-math.log(16) / 0.5)))
    doc = term.doc()
    assert (doc["level_per_sqrt_log_batch"], doc["gain_ceiling"], doc["gain_log_batch_scale"]) == (
        0.1, 0.2, 0.5)  # fmt: skip


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


def test_a_difference_takes_the_band_of_its_ratio():
    """An advantage d over a reference level R is the ratio 1 + d / R (more is better) or
    1 - d / R (a latency); the ratio's band is exp(+-Z90 a (1 - exp(-ln B / d0))) at
    decode batch B (the speculative iteration measured at batch 1 only)."""
    sc = load_scenario(SERVING)
    at1, at64 = model_error_term(sc, 1.0), model_error_term(sc, 64.0)
    assert at1.difference(5.0, [4.0, 6.0], 100.0) == [4.0, 6.0]  # 0 at a measured batch
    m = Z90 * gain_sigma(DEFAULT_GAIN_CEILING, DEFAULT_GAIN_SCALE, math.log(64))
    lo, hi = at64.difference(5.0, [4.0, 6.0], 100.0)  # tok/s: ratio 1.05
    assert lo == pytest.approx(100.0 * (1.05 * math.exp(-m) - 1.0), rel=1e-9)
    assert hi == pytest.approx(100.0 * (1.05 * math.exp(m) - 1.0), rel=1e-9)
    lo, hi = at64.difference(5.0, [4.0, 6.0], 100.0, higher_is_better=False)  # ms: 0.95
    assert lo == pytest.approx(100.0 * (1.0 - 0.95 * math.exp(m)), rel=1e-9)
    assert hi == pytest.approx(100.0 * (1.0 - 0.95 * math.exp(-m)), rel=1e-9)
    # farther from the measured batches, wider: as a (1 - exp(-ln B / d0))
    widths = [
        (lambda iv: iv[1] - iv[0])(model_error_term(sc, b).difference(5.0, [4.9, 5.1], 100.0))
        for b in (16.0, 32.0, 64.0)
    ]
    assert widths[0] < widths[1] < widths[2]
    assert at64.difference(5.0, None, 100.0) is None


def test_the_line_names_the_batches_measured_for_speculation_where_they_differ():
    from sim.report.model_error import model_error_line

    sc = load_scenario(SERVING)
    line = model_error_line(model_error_term(sc, 16.0).doc())
    assert line.endswith("(batch 16, measured 1, 8; spec. 1; default)")
    assert len("  " + line) <= 100
    plain = with_overrides(sc, {"timing.points": []})
    assert model_error_line(model_error_term(plain, 16.0).doc()).endswith(
        "(decode batch 16, measured 1; default)"
    )


def test_the_line_carries_the_parameters_a_scenario_sets():
    """The line "x/L levels, x/G gains (...; serving.model_error: s ..., a ..., d0 ...)":
    the 90% factors at the answer's distance and, where the scenario sets them, the
    parameters of s sqrt(d) and a (1 - exp(-d / d0)) in use ("default" otherwise)."""
    from sim.report.model_error import model_error_line

    own = {"level_per_sqrt_log_load": 0.1, "gain_ceiling": 0.2, "gain_log_load_scale": 0.5}
    sc = with_overrides(load_scenario(SERVING), {"serving.model_error": own})
    term = model_error_term(sc, 16.0)  # plain at ln 2 from 8, speculative at ln 16 from 1
    level = math.exp(Z90 * 0.1 * math.sqrt(math.log(16)))
    gain = math.exp(Z90 * 0.2 * (1.0 - math.exp(-math.log(16) / 0.5)))
    assert model_error_line(term.doc()) == (
        f"model error included: x/{level:.2f} levels, x/{gain:.2f} gains "
        "(batch 16, measured 1, 8; spec. 1; serving.model_error: s 0.1, a 0.2, d0 0.5)"
    )
    half = with_overrides(load_scenario(SERVING), {"serving.model_error.gain_ceiling": 0.2})
    assert model_error_line(model_error_term(half, 16.0).doc()).endswith(
        f"; serving.model_error: s {DEFAULT_LEVEL:.3g}, a 0.2, d0 {DEFAULT_GAIN_SCALE:.3g})"
    )
    off = with_overrides(sc, {"serving.model_error.level_per_sqrt_log_load": 0.0,
                              "serving.model_error.gain_ceiling": 0.0})  # fmt: skip
    assert model_error_line(model_error_term(off, 16.0).doc()).startswith(
        "model error: not included (s = a = 0: batch 16"
    )


def test_the_origin_is_carried_as_fields_not_parsed_from_its_sentence():
    """JSON ``model_error`` keeps its ``origin`` sentence and adds ``origin_kind`` and
    ``origin_label``; the line reads the fields: a label holding " (" or starting with
    "default" is printed as it is."""
    from sim.report.model_error import model_error_line

    sc = load_scenario(SERVING)
    doc = model_error_term(sc, 16.0).doc()
    assert (doc["origin"], doc["origin_kind"], doc["origin_label"]) == (
        DEFAULT_ORIGIN, "default", "default")  # fmt: skip
    odd = TermOrigin.caller("default-like fit (leave one out)")
    term = replace(model_error_term(sc, 16.0), origin=odd)
    assert term.doc()["origin"] == "default-like fit (leave one out)"
    assert model_error_line(term.doc()).endswith(
        "; default-like fit (leave one out): "
        f"s {DEFAULT_LEVEL:.3g}, a {DEFAULT_GAIN_CEILING:.3g}, d0 {DEFAULT_GAIN_SCALE:.3g})"
    )
    with pytest.raises(ValueError, match="origin kind"):
        TermOrigin("guessed", "x")


def test_the_gains_band_states_its_range_over_the_parameters():
    """With the shipped a and d0 the JSON gives the gains' sigma at the ends of their 90%
    range (``DEFAULT_GAIN_LAW``) around the point sigma, which the band keeps (the
    predictive band failed its keep rule, docs/serving-intervals.md); a scenario's own a
    or d0 states no uncertainty: the range is the point. At a measured batch it is 0."""
    from sim.model.model_error import DEFAULT_GAIN_LAW, GainParameterLaw

    sc = load_scenario(SERVING)
    term = model_error_term(sc, 16.0)
    # the term holds the shipped law itself, and its JSON states that law's values
    assert term.gain_law == DEFAULT_GAIN_LAW and term.at(4.0).gain_law == DEFAULT_GAIN_LAW
    doc = term.doc()
    law = doc["gain_parameter_law"]
    assert (law["log_ceiling_sd"], law["log_scale_sd"], law["correlation"]) == (
        DEFAULT_GAIN_LAW.log_ceiling_sd, DEFAULT_GAIN_LAW.log_scale_sd,
        DEFAULT_GAIN_LAW.correlation)  # fmt: skip
    d = math.log(16)
    assert doc["gain_sigma"] == gain_sigma(DEFAULT_GAIN_CEILING, DEFAULT_GAIN_SCALE, d)
    lo, hi = doc["gain_sigma_range"]
    assert (lo, hi) == DEFAULT_GAIN_LAW.sigma_range(d)
    assert lo < doc["gain_sigma"] < hi
    assert doc["gain_parameter_law"]["correlation"] == DEFAULT_GAIN_LAW.correlation
    assert model_error_term(sc, 1.0).doc()["gain_sigma_range"] == [0.0, 0.0]
    own = with_overrides(sc, {"serving.model_error.gain_log_load_scale": 2.0})
    doc = model_error_term(own, 16.0).doc()
    assert doc["gain_sigma_range"] == [doc["gain_sigma"], doc["gain_sigma"]]
    assert doc["gain_parameter_law"]["log_scale_sd"] == 0.0
    assert model_error_term(own, 16.0).gain_law == GainParameterLaw(
        DEFAULT_GAIN_CEILING, 2.0, 0.0, 0.0, 0.0)  # fmt: skip
    # the levels' s alone set by the scenario: the gains are still the shipped law's
    level_only = with_overrides(sc, {"serving.model_error.level_per_sqrt_log_load": 0.05})
    assert model_error_term(level_only, 16.0).gain_sigma_range == DEFAULT_GAIN_LAW.sigma_range(d)
