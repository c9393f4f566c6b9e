"""A load-sweep calibration records its figures in the scenario, and a draw re-fits the
identified terms to them (sim/calibration/load_record.py)."""

import dataclasses
import tomllib

import numpy as np
import pytest

from sim.calibration.load_fit import fit_load_sweep
from sim.calibration.load_record import (
    conditioning,
    figure_of,
    joined_correlation,
    point_of,
    record_load_fit,
    recorded_refit,
    refit_terms,
)
from sim.calibration.load_sweep import LoadPoint
from sim.calibration.load_terms import HOST_FIELD, SLOPE_FIELD, SPEC_FIELD
from sim.calibration.tpot_model import predicted_tpot_ms, tpot_sigma_ms
from sim.errors import SpecsimError
from sim.scenario.load import load_scenario
from sim.scenario.overrides import with_overrides
from sim.scenario.sections.calibrated_on import CalibrationFigure
from sim.scenario.toml_writer import dumps_scenario
from sim.scenario.validate import scenario_from_dict

SCENARIO = "scenarios/llama31-8b-1xh100-eagle3.toml"
TRUTH = {HOST_FIELD: 30.0, SLOPE_FIELD: 1.3}


def _sweep(truth, batches=(1, 8, 32, 128)):
    """Runs at ``batches`` with and without speculation, their TPOT the truth's model's and
    a spread as vLLM writes it (std over 64 requests)."""
    points = [
        LoadPoint("sweep.json", f"line {i}", "vllm bench serve", float(b), "concurrency", s,
                  None, tpot_se_ms=0.01, completed=64, context_tokens=1000.0)
        for i, (b, s) in enumerate((b, s) for b in batches for s in (False, True))
    ]  # fmt: skip
    tpot = predicted_tpot_ms(truth, points)
    return [dataclasses.replace(p, tpot_ms=float(t)) for p, t in zip(points, tpot, strict=True)]


@pytest.fixture(scope="module")
def recorded():
    """(the fit of the truth's sweep from the base scenario, the scenario it records)."""
    base = load_scenario(SCENARIO)
    fit = fit_load_sweep(base, _sweep(with_overrides(base, TRUTH)))
    return fit, record_load_fit(fit)


def test_the_scenario_records_every_figure_and_the_identified_terms(recorded):
    fit, scenario = recorded
    serving = scenario.serving
    assert serving.calibrated_terms == [n.removeprefix("serving.") for n in fit.identified]
    assert SLOPE_FIELD in fit.identified
    assert [point_of(f) for f in serving.calibrated_on] == [
        dataclasses.replace(r.point, completed=None) for r in fit.rows
    ]
    assert {f.metric for f in serving.calibrated_on} == {"tpot_ms"}


def test_the_section_round_trips_through_the_toml_writer(recorded):
    scenario = recorded[1]
    text = dumps_scenario(scenario)
    assert text.count("[[serving.calibrated_on]]") == len(scenario.serving.calibrated_on)
    again = scenario_from_dict(tomllib.loads(text), source="written")
    assert again == scenario
    assert again.serving.calibrated_on == scenario.serving.calibrated_on


def test_terms_without_figures_are_refused():
    base = load_scenario(SCENARIO)
    with pytest.raises(SpecsimError, match="calibrated_terms needs the figures"):
        with_overrides(base, {"serving.calibrated_terms": ["kernel_slope"]})


def test_a_scenario_without_the_section_is_not_conditioned():
    assert recorded_refit(load_scenario(SCENARIO)) is None


def _chi2(scenario, points):
    sigma = np.array([tpot_sigma_ms(p) for p in points])
    measured = np.array([p.tpot_ms for p in points])
    return float(np.sum(((predicted_tpot_ms(scenario, points) - measured) / sigma) ** 2))


def test_at_the_nominal_inputs_the_refit_is_the_fit(recorded):
    fit, scenario = recorded
    refit = recorded_refit(scenario)
    got = refit({})
    for name in fit.identified:
        # two optimisers on the same residuals: apart by far less than the fit's error
        assert abs(got[name] - fit.values[name]) < 1e-3 * fit.stderr[name]


def test_a_drawn_input_moves_the_terms_so_the_figures_still_hold(recorded):
    fit, scenario = recorded
    refit = recorded_refit(scenario)
    points = list(refit.points)
    # a drawn acceptance 2% lower: every speculative TPOT moves, the slope makes up for it
    over = {"acceptance.alpha": scenario.acceptance.alpha - 0.02}
    held = with_overrides(scenario, over)
    refitted = with_overrides(scenario, {**over, **refit(over)})
    assert _chi2(refitted, points) < _chi2(held, points)
    assert refit(over)[SLOPE_FIELD] != pytest.approx(fit.values[SLOPE_FIELD], abs=1e-3)
    # the re-fit is the least squares under the draw: no better values nearby
    direct = refit_terms(held, points, refit.terms, source="test")
    assert refit(over) == pytest.approx(direct, rel=1e-6)


def test_a_drawn_fitted_term_keeps_its_own_deviation(recorded):
    fit, scenario = recorded
    refit = recorded_refit(scenario)
    base = refit({"acceptance.alpha": scenario.acceptance.alpha - 0.02})
    step = 0.5 * fit.stderr[SLOPE_FIELD]
    moved = refit(
        {
            "acceptance.alpha": scenario.acceptance.alpha - 0.02,
            SLOPE_FIELD: fit.values[SLOPE_FIELD] + step,
        }
    )
    assert moved[SLOPE_FIELD] == pytest.approx(base[SLOPE_FIELD] + step, rel=1e-9)


@pytest.mark.parametrize(
    "point",
    [
        # an open loop at 8 req/s placed at its mean in flight (sglang bench_serving)
        LoadPoint("s.jsonl", "line 1", "sglang bench_serving", 6.4, "in flight", True, 7.5,
                  tpot_se_ms=0.14, accept_length=3.1, rate_per_s=8.0, context_tokens=200.0),
        # a static tree batch with its own draft (sglang bench_speculative)
        LoadPoint("b.jsonl", "line 3", "sglang bench_speculative", 4.0, "batch", True, 3.2,
                  accept_length=3.6, num_steps=5, topk=4, num_draft_tokens=8),
        # guidellm does not say whether the server speculated
        LoadPoint("g.json", "benchmarks[2]", "guidellm", 16.0, "concurrency", None, 11.0),
    ],
    ids=["rate", "tree-batch", "unknown-speculation"],
)  # fmt: skip
def test_every_kind_of_run_reads_back_as_the_fit_read_it(point):
    figure = CalibrationFigure.model_validate(figure_of(point))
    assert point_of(figure) == point


def test_terms_identified_together_carry_their_correlation():
    # no overlap: the host work shows in plain decoding too, and a sweep to 128 users
    # separates it from the kernel slope; the two still trade against each other
    base = with_overrides(load_scenario(SCENARIO), {"serving.host_overlap": "none"})
    fit = fit_load_sweep(base, _sweep(with_overrides(base, TRUTH)))
    assert set(fit.identified) == {HOST_FIELD, SLOPE_FIELD}
    corr = record_load_fit(fit).uncertainty.correlation
    assert corr.fields == [HOST_FIELD, SLOPE_FIELD]
    assert -1.0 < corr.matrix[0][1] < -0.5  # more host work, less kernel growth


def test_the_terms_block_joins_the_batch_one_correlations():
    shipped = load_scenario("scenarios/sweeps/llama31-8b-1xh100-eagle3-calibrated.toml")
    old = shipped.uncertainty.correlation
    block = np.array([[1.0, -0.9], [-0.9, 1.0]])
    got = joined_correlation(shipped, [HOST_FIELD, SLOPE_FIELD], block)
    assert got["fields"] == [HOST_FIELD, SLOPE_FIELD, *old.fields]
    matrix = np.array(got["matrix"])
    assert np.array_equal(matrix[:2, :2], block)
    assert np.array_equal(matrix[2:, 2:], np.array(old.matrix))
    assert not matrix[:2, 2:].any()


def test_a_setting_of_the_server_makes_a_what_if_the_figures_do_not_describe(recorded):
    scenario = recorded[1]
    assert recorded_refit(with_overrides(scenario, {"serving.concurrency": 16})) is not None
    what_if = with_overrides(scenario, {"hardware.gpus": 2}, source="--set")
    assert recorded_refit(what_if) is None
    cond = conditioning(what_if)
    assert "refitted" not in cond and cond["not_conditioned"].endswith("hardware.gpus (--set)")


def test_a_fitted_speculative_host_factor_is_recorded_and_refitted_with_the_host_work():
    # plain and speculative runs at several loads on an engine that overlaps plain
    # iterations only, its host work showing at 32-128 requests: f is fitted with h
    base = load_scenario(SCENARIO)
    truth = with_overrides(base, {HOST_FIELD: 300.0, SPEC_FIELD: 2.5})
    fit = fit_load_sweep(base, _sweep(truth))
    assert SPEC_FIELD in fit.identified
    scenario = record_load_fit(fit)
    assert "host_spec_factor" in scenario.serving.calibrated_terms
    got = recorded_refit(scenario)({})
    for name in fit.identified:
        # two optimisers on the same residuals: apart by far less than the fit's error
        assert abs(got[name] - fit.values[name]) < 1e-3 * fit.stderr[name]
