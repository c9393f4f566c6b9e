"""The roofline's weights: parameters read and FLOPs of a pass, by hand."""

from __future__ import annotations

import pytest

from sim.hardware.roofline import Weights


def test_a_dense_pass_does_two_flops_per_parameter_and_token() -> None:
    """2 layers of 1e9 and a 5e8 head: 2.5e9 parameters, 2 x 2.5e9 x 3 = 1.5e10 FLOPs over
    3 tokens; bf16 reads 5e9 bytes whatever the tokens."""
    w = Weights(layers=2, layer_params=1e9, lm_head_params=5e8)
    assert w.flops(3) == pytest.approx(1.5e10)
    assert w.bytes_read(1) == w.bytes_read(64) == pytest.approx(5e9)


def test_a_moe_pass_counts_active_experts_in_flops_and_distinct_ones_in_reads() -> None:
    """4 layers, 1 dense (3e8) and 3 MoE (1e8 outside experts, 2 of 8 experts of 1e7 a
    token), head 5e7: 6.5e8 always-read parameters plus 3 x 2 x 1e7 active ones, so
    2 x 7.1e8 x 5 = 7.1e9 FLOPs over 5 tokens. Reads: 2 bytes x (6.5e8 + 3 x distinct x
    1e7), distinct = 8 (1 - (6/8)^m): 2 experts for one token, 3.5 for two."""
    w = Weights(
        layers=4,
        layer_params=1e8,
        lm_head_params=5e7,
        dense_layers=1,
        dense_layer_params=3e8,
        experts=8,
        experts_per_token=2,
        expert_params=1e7,
    )
    assert w.flops(5) == pytest.approx(7.1e9)
    assert w.bytes_read(1) == pytest.approx(2 * (6.5e8 + 3 * 2 * 1e7))
    assert w.bytes_read(2) == pytest.approx(2 * (6.5e8 + 3 * 3.5 * 1e7))
