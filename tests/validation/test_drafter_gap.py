"""The two Table 3 drafters priced apart, against values worked by hand from their configs
and the H100 datasheet, and the cycle gap the published rows imply
(sim/validation/drafter_gap.py)."""

from __future__ import annotations

import pytest

from sim.hardware.gpus import gpu_preset
from sim.validation import serving_data as pub
from sim.validation.drafter_gap import (
    EAGLE1_LLAMA31,
    EAGLE3_LLAMA31,
    drafter_terms_ms,
    implied_gaps,
)
from sim.validation.eagle3_paper_cases import sglang_scenarios, vllm_scenarios
from sim.validation.llama8b_mt_bench import MT_BENCH_CONTEXT

H100 = gpu_preset("H100")


def test_head_difference_by_hand() -> None:
    # (128,256 - 32,000) x 4096 = 394,264,576 parameters, x 2 bytes x 3 passes at 3.35 TB/s
    t = drafter_terms_ms(EAGLE1_LLAMA31, EAGLE3_LLAMA31, 16, H100)
    assert EAGLE1_LLAMA31.head_params - EAGLE3_LLAMA31.head_params == 394_264_576
    assert t.head_bytes_ms == pytest.approx(3 * 394_264_576 * 2 / 3.35e12 * 1e3)
    assert t.head_bytes_ms == pytest.approx(0.7061, abs=1e-4)
    # 2 x 394.26M x 16 rows x 3 passes at 0.75 x 989 TFLOPS
    assert t.head_flops_ms == pytest.approx(2 * 394_264_576 * 16 * 3 / (0.75 * 989e12) * 1e3)
    # 96,256 more logits a row x 20 bytes x 48 rows at 3.35 TB/s: 27.6 us
    assert t.rows_ms == pytest.approx(48 * 96_256 * 20 / 3.35e12 * 1e3)
    assert t.rows_ms == pytest.approx(0.0276, abs=1e-4)
    # the EAGLE-3 fc is the larger (3 x 4096 inputs against 2 x 4096)
    assert t.fc_ms == pytest.approx(-4096 * 4096 * 2 / 3.35e12 * 1e3)
    assert t.ridge_rows == pytest.approx(0.75 * 989e12 / 3.35e12)


def test_terms_scale_with_batch_and_passes() -> None:
    one = drafter_terms_ms(EAGLE1_LLAMA31, EAGLE3_LLAMA31, 1, H100, passes=1)
    many = drafter_terms_ms(EAGLE1_LLAMA31, EAGLE3_LLAMA31, 64, H100, passes=3)
    assert many.head_bytes_ms == pytest.approx(3 * one.head_bytes_ms)
    assert many.growth_ms == pytest.approx(192 * one.growth_ms)
    with pytest.raises(ValueError):
        drafter_terms_ms(EAGLE1_LLAMA31, EAGLE3_LLAMA31, 0, H100)


def test_implied_gap_is_not_a_cost_of_the_batch() -> None:
    eagle3, eagle1 = sglang_scenarios()
    gaps = {
        g.batch: g for g in implied_gaps(eagle3, eagle1, pub.EAGLE3_SGLANG_TABLE3, MT_BENCH_CONTEXT)
    }
    # batch 2 calibrates both rows: nothing left there (the fit's tolerance, xtol 1e-6)
    assert gaps[2].excess_ms == pytest.approx(0.0, abs=1e-3)
    assert gaps[2].model_ratio == pytest.approx(gaps[2].measured_ratio, abs=1e-4)
    # the model's ratio barely moves; the measured one falls by 0.03-0.14
    assert all(0.77 < g.model_ratio < 0.82 for g in gaps.values())
    assert gaps[48].measured_ratio == pytest.approx(0.88 / 1.38)
    # 48 and 56 users run the same captured graph (64): the excess falls by more than
    # 2 ms when 8 requests join, which no cost growing with the batch does
    assert gaps[48].excess_ms - gaps[56].excess_ms > 2.0
    # what the priced drafter terms could grow to at 48 users is a small share of it
    terms = drafter_terms_ms(EAGLE1_LLAMA31, EAGLE3_LLAMA31, 48, H100)
    assert terms.growth_ms < 0.1 * gaps[48].excess_ms


def test_the_vllm_pair_falls_alike() -> None:
    eagle3, eagle1 = vllm_scenarios()
    gaps = {
        g.batch: g for g in implied_gaps(eagle3, eagle1, pub.EAGLE3_VLLM_TABLE5, MT_BENCH_CONTEXT)
    }
    assert gaps[2].excess_ms == pytest.approx(0.0, abs=1e-3)
    assert gaps[2].model_ratio < gaps[56].model_ratio < 0.76
    assert [round(gaps[b].excess_ms, 1) for b in (32, 48, 56)] == [4.4, 6.9, 6.4]


def test_the_gap_read_as_acceptance() -> None:
    # the same gaps as the EAGLE-1 accept length they would need at the model's costs
    eagle3, eagle1 = sglang_scenarios()
    sglang = {
        g.batch: g.accept_ratio
        for g in implied_gaps(eagle3, eagle1, pub.EAGLE3_SGLANG_TABLE3, MT_BENCH_CONTEXT)
    }
    # batch 2 calibrates it; the fit's tolerance (xtol 1e-6) leaves 1 within 1e-4
    assert sglang[2] == pytest.approx(1.0, abs=1e-4)
    # (0.88 / 1.38) / 0.783 at 48 users; 56 users asks for much less (not a fall with load)
    assert sglang[48] == pytest.approx(0.815, abs=0.002)
    assert sglang[56] - sglang[48] > 0.1
    eagle3, eagle1 = vllm_scenarios()
    vllm = {
        g.batch: g.accept_ratio
        for g in implied_gaps(eagle3, eagle1, pub.EAGLE3_VLLM_TABLE5, MT_BENCH_CONTEXT)
    }
    # flat to 16 users, about 10% lower at 32-48
    assert all(abs(vllm[b] - 1.0) < 0.03 for b in (2, 4, 8, 16))
    assert all(0.88 < vllm[b] < 0.92 for b in (32, 48))
