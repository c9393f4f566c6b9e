"""Qwen3-8B-FP8 + an EAGLE-3 tree (4/4/16) on one H100 SXM, SGLang v0.5.3.post3, 100 ShareGPT
requests at C = 1-8 and a same-server sweep at C = 4: the source's figures, the model's
shapes, and a calibration on the tree's C = 1 job only."""

from __future__ import annotations

import pytest

from sim.validation import serving_data as pub
from sim.validation.h100_qwen3_8b_tree_cases import (
    CALIBRATED_USERS,
    CHAIN,
    DRAFT_PARAMS,
    LAYER_PARAMS,
    LAYER_PARAMS_BF16,
    PLAIN,
    SCORED,
    SWEPT_TREE,
    TREE,
    accept_length_c1,
    calibrated,
    measured,
    scenario,
    simulate,
    top1_rate,
)
from sim.validation.tree_cases import PRIOR


@pytest.mark.parametrize(
    ("label", "users", "tok_s"),
    [
        (TREE, 1, 335.15),
        (TREE, 4, 1046.22),
        (TREE, 8, 1638.82),
        (SWEPT_TREE, 4, 979.24),
        (PLAIN, 4, 657.83),
        (CHAIN, 4, 826.28),
        ("tree 8/4/16", 4, 811.85),
    ],
)
def test_the_scored_figures_are_the_page_s(label, users, tok_s):
    assert measured(label, users) == tok_s


def test_the_sweep_has_no_figure_beyond_c4_and_its_chain_is_sglang_s_chain_of_2():
    with pytest.raises(KeyError):
        measured(PLAIN, 2)
    # --speculative-num-steps 2 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4:
    # SGLang sets num_draft_tokens = num_steps + 1 when topk is 1
    assert pub.GPUSTACK_SWEEP_C4[CHAIN][:3] == (2, 1, 3)
    assert pub.GPUSTACK_SWEEP_C4[PLAIN][:3] == (0, 0, 0)


def test_the_job_is_the_run_s_100_requests_at_their_means():
    assert pub.GPUSTACK_REQUESTS == 100
    assert pytest.approx(232.6) == pub.GPUSTACK_INPUT_TOKENS
    assert pytest.approx(220.61) == pub.GPUSTACK_OUTPUT_TOKENS
    sc = scenario(8.0, 0.7, pub.GPUSTACK_TREE)
    assert (sc.workload.input_tokens, sc.workload.output_tokens) == (233, 221)


def test_qwen3_8b_shapes_and_fp8_weights():
    """config.json: q, o 4096 x 4096, k, v 4096 x 1024, MLP 3 x 4096 x 12288 a layer; FP8 is
    half the bytes of BF16 (plus one FP32 scale a 128 x 128 block)."""
    assert LAYER_PARAMS == 192_937_984
    assert pytest.approx(LAYER_PARAMS / 2, rel=3e-4) == LAYER_PARAMS_BF16
    sc = scenario(8.0, 0.7, pub.GPUSTACK_TREE)
    assert sc.model.kv_bytes_per_token == 36 * 8 * 128 * 2 * 2
    assert sc.model.lm_head_params == 151_936 * 4096
    assert 0.35e9 < DRAFT_PARAMS < 0.45e9  # one EAGLE-3 layer at 4,096 with a 32k head


def test_tree_and_chain_scenarios_draft_what_the_page_ran():
    tree = scenario(8.0, 0.7, pub.GPUSTACK_TREE)
    assert (tree.speculation.num_steps, tree.speculation.topk) == (4, 4)
    assert tree.speculation.num_draft_tokens == 16
    assert tree.acceptance.rank_profile == PRIOR
    chain = scenario(8.0, 0.7, (2, 1, 3))
    assert chain.speculation.num_steps == 2 and chain.speculation.topk in (None, 1)
    assert chain.acceptance.alpha == 0.7 and chain.acceptance.rank_profile is None


def test_the_accept_length_is_mean_itl_over_mean_tpot_at_c1():
    assert accept_length_c1() == pytest.approx(8.74 / 2.67)


def test_the_calibration_reads_the_c1_job_only_and_reproduces_it():
    """The simulated tree job of C = 1 gives the measured tok/s to the step's search
    tolerance plus the small steps fixed random numbers make between neighbouring steps."""
    decode_ms, top1 = calibrated()
    assert CALIBRATED_USERS == (1.0,) and 1 not in SCORED
    assert top1 == top1_rate() and 0.0 < top1 < 1.0
    one = simulate(1)
    assert one.speculative_tok_s == pytest.approx(measured(TREE, 1), rel=2e-3)
    sc = scenario(decode_ms, top1, pub.GPUSTACK_TREE)
    assert sc.timing.cycle_overhead_ms == 0.0  # none beyond the derived passes


def test_figures_over_the_uncalibrated_plain_arm_stay_out_of_the_model_error_fit():
    """The model-error fit counts a figure's distance from the loads that calibrate its own
    arm; no plain run of this server calibrates anything, so plain decoding's level and the
    gains over it carry no calibrated load (scored, not fitted), while the tree's and the
    chain's levels and the tree / chain ratios count from the tree's C = 1."""
    from sim.validation.h100_qwen3_8b_tree_cases import _level, _ratio

    assert _level(PLAIN, 4, 600.0, 1.0, "plain").calibrated_loads == ()
    assert _level(TREE, 4, 1000.0, 1.0, "speculative").calibrated_loads == CALIBRATED_USERS
    assert _level(CHAIN, 4, 800.0, 1.0, "speculative").calibrated_loads == CALIBRATED_USERS
    assert _ratio("q", "f", 1.2, 1.3, 0.01).calibrated_loads == CALIBRATED_USERS
    assert _ratio("q", "f", 1.2, 1.3, 0.01, ()).calibrated_loads == ()
