"""A longer pass's extra routed experts priced as the fused-MoE kernel reads them, checked by
hand: moe_layers x (D(m) - D(m0)) x (0.345 us + expert bytes / gpus / (eff x bandwidth))."""

from __future__ import annotations

import pytest

from sim.hardware.expert_reads import (
    EXPERT_READ_EFFICIENCY,
    EXPERT_READ_EFFICIENCY_RANGE,
    expert_kernel,
    extra_expert_read_ms,
)
from sim.hardware.experts import H100_FUSED_MOE
from sim.hardware.gpus import gpu_preset
from sim.hardware.roofline import Weights, flop_ms, growth_ms
from sim.validation.growth_cases import QWEN3_30B_A3B

#: Qwen3-30B-A3B's weights (config.json: 48 layers, 128 experts of 3 x 2048 x 768, 8 a
#: token; BF16), as sim/validation/data/moe_growth.toml gives them.
QWEN3_30B = QWEN3_30B_A3B


def _distinct(m: int) -> float:
    return 128 * (1 - (1 - 8 / 128) ** m)


def test_the_default_is_the_kernel_fit_and_inside_its_range() -> None:
    assert H100_FUSED_MOE.hbm_efficiency == EXPERT_READ_EFFICIENCY
    low, high = EXPERT_READ_EFFICIENCY_RANGE
    assert low < EXPERT_READ_EFFICIENCY <= high == 1.0
    assert expert_kernel(EXPERT_READ_EFFICIENCY) is H100_FUSED_MOE
    assert expert_kernel(0.5).hbm_efficiency == 0.5
    assert expert_kernel(0.5).expert_us == H100_FUSED_MOE.expert_us


@pytest.mark.parametrize("efficiency", [0.5, 0.934, 1.0])
def test_extra_expert_reads_by_hand(efficiency: float) -> None:
    """1 -> 4 tokens on 2x H100 (3,350 GB/s): 29.12 - 8 = 21.12 more experts in each of 48
    layers, each 4,718,592 x 2 bytes / 2 ranks = 4.72 MB a rank."""
    extra = _distinct(4) - _distinct(1)
    assert extra == pytest.approx(21.123, abs=1e-3)
    per_expert_us = 0.345 + 4_718_592 * 2 / 2 / (efficiency * 3350e9) * 1e6
    hand_ms = 48 * extra * per_expert_us / 1e3
    got = extra_expert_read_ms(128, 8, 48, 4_718_592 * 2.0, 2, 3350.0, 1, [1, 4], efficiency)
    assert got[0] == 0.0
    assert got[1] == pytest.approx(hand_ms, rel=1e-12)


def test_growth_prices_experts_at_the_kernel_and_flops_at_the_pass() -> None:
    """``growth_ms`` with an expert efficiency: the extra experts by hand at 0.934 of peak
    plus the FLOPs at the pass's own efficiency (0.2), not the extra bytes at 0.2."""
    h100 = gpu_preset("H100")
    flops = flop_ms(QWEN3_30B, 4, h100, 2, 0.2) - flop_ms(QWEN3_30B, 1, h100, 2, 0.2)
    reads = 48 * (_distinct(4) - _distinct(1)) * (0.345 + 4_718_592 / (0.934 * 3350e9) * 1e6)
    new = growth_ms(QWEN3_30B, 1, 4, h100, 2, 0.2, expert_efficiency=0.934)
    assert new == pytest.approx(reads / 1e3 + flops, rel=1e-12)
    # without it, every extra byte at the pass's 0.2 of peak: 3.5x the kernel's price here
    old = growth_ms(QWEN3_30B, 1, 4, h100, 2, 0.2)
    at_pass = (QWEN3_30B.bytes_read(4) - QWEN3_30B.bytes_read(1)) / (2 * 3350e9 * 0.2) * 1e3
    assert old == pytest.approx(at_pass + flops, rel=1e-12)
    assert old > 3 * new


def test_a_dense_model_has_no_expert_growth() -> None:
    dense = Weights(layers=32, layer_params=218e6, lm_head_params=525e6)
    h100 = gpu_preset("H100")
    assert growth_ms(dense, 1, 4, h100, 1, 0.5, expert_efficiency=0.934) == pytest.approx(
        growth_ms(dense, 1, 4, h100, 1, 0.5), rel=1e-15
    )
