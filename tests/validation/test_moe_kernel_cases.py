"""The fused-MoE kernel fit and the MoE validation cases built on it."""

from __future__ import annotations

import pytest

from sim.hardware.experts import (
    H100_FUSED_MOE,
    PAIR_FLOP_EFFICIENCY,
    PAIR_FLOP_EFFICIENCY_RANGE,
    FusedMoeKernel,
    expected_distinct_experts,
)
from sim.validation import moe_kernel_data as pub
from sim.validation.growth_cases import (
    BATCH_CURVES,
    QWEN3_30B_A3B,
    batch_growth_case,
    kernel_growth_ms,
    per_request_growth_ms,
)
from sim.validation.moe_kernel_cases import (
    fit_fused_moe,
    kernel_case,
    pair_efficiency_case,
    pair_flop_efficiency,
)


def test_the_fit_on_the_calibration_curves_gives_the_shipped_constants():
    k = fit_fused_moe(pub.CALIBRATION)
    assert k.layer_us == pytest.approx(H100_FUSED_MOE.layer_us, abs=0.01)
    assert k.expert_us == pytest.approx(H100_FUSED_MOE.expert_us, abs=0.001)
    assert k.hbm_efficiency == pytest.approx(H100_FUSED_MOE.hbm_efficiency, abs=0.001)


def test_the_fit_is_exact_on_curves_the_model_generates():
    truth = FusedMoeKernel(20.0, 0.5, 0.8)
    curves = []
    for experts, per_token, bytes_ in ((64, 4, 2e6), (8, 2, 50e6)):
        tokens = (1, 2, 4, 8, 16, 32, 64)
        d = expected_distinct_experts(experts, per_token, tokens)
        us = dict(zip(tokens, truth.layer_time_us(d, bytes_, 3350.0).tolist(), strict=True))
        curves.append(pub.KernelCurve("made", "test", experts, per_token, bytes_, "H100", us))
    k = fit_fused_moe(curves)
    assert (k.layer_us, k.expert_us, k.hbm_efficiency) == pytest.approx((20.0, 0.5, 0.8))


def test_the_kernel_case_scores_only_curves_it_did_not_fit():
    case = kernel_case()
    fitted = {c.name for c in pub.CALIBRATION}
    assert case.rows and all(r.figure.rsplit(" M=", 1)[0] not in fitted for r in case.rows)


def test_case_15_growth_is_the_kernel_per_expert_cost_by_hand():
    w, gpus = QWEN3_30B_A3B, 4
    d1 = 128 * (1 - (1 - 8 / 128) ** 1)
    d8 = 128 * (1 - (1 - 8 / 128) ** 8)
    per_expert_us = 0.345 + w.expert_bytes / gpus / (0.934 * 3350e3)
    flops_ms = 7 * w.flops(1) / gpus / (989e12 / 1e3)
    expected = 48 * (d8 - d1) * per_expert_us / 1e3 + flops_ms
    assert kernel_growth_ms(w, 8, gpus) == pytest.approx(expected, rel=1e-3)
    rows = batch_growth_case().rows
    assert len(rows) == 4 and all(r.interval90 is not None for r in rows)


def test_per_request_growth_is_the_step_difference_over_the_extra_sequences():
    assert per_request_growth_ms({1: 4.0, 4: 7.0, 8: 15.0}) == {(1, 4): 1.0, (4, 8): 2.0}
    assert per_request_growth_ms({2: 3.0}) == {}


def test_the_measured_growth_does_not_halve_with_the_ranks_where_the_kernel_models_does():
    # case 15's finding: the expert reads a rank pays halve from TP 2 to TP 4, the growth
    # AngelSlim #163 (TP 4) and SpecForge #339 (TP 2) measured per running request does not
    slopes = {}
    for _, _, gpus, steps in BATCH_CURVES:
        measured = per_request_growth_ms({b: 1000.0 * t for b, t in steps.items()})
        model = per_request_growth_ms({b: kernel_growth_ms(QWEN3_30B_A3B, b, gpus) for b in steps})
        slopes[gpus] = (measured[(4, 8)], model[(4, 8)])
    (tp4_measured, tp4_model), (tp2_measured, tp2_model) = slopes[4], slopes[2]
    assert tp4_model < 0.7 * tp2_model
    assert tp4_measured >= tp2_measured
    assert "per-request work" in batch_growth_case().notes[-1]


def test_the_pair_efficiency_range_is_the_calibration_curves_past_saturation():
    found = sorted(pair_flop_efficiency(c, pub.SATURATED_US[c.name]) for c in pub.CALIBRATION)
    assert found == pytest.approx(list(PAIR_FLOP_EFFICIENCY_RANGE), abs=0.005)
    low, high = PAIR_FLOP_EFFICIENCY_RANGE
    assert (low * high) ** 0.5 == pytest.approx(PAIR_FLOP_EFFICIENCY, abs=0.005)
    assert H100_FUSED_MOE.pair_flop_efficiency == PAIR_FLOP_EFFICIENCY


def test_pair_efficiency_is_exact_on_a_line_the_model_generates():
    curve = pub.QWEN3_30B_FP8_TP1_H100
    pair_us = 2 * curve.expert_bytes / (989.0 * 1e6)  # FP8: one byte a parameter, H100
    made = {m: 300.0 + m * curve.per_token * pair_us / 0.37 for m in (256, 1024, 4096)}
    assert pair_flop_efficiency(curve, made) == pytest.approx(0.37, rel=1e-9)


def test_the_efficiency_case_scores_a_curve_it_did_not_fit():
    case = pair_efficiency_case()
    assert len(case.rows) == 2 and all("H20" in r.figure for r in case.rows)
    assert all(c.name not in r.figure for c in pub.CALIBRATION for r in case.rows)
    marlin = case.rows[1]  # FlagGems #3609's Marlin kernel: 0.38 of peak, inside the range
    assert marlin.interval90 is not None
    assert marlin.interval90[0] < marlin.measured < marlin.interval90[1]
