"""Pass costs that depend on what happened: the extend over L tokens, per-step overhead."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.model.cycle import (
    CycleCost,
    PassTimes,
    cycle_cost,
    required_accept_length,
    throughput_tok_s,
)
from sim.model.rates import accept_length_pmf, mean_accept_length
from sim.model.renewal import cycles_and_emitted_pmf, cycles_pmf, request_tok_s_distribution


def passes(per_token=0.3, tokens=3.0, overhead=0.0):
    return PassTimes(
        decode_ms=10.0,
        verify_ms=20.0,
        verify_tokens=3,
        verify_ms_per_extra_token=0.0,
        draft_step_ms=1.0,
        draft_extend_ms=2.0,
        cycle_overhead_ms=0.5,
        draft_extend_ms_per_token=per_token,
        draft_extend_tokens=tokens,
        draft_step_overhead_ms=overhead,
    )


def test_extend_over_l_hand_worked():
    cost = cycle_cost(passes(), 2)
    # extend(L) = 2.0 + 0.3 (L - 3): 1.4, 1.7, 2.0 for L = 1, 2, 3.
    assert [cost.extend_at_ms(L) for L in (1, 2, 3)] == pytest.approx([1.4, 1.7, 2.0])
    # Expected cycle over a pmf = the cycle at E[L] (linear): 1 + 20 + extend + 0.5.
    pmf = np.array([0.2, 0.3, 0.5])
    by_length = [1.0 + 20.0 + cost.extend_at_ms(L) + 0.5 for L in (1, 2, 3)]
    assert cost.expected_ms(pmf) == pytest.approx(float(pmf @ by_length))
    assert cost.at_accept_length(2.3).total_ms == pytest.approx(float(pmf @ by_length))
    # Renewal-reward with the extend at E[L].
    assert throughput_tok_s(2.3, cost) == pytest.approx(1000 * 2.3 / (21.5 + 2.0 - 0.3 * 0.7))
    with pytest.raises(ValueError, match="negative"):
        cycle_cost(passes(per_token=1.5), 2)  # 2.0 - 1.5 x 2 < 0 at L = 1


def test_per_step_overhead_is_in_the_draft_phase():
    cost = cycle_cost(passes(per_token=0.0, overhead=0.25), 4)
    assert cost.draft_ms == pytest.approx(3 * (1.0 + 0.25))
    assert cost.draft_overhead_ms == pytest.approx(3 * 0.25)


@settings(max_examples=80, deadline=None)
@given(
    per_token=st.floats(0.0, 0.6),
    target=st.floats(20.0, 200.0),
    k=st.integers(1, 8),
)
def test_required_accept_length_inverts_the_throughput(per_token, target, k):
    cost = cycle_cost(passes(per_token=per_token, tokens=1.0), k)
    need = required_accept_length(target, cost)
    if np.isfinite(need):
        assert throughput_tok_s(need, cost) == pytest.approx(target, rel=1e-9)
    else:
        assert target * per_token >= 1000.0


def test_joint_law_of_cycles_and_emitted_tokens():
    pmf = accept_length_pmf([0.7, 0.6, 0.5])
    joint = cycles_and_emitted_pmf(pmf, 40)
    assert joint.sum() == pytest.approx(1.0)
    assert joint.sum(axis=1) == pytest.approx(cycles_pmf(pmf, 40))
    # A request emits N .. N + k tokens; with a flat extend the tok/s law is the old one.
    values, probs = request_tok_s_distribution(pmf, 40, 25.0)
    values2, probs2 = request_tok_s_distribution(pmf, 40, 25.0, 1e-12, 0.0)
    assert float(values @ probs) == pytest.approx(float(values2 @ probs2), rel=1e-9)
    # Longer extends for longer L slow a request down.
    slower, p = request_tok_s_distribution(pmf, 40, 25.0, 0.5, 1.0)
    assert float(slower @ p) < float(values @ probs)


def test_cost_validates_an_extend_that_would_be_negative():
    with pytest.raises(ValueError):
        CycleCost(3, 2.0, 20.0, 0.1, 0.0, extend_per_token_ms=0.1, extend_tokens=4.0)


def test_mean_accept_length_moves_the_extend():
    cost = cycle_cost(passes(), 3)
    al = mean_accept_length(np.full(3, 0.8))
    assert cost.at_accept_length(al).extend_ms == pytest.approx(2.0 + 0.3 * (al - 3.0))


def test_calibrate_sees_the_extend_growth_when_accept_lengths_differ():
    """Two figures at one num_steps with different accept lengths fix the growth per token."""
    from sim.calibration.calibrate import calibrate
    from sim.calibration.measurements import point_measurement
    from sim.scenario.load import load_scenario
    from tests.conftest import SEED

    base = load_scenario(SEED)
    truth = 0.4  # ms per accepted token
    data = None
    for al in (1.2, 2.0):
        # cycle of the seed at this AL with the true growth (extend at 3 tokens: 1.5 ms)
        cycle = 1.2 + 30.0 + 1.5 + truth * (al - 3.0) + 0.6
        point = point_measurement(2, al, 1000 * al / cycle, 0.001, f"al {al}")
        data = point if data is None else data + point
    assert data is not None
    cal = calibrate(base, data, fit_timing=["draft_extend_ms_per_token", "verify_ms"])
    fitted = cal.value("timing.draft_extend_ms_per_token")
    assert fitted.fitted and fitted.value == pytest.approx(truth, rel=1e-3)


def test_derived_drafter_steps_take_the_per_step_overhead():
    from sim.binding.closed_form import cycle_cost as scenario_cycle_cost
    from sim.errors import SpecsimError
    from sim.scenario.load import load_scenario
    from tests.conftest import SEED

    llama = SEED.parent / "llama31-8b-1xh100-eagle3.toml"
    plain = scenario_cycle_cost(load_scenario(llama))
    with_overhead = scenario_cycle_cost(
        load_scenario(llama, ["timing.draft_step_overhead_ms=0.745"])
    )
    k = plain.num_steps
    assert with_overhead.draft_ms == pytest.approx(plain.draft_ms + (k - 1) * 0.745)
    assert with_overhead.draft_overhead_ms == pytest.approx((k - 1) * 0.745)
    # A measured drafter step already contains its overhead.
    with pytest.raises(SpecsimError, match="draft_step_overhead_ms"):
        load_scenario(SEED, ["timing.draft_step_overhead_ms=0.1"])
