"""Expert unions under a skewed (Zipf) popularity: exact limits and the trace it is set on."""

import numpy as np
import pytest

from sim.hardware.experts import (
    H100_FUSED_MOE,
    TRACE_SKEW,
    expected_distinct_experts,
    log_miss,
    selection_probabilities,
    skewed_distinct_experts,
)


@pytest.mark.parametrize("skew", [0.0, 0.5, 1.3, 3.0])
def test_selection_probabilities_are_probabilities_summing_to_the_experts_a_token_picks(skew):
    q = selection_probabilities(384, 8, skew)
    assert np.all((q >= 0) & (q <= 1))
    assert q.sum() == pytest.approx(8.0, rel=1e-12)


def test_no_skew_is_the_uniform_union_bit_for_bit():
    m = np.array([1.0, 3.5, 16.0, 256.0])
    assert np.array_equal(
        skewed_distinct_experts(256, 8, m, 0.0), expected_distinct_experts(256, 8, m)
    )


def test_limits_one_token_reads_its_own_experts_and_many_read_them_all():
    assert skewed_distinct_experts(256, 8, 1.0, 1.3) == pytest.approx(8.0, rel=1e-12)
    assert skewed_distinct_experts(256, 8, 0.0, 1.3) == pytest.approx(0.0, abs=1e-12)
    assert skewed_distinct_experts(256, 8, 1e7, 1.3) == pytest.approx(256.0, rel=1e-6)


def test_more_skew_reads_fewer_experts():
    d = [float(skewed_distinct_experts(384, 8, 32.0, s)) for s in (0.0, 0.5, 1.0, 1.5)]
    assert d == sorted(d, reverse=True)


def test_the_trace_exponent_reproduces_the_serving_trace_it_comes_from():
    # vllm #32832: DeepSeek-V3.1 FP8 TP8 on H200 at 16 requests, 109 us for the MoE layer
    per_expert = H100_FUSED_MOE.per_expert_us(3 * 7168 * 256 * 1.0, 4800.0)
    distinct = skewed_distinct_experts(256, 8, 16.0, TRACE_SKEW)
    us = H100_FUSED_MOE.layer_us + distinct * per_expert
    # the exponent is given to 2 decimals: 109 us within that rounding (< 1%)
    assert us == pytest.approx(109.0, rel=0.01)


def test_a_held_log_miss_prices_the_same_bits_and_is_read_only():
    """What a batched pass builds once and hands in for every token count."""
    m = np.array([1.0, 3.5, 16.0, 256.0])
    miss = log_miss(384, 8, 1.3)
    assert np.array_equal(
        skewed_distinct_experts(384, 8, m, 1.3, miss), skewed_distinct_experts(384, 8, m, 1.3)
    )
    with pytest.raises(ValueError, match="read-only"):
        miss[0] = 0.0
