"""MiniMax-M2.5 (FP8) + EAGLE-3 on 4x MI355X (a vLLM ROCm nightly), 1K/1K, C = 4-64: the
source's figures, the model's shapes, and a calibration on the simulated C = 4 job only."""

from __future__ import annotations

import pytest

from sim.validation import serving_data as pub
from sim.validation.mi355x_minimax_cases import (
    ATTENTION_FLOPS_PER_PAIR,
    CALIBRATED_USERS,
    EAGLE3,
    KV_BYTES_PER_TOKEN,
    MINIMAX_M25_MODEL,
    PLAIN,
    SCORED,
    calibrated,
    measured,
    simulate,
)
from sim.validation.two_arm_rows import level_root


@pytest.mark.parametrize(
    ("route", "users", "per_gpu"),
    [(PLAIN, 4, 90.4), (PLAIN, 64, 822.0), (EAGLE3, 4, 161.7), (EAGLE3, 64, 1137.3)],
)
def test_the_scored_figure_is_the_table_s_tok_s_a_gpu_times_four(route, users, per_gpu):
    assert measured(route, users) == pytest.approx(4 * per_gpu)


def test_the_table_s_gains_are_the_blog_s():
    """The blog prints each EAGLE-3 cell's ratio to the plain one: 1.79, 1.71, 1.55, 1.57,
    1.38 (rounded to 0.01)."""
    printed = {4: 1.79, 8: 1.71, 16: 1.55, 32: 1.57, 64: 1.38}
    for users, gain in printed.items():
        assert measured(EAGLE3, users) / measured(PLAIN, users) == pytest.approx(gain, abs=0.006)


def test_the_shapes_give_the_model_card_s_230b_total_and_10b_active():
    """62 layers of 256 experts (3 x 3,072 x 1,536) and 44.04M attention parameters, an
    embedding and an untied LM head of 200,064 x 3,072: about 230B in all, 10B a token (the
    model card's figures, a check of the shapes, not a fit)."""
    attention, gate, lm_head = 44_040_192, 3072 * 256, 200_064 * 3072
    expert = MINIMAX_M25_MODEL["expert_params"]
    assert expert == 3 * 3072 * 1536
    total = 62 * (attention + gate + 256 * expert) + 2 * lm_head
    active = 62 * (attention + gate + 8 * expert) + lm_head
    assert total == pytest.approx(230e9, rel=0.02)
    assert active == pytest.approx(10e9, rel=0.05)
    # FP8 attention is half its parameters in BF16 bytes, the FP32 gate twice its own
    assert MINIMAX_M25_MODEL["layer_params"] == attention / 2 + 2 * gate
    assert MINIMAX_M25_MODEL["lm_head_params"] == lm_head
    assert MINIMAX_M25_MODEL["expert_bytes_per_param"] == 1.0


def test_kv_and_attention_are_a_rank_s_share_of_full_gqa():
    # FP8 K and V of 8 KV heads of 128 over 62 layers, split over 4 ranks
    assert KV_BYTES_PER_TOKEN == 2 * 8 * 128 * 62 / 4 == 31_744
    # 48 query heads over 4 ranks, 2 x 128 FLOPs for QK and for PV a pair, 62 layers
    assert ATTENTION_FLOPS_PER_PAIR == 12 * 512 * 62


def test_level_root_finds_a_monotone_level_s_target_either_way_and_refuses_outside():
    assert level_root(lambda x: 2 * x, 3.0, (0.0, 10.0), 1e-9) == pytest.approx(1.5, abs=1e-8)
    assert level_root(lambda x: 10 - x, 4.0, (0.0, 10.0), 1e-9) == pytest.approx(6.0, abs=1e-8)
    with pytest.raises(ValueError, match="no value"):
        level_root(lambda x: x, 20.0, (0.0, 10.0), 1e-6)


def test_the_calibration_reads_the_c4_job_only_and_reproduces_it():
    """The simulated job at C = 4 (prefills inside it once) gives both measured C = 4 levels:
    the plain one to the step's search tolerance, the speculative one to the rate's (the
    job's tok/s moves about 1,300 tok/s a unit of alpha, so 1e-5 is 0.013 tok/s) plus the
    small steps its fixed random numbers make between neighbouring rates."""
    sc, decode_ms, alpha = calibrated()
    assert CALIBRATED_USERS == (4.0,) and 4 not in SCORED
    four = simulate(4)
    assert four.baseline_tok_s == pytest.approx(measured(PLAIN, 4), rel=1e-4)
    assert four.speculative_tok_s == pytest.approx(measured(EAGLE3, 4), rel=1e-3)
    assert sc.timing.decode_ms == decode_ms and 0.0 < alpha < 1.0
    assert sc.timing.cycle_overhead_ms == 0.0  # none beyond the derived passes (assumed)
    assert sc.hardware.gpu == "MI355X" and sc.hardware.gpus == pub.ROCMBLOG_MINIMAX_GPUS == 4
    assert sc.server.expert_parallel == 4
    assert sc.serving.token_budget == 8192 and sc.serving.prefix_caching is False
    assert sc.speculation.num_steps == 3
    # the job's time a token carries the prefills, so the batch-1 step is below it
    assert decode_ms < 1000.0 * 4 / measured(PLAIN, 4)
