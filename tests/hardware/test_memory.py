"""The KV cache an engine makes of a GPU's memory (sim/hardware/memory.py), checked
against the engines' own rules worked by hand and against a vLLM startup log."""

from __future__ import annotations

import pytest

from sim.hardware.memory import (
    GIB,
    RESERVE_SHARE_RANGE,
    engine_kv_memory,
    reserve_range_gib,
    sglang_mem_fraction_static,
)

LLAMA8B_KV = 131072.0  # 8 KV heads x 128 x 2 (K, V) x 2 bytes x 32 layers


@pytest.mark.parametrize(
    ("mib", "tp", "spec", "reserved"),
    [
        # H100 (80 GiB): chunk 8192, graphs to 256 (TP < 4): 512 + 12288 + 512 + 128
        (80 * 1024, 1, False, 13440),
        # the same with an EAGLE drafter: + 2048
        (80 * 1024, 1, True, 13440 + 2048),
        # H200 at TP 8: graphs to 512: 512 + 12288 + 1024 + 1024 = 14848
        (141 * 1024, 8, False, 14848),
        # a 24 GiB card: chunk 2048, graphs to 24: 512 + 3072 + 48 + 128 = 3760 (no 10 GiB floor)
        (24 * 1024, 1, False, 3760),
        # a 48 GiB card at TP 4: chunk 4096, graphs to 160: 512 + 6144 + 320 + 512 = 7488
        (48 * 1024, 4, False, 7488),
        # B200 class (180 GiB): chunk 16384, graphs to 512: 512 + 24576 + 1024 + 128
        (180 * 1024, 1, False, 26240),
    ],
)
def test_sglang_fraction_follows_its_server_args_rule(mib, tp, spec, reserved):
    assert sglang_mem_fraction_static(mib, tp, spec) == round((mib - reserved) / mib, 3)


def _memory(engine="vllm", **over):
    """engine_kv_memory on one 80 GiB GPU of a plain 16 GB target, ``over`` replacing."""
    args = {
        "memory_gib": 80.0,
        "gpus": 1,
        "weight_bytes": 16.06e9,
        "drafter_bytes": 0.0,
        "kv_bytes_per_token": LLAMA8B_KV,
        "drafter_kv_bytes_per_token": 0.0,
        "reserve_gib": 1.0,
        "speculative": False,
        **over,
    }
    return engine_kv_memory(engine, **args)


def test_vllm_reproduces_its_logged_kv_cache_from_the_logged_components():
    """vLLM V1's startup log (Llama-3.1-8B-Instruct, one H100): total 79.11 GiB x 0.90,
    weights 14.99 GiB, non-torch 0.35 + activation peak 1.24 GiB, "GPU KV cache size:
    447,088 tokens"; what it allocates is whole blocks of 16 tokens, per layer."""
    m = _memory(memory_gib=79.11, weight_bytes=14.99 * GIB, reserve_gib=0.35 + 1.24)
    assert m.kv_gib == pytest.approx(54.62, abs=0.005)  # the log's "54.62GiB" to its print
    # the log's tokens are the KV GiB at its two printed decimals, less block rounding
    assert abs(m.tokens - 447_088) / 447_088 < 0.002


def _llama(engine, speculative):
    return _memory(
        engine, drafter_bytes=0.85e9, drafter_kv_bytes_per_token=4096.0, speculative=speculative
    )


def test_vllm_budget_holds_the_drafter_sglang_keeps_it_outside():
    v_plain, v_spec = _llama("vllm", False), _llama("vllm", True)
    assert v_spec.drafter_gib == pytest.approx(0.85e9 / GIB)
    assert v_spec.drafter_kv_bytes_per_token == 4096.0
    expected = (v_plain.kv_gib - 0.85e9 / GIB) * GIB / (LLAMA8B_KV + 4096.0)
    assert abs(v_spec.tokens - expected) <= 1
    s_plain, s_spec = _llama("sglang", False), _llama("sglang", True)
    assert s_spec.drafter_gib == 0.0 and s_spec.drafter_kv_bytes_per_token == 0.0
    # the drafter's 2 GiB leave SGLang's fraction instead (printed to 0.001: 0.08 GiB)
    assert s_plain.budget_gib - s_spec.budget_gib == pytest.approx(2.0, abs=0.08)


def test_tensor_parallel_splits_the_weights():
    one = _memory(memory_gib=141.0, weight_bytes=64e9, reserve_gib=2.0)
    two = _memory(memory_gib=141.0, weight_bytes=64e9, reserve_gib=2.0, gpus=2)
    assert two.weights_gib == pytest.approx(one.weights_gib / 2)
    assert two.kv_gib - one.kv_gib == pytest.approx(32e9 / GIB)


def test_weights_larger_than_the_budget_leave_no_tokens():
    m = _memory(memory_gib=24.0, weight_bytes=30e9)
    assert m.kv_gib < 0 and m.tokens == 0


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_reserve_range_is_a_share_of_the_gpu_with_its_geometric_middle(engine):
    default, low, high = reserve_range_gib(engine, 80.0)
    share = RESERVE_SHARE_RANGE[engine]
    assert (low, high) == (round(80 * share[0], 2), round(80 * share[1], 2))
    assert default == pytest.approx((low * high) ** 0.5, abs=0.005)
    assert low < default < high
