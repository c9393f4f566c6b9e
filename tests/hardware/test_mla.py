"""MLA chunked-prefill branch over the context: hand-worked kernel bytes and FLOPs."""

from __future__ import annotations

import pytest

from sim.hardware.gpus import gpu_preset
from sim.hardware.mla import MlaDims, prefill_context_kernels, prefill_context_ms


def test_prefill_context_kernels_hand_worked():
    # Kimi at TP 8 (8 heads), 1,000 cached tokens, fp8 cache, BF16 activations.
    kernels = prefill_context_kernels(MlaDims(heads=8), 1000, kv_cache_bytes=1.0)
    assert kernels == [
        (1000 * 576 * 3, 0.0),  # gather: fp8 read + BF16 write of latent + rope
        ((1000 * 512 + 512 * 8 * 256) * 2 + 1000 * 8 * 256 * 2, 2 * 1000 * 512 * 8 * 256),
        ((1000 * 8 * 128 + 1000 * 64 + 1000 * 8 * 192) * 2, 0.0),  # cat
        (1000 * 8 * (128 + 192) * 2, 0.0),  # value padded to the key's 192
        (1000 * 8 * (192 + 192) * 2, 0.0),  # attention reads keys and padded values
    ]


def test_prefill_context_ms_hand_worked():
    # RTX PRO 6000: 1,792 GB/s, 500 TFLOPS. kv_b_proj is compute-bound (4.19 > 4.03 us),
    # the rest memory-bound: 18.24 MB.
    gpu = gpu_preset("RTX-PRO-6000")
    expected = (18.24e6 / 1.792e12 + 2 * 1000 * 512 * 2048 / 500e12) * 1e3
    assert prefill_context_ms(MlaDims(heads=8), 1000, gpu, 1.0) == pytest.approx(expected)
    assert prefill_context_ms(MlaDims(heads=8), 0, gpu, 1.0) == pytest.approx(
        512 * 8 * 256 * 2 / 1.792e12 * 1e3  # the weights alone
    )
    # No padding when the value is as wide as the key: one kernel fewer.
    wide = MlaDims(heads=8, value=192)
    assert len(prefill_context_kernels(wide, 1000, 1.0)) == 4
    with pytest.raises(ValueError):
        prefill_context_ms(MlaDims(heads=8), -1, gpu, 1.0)
    with pytest.raises(ValueError):
        MlaDims(heads=0)
