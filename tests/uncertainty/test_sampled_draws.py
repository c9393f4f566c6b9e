"""Uncertain inputs, their quasi-random draws and the sampled closed forms."""

from __future__ import annotations

import numpy as np
import pytest

from sim.binding.bound import bind
from sim.binding.closed_form import cycle_cost
from sim.binding.inputs import draw_inputs, nominal_row
from sim.errors import SpecsimError
from sim.model.profile_scales import scales_of_rows
from sim.model.shapes import scale_for_accept_length, shape_factors
from sim.scenario.load import load_scenario
from sim.scenario.overrides import with_overrides
from sim.uncertainty.sampled_draws import PassResponse, sampled_draws
from tests.conftest import MINIMAL, SEED


def test_inputs_of_the_seed() -> None:
    s = load_scenario(SEED)
    kinds = {u.field: u.kind for u in bind(s).inputs}
    assert kinds["timing.verify_ms"] == "uniform"
    assert kinds["timing.draft_step_ms"] == "normal"
    assert kinds["acceptance.decay"] == "prior"  # eagle3 prior, not stated in the file
    assert kinds["timing.verify_ms_per_extra_token"] == "uniform"  # the stated estimate


def test_draws_are_seeded_bounded_and_correlated() -> None:
    s = load_scenario(SEED)
    inputs = bind(s).inputs
    a, b = draw_inputs(s, inputs, 256, 7), draw_inputs(s, inputs, 256, 7)
    assert np.array_equal(a, b) and not np.array_equal(a, draw_inputs(s, inputs, 256, 8))
    col = {u.field: j for j, u in enumerate(inputs)}
    step, extend = a[:, col["timing.draft_step_ms"]], a[:, col["timing.draft_extend_ms"]]
    assert np.allclose(step + extend, 2.7)  # correlation -1: the sum stays as measured
    assert step.std() == pytest.approx(0.3, rel=0.1)
    decay = a[:, col["acceptance.decay"]]
    assert decay.max() <= 1.0 and np.mean(decay == 1.0) > 0.2  # flat is the optimistic end
    lo, hi = inputs[col["timing.verify_ms"]].low, inputs[col["timing.verify_ms"]].high
    v = a[:, col["timing.verify_ms"]]
    assert lo <= v.min() and v.max() <= hi


def test_per_entry_stderr_of_a_list(write_scenario) -> None:
    text = MINIMAL.replace("alpha = 0.7", "per_position = [0.8, 0.7]") + (
        "[uncertainty]\nacceptance.per_position = { stderr = [0.01, 0.02] }\n"
    )
    inputs = bind(load_scenario(write_scenario(text))).inputs
    names = [u.field for u in inputs if u.field.startswith("acceptance.per")]
    assert names == ["acceptance.per_position[0]", "acceptance.per_position[1]"]
    assert [u.stderr for u in inputs if u.field in names] == [0.01, 0.02]


def test_sampled_cycles_equal_the_revalidated_closed_form(write_scenario) -> None:
    """Timing inputs move the cycle linearly: the response tables are exact."""
    text = MINIMAL + (
        "[uncertainty]\ntiming.draft_step_ms = { range = [0.5, 1.5] }\n"
        "timing.verify_ms = { stderr = 1.0 }\n"
    )
    s = load_scenario(write_scenario(text))
    inputs = bind(s).inputs
    ss, draws = sampled_draws(bind(s), 16, 1)
    model = ss.model(draws)
    for row in range(0, 16, 5):
        values = {u.field: float(draws[row, j]) for j, u in enumerate(inputs)}
        at = with_overrides(s, {k: v for k, v in values.items() if k.startswith("timing.")})
        for k in (1, 3, 7):
            assert model.cycle_ms(k)[row] == pytest.approx(cycle_cost(at, k).total_ms)


def test_nominal_row_is_the_scenario() -> None:
    s = load_scenario(SEED)
    ss, _ = sampled_draws(bind(s), 8, 1)  # the tables span draws; the nominal row
    model = ss.model(nominal_row(ss.inputs))
    assert model.cycle_ms(2)[0] == pytest.approx(cycle_cost(s).total_ms, rel=1e-12)
    assert model.accept_length(2)[0] == pytest.approx(2.0, abs=1e-3)


def test_sampled_tok_s_takes_the_extend_at_the_accept_length(write_scenario) -> None:
    """A draft extend that grows with the accepted tokens: the nominal draw is the closed
    form at every k."""
    from sim.binding.closed_form import closed_form_tok_s

    text = MINIMAL.replace(
        "draft_extend_ms = 2.0",
        "draft_extend_ms = 2.0\ndraft_extend_ms_per_token = 0.3",
    )
    s = load_scenario(write_scenario(text))
    ss, _ = sampled_draws(bind(s), 8, 1)  # the tables span draws; the nominal row
    model = ss.model(nominal_row(ss.inputs))
    for k in (1, 3, 9):
        assert model.tok_s(k)[0] == pytest.approx(closed_form_tok_s(s, k), rel=1e-12)


def test_a_stated_zero_range_pins_an_input_that_has_a_default_spread() -> None:
    """The Llama scenario's overhead was fitted at full bandwidth, so it pins the
    efficiency with ``range = [1, 1]``: no default 0.5-1 spread may come back."""
    llama = SEED.parent / "llama31-8b-1xh100-eagle3.toml"
    fields = {u.field for u in bind(load_scenario(llama)).inputs}
    assert "hardware.bandwidth_efficiency" not in fields
    assert "timing.cycle_overhead_ms" in fields
    unpinned = with_overrides(load_scenario(llama), {"uncertainty.hardware": {}})
    assert "hardware.bandwidth_efficiency" in {u.field for u in bind(unpinned).inputs}


def test_pass_response_added_in_place_has_the_bits_of_its_interpolation():
    """``add_to`` (the sampled model's in-place sum over inputs, reusing its buffers) and
    ``at`` give the bits of (1 - t) d_i + t d_(i+1) added to the total, draws outside the
    nodes held at the ends; one node adds zeros (a -0.0 becomes 0.0, as adding them did)."""
    rng = np.random.default_rng(7)
    nodes, deltas = np.array([0.3, 0.5, 0.9, 1.4]), rng.normal(size=(4, 23))
    values = rng.uniform(0.0, 1.6, 500)
    idx = np.clip(np.searchsorted(nodes, values) - 1, 0, 2)
    t = np.clip((values - nodes[idx]) / (nodes[idx + 1] - nodes[idx]), 0.0, 1.0)[:, None]
    want = (1.0 - t) * deltas[idx] + t * deltas[idx + 1]
    resp = PassResponse("timing.verify_ms", nodes, deltas)
    assert np.array_equal(resp.at(values), want)
    total = rng.normal(size=(500, 23))
    expected = total + want
    below, above = np.full_like(total, np.nan), np.full_like(total, np.nan)
    resp.add_to(total, values, below, above)
    assert np.array_equal(total, expected)
    single = PassResponse("timing.verify_ms", np.array([0.5]), np.zeros((1, 23)))
    signed = np.full((500, 23), -0.0)
    single.add_to(signed, values, below, above)
    assert np.array_equal(np.signbit(signed), np.signbit(signed + single.at(values)))
    assert not np.signbit(signed).any()


def test_a_per_entry_stderr_of_the_wrong_length_counts_in_the_singular(write_scenario) -> None:
    text = MINIMAL.replace("alpha = 0.7", "per_position = [0.8, 0.7]") + (
        "[uncertainty]\nacceptance.per_position = { stderr = [0.01] }\n"
    )
    with pytest.raises(SpecsimError, match="1 stderr for 2 entries"):
        load_scenario(write_scenario(text))


@pytest.mark.parametrize("k", [1, 2, 5, 9, 17])
def test_scales_of_distinct_rows_have_the_bits_of_every_row_solved(k):
    """Each distinct (need, factors) row solved once gives every row the bits of the
    bisection over all rows: repeated rows, needs out of reach and at most 1, zero
    factors, one row."""
    rng = np.random.default_rng(k)
    n = 400
    row = rng.integers(0, 60, n)  # about 60 distinct rows, each repeated
    need = rng.uniform(0.5, k + 1.5, 60)[row]
    decay = rng.uniform(0.0, 1.0, 60)[row]
    factors = shape_factors("geometric", decay, k)
    factors[::37, -1] = 0.0
    want = scale_for_accept_length(need, factors)
    got = scales_of_rows(need, factors)
    assert np.array_equal(got, want, equal_nan=True)
    assert np.array_equal(scales_of_rows(need[:1], factors[:1]), want[:1], equal_nan=True)
    assert np.array_equal(scales_of_rows(need[:2], factors[:2]), want[:2], equal_nan=True)
