"""Answers with their 90% intervals: zero ranges reproduce the closed forms exactly, the
intervals cover the truth at about their nominal rate, drivers and the next measurement
point the right way."""

from __future__ import annotations

import numpy as np
import pytest

from sim.binding.bound import bind
from sim.binding.closed_form import cycle_cost, scenario_rates
from sim.model.cycle import throughput_tok_s
from sim.model.rates import mean_accept_length
from sim.scenario.load import load_scenario
from sim.scenario.validate import scenario_from_dict
from sim.studies.analysis import analyze
from sim.uncertainty.answers import answer_uncertainty
from sim.uncertainty.drivers import Driver, by_swing
from tests.conftest import EXACT_UNCERTAINTY, SEED, seed_text_without_uncertainty

ZERO = EXACT_UNCERTAINTY


def _today(write_scenario, extra: str = ""):
    """The seed as it was before decay priors: flat rates (its slope is the given 0.7)."""
    text = seed_text_without_uncertainty().replace(
        'method = "eagle3"', 'method = "eagle3"\nshape = "flat"'
    )
    return load_scenario(write_scenario(text + extra))


def test_zero_ranges_reproduce_todays_numbers_exactly(write_scenario) -> None:
    plain = analyze(bind(_today(write_scenario)))
    zero = analyze(bind(_today(write_scenario, ZERO)), uncertainty=True)
    assert zero.throughput_tok_s == plain.throughput_tok_s
    for a, b in zip(zero.targets, plain.targets, strict=True):
        assert a.best == b.best and a.best_flat == b.best_flat
    # today's answer for 150 tok/s: alpha 0.910 at num_steps 13 (flat rates)
    t150 = plain.targets[0]
    assert t150.best.num_steps == 13 and t150.best.alpha == pytest.approx(0.9097, abs=5e-4)
    unc = zero.uncertainty
    assert unc is not None
    for u, t in zip(unc.targets, plain.targets, strict=True):
        assert u.interval90.low == pytest.approx(t.best.first_rate, abs=1e-9)
        assert u.interval90.high == pytest.approx(t.best.first_rate, abs=1e-9)
        assert u.drivers == () and u.measure_next is None
    assert unc.tok_s_interval90.low == pytest.approx(plain.throughput_tok_s, rel=1e-12)


def test_nominal_answer_is_the_closed_form_of_the_seed() -> None:
    a = analyze(bind(load_scenario(SEED)), uncertainty=True)
    for t, u in zip(a.targets, a.uncertainty.targets, strict=True):
        assert u.best_num_steps == t.best.num_steps
        assert u.first_rate == pytest.approx(t.best.first_rate, abs=1e-9)
        assert u.flat_alpha == pytest.approx(t.best_flat.alpha, abs=1e-9)
        lo, hi = u.interval90.low, u.interval90.high
        assert lo is not None and lo < u.first_rate <= (hi if hi is not None else 1.0)


def test_drivers_and_the_next_measurement_of_the_seed() -> None:
    # 100 tok/s: at 150 the nominal answer is a first-position rate capped at 1 (the rates
    # past position 2 fall), where no input but the shape moves it
    (t100,) = answer_uncertainty(bind(load_scenario(SEED)), [100.0]).targets
    fields = [d.field for d in t100.drivers]
    # the shape beyond num_steps 2 matters most: its decay and its shape error
    assert fields[0] in ("acceptance.decay", "acceptance.tilt")
    for d in t100.drivers:
        if d.field in ("acceptance.decay", "acceptance.tilt"):
            assert d.low > d.high  # more decay (low end) needs a higher first rate
    step = next(d for d in t100.drivers if d.field == "timing.draft_step_ms")
    assert step.high > step.low  # slower drafter steps need a better drafter
    assert t100.measure_next is not None
    assert t100.measure_next.field in ("acceptance.decay", "acceptance.tilt")
    assert "accept length at another num_steps" in t100.measure_next.what
    assert t100.measure_next.interval90_after.width < t100.interval90.width


def _coverage_trials(n_trials: int, samples: int, seed: int) -> float:
    """Share of trials whose 90% interval of tok/s at num_steps 6 (extrapolated from
    measurements at num_steps 2) contains the truth.

    Truth: fixed timings and a geometric profile; each trial measures the verify pass,
    the drafter step and the accept length at num_steps 2 with normal errors of known
    standard error, and states them as such; the shape is known (geometric 0.9)."""
    rng = np.random.default_rng(seed)
    truth = {"verify_ms": 20.0, "draft_step_ms": 1.5, "alpha": 0.7}
    sigma = {"verify_ms": 1.0, "draft_step_ms": 0.3, "alpha": 0.03}

    def scenario(values: dict[str, float], uncertainty: dict | None):
        raw = {
            "name": "coverage",
            "timing": {
                "decode_ms": 10.0,
                "verify_ms": values["verify_ms"],
                "verify_tokens": 3,
                "verify_ms_per_extra_token": 0.5,
                "draft_step_ms": values["draft_step_ms"],
                "draft_extend_ms": 2.0,
            },
            "speculation": {"num_steps": 6},
            "acceptance": {
                "alpha": values["alpha"],
                "measured_num_steps": 2,
                "shape": "geometric",
                "decay": 0.9,
            },
            "simulation": {"seed": int(rng.integers(1 << 30))},
        }
        if uncertainty:
            raw["uncertainty"] = uncertainty
        return scenario_from_dict(raw, source="coverage")

    true_s = scenario(truth, None)
    true_tok = throughput_tok_s(mean_accept_length(scenario_rates(true_s)), cycle_cost(true_s))
    hits = 0
    for _ in range(n_trials):
        measured = {k: v + sigma[k] * rng.normal() for k, v in truth.items()}
        stated = {
            "timing": {k: {"stderr": sigma[k]} for k in ("verify_ms", "draft_step_ms")},
            "acceptance": {"alpha": {"stderr": sigma["alpha"]}},
        }
        unc = answer_uncertainty(bind(scenario(measured, stated)), [], samples=samples)
        lo, hi = unc.tok_s_interval90.to_list()
        hits += lo <= true_tok <= hi
    return hits / n_trials


def test_interval_coverage_on_simulated_measurements() -> None:
    """About 90%: 4 binomial standard errors of 60 trials either side."""
    cover = _coverage_trials(60, 128, 1)
    assert abs(cover - 0.9) < 4 * np.sqrt(0.9 * 0.1 / 60)


@pytest.mark.slow
def test_interval_coverage_on_many_simulated_measurements() -> None:
    cover = _coverage_trials(600, 256, 2)
    assert abs(cover - 0.9) < 4 * np.sqrt(0.9 * 0.1 / 600)


def test_intervals_are_the_5_and_95_percent_quantiles() -> None:
    """0, 0.01, ..., 1: the 90% interval is [0.05, 0.95] (rates, capped at 1) and 0..100
    uncapped gives [5, 95]; a draw out of reach (NaN) counts as above every rate."""
    from sim.uncertainty.interval import Interval, interval90_of

    assert interval90_of(np.arange(101) / 100) == Interval(pytest.approx(0.05), pytest.approx(0.95))
    assert interval90_of(np.arange(101.0), cap=None) == Interval(
        pytest.approx(5.0), pytest.approx(95.0)
    )
    some_out = np.r_[np.full(10, np.nan), np.linspace(0.5, 0.9, 90)]
    got = interval90_of(some_out)
    assert got.high is None and got.unreachable == pytest.approx(0.1)


def test_an_interval_out_of_reach_above_ranks_as_wider_than_its_reach() -> None:
    """The next-measurement ranking compares widths: [0.6, 0.9] is 0.3 wide; [0.6, out of
    reach] counts its missing end as far above 1 as its low end is below it (0.8)."""
    from sim.uncertainty.interval import Interval

    assert Interval(0.6, 0.9).width == pytest.approx(0.3)
    assert Interval(0.6, None).width == pytest.approx(0.8)
    assert Interval(None, None).width == pytest.approx(0.0)


def test_the_shape_priors_spread_a_plain_decoding_scenarios_answers_too() -> None:
    """With speculation.num_steps = 0 the targets still ask what acceptance a best k needs,
    under the same derived shape (decay prior and shape error), but those priors were left
    out of the draws: the 150 tok/s answer read [1.000, 1.000] where at k = 2 it is
    [0.720, 1.000]; the answer does not depend on the scenario's own k."""
    seed = load_scenario(SEED)
    plain = load_scenario(SEED, ["speculation.num_steps=0"])
    now, off = answer_uncertainty(bind(seed)), answer_uncertainty(bind(plain))
    assert [t.interval90 for t in off.targets] == [t.interval90 for t in now.targets]
    assert {u.field for u in off.inputs} >= {"acceptance.decay", "acceptance.tilt"}


def test_measure_next_suggests_a_length_other_than_the_one_measured() -> None:
    """Llama's accept length is measured at num_steps 5, its verify at 6 tokens (k + 1):
    when the best k is 5, 'another num_steps' is not 5 and the verify's slope is not asked
    of the 6 tokens already timed (both once said so)."""
    from sim.uncertainty.drivers import measurement_for
    from tests.conftest import ROOT

    llama = load_scenario(ROOT / "scenarios" / "llama31-8b-1xh100-eagle3.toml")
    assert llama.acceptance.measured_num_steps == 5 == llama.num_steps  # verify: 6 tokens
    shape = measurement_for("acceptance.decay", llama, 5)
    assert "another num_steps (e.g. 7)" in shape
    assert "(e.g. 9)" in measurement_for("acceptance.decay", llama, 9)  # the best k itself
    slope = measurement_for("timing.verify_ms_per_extra_token", llama, 5)
    assert slope.startswith("time a verify pass at num_steps 7 (8 tokens; measured only at 6)")


def test_measure_next_names_what_the_scenarios_engine_exposes() -> None:
    """An SGLang server has no vLLM per-position counters: the advice names SGLang's
    per-request accept histogram; a vLLM server's (and one of no stated engine) its counters;
    a TensorRT-LLM server's benchmark reports accept lengths only, so its advice is accept
    lengths at other draft lengths (max_draft_len), never per-position counts."""
    from sim.scenario.overrides import with_overrides
    from sim.uncertainty.drivers import TRTLLM_REPORTS, measurement_for
    from tests.conftest import ROOT

    llama = load_scenario(ROOT / "scenarios" / "llama31-8b-1xh100-eagle3.toml")
    assert llama.server.engine == "sglang"
    for field in ("acceptance.decay", "acceptance.per_position"):
        said = measurement_for(field, llama, 5)
        assert "spec_correct_drafts_histogram" in said and "vLLM" not in said
    vllm = with_overrides(llama, {"server.engine": "vllm"})
    assert "vLLM's per-position counters" in measurement_for("acceptance.decay", vllm, 5)
    trtllm = with_overrides(llama, {"server.engine": "trtllm"})
    trt = measurement_for("acceptance.decay", trtllm, 5)
    assert trt.startswith("run trtllm-bench at another max_draft_len (e.g. 7; measured at 5)")
    assert "vLLM" not in trt and "histogram" not in trt
    position = measurement_for("acceptance.per_position[2]", trtllm, 5)
    assert position.startswith("run trtllm-bench at max_draft_len 2 and 3:")
    for said in (trt, position):
        assert said.endswith(f"({TRTLLM_REPORTS})")
    rate = measurement_for("acceptance.alpha", trtllm, 5)
    assert "decoding_stats acceptance_length_percentiles" in rate


def test_drivers_of_equal_swing_keep_the_inputs_order() -> None:
    """Two inputs of mirrored effect (a perfectly anti-correlated pair) swing the answer by
    the same amount up to rounding: they keep the inputs' order, whichever rounds wider;
    a wider swing still comes first."""
    step = Driver("timing.draft_step_ms", 0.7, 1.7, 0.8244741950205903, 0.8631210488125574)
    extend = Driver("timing.draft_extend_ms", 1.0, 2.0, 0.8631210488125587, 0.8244741950205914)
    wide = Driver("acceptance.decay", 0.78, 1.0, 0.94, 0.817)
    assert extend.swing > step.swing  # by rounding alone
    ranked = by_swing([step, extend, wide], lambda d: d.swing)
    assert [d.field for d in ranked] == [wide.field, step.field, extend.field]
