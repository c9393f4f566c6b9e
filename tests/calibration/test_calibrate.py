"""Calibration recovers known parameters from measurements simulated with the cost model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.binding.bound import bind
from sim.binding.decompose import measured_pass_times
from sim.calibration.calibrate import calibrate, measured_context
from sim.calibration.importers.vllm_metrics import SpecDecodeCounters
from sim.calibration.measurements import (
    BaselinePoint,
    CumulativeObs,
    Measurements,
    SpecPoint,
    baseline_measurement,
    point_measurement,
    vllm_measurement,
)
from sim.model.closed_forms import leviathan_accept_length
from sim.model.cycle import PassTimes, cycle_cost
from sim.scenario.load import load_scenario
from sim.scenario.overrides import with_overrides
from sim.scenario.validate import scenario_from_dict

SEED = Path(__file__).parents[2] / "scenarios" / "kimi-k25-8xpcie-eagle3.toml"
TRUE = {
    "timing.decode_ms": 12.0,
    "timing.verify_ms": 20.0,
    "timing.draft_step_ms": 1.0,
    "timing.verify_ms_per_extra_token": 0.5,
}


def _base():
    """The seed scenario with the truth's undeterminable values, wrong determinable ones."""
    seed = load_scenario(SEED)
    return with_overrides(
        seed,
        {
            "timing.decode_ms": 15.0,
            "timing.verify_ms": 30.0,
            "timing.draft_step_ms": 3.0,
            "timing.verify_ms_per_extra_token": 0.5,
            "acceptance.alpha": 0.5,
            "acceptance.shape": "flat",
        },
    )


def _true_passes() -> PassTimes:
    base = _base()
    t = base.timing
    return PassTimes(
        12.0, 20.0, t.verify_tokens or 3, 0.5, 1.0, t.draft_extend_ms, t.cycle_overhead_ms
    )


def _simulated(rng: np.random.Generator, rel: float, alpha: float = 0.75) -> Measurements:
    passes = _true_passes()
    data = baseline_measurement(1000.0 / 12.0 * (1 + rel * rng.standard_normal()), rel, "sim")
    for k in range(1, 7):
        al = leviathan_accept_length(alpha, k)
        tok_s = 1000.0 * al / cycle_cost(passes, k).total_ms
        data += point_measurement(k, al, tok_s * (1 + rel * rng.standard_normal()), rel, "sim")
    return data


def test_recovers_timings_within_four_standard_errors() -> None:
    rng = np.random.default_rng(20261130)
    cal = calibrate(_base(), _simulated(rng, 0.01), acceptance="alpha")
    for name in ("timing.decode_ms", "timing.verify_ms", "timing.draft_step_ms"):
        v = cal.value(name)
        assert v.fitted and v.stderr is not None and v.stderr > 0
        assert abs(v.value - TRUE[name]) < 4 * v.stderr, (name, v)
    kept = cal.value("timing.verify_ms_per_extra_token")
    assert not kept.fitted and kept.value == 0.5
    assert "timing.draft_step_ms" in (kept.reason or "")
    assert cal.value("acceptance.alpha").value == pytest.approx(0.75, abs=0.01)
    assert cal.dof == (1 + 6 + 6) - (3 + 1)


@pytest.mark.slow
def test_standard_errors_are_honest_over_many_noisy_datasets() -> None:
    """Coverage of +-1.96 SE intervals for verify_ms over 200 seeded datasets is ~95%."""
    rng = np.random.default_rng(7)
    hits = 0
    reps = 200
    for _ in range(reps):
        v = calibrate(_base(), _simulated(rng, 0.02)).value("timing.verify_ms")
        hits += abs(v.value - 20.0) < 1.96 * v.stderr
    # binomial SE of the coverage: sqrt(0.95 * 0.05 / 200) = 0.015; 4 SE below 0.95, and
    # above: SEs scaled up by the reduced chi-square can only over-cover, so allow up to 1.
    assert hits / reps > 0.95 - 4 * 0.015


def test_one_point_determines_only_the_intercept() -> None:
    base = _base()
    data = point_measurement(2, 2.0, 60.0, 0.02, "--point")
    cal = calibrate(base, data)
    assert cal.value("timing.verify_ms").fitted
    assert not cal.value("timing.decode_ms").fitted
    assert cal.value("timing.decode_ms").reason == "no measurement depends on it"
    step = cal.value("timing.draft_step_ms")
    assert not step.fitted and "timing.verify_ms" in (step.reason or "")
    # verify over 3 tokens at k = 2 is the measured pass itself: no dependence at all
    assert cal.value("timing.verify_ms_per_extra_token").reason == "no measurement depends on it"
    # the fit reproduces the figure exactly and keeps the rest of the cycle
    cost = cycle_cost(measured_pass_times(cal.scenario.timing, cal.scenario.num_steps), 2)
    assert 1000 * 2.0 / cost.total_ms == pytest.approx(60.0, rel=1e-5)
    assert cal.dof == 0


def test_fit_priority_order_decides_which_collinear_value_moves() -> None:
    rng = np.random.default_rng(3)
    data = _simulated(rng, 0.005)
    cal = calibrate(
        _base(), data, fit_timing=["verify_ms", "verify_ms_per_extra_token", "draft_step_ms"]
    )
    assert cal.value("timing.verify_ms_per_extra_token").fitted
    assert not cal.value("timing.draft_step_ms").fitted
    assert not cal.value("timing.decode_ms").fitted  # not asked


def test_per_position_rates_from_simulated_vllm_counters() -> None:
    rng = np.random.default_rng(11)
    true = np.array([0.8, 0.7, 0.6])
    n = 20000
    accepted = rng.random((n, 3)) < true
    reached = np.cumprod(accepted, axis=1)  # position i accepted only if 1..i-1 were
    per_pos = reached.sum(axis=0).astype(float)
    counters = SpecDecodeCounters(n, 3 * n, per_pos.sum(), tuple(per_pos), 1, "sim")
    cal = calibrate(_base(), vllm_measurement(counters), prefer="base")  # k 3 on the seed's 2
    assert cal.acceptance_model == "per_position"
    for i, a in enumerate(true):
        v = cal.value(f"acceptance.per_position[{i}]")
        assert abs(v.value - a) < 4 * v.stderr, v
    assert cal.scenario.acceptance.per_position is not None
    assert cal.scenario.acceptance.alpha is None


def test_missing_position_keeps_what_cannot_be_separated() -> None:
    data = Measurements(
        cumulative=(CumulativeObs(1, 0.8, 0.004, "sim"), CumulativeObs(3, 0.4, 0.004, "sim"))
    )
    cal = calibrate(_base(), data)
    assert cal.value("acceptance.per_position[0]").fitted
    assert cal.value("acceptance.per_position[1]").fitted
    third = cal.value("acceptance.per_position[2]")
    assert not third.fitted and "per_position[1]" in (third.reason or "")
    a = cal.scenario.acceptance.per_position
    assert a[0] == pytest.approx(0.8, abs=1e-4)
    assert a[0] * a[1] * a[2] == pytest.approx(0.4, abs=1e-4)


def test_alpha_from_accept_lengths_at_two_num_steps() -> None:
    data = point_measurement(2, leviathan_accept_length(0.7, 2), 60.0, 0.01, "a") + (
        point_measurement(5, leviathan_accept_length(0.7, 5), 70.0, 0.01, "b")
    )
    cal = calibrate(_base(), data, acceptance="alpha")
    assert cal.acceptance_model == "alpha"
    assert cal.value("acceptance.alpha").value == pytest.approx(0.7, abs=1e-6)
    assert cal.scenario.acceptance.shape == "flat"  # one rate over two depths: flat
    # auto: two num_steps fit a shape (the prior's family); flat data give decay 1
    shaped = calibrate(_base(), data)
    assert shaped.acceptance_model == "shape"
    assert shaped.value("acceptance.first_rate").value == pytest.approx(0.7, abs=1e-5)
    assert shaped.value("acceptance.decay").value == pytest.approx(1.0, abs=1e-5)


def test_prediction_stderr_of_a_fitted_value_is_its_stderr() -> None:
    rng = np.random.default_rng(5)
    cal = calibrate(_base(), _simulated(rng, 0.01), acceptance="alpha")
    for name in ("timing.verify_ms", "timing.draft_step_ms", "acceptance.alpha"):
        v = cal.value(name)
        *section, leaf = name.split(".")
        sd = cal.prediction_stderr(lambda s, sec=section[0], lf=leaf: getattr(getattr(s, sec), lf))
        assert sd == pytest.approx(v.stderr, rel=1e-3), name


def test_prediction_stderr_covers_held_out_tok_s() -> None:
    """A prediction at an unseen num_steps lands within 4 propagated SE of the truth."""
    rng = np.random.default_rng(9)
    data = baseline_measurement(1000.0 / 12.0, 0.01, "sim")
    passes = _true_passes()
    for k in (2, 6):
        al = leviathan_accept_length(0.75, k)
        tok_s = 1000.0 * al / cycle_cost(passes, k).total_ms * (1 + 0.01 * rng.standard_normal())
        data += point_measurement(k, al, tok_s, 0.01, "sim")
    cal = calibrate(_base(), data)
    al4 = leviathan_accept_length(0.75, 4)
    truth = 1000.0 * al4 / cycle_cost(passes, 4).total_ms

    def predict(s):
        from sim.binding.closed_form import cycle_cost as scenario_cycle_cost

        return 1000.0 * al4 / scenario_cycle_cost(s, 4).total_ms

    sd = cal.prediction_stderr(predict)
    assert 0 < sd < 0.05 * truth
    assert abs(predict(cal.scenario) - truth) < 4 * sd


def test_a_zero_base_rate_does_not_hide_later_positions() -> None:
    """Identifiability is judged away from the base: a base rate of 0 must not block a fit."""
    base = with_overrides(_base(), {"acceptance.per_position": [0.0, 0.0]})
    data = Measurements(
        cumulative=(CumulativeObs(1, 0.8, 0.004, "sim"), CumulativeObs(2, 0.6, 0.004, "sim"))
    )
    cal = calibrate(base, data)
    assert cal.scenario.acceptance.per_position == pytest.approx([0.8, 0.75], abs=1e-4)


@settings(max_examples=25, deadline=None)
@given(
    verify_ms=st.floats(5.0, 50.0),
    draft_step_ms=st.floats(0.1, 5.0),
    alpha=st.floats(0.3, 0.95),
    ks=st.lists(st.integers(1, 8), min_size=2, max_size=2, unique=True),
    k_new=st.integers(1, 12),
)
def test_noiseless_figures_at_two_num_steps_predict_every_other_exactly(
    verify_ms: float,
    draft_step_ms: float,
    alpha: float,
    ks: list[int],
    k_new: int,
) -> None:
    """Two num_steps fix intercept and slope of the (linear) cycle: any k is then exact.

    (verify_ms_per_extra_token cannot be told from draft_step_ms, so the truth shares the
    base's value. The base has no model geometry, so no hardware-model floor applies.)
    """
    base = scenario_from_dict(
        {
            "name": "plain",
            "timing": {
                "decode_ms": 10.0,
                "verify_ms": 30.0,
                "verify_tokens": 3,
                "verify_ms_per_extra_token": 0.5,
                "draft_step_ms": 3.0,
                "draft_extend_ms": 1.5,
                "cycle_overhead_ms": 0.6,
            },
            "speculation": {"num_steps": 2},
            "acceptance": {"alpha": 0.5},
        },
        source="test",
    )
    t = base.timing
    per_extra = t.verify_ms_per_extra_token
    truth = PassTimes(
        12.0,
        verify_ms,
        t.verify_tokens or 3,
        per_extra,
        draft_step_ms,
        t.draft_extend_ms,
        t.cycle_overhead_ms,
    )
    data = Measurements()
    for k in ks:
        al = leviathan_accept_length(alpha, k)
        data += point_measurement(k, al, 1000.0 * al / cycle_cost(truth, k).total_ms, 0.01, "s")
    cal = calibrate(base, data, acceptance="alpha")
    assert all(abs(r.relative) < 1e-6 for r in cal.residuals)
    got = cycle_cost(measured_pass_times(cal.scenario.timing, cal.scenario.num_steps), k_new)
    assert got.total_ms == pytest.approx(cycle_cost(truth, k_new).total_ms, rel=1e-5)
    assert cal.value("acceptance.alpha").value == pytest.approx(alpha, abs=1e-5)


# --------------------------------------------------------------------------- shapes, errors


def _al_points(ks, rates, sigma, rng) -> Measurements:
    from sim.calibration.measurements import AcceptLengthObs

    al = 1.0 + np.cumsum(np.cumprod(rates))
    return Measurements(
        accept_lengths=tuple(
            AcceptLengthObs(k, float(al[k - 1] + sigma * rng.normal()), sigma, f"k={k}") for k in ks
        )
    )


@pytest.mark.parametrize(("shape", "decay"), [("geometric", 0.9), ("step", 0.8)])
def test_shape_from_accept_lengths_at_several_num_steps(shape: str, decay: float) -> None:
    """Accept lengths at k = 1..6 of a known shape: the held-out choice finds it, the fit
    recovers its parameters within 4 standard errors, and the scenario carries them."""
    from sim.model.shapes import rates_for_positions

    rates = rates_for_positions(shape, 0.85, decay, 8)
    data = _al_points((1, 2, 3, 4, 6, 8), rates, 0.002, np.random.default_rng(4))
    cal = calibrate(_base(), data)
    assert cal.acceptance_model == "shape"
    acc = cal.scenario.acceptance
    assert acc.shape == shape and acc.first_rate is not None
    first, d = cal.value("acceptance.first_rate"), cal.value("acceptance.decay")
    assert abs(first.value - 0.85) < 4 * first.stderr
    assert abs(d.value - decay) < 4 * d.stderr
    unc = cal.scenario.uncertainty
    assert unc.acceptance["decay"].origin == "calibrated"
    assert unc.correlation is not None and "acceptance.decay" in unc.correlation.fields


def test_one_accept_length_anchors_alpha_at_its_num_steps() -> None:
    data = point_measurement(3, leviathan_accept_length(0.7, 3), 60.0, 0.01, "a")
    cal = calibrate(_base(), data, prefer="base")  # measured at k 3, the seed runs k 2
    acc = cal.scenario.acceptance
    assert cal.acceptance_model == "alpha" and acc.measured_num_steps == 3
    assert acc.alpha == pytest.approx(0.7, abs=1e-5)


def test_calibrated_errors_round_trip_through_out(tmp_path: Path) -> None:
    """`calibrate --out` writes the fitted standard errors and correlations as
    [uncertainty] entries; the file reads back as the same scenario and the intervals use
    them."""
    from click.testing import CliRunner

    from sim.cli import main

    out = tmp_path / "cal.toml"
    args = ["calibrate", "--scenario", str(SEED), "--baseline-tok-s", "82.5"]
    args += ["--point", "2:2.0:60", "--point", "4:2.6:70", "--point", "6:2.9:72"]
    result = CliRunner().invoke(main, [*args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert 'origin = "calibrated"' in text and "[uncertainty.correlation]" in text
    again = load_scenario(out)
    kinds = {u.field: (u.kind, u.origin) for u in bind(again).inputs}
    assert kinds["timing.verify_ms"] == ("normal", "calibrated")
    assert kinds["acceptance.decay"] == ("normal", "calibrated")
    corr = again.uncertainty.correlation
    i, j = corr.fields.index("timing.verify_ms"), corr.fields.index("timing.draft_step_ms")
    assert corr.matrix[i][j] < -0.5  # verify and drafter step trade off in tok/s figures


def test_the_figures_context_is_written_unless_the_base_states_one() -> None:
    """``measured_context``: the mean over the tok/s figures that state their context, each
    named, with a count of those that do not; None when none does or the base states its
    own (kept: it may hold for passes the figures do not refit)."""
    base = load_scenario(SEED)
    assert base.timing.context_tokens is None
    data = Measurements(
        baselines=(BaselinePoint(80.0, 1.0, "a.json", context_tokens=1000.0),),
        points=(
            SpecPoint(2, 2.0, 100.0, 1.0, 0.05, "b.json", context_tokens=1500.0),
            SpecPoint(3, 2.2, 105.0, 1.0, 0.05, "c.json"),
        ),
    )
    found = measured_context(base, data)
    assert found is not None and found[0] == 1250.0
    assert "1000 in a.json; 1500 in b.json; 1 figure without it, their mean" in found[1]
    assert measured_context(base, Measurements(baselines=(BaselinePoint(80.0, 1.0, "a"),))) is None
    stated = with_overrides(base, {"timing.context_tokens": 2048.0}, source="test")
    assert measured_context(stated, data) is None
