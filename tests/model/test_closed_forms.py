"""Closed forms against hand-worked values, limits and each other."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sim.model.closed_forms import (
    alpha_for_accept_length,
    answer_at_k,
    answer_target,
    leviathan_accept_length,
    leviathan_speedup,
)
from sim.model.cycle import (
    CycleCost,
    PassTimes,
    break_even_accept_length,
    ceiling_tok_s,
    cycle_cost,
    required_accept_length,
    throughput_tok_s,
)
from sim.model.rates import accept_length_pmf, mean_accept_length

rates_strategy = st.lists(st.floats(0.0, 1.0), min_size=1, max_size=12)


def test_pmf_by_hand_for_two_positions():
    # a = (0.5, 0.4): P(L=1) = 0.5, P(L=2) = 0.5 * 0.6 = 0.3, P(L=3) = 0.5 * 0.4 = 0.2
    np.testing.assert_allclose(accept_length_pmf([0.5, 0.4]), [0.5, 0.3, 0.2])
    assert mean_accept_length([0.5, 0.4]) == pytest.approx(1 * 0.5 + 2 * 0.3 + 3 * 0.2)


def test_no_speculation_emits_exactly_one_token():
    np.testing.assert_array_equal(accept_length_pmf([]), [1.0])
    assert mean_accept_length([]) == 1.0


def test_alpha_limits():
    assert mean_accept_length([0.0] * 5) == 1.0
    assert mean_accept_length([1.0] * 5) == 6.0
    assert leviathan_accept_length(1.0, 5) == 6.0
    assert leviathan_accept_length(0.0, 5) == 1.0


@given(st.floats(0.0, 0.999), st.integers(0, 20))
def test_leviathan_matches_the_sum_of_cumulative_rates(alpha, k):
    assert mean_accept_length([alpha] * k) == pytest.approx(leviathan_accept_length(alpha, k))


@given(rates_strategy)
def test_pmf_is_a_distribution_on_1_to_k_plus_1(rates):
    pmf = accept_length_pmf(rates)
    assert pmf.shape == (len(rates) + 1,)
    assert (pmf >= -1e-15).all()
    assert pmf.sum() == pytest.approx(1.0)
    mean = float(np.arange(1, len(rates) + 2) @ pmf)
    assert 1.0 <= mean <= len(rates) + 1 + 1e-12
    assert mean == pytest.approx(mean_accept_length(rates))


@given(st.floats(0.0, 1.0), st.integers(1, 16))
def test_alpha_for_accept_length_inverts_leviathan(alpha, k):
    al = leviathan_accept_length(alpha, k)
    back = alpha_for_accept_length(al, k)
    assert back is not None
    assert leviathan_accept_length(back, k) == pytest.approx(al, rel=1e-9, abs=1e-9)


def test_alpha_for_accept_length_edges():
    assert alpha_for_accept_length(0.5, 3) == 0.0
    assert alpha_for_accept_length(4.0, 3) == 1.0
    assert alpha_for_accept_length(4.01, 3) is None
    # golden ratio: (1 - a^3) / (1 - a) = 1 + a + a^2 = 2 -> a = (sqrt(5) - 1) / 2
    assert alpha_for_accept_length(2.0, 2) == pytest.approx((math.sqrt(5) - 1) / 2)


def test_leviathan_speedup_example():
    # Leviathan et al. 2023: alpha 0.8, gamma 5, c 0.05 -> E[L] = 3.69, speedup ~2.95
    assert leviathan_accept_length(0.8, 5) == pytest.approx(3.68928)
    assert leviathan_speedup(0.8, 5, 0.05) == pytest.approx(3.68928 / 1.25)


PASSES = PassTimes(
    decode_ms=10.0,
    verify_ms=20.0,
    verify_tokens=4,
    verify_ms_per_extra_token=0.5,
    draft_step_ms=1.0,
    draft_extend_ms=2.0,
    cycle_overhead_ms=0.5,
)


def test_throughput_ceiling_and_break_even_by_hand():
    cost = cycle_cost(PASSES, 3)  # 2 x 1 + 20 + 2 + 0.5 = 24.5 ms
    assert cost.total_ms == pytest.approx(24.5)
    assert throughput_tok_s(2.45, cost) == pytest.approx(100.0)
    assert ceiling_tok_s(cost) == pytest.approx(4000 / 24.5)
    assert break_even_accept_length(100.0, cost) == pytest.approx(2.45)
    assert required_accept_length(200.0, cost) == pytest.approx(4.9)


def test_answer_at_k_unreachable_when_target_exceeds_ceiling():
    ans = answer_at_k(200.0, PASSES, 3)  # needs AL 4.9 > 4
    assert ans.alpha is None and not ans.reachable
    ans = answer_at_k(100.0, PASSES, 3)
    assert ans.reachable
    assert leviathan_accept_length(ans.alpha, 3) == pytest.approx(2.45)


def test_best_k_needs_the_lowest_alpha_and_says_why_k_fails():
    ans = answer_target(200.0, PASSES, 3)
    assert ans.reachable and ans.best is not None
    for k in range(1, 33):
        other = answer_at_k(200.0, PASSES, k)
        if other.reachable:
            assert ans.best.alpha <= other.alpha + 1e-12
    assert "num_steps 3 caps it at 4" in ans.reason


def test_unreachable_everywhere_reports_the_best_ceiling():
    ans = answer_target(10_000.0, PASSES, 3)
    assert not ans.reachable and ans.best is None
    ceilings = [ceiling_tok_s(cycle_cost(PASSES, k)) for k in range(1, 33)]
    assert ans.max_ceiling.ceiling_tok_s == pytest.approx(max(ceilings))
    assert "no num_steps in 1..32" in ans.reason


def test_cycle_cost_k0_is_plain_decoding():
    cost = cycle_cost(PASSES, 0)
    assert cost == CycleCost(0, 0.0, 10.0, 0.0, 0.0)
    assert throughput_tok_s(1.0, cost) == pytest.approx(100.0)


def test_best_k_ties_go_to_the_shorter_draft():
    """5 tok/s is below plain decoding's 100: every k reaches it with no drafter at all
    (scale 0), and the best k is the shortest, 1 (a longer draft costs more per cycle)."""
    p = PassTimes(10.0, 20.0, 4, 0.4, 1.1, 2.3, 0.7)
    answer = answer_target(5.0, p, 3)
    assert answer.best is not None and answer.best.scale == 0.0
    assert answer.best.num_steps == 1 and answer.best_flat.num_steps == 1
