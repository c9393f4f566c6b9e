"""Per-token candidates of the Kimi serving case, against values worked by hand from the
cited figures (sim/validation/per_token_candidates.py)."""

from __future__ import annotations

import numpy as np
import pytest

from sim.hardware.experts import PAIR_FLOP_EFFICIENCY
from sim.validation.cases import Row
from sim.validation.kimi_rtx6kpro_miss import _moved_rows
from sim.validation.per_token_candidates import (
    EAGLE3_DRAFT_VOCAB,
    LLAMA31_VOCAB,
    MARLIN_PEAK_FRACTION,
    draft_row_us,
    logits_gather_us,
    moe_compute_extra_us,
    per_token_candidates,
    sampling_us_per_row,
)


def test_logits_gather_by_hand() -> None:
    # 163,840 logits x 2 bytes = 327,680 B; 7/8 of it at 48 GB/s = 5.973 us
    assert logits_gather_us(163_840, 8, 48.0) == pytest.approx(327_680 * 7 / 8 / 48e3)
    assert logits_gather_us(163_840, 8, 48.0) == pytest.approx(5.9733, abs=1e-4)
    assert logits_gather_us(163_840, 1, 48.0) == 0.0


def test_sampling_scales_the_pr_timings_with_the_vocabulary() -> None:
    # PR #40376, 128 rows at 32,768: 0.046 ms FlashInfer, 0.626 ms sort
    flash, sort = sampling_us_per_row(32_768)
    assert (flash, sort) == pytest.approx((46.0 / 128, 626.0 / 128))
    flash, sort = sampling_us_per_row(163_840)  # five times the vocabulary
    assert (flash, sort) == pytest.approx((5 * 46.0 / 128, 5 * 626.0 / 128))


def test_marlin_fraction_by_hand() -> None:
    # 768 more tokens x 10 experts x 2 x 3 x 4096 x 1024 FLOPs in 3.419 ms, over 148 TFLOPS
    flops = 768 * 10 * 6 * 4096 * 1024
    assert pytest.approx(flops / 3.419e-3 / 148e12) == MARLIN_PEAK_FRACTION
    assert pytest.approx(0.3820, abs=1e-4) == MARLIN_PEAK_FRACTION


def test_moe_extra_is_the_flops_below_what_the_model_charges() -> None:
    flops = 5.2848e9  # Kimi: 2 x 44.04M x 8 experts x 60 layers / 8 ranks
    at_peak = flops / 500e12 * 1e6
    charged = at_peak / PAIR_FLOP_EFFICIENCY  # the model's pairs at the kernel's efficiency
    assert moe_compute_extra_us(flops, 500.0) == pytest.approx(
        at_peak / MARLIN_PEAK_FRACTION - charged
    )
    # FP8 activations run the pairs faster than the model charges: nothing to add
    assert at_peak / (2 * MARLIN_PEAK_FRACTION) < charged
    assert moe_compute_extra_us(flops, 500.0, fp8_activations=True) == 0.0
    assert moe_compute_extra_us(0.0, 500.0) == 0.0


def test_kimi_candidates_and_their_total() -> None:
    c = per_token_candidates(
        vocab=163_840,
        gpus=8,
        bus_bandwidth_gbps=48.0,
        expert_params=44.04e6,
        experts_per_token=8,
        moe_layers=60,
        peak_tflops=500.0,
    )
    # the model charges the pairs at the kernel's efficiency: Marlin's BF16 pairs a little
    # slower than that, its FP8 ones faster (nothing to add)
    assert c.moe_us == pytest.approx((0.0, 2.51), abs=0.01)
    low, high = c.total_us
    assert low == pytest.approx(c.gather_us + c.moe_us[0])  # greedy: no sampling
    assert high == pytest.approx(c.gather_us + c.sampling_us[1] + c.moe_us[1])
    assert 5.9 < low < 6.2 and 32.5 < high < 33.5


def test_bad_inputs_raise() -> None:
    with pytest.raises(ValueError):
        logits_gather_us(0, 8, 48.0)
    with pytest.raises(ValueError):
        sampling_us_per_row(-1)
    with pytest.raises(ValueError):
        moe_compute_extra_us(1e9, 0.0)


class _FlatCost:
    """A cost whose every iteration takes 100 ms."""

    def decode_ms(self, batch: int, draft: int, context: np.ndarray) -> np.ndarray:
        return np.full(np.shape(context), 100.0)


def test_moved_rows_counts_only_rows_beyond_the_calibrated_passes() -> None:
    rows = [
        Row("q", "rtx6kpro MTP=3 conc=128", "x", 90.0, 100.0, 1.0),  # over: moves toward
        Row("q", "rtx6kpro no MTP conc=128", "x", 110.0, 100.0, 1.0),  # under: moves away
        Row("q", "rtx6kpro no MTP conc=8", "x", 110.0, 100.0, 1.0),  # calibrated: stays
        Row("q", "rtx6kpro MTP=3 conc=1", "x", 90.0, 100.0, 1.0),  # calibrated: stays
    ]
    # 10 us a token: the 128-user verify adds (512 - 4) x 10 us = 5.08 ms to 100 ms
    assert _moved_rows(rows, _FlatCost(), 3, np.array([384.0]), 10.0) == (1, 1)
    assert _moved_rows(rows, _FlatCost(), 3, np.array([384.0]), 0.0) == (0, 0)


def test_draft_row_bound_by_hand() -> None:
    # 20 bytes x 128,256 logits at 3,350 GB/s = 0.7657 us; 32,000 logits: 0.1910 us
    assert draft_row_us(LLAMA31_VOCAB, 3350.0) == pytest.approx(20 * 128_256 / 3.35e6)
    assert draft_row_us(EAGLE3_DRAFT_VOCAB, 3350.0) == pytest.approx(0.19104, abs=1e-5)
    with pytest.raises(ValueError):
        draft_row_us(0, 3350.0)
