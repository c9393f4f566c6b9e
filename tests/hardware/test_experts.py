"""Expert union with correlated tokens and the fused-MoE kernel's cost, hand-worked."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sim.hardware.experts import (
    H100_FUSED_MOE,
    STEP_EXPERT_OVERLAP,
    FusedMoeKernel,
    expected_distinct_experts,
    sequence_union_tokens,
)


def test_sequence_union_tokens_by_hand():
    # 8 sequences of 4 tokens at 38% step overlap: 8 x (1 + 3 x 0.62) = 22.88
    assert float(sequence_union_tokens(8, 4, 0.38)) == pytest.approx(22.88, rel=1e-12)
    # one token per sequence: the sequences; no overlap: every token
    assert float(sequence_union_tokens(5, 1, STEP_EXPERT_OVERLAP)) == 5.0
    assert float(sequence_union_tokens(3, 4, 0.0)) == 12.0
    # Cohere's check: a 4-token verify counts as 2.86 tokens (they measured ~2.5x)
    assert float(sequence_union_tokens(1, 4)) == pytest.approx(2.86, rel=1e-12)


def test_sequence_union_tokens_rejects_bad_input():
    with pytest.raises(ValueError):
        sequence_union_tokens(1, 4, 1.0)
    with pytest.raises(ValueError):
        sequence_union_tokens(1, 0.5)


@given(st.integers(1, 64), st.integers(1, 16), st.floats(0.0, 0.95, allow_nan=False))
def test_correlated_union_lies_between_one_token_per_sequence_and_independence(b, m, rho):
    u = float(sequence_union_tokens(b, m, rho))
    assert b - 1e-9 <= u <= b * m + 1e-9
    d = expected_distinct_experts(384, 8, np.array([b, u, b * m], dtype=float))
    assert d[0] - 1e-9 <= d[1] <= d[2] + 1e-9


def test_fused_moe_kernel_by_hand():
    k = FusedMoeKernel(layer_us=30.0, expert_us=0.5, hbm_efficiency=0.8)
    # 4 MB at 0.8 x 2000 GB/s = 2.5 us, + 0.5 us fixed
    assert k.per_expert_us(4e6, 2000.0) == pytest.approx(3.0, rel=1e-12)
    assert float(k.layer_time_us(10, 4e6, 2000.0)) == pytest.approx(60.0, rel=1e-12)
    with pytest.raises(ValueError):
        FusedMoeKernel(30.0, 0.5, 1.5)


def test_h100_constants_reproduce_a_calibration_point_by_hand():
    # Qwen3-30B-A3B FP8 at 8 tokens (vLLM #24700, main: 129.77 us): 51.63 distinct experts
    d = 128 * (1 - (1 - 8 / 128) ** 8)
    per_expert = 0.345 + 3 * 2048 * 768 / (0.934 * 3350e3)
    assert float(H100_FUSED_MOE.layer_time_us(d, 3 * 2048 * 768, 3350.0)) == pytest.approx(
        32.38 + d * per_expert, rel=1e-12
    )
    assert 32.38 + d * per_expert == pytest.approx(129.77, rel=0.03)
