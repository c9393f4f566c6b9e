"""Hardware validation cases: coverage of the nccl-tests points, hand-worked predictions."""

from __future__ import annotations

import pytest

from sim.hardware.eager import EAGER_KERNEL_US, NATIVE_OP_US
from sim.hardware.gpus import gpu_preset
from sim.hardware.mla import MlaDims, prefill_context_ms
from sim.scenario.load import load_scenario
from sim.validation.hardware_cases import (
    case_custom_allreduce,
    case_eager_pairs,
    case_nccl_points,
    eager_prediction_ms,
    eager_split_ms,
    nccl_point_us,
    sglang_kimi_kernels,
)
from sim.validation.hardware_data import (
    EAGER_PAIRS,
    NCCL_POINTS,
    RTX6KPRO_ASUS,
    SGLANG_DEEPSEEK_V3_FP8_LAYER_OPS,
    layer_kernels,
    vllm_mla_decode_kernels,
    voipmonitor_no_mtp_pair,
    voipmonitor_pair,
)
from tests.conftest import SEED


def test_nccl_points_cover_what_the_issue_asks():
    assert len(NCCL_POINTS) >= 10
    sizes = [p.nbytes for p in NCCL_POINTS]
    assert min(sizes) == 8 and max(sizes) >= 1 << 30
    kinds = {p.interconnect for p in NCCL_POINTS}
    assert {"pcie-gen4", "pcie-gen4-host-bounce", "pcie-gen5", "pcie-gen5-host-bounce"} <= kinds
    assert {"nvlink3", "nvlink4"} <= kinds


def test_nccl_point_hand_worked():
    # 8x 4090, 8 B, one thread for 8 GPUs: GPU 20.6 us (ring LL) < host 8 x 5 us = 40 us.
    (p,) = [p for p in NCCL_POINTS if p.nbytes == 8 and "4090" in p.setting]
    assert nccl_point_us(p) == pytest.approx(40.0)
    # 8x H20, 1 GB, NVLS off: ring Simple 8.4 + 14 x 3.4 us + 2^30 B / (370 x 8/14 GB/s).
    (big,) = [p for p in NCCL_POINTS if p.interconnect == "nvlink4" and p.nbytes == 1 << 30]
    assert nccl_point_us(big) == pytest.approx(8.4 + 14 * 3.4 + (1 << 30) / (370e3 * 8 / 14))


def test_p2pmark_points_are_one_thread_for_every_gpu():
    # p2pmark issues every GPU's ncclAllReduce from one thread (bench_nccl_ar), so each
    # iteration costs that thread's launches: 8 x 5 us at 4 KB, above NCCL's 21 us.
    p2pmark = [p for p in NCCL_POINTS if p.source == RTX6KPRO_ASUS]
    assert len(p2pmark) == 9 and all(p.gpus_per_process == p.gpus for p in p2pmark)
    (p,) = [p for p in p2pmark if p.gpus == 8 and p.nbytes == 4096]
    assert nccl_point_us(p) == pytest.approx(40.0)


def test_nccl_point_ll128_hand_worked():
    # 8x A100 (OCI), 4 MB, one thread for 8 GPUs: ring LL128 beats LL and Simple there,
    # 14 + 14 x 1.9 us + 4 MiB / (0.92 x 235 x 8/14 GB/s), above the host's 40 us.
    (p,) = [p for p in NCCL_POINTS if "OCI" in p.setting and p.nbytes == 4 << 20]
    ll128 = 14.0 + 14 * 1.9 + (4 << 20) / (0.92 * 235e3 * 8 / 14)
    assert nccl_point_us(p) == pytest.approx(ll128)


def test_vllm_mla_decode_op_count_hand_worked():
    # KV write 1, q absorption bmm 1, cat 1, zeros 2, stages 2, v up-projection 1..2;
    # DCP adds the query all-gather and its copy 2, and the LSE merge 4..5.
    assert vllm_mla_decode_kernels(False) == (8, 9)
    assert vllm_mla_decode_kernels(True) == (14, 16)


def test_voipmonitor_no_mtp_pair_is_launch_bound_piecewise():
    # PIECEWISE at 14 attention kernels: each of 61 layers issues 14 + 1 launches, more CPU
    # than the layer's GPU work, so the step is those launches plus at most one layer.
    pair = voipmonitor_no_mtp_pair()
    assert (pair.mode, pair.attention_kernels, pair.kernels_per_layer) == ("piecewise", 14, 32)
    assert pair.eager_ms == pytest.approx(1000 / 51.7)
    launches_ms = 61 * 15 * EAGER_KERNEL_US / 1000
    assert launches_ms < eager_prediction_ms(pair) < launches_ms + pair.graphed_ms / 61


def test_eager_prediction_hand_worked():
    # Llama-3-8B, 32 layers x 15 kernels eager at 18.889 us: launch-bound, T = 480 c + the
    # last kernel's share of the 7.06 ms graphed compute.
    (pair,) = [p for p in EAGER_PAIRS if p.key == "sglang-1401-triton"]
    assert eager_prediction_ms(pair) == pytest.approx(480 * EAGER_KERNEL_US / 1000 + 7.06 / 480)


def test_host_split_hand_worked():
    # GPT-2 on an H200: (12 x 7,087,872 + 38,597,376) params x 2 B at 4.8 TB/s is the pass's
    # floor; the rest of the graphed step is host work, which the eager step keeps, and the
    # eager pass is launch-bound: 180 kernels x c + the last kernel's share of the floor.
    (pair,) = [p for p in EAGER_PAIRS if p.key == "deepspeed-8352-vllm"]
    floor = 123_651_840 * 2 / 4.8e12 * 1e3
    assert pair.gpu_floor_ms == pytest.approx(floor)
    host, compute = eager_split_ms(pair)
    assert (host, compute) == pytest.approx((41.8 / 32 - floor, floor))
    assert eager_prediction_ms(pair) == pytest.approx(
        host + 180 * EAGER_KERNEL_US / 1000 + floor / 180
    )
    # Without the split (the default for pairs whose floor is a large share of the step)
    # the graphed step is all compute.
    assert eager_split_ms(pair, at_floor=False) == (0.0, pytest.approx(41.8 / 32))


def test_unfused_kernels_enter_only_the_enforce_eager_pair():
    (omni,) = [p for p in EAGER_PAIRS if p.key == "vllm-omni-7960"]
    assert omni.unfused_kernels_per_layer == 5 and omni.mode == "eager"
    assert all(p.unfused_kernels_per_layer == 0 for p in EAGER_PAIRS if p is not omni)
    # GPU-bound there (28 x (15 x 18.9 + 5 x 15.5) us of CPU < 13 ms), so the unfused
    # kernels add their GPU time, 28 x 5 x 1.46 us, less the first kernel's cheaper issue.
    assert 28 * (15 * EAGER_KERNEL_US + 5 * NATIVE_OP_US) / 1000 < 13.0


def test_sglang_kimi_layer_count_hand_worked():
    # Attention 1+1+2+1+1 + rotary 1..8 + cats 0..2 + cache/attention 2..3 + 2 + 1;
    # all-reduce + norm 2; MoE 3 + 1 + top-k 1..4 + Marlin 7..8 + 2.
    assert sglang_kimi_kernels() == (28, 42)


def test_deepseek_v3_layer_count_hand_worked():
    # The Kimi layer less Marlin's 7..8, plus the Triton FP8 MoE 7..9 (align 1..3, two
    # activation quants, two GEMMs, silu_and_mul, sum) and 5 activation quants before the
    # block-FP8 linears: (28 - 7 + 7 + 5, 42 - 8 + 9 + 5).
    assert layer_kernels(SGLANG_DEEPSEEK_V3_FP8_LAYER_OPS) == (33, 48)


def test_held_out_pairs_hand_worked():
    held = [p for p in EAGER_PAIRS if p.held_out]
    assert [p.key for p in held] == ["sglang-5090-dsv3", "vllm-1440"]
    dsv3, vllm = held
    assert dsv3.kernels_per_layer == 33 and dsv3.same_kernels
    assert dsv3.graphed_ms == pytest.approx(1000 / 41.59)
    assert dsv3.eager_ms == pytest.approx(1000 / 4.60)
    # Launch-bound: 61 x 33 launches at the public cost, plus at most the last kernels'
    # share of the graphed step.
    launches_ms = 61 * 33 * EAGER_KERNEL_US / 1000
    assert launches_ms < eager_prediction_ms(dsv3) < launches_ms + dsv3.graphed_ms / 61
    # Llama-2-7B, 480 kernels at 18.889 us = 9.07 ms of CPU < the 10.5 ms of GPU work: the
    # CPU stays ahead, so the pass is the GPU work plus the first kernel's issue.
    assert vllm.graphed_ms == pytest.approx(10.5) and vllm.eager_ms == pytest.approx(12.0)
    assert eager_prediction_ms(vllm) == pytest.approx(10.5 + EAGER_KERNEL_US / 1000)


def test_voipmonitor_pair_adds_the_prefill_branch_at_its_context():
    pair = voipmonitor_pair(2000)
    per_layer = prefill_context_ms(MlaDims(heads=8), 2000, gpu_preset("RTX-PRO-6000"), 1.0)
    assert pair.ungraphed_extra_gpu_ms == pytest.approx(61 * per_layer)
    assert pair.attention_kernels == 12 and pair.eager_ms == pytest.approx(20.0 * 116.6 / 75.0)
    # At 10k the graphed cycle scales with the graphed tok/s; the branch with the context.
    longer = voipmonitor_pair(10000)
    assert longer.graphed_ms == pytest.approx(20.0 * 116.6 / 112.8)
    assert longer.ungraphed_extra_gpu_ms > 4.9 * pair.ungraphed_extra_gpu_ms
    # Graphing never slows it: the ungraphed prediction is at least the graphed cycle plus
    # the branch's GPU work.
    assert eager_prediction_ms(pair) >= pair.graphed_ms + pair.ungraphed_extra_gpu_ms - 1e-9


def test_cases_score_nothing_they_calibrated_on_and_say_their_misses():
    seed = load_scenario(SEED)
    eager = case_eager_pairs(seed)
    assert len(eager.rows) == len(EAGER_PAIRS) + 1  # every pair and the seed's own
    # The seed's ungraphed verify at the public per-kernel cost and SGLang's counted 28
    # kernels a layer: launch-bound, 1708 launches plus the last all-reduce (0.027 ms).
    (seed_row,) = [r for r in eager.rows if r.figure == "seed ungraphed verify"]
    launch_ms = 28 * 61 * EAGER_KERNEL_US / 1000
    assert seed_row.measured == 30.0
    assert launch_ms < seed_row.predicted < launch_ms + 0.1
    assert any("within 15%" in note for note in eager.notes)
    assert any("Counted from SGLang's source" in note for note in eager.notes)
    assert any(note.startswith("Held out") for note in eager.notes)
    nccl = case_nccl_points()
    assert len(nccl.rows) == len(NCCL_POINTS)
    assert any("within 2x" in note for note in nccl.notes)
    custom = case_custom_allreduce()
    assert all(abs(r.error) < 0.15 for r in custom.rows)
