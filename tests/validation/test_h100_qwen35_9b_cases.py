"""Qwen3.5-9B + MTP (1 token) on one H100 SXM, vLLM v0.17.1, mean latency at 1-16 requests a
second: the source's figures, the model's shapes against the checkpoint's size, the server,
and a calibration on the 1-request-a-second stage only."""

from __future__ import annotations

import pytest

from sim.validation import serving_data as pub
from sim.validation.h100_qwen35_9b_cases import (
    CALIBRATION_RATE,
    MTP,
    PLAIN,
    QWEN35_9B_MODEL,
    SCORED_RATES,
    calibrated,
    measured,
    scenario,
    simulate,
)


@pytest.mark.parametrize(
    ("route", "rate", "ms"),
    [(PLAIN, 1, 2090.0), (PLAIN, 16, 4370.0), (MTP, 1, 1650.0), (MTP, 8, 2320.0)],
)
def test_the_scored_figures_are_the_page_s(route, rate, ms):
    assert measured(route, rate) == pytest.approx(ms)


def test_the_job_s_mean_lengths_are_the_run_s_totals_over_its_requests():
    prompt, answer = pub.GPUSTACK_QWEN35_INPUT_TOKENS, pub.GPUSTACK_QWEN35_OUTPUT_TOKENS
    assert (prompt, answer) == pytest.approx((342.058, 281.412))
    assert SCORED_RATES == (4, 8, 16) and CALIBRATION_RATE == 1


def test_the_shapes_reproduce_the_checkpoint_s_size():
    """32 layers and two 248,320 x 4,096 matrices: 8.953B for the text model; with the MTP
    layer (its layer and fc) and the vision tower's ~0.45B, the checkpoint's 9.653B (its
    index: 19,306,216,416 bytes in BF16)."""
    m = QWEN35_9B_MODEL
    text = 32 * m["layer_params"] + 2 * m["lm_head_params"]
    assert text == pytest.approx(8.9527e9, rel=1e-4)
    mtp_layer = m["draft_params"] - m["lm_head_params"]
    assert mtp_layer == pytest.approx(0.2433e9, rel=1e-3)
    assert text + mtp_layer + 0.45e9 == pytest.approx(19_306_216_416 / 2, rel=0.005)


def test_the_state_and_kv_are_the_config_s():
    m = QWEN35_9B_MODEL
    assert m["state_bytes_per_request"] == 24 * 32 * 128 * 128 * 4  # FP32, 24 GDN layers
    assert m["kv_bytes_per_token"] == 32768  # 8 attention layers, 4 KV heads of 256, BF16
    assert m["linear_layers"] == 24 and m["layers"] == 32


def test_the_server_is_vllm_s_defaults_on_one_h100():
    sc = scenario(7.0, 0.5)
    assert sc.hardware.gpu == "H100" and sc.hardware.gpus == 1
    assert sc.serving.token_budget == 8192 and sc.serving.batching == "chunked"
    assert sc.num_steps == 1 and sc.model.name == "Qwen3.5-9B"


@pytest.mark.slow
def test_the_1_request_a_second_stage_calibrates_both_arms_and_nothing_else():
    """The step and the rate put both simulated mean latencies at r = 1 on the measured ones
    (to the searches' tolerance); the rate is a probability and the step near the page's
    time a token (latency less TTFT over the mean answer)."""
    decode_ms, alpha = calibrated()
    one = simulate(CALIBRATION_RATE)
    assert one[PLAIN][0] == pytest.approx(measured(PLAIN, 1), rel=1e-3)
    assert one[MTP][0] == pytest.approx(measured(MTP, 1), rel=1e-3)
    assert 0.0 < alpha < 1.0
    per_token = (measured(PLAIN, 1) - 37.03) / pub.GPUSTACK_QWEN35_OUTPUT_TOKENS
    assert 0.8 * per_token < decode_ms < 1.1 * per_token
