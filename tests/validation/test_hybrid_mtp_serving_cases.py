"""Qwen3.8-27B + MTP on one B200 (vLLM): calibrated on one stream only, every other
concurrency scored, the hybrid's attention layers the only KV."""

from __future__ import annotations

import pytest

from sim.validation import serving_data as pub
from sim.validation.hybrid_mtp_serving_cases import (
    HUMANEVAL,
    MTP,
    NUM_STEPS,
    PLAIN,
    QWEN38_MODEL,
    _calibration_lengths,
    _cycle_ms,
    _scenario,
    calibrated,
)


def test_the_kv_is_the_16_attention_layers_and_the_layer_the_mean_of_both_kinds():
    # 4 KV heads x 256 x (K, V) x 2 bytes x 16 full-attention layers
    assert QWEN38_MODEL["kv_bytes_per_token"] == 4 * 256 * 2 * 2 * 16
    # 24 heads x 256 x (scores, values) x 2 FLOPs x 16 layers
    assert QWEN38_MODEL["attention_flops_per_pair"] == 24 * 256 * 2 * 2 * 16
    mlp = 3 * 5120 * 17408
    attention = 5120 * 12288 + 2 * 5120 * 1024 + 6144 * 5120 + mlp
    delta_net = 5120 * 16384 + 5120 * 96 + 6144 * 5120 + mlp
    mean = (16 * attention + 48 * delta_net) / 64
    # the module rounds the mean to 0.1M parameters
    assert QWEN38_MODEL["layer_params"] == pytest.approx(mean, abs=0.05e6)


def test_the_state_is_48_layers_of_48_value_heads_of_128_by_128_in_float32():
    # vLLM 0.30: (value heads, value dim, key dim) a layer, float32 from mamba_ssm_dtype
    assert QWEN38_MODEL["state_bytes_per_request"] == 48 * 48 * 128 * 128 * 4 == 150_994_944
    assert _scenario(HUMANEVAL).model.state_bytes_per_request == 150_994_944


def test_the_conv_state_is_10240_bf16_channels_over_3_positions_a_layer():
    # pre-registered: 48 layers x (2 x 16 key heads x 128 + 48 value heads x 128) x 2 bytes
    assert QWEN38_MODEL["conv_state_bytes_per_position"] == 48 * 10_240 * 2 == 983_040
    assert QWEN38_MODEL["conv_state_positions"] == 4 - 1


@pytest.mark.parametrize("subset", pub.SPECULATORS_QWEN38_SUBSETS)
def test_the_workload_pools_the_calibration_loads_requests_only(subset):
    prompt, output = _calibration_lengths(subset)
    n = pub.SPECULATORS_QWEN38_COMPLETED[subset]
    assert n[PLAIN].keys() == n[MTP].keys() == {1}  # nothing from a scored load
    lo, hi = sorted(pub.SPECULATORS_QWEN38_OUTPUT_TOKENS[subset][a][1] for a in (PLAIN, MTP))
    assert lo < output < hi
    sc = _scenario(subset)
    assert sc.workload.input_tokens == round(prompt)
    assert sc.workload.output_tokens == round(output)
    assert sc.timing.context_tokens == pytest.approx(prompt + output / 2)


@pytest.mark.parametrize("subset", pub.SPECULATORS_QWEN38_SUBSETS)
def test_the_calibration_reproduces_the_one_stream_cycle_and_accept_length(subset):
    sc, alpha, passes_ms, measured_ms = calibrated(subset)
    al = pub.SPECULATORS_QWEN38_AL[subset][MTP][1]
    # brentq to 1e-9 in alpha
    assert 1.0 + alpha + alpha**2 == pytest.approx(al, abs=1e-8)
    assert sc.speculation.num_steps == NUM_STEPS == 2
    assert measured_ms == pytest.approx(pub.SPECULATORS_QWEN38_ITL_MS[subset][MTP][1] * al)
    assert sc.timing.cycle_overhead_ms == pytest.approx(measured_ms - passes_ms)
    # the overhead is charged once a cycle: the calibrated batch-1 cycle is the measured one
    assert _cycle_ms(sc) == pytest.approx(measured_ms, rel=1e-9)
    assert sc.timing.decode_ms == pub.SPECULATORS_QWEN38_ITL_MS[subset][PLAIN][1]


def test_no_cap_binds_at_the_curves_highest_load():
    sc = _scenario(HUMANEVAL)
    top = max(pub.SPECULATORS_QWEN38_TOK_S[HUMANEVAL][PLAIN])
    assert sc.serving.max_running_requests >= top
    assert (sc.serving.max_running_requests_speculative or sc.serving.max_running_requests) >= top


@pytest.mark.slow
def test_the_case_is_calibrated_on_one_stream_and_scores_every_other_load():
    from sim.validation.hybrid_mtp_serving_cases import case_qwen38_mtp_b200

    case = case_qwen38_mtp_b200(HUMANEVAL)
    loads = sorted(pub.SPECULATORS_QWEN38_TOK_S[HUMANEVAL][PLAIN])
    assert len(case.rows) == 2 * (len(loads) - 1)
    assert all(r.load != 1 and r.calibrated_loads == (1.0,) for r in case.rows)
    assert {r.side for r in case.rows} == {"plain", "speculative"}
    assert not set(case.calibrated_on) & {r.figure for r in case.rows}
