"""Qwen3.8-27B (NVFP4) + MTP on one GB10, vLLM 0.27.1, one batch of C requests, C = 1-128:
the source's figures, the preset, the two servers' KV caches, and a calibration on the
simulated C = 1 job only."""

from __future__ import annotations

import pytest

from sim.binding.kv_capacity import kv_capacity
from sim.hardware.gpus import GPU_PRESETS
from sim.hardware.memory import reserve_range_gib
from sim.validation import serving_data as pub
from sim.validation.decision_cases import published_crossover
from sim.validation.gb10_qwen38_cases import (
    CALIBRATED_USERS,
    KV_RESERVE_GIB,
    MTP,
    NVFP4_BYTES_PER_PARAM,
    PLAIN,
    SCORED,
    calibrated,
    measured,
    scenario,
    simulate,
)
from sim.validation.hybrid_mtp_serving_cases import QWEN38_MODEL


@pytest.mark.parametrize(
    ("route", "users", "tok_s"),
    [(PLAIN, 1, 11.04), (PLAIN, 128, 390.42), (MTP, 1, 19.72), (MTP, 64, 361.39)],
)
def test_the_scored_figures_are_the_ladder_s(route, users, tok_s):
    assert measured(route, users) == tok_s


def test_the_measured_gain_falls_through_one_between_64_and_128_streams():
    """RESULTS.md: vLLM's MTP C = 128 is below its own C = 64 and below plain decoding's."""
    gains = {u: measured(MTP, u) / measured(PLAIN, u) for u in (1, *SCORED)}
    assert all(g > 1 for u, g in gains.items() if u <= 64) and gains[128] < 1
    assert published_crossover(gains) == pytest.approx(106.15, abs=0.01)


def test_the_gb10_preset_is_the_spec_sheet_s():
    """273 GB/s, 128 GB, and 1 PFLOP FP4 with sparsity / 2 / 4 for BF16 dense."""
    gb10 = GPU_PRESETS["GB10"]
    assert (gb10.memory_bandwidth_gbps, gb10.memory_gb) == (273.0, 128.0)
    assert gb10.bf16_tflops == 1000.0 / 2 / 4


def test_nvfp4_layers_are_their_bytes_in_bf16_sized_parameters():
    assert NVFP4_BYTES_PER_PARAM == 0.5625  # 4 bits and an FP8 scale a block of 16
    sc = scenario(90.0, 0.5, 1.0)
    assert sc.model.layer_params * 2 == pytest.approx(QWEN38_MODEL["layer_params"] * 0.5625)
    assert sc.model.lm_head_params == QWEN38_MODEL["lm_head_params"]  # BF16 (assumed)


def test_each_arm_keeps_its_own_server_s_kv_cache():
    """The plain server ran a BF16 KV cache, the MTP server an FP8 one: half the bytes a
    token, so a larger pool."""
    plain, fp8 = scenario(90.0, 0.5, 2.0), scenario(90.0, 0.5, 1.0)
    assert plain.model.kv_bytes_per_token == 65536 == 2 * fp8.model.kv_bytes_per_token
    assert fp8.model.draft_kv_bytes_per_token == QWEN38_MODEL["draft_kv_bytes_per_token"] / 2
    bf16_pool = kv_capacity(plain, speculates=False).tokens
    fp8_pool = kv_capacity(fp8, speculates=False).tokens
    assert bf16_pool is not None and fp8_pool is not None and fp8_pool > 1.9 * bf16_pool


def test_the_reserve_turns_the_model_s_budget_into_the_servers_0_85_of_121_7_gib():
    """vLLM's rule here is 0.9 of the preset's memory less the reserve; the servers' budget
    was 0.85 of what the box reports: the reserve takes the difference (to rounding)."""
    sc = scenario(90.0, 0.5, 2.0)
    assert sc.serving.kv_reserve_gib == KV_RESERVE_GIB
    budget_model = 0.9 * 128.0 - KV_RESERVE_GIB
    budget_server = pub.ATLAS_GB10_MEMORY_UTILIZATION * pub.ATLAS_GB10_REPORTED_MEMORY_GIB
    default_reserve = reserve_range_gib("vllm", 128.0)[0]
    assert budget_server - default_reserve == pytest.approx(budget_model, abs=0.005)
    assert sc.serving.max_running_requests == 128 and sc.serving.token_budget == 8192


def test_the_calibration_reads_the_c1_job_only_and_reproduces_it():
    """The simulated jobs of one request give both measured C = 1 levels: the plain one to
    the step's search tolerance, the MTP one to the rate's plus the small steps its fixed
    random numbers make between neighbouring rates."""
    plain_sc, mtp_sc, decode_ms, alpha = calibrated()
    assert CALIBRATED_USERS == (1.0,) and 1 not in SCORED
    one = simulate(1)
    assert one.baseline_tok_s == pytest.approx(measured(PLAIN, 1), rel=1e-4)
    assert one.speculative_tok_s == pytest.approx(measured(MTP, 1), rel=2e-3)
    assert plain_sc.timing.decode_ms == mtp_sc.timing.decode_ms == decode_ms
    assert 0.0 < alpha < 1.0 and mtp_sc.acceptance.alpha == alpha
    assert mtp_sc.timing.cycle_overhead_ms == 0.0  # none beyond the derived passes (assumed)
    assert mtp_sc.speculation.num_steps == pub.ATLAS_GB10_K == 3
    # the job's time a token carries the prefill, so the batch-1 step is below it
    assert decode_ms < 1000.0 / measured(PLAIN, 1)
