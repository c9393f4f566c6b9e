"""Fitting the batched terms to a load sweep recovers them where the sweep sees them."""

import dataclasses

import numpy as np
import pytest

from sim.binding.closed_form import pass_times, scenario_rates
from sim.calibration.load_fit import fit_load_sweep
from sim.calibration.load_sweep import LoadPoint
from sim.calibration.load_terms import HOST_FIELD, REL_FLOOR, SKEW_FIELD, SLOPE_FIELD, SPEC_FIELD
from sim.calibration.tpot_model import TpotModel, predicted_tpot_ms
from sim.hardware.batched import SLOPE_RANGE
from sim.model.cycle import cycle_cost
from sim.model.host_work import SGLANG_SPEC_FACTOR
from sim.model.rates import mean_accept_length
from sim.scenario.load import load_scenario
from sim.scenario.overrides import with_overrides

SCENARIO = "scenarios/llama31-8b-1xh100-eagle3.toml"


def _sweep(scenario, batches, speculative, context=1000.0):
    points = [
        LoadPoint("synthetic", f"b{b}", "test", float(b), "concurrency", s, None,
                  context_tokens=context)
        for b in batches for s in speculative
    ]  # fmt: skip
    tpot = predicted_tpot_ms(scenario, points)
    return [dataclasses.replace(p, tpot_ms=float(t)) for p, t in zip(points, tpot, strict=True)]


def test_batch_one_at_the_reference_context_is_the_batch_one_cycle_whatever_the_terms():
    base = load_scenario(SCENARIO)
    other = with_overrides(base, {HOST_FIELD: 90.0, SLOPE_FIELD: 0.2})
    pts = _sweep(base, [1], [False, True], context=None)
    assert list(predicted_tpot_ms(other, pts)) == [p.tpot_ms for p in pts]
    k = base.num_steps
    cycle = cycle_cost(pass_times(base), k).total_ms
    plain = cycle_cost(pass_times(base), 0).total_ms
    al = mean_accept_length(scenario_rates(base))
    # the anchoring adds an exact 0.0 at batch 1 and the reference context
    assert [p.tpot_ms for p in pts] == [plain, cycle / al]


@pytest.mark.parametrize(
    ("path", "values"),
    [
        (SCENARIO, {HOST_FIELD: 90.0, SLOPE_FIELD: 0.2, SPEC_FIELD: 2.0}),
        ("scenarios/kimi-k25-8xpcie-eagle3-serving.toml", {SKEW_FIELD: 0.9, SLOPE_FIELD: 1.7}),
    ],
    ids=["dense", "moe"],
)
def test_a_fit_s_bound_model_prices_a_step_as_the_scenario_with_its_values(path, values):
    """A fit sets its model up once and prices only the iteration cost again at each
    step (``TpotModel``): the same operations as a fresh setup of the scenario with the
    step's values, so the same bits, at every load and for plain and speculative runs."""
    base = load_scenario(path)
    pts = _sweep(base, [1, 3.5, 16, 64], [False, True])
    model = TpotModel(base, pts)
    fresh = predicted_tpot_ms(with_overrides(base, values), pts)
    assert list(model.tpot_ms(values)) == list(fresh)
    assert list(fresh) != [p.tpot_ms for p in pts]  # the values move every loaded run
    assert list(model.tpot_ms()) == [p.tpot_ms for p in pts]


def test_recovers_host_work_and_kernel_slope_from_their_own_predictions():
    base = load_scenario(SCENARIO)
    truth = with_overrides(base, {HOST_FIELD: 30.0, SLOPE_FIELD: 1.3})
    fit = fit_load_sweep(base, _sweep(truth, [1, 4, 16, 32, 64, 128, 256], [False, True]))
    assert set(fit.identified) == {HOST_FIELD, SLOPE_FIELD}
    assert fit.kept[SKEW_FIELD] == "no measurement depends on it"  # a dense target
    # noiseless figures: the optimiser's tolerance, far below the 3% error floor's SE
    assert fit.values[HOST_FIELD] == pytest.approx(30.0, rel=1e-4)
    assert fit.values[SLOPE_FIELD] == pytest.approx(1.3, rel=1e-4)
    lo, hi = fit.ranges[SLOPE_FIELD]
    assert lo < 1.3 < hi
    assert all(abs(r.relative) < 1e-4 for r in fit.rows)
    assert fit.scenario.serving.kernel_slope == pytest.approx(1.3, rel=1e-4)
    # the fitted terms' errors travel with the scenario, for the intervals of serving answers
    entry = fit.scenario.uncertainty.serving["kernel_slope"]
    assert entry.origin == "calibrated" and entry.stderr == pytest.approx(fit.stderr[SLOPE_FIELD])


def test_hidden_host_work_is_not_identified_and_keeps_its_range():
    # plain decoding only, on an engine that overlaps it: the host work never shows
    base = load_scenario(SCENARIO)
    truth = with_overrides(base, {SLOPE_FIELD: 0.6, "serving.host_overlap": "baseline"})
    fit = fit_load_sweep(base, _sweep(truth, [1, 8, 32], [False]))
    assert fit.identified == (SLOPE_FIELD,)
    assert HOST_FIELD in fit.kept
    assert fit.ranges[HOST_FIELD] == (7.0, 38.0)
    assert fit.values[SLOPE_FIELD] == pytest.approx(0.6, rel=1e-4)


def test_one_load_identifies_nothing_and_says_so():
    base = load_scenario(SCENARIO)
    fit = fit_load_sweep(base, _sweep(base, [1], [False, True], context=None))
    assert fit.identified == ()
    assert fit.ranges[SLOPE_FIELD] == SLOPE_RANGE
    assert any("one load only" in n for n in fit.notes)
    # unidentified terms travel as their plausible ranges
    entry = fit.scenario.uncertainty.serving["kernel_slope"]
    assert (entry.origin, tuple(entry.range)) == ("assumed", SLOPE_RANGE)


def test_a_host_bound_servers_host_work_is_found_far_from_the_default():
    # a host-bound server (its batch-1 iteration is host work) whose host grows 700 us a
    # request: at the default 20 us the growth hides behind the GPU's, so a fit started
    # there saw no slope; the start scan finds it, and the fit recovers it
    base = with_overrides(load_scenario(SCENARIO), {"serving.host_batch1_share": 1.0})
    truth = with_overrides(base, {HOST_FIELD: 700.0})
    fit = fit_load_sweep(base, _sweep(truth, [1, 4, 8, 16], [False]))
    assert HOST_FIELD in fit.identified
    # noiseless figures: the optimiser's tolerance
    assert fit.values[HOST_FIELD] == pytest.approx(700.0, rel=1e-4)
    lo, hi = fit.ranges[HOST_FIELD]
    assert lo < 700.0 < hi
    assert fit.host_profile_us is None


def test_hidden_host_work_is_bounded_by_where_it_would_show():
    # plain decoding behind an overlap: any host work below the GPU's iteration fits, and
    # the sweep's own profile says up to where
    base = load_scenario(SCENARIO)
    truth = with_overrides(base, {"serving.host_overlap": "baseline"})
    fit = fit_load_sweep(truth, _sweep(truth, [1, 8, 32], [False]))
    assert HOST_FIELD not in fit.identified
    assert fit.host_profile_us is not None
    lo, hi = fit.host_profile_us
    assert lo == 0.0 and 38.0 < hi < 5000.0
    # at the profile's end the host's growth over 31 requests shows at batch 32
    at_end = with_overrides(truth, {HOST_FIELD: 1.2 * hi})
    pts = _sweep(truth, [32], [False])
    assert predicted_tpot_ms(at_end, pts)[0] > 1.03 * pts[0].tpot_ms
    assert "the sweep allows" in fit.kept[HOST_FIELD]
    assert fit.values[HOST_FIELD] == truth.serving.host_us_per_request  # not moved


def test_plain_and_speculative_runs_at_several_loads_fit_the_speculative_host_factor():
    # an SGLang-like server (plain iterations overlapped, speculative ones not) whose host
    # work shows in its plain runs at 32-64 requests: the plain growth gives h, the
    # speculative growth f h
    base = load_scenario(SCENARIO)
    truth = with_overrides(base, {HOST_FIELD: 300.0, SPEC_FIELD: 2.5})
    exact = _sweep(truth, [1, 4, 8, 16, 32, 64], [False, True])
    # each run measured with the 3% relative error the fit assumes (fixed seed)
    noise = 1.0 + REL_FLOOR * np.random.default_rng(0).standard_normal(len(exact))
    sweep = [
        dataclasses.replace(p, tpot_ms=p.tpot_ms * e) for p, e in zip(exact, noise, strict=True)
    ]
    fit = fit_load_sweep(base, sweep)
    assert {HOST_FIELD, SPEC_FIELD} <= set(fit.identified)
    for name, true in ((HOST_FIELD, 300.0), (SPEC_FIELD, 2.5)):
        assert abs(fit.values[name] - true) < 4 * fit.stderr[name]
    assert fit.spec_factor_profile is None
    assert fit.scenario.serving.host_spec_factor == pytest.approx(fit.values[SPEC_FIELD])
    # provenance: the runs it was fitted on travel with the scenario
    assert fit.spec_factor_runs == (
        "6 speculative runs at loads 1, 4, 8, 16, 32, 64 and 6 plain runs at loads 1, 4, 8, "
        "16, 32, 64"
    )
    entry = fit.scenario.uncertainty.serving["host_spec_factor"]
    assert entry.origin == "calibrated" and fit.spec_factor_runs in entry.reason
    assert fit.as_dict()["spec_factor_runs"] == fit.spec_factor_runs


def test_speculative_runs_alone_leave_the_factor_unidentified_with_the_range_they_allow():
    # no plain runs: h absorbs f h, and f keeps its value; the sweep bounds it only by
    # h's own bound (f h = 750 us a request at h <= 5000 us: f >= 0.15)
    base = load_scenario(SCENARIO)
    truth = with_overrides(base, {HOST_FIELD: 300.0, SPEC_FIELD: 2.5})
    fit = fit_load_sweep(base, _sweep(truth, [1, 4, 8, 16, 32, 64], [True]))
    assert SPEC_FIELD not in fit.identified
    assert fit.values[SPEC_FIELD] == 1.0 == fit.scenario.serving.host_spec_factor
    assert "no plain runs at two or more loads" in fit.kept[SPEC_FIELD]
    lo, hi = fit.spec_factor_profile
    # the 90% threshold (runs at a 3% error floor) lets f h fall a few percent short of
    # 750 us at h's bound, never 1/3 short
    assert 0.1 < lo <= 0.15 and hi == 100.0
    assert fit.ranges[SPEC_FIELD] == (1.0, SGLANG_SPEC_FACTOR)
    assert fit.as_dict()["spec_factor_profile"] == [lo, hi]
    assert fit.spec_factor_runs == ""
    # kept as the scenario has it, with no range to draw (h holds the product f h)
    assert "host_spec_factor" not in fit.scenario.uncertainty.serving
    assert fit.scenario.given_origin(SPEC_FIELD)[0] == "default"


def test_batch_one_runs_allow_any_factor():
    base = load_scenario(SCENARIO)
    fit = fit_load_sweep(base, _sweep(base, [1], [False, True], context=None))
    assert SPEC_FIELD not in fit.identified
    assert fit.spec_factor_profile == (0.0, 100.0)


def test_a_hidden_host_work_leaves_the_factor_unidentified():
    # both iterations overlapped, h small: no figure depends on h, nor on f h
    base = with_overrides(load_scenario(SCENARIO), {"serving.host_overlap": "both"})
    fit = fit_load_sweep(base, _sweep(base, [1, 8, 32], [False, True]))
    assert SPEC_FIELD not in fit.identified
    assert fit.kept[SPEC_FIELD].startswith("no measurement depends on it")
    assert fit.spec_factor_profile == (0.0, 100.0)
