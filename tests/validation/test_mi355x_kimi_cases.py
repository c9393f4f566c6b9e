"""Kimi-K2.5 (MXFP4) + EAGLE-3 on 4x MI355X (vLLM 0.19.0 ROCm), 1K/1K, C = 4-64: the
source's figures, the MI355X preset, and a calibration on C = 4 only."""

from __future__ import annotations

import pytest

from sim.hardware.gpus import gpu_preset
from sim.model.rates import mean_accept_length
from sim.validation import serving_data as pub
from sim.validation.kimi_rtx6kpro_cases import KIMI_MODEL
from sim.validation.mi355x_kimi_cases import (
    CALIBRATED_USERS,
    EAGLE3,
    KIMI_MI355X_MODEL,
    MXFP4_BYTES_PER_PARAM,
    PLAIN,
    SCORED,
    _step_ms,
    calibrated,
    measured,
    token_ms,
)
from sim.validation.serving_point import Point
from sim.validation.two_arm_rows import rounding_free as _rounding_free


@pytest.mark.parametrize(
    ("route", "users", "per_gpu"),
    [
        (PLAIN, 4, 82.7),
        (PLAIN, 64, 533.3),
        (EAGLE3, 4, 157.0),
        (EAGLE3, 64, 901.6),
    ],
)
def test_the_scored_figure_is_the_table_s_tok_s_a_gpu_times_four(route, users, per_gpu):
    assert measured(route, users) == pytest.approx(4 * per_gpu)


def test_the_table_s_gains_are_the_blog_s():
    """The blog prints each EAGLE-3 cell's ratio to the plain one: 1.90, 1.89, 1.81, 1.83,
    1.69 (rounded to 0.01)."""
    printed = {4: 1.90, 8: 1.89, 16: 1.81, 32: 1.83, 64: 1.69}
    for users, gain in printed.items():
        assert measured(EAGLE3, users) / measured(PLAIN, users) == pytest.approx(gain, abs=0.006)


def test_the_mi355x_preset_is_half_the_fp8_peak_at_bf16():
    g = gpu_preset("MI355X")
    # 256 CUs x 8,192 FP8 FLOPS a clock at 2.4 GHz: 5.03 PFLOPS FP8, 2.5 at BF16
    fp8_half_tflops = 256 * 8192 * 2.4e9 / 2 / 1e12
    assert g.bf16_tflops == pytest.approx(fp8_half_tflops, rel=0.01)
    assert (g.memory_bandwidth_gbps, g.memory_gb) == (8000.0, 288.0)


def test_the_model_is_case_28_s_with_mxfp4_experts_and_tp4_attention():
    bits = 4 + 8 / 32  # a 4-bit element and its share of the block's 8-bit scale
    assert bits / 8 == pytest.approx(MXFP4_BYTES_PER_PARAM)
    assert KIMI_MI355X_MODEL["expert_bytes_per_param"] == MXFP4_BYTES_PER_PARAM
    # 64 heads, 2,176 FLOPs a head a layer a pair (MLA absorbed), 61 layers: 16 heads a rank
    assert KIMI_MI355X_MODEL["attention_flops_per_pair"] == pytest.approx(61 * 16 * 2176, rel=2e-3)
    for key in ("layers", "experts", "experts_per_token", "expert_params", "draft_params"):
        assert KIMI_MI355X_MODEL[key] == KIMI_MODEL[key]


def test_the_calibration_reads_c4_only_and_reproduces_it():
    sc, alpha, needed_al, cycle_ms = calibrated()
    assert CALIBRATED_USERS == (4.0,) and 4 not in SCORED
    # the plain step at batch 4 is the measured C = 4 time a token
    assert _step_ms(sc, 4, 0) == pytest.approx(token_ms(PLAIN, 4), rel=1e-6)
    # the flat chain of 3 has the accept length the batch-4 cycle needs for the EAGLE-3 C = 4
    assert mean_accept_length([alpha] * 3) == pytest.approx(needed_al, abs=1e-8)
    assert needed_al * 1000.0 / cycle_ms == pytest.approx(1000.0 / token_ms(EAGLE3, 4))
    assert cycle_ms == pytest.approx(_step_ms(sc, 4, 3))
    assert sc.timing.cycle_overhead_ms == 0.0  # none beyond the derived passes (assumed)
    assert sc.hardware.gpu == "MI355X" and sc.hardware.gpus == pub.ROCMBLOG_KIMI_GPUS == 4
    assert sc.server.expert_parallel == 4
    assert sc.serving.token_budget == 16384 and sc.serving.prefix_caching is False
    assert sc.speculation.num_steps == 3
    # plain decoding's step grows with the batch; the batch-1 step is below the batch-4 one
    assert sc.timing.decode_ms < token_ms(PLAIN, 4)


def test_the_plain_arm_draws_nothing_so_its_rounding_spread_is_no_error():
    """Fixed lengths and no drafts: every replication of the plain arm is the same job, so
    the level's standard error is its summation's rounding and is reported as none."""
    assert _rounding_free(Point(1.6, 0.01, 2000.0, 1368.8, 3.5e-13)) == 0.0
    assert _rounding_free(Point(1.6, 0.01, 2000.0, 1368.8, 2.0)) == 2.0
