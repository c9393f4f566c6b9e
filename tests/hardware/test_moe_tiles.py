"""Fused-MoE tile padding (SGLang's default config): rows by hand, and what a pass is charged."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from sim.hardware.batched import BatchedPass
from sim.hardware.compute_curve import ComputeCurve
from sim.hardware.experts import (
    TILE_FLOOR_ROWS,
    FusedMoeKernel,
    padded_expert_rows,
    sglang_default_block_rows,
    tile_extra_rows,
)
from tests.conftest import SEED
from tests.hardware.test_batched import physics


def test_block_rows_follow_sglangs_default_config():
    # get_default_config, unquantized experts: 16 rows when M <= E, 64 beyond
    assert sglang_default_block_rows(1, 64) == TILE_FLOOR_ROWS == 16
    assert sglang_default_block_rows(64, 64) == 16
    assert sglang_default_block_rows(65, 64) == 64
    with pytest.raises(ValueError):
        sglang_default_block_rows(4, 0)


def test_128_tokens_top4_of_64_experts_by_hand():
    # each expert's rows r ~ Binomial(128, 1/16), mean 8; P(r > 16) = 0.00233 and
    # P(r > 64) < 1e-30 (the binomial tail, by hand with the exact sum below)
    miss = (15 / 16) ** 128
    tail_16 = 1.0 - sum(
        math.comb(128, r) * (1 / 16) ** r * (15 / 16) ** (128 - r) for r in range(17)
    )
    assert padded_expert_rows(64, 4, 128, 0.0, 64) == pytest.approx(64 * 64 * (1 - miss), rel=1e-9)
    assert padded_expert_rows(64, 4, 128, 0.0, 16) == pytest.approx(
        16 * 64 * (1 - miss + tail_16), rel=1e-9
    )
    # about 4,095 rows at 64 against 1,026 at the floor: 3,068 more, against 512 pairs
    assert tile_extra_rows(64, 4, 128, 0.0) == pytest.approx(
        64 * 64 * (1 - miss) - 16 * 64 * (1 - miss + tail_16), rel=1e-9
    )


def test_every_token_on_every_expert_pads_exactly():
    # top-4 of 4: each expert gets all M = 10 rows: ceil(10 / B) B each
    assert padded_expert_rows(4, 4, 10, 0.0, 16) == pytest.approx(4 * 16, rel=1e-12)
    assert padded_expert_rows(4, 4, 10, 0.0, 64) == pytest.approx(4 * 64, rel=1e-12)
    assert padded_expert_rows(4, 4, 70, 0.0, 64) == pytest.approx(4 * 128, rel=1e-12)
    assert tile_extra_rows(4, 4, 10, 0.0) == pytest.approx(4 * 64 - 4 * 16, rel=1e-12)


@pytest.mark.parametrize("skew", [0.0, 0.65, 1.3])
def test_blocks_of_one_row_are_the_pairs_and_no_padding_at_or_below_the_experts(skew):
    assert padded_expert_rows(64, 4, 200, skew, 1) == pytest.approx(800.0, rel=1e-9)
    assert padded_expert_rows(64, 4, 0, skew, 64) == 0.0
    for tokens in (1, 16, 64):
        assert tile_extra_rows(64, 4, tokens, skew) == 0.0
    # beyond E the padding is positive and below what a 64-row block per expert could add
    extra = tile_extra_rows(64, 4, 128, skew)
    assert 0.0 < extra < 64 * (64 - 16)


def test_a_pass_is_charged_the_padded_rows_as_pairs_only_beyond_the_experts():
    base = physics(SEED)
    kernel = FusedMoeKernel(30.0, 0.5, 0.8, pair_flop_efficiency=0.25)
    off = dataclasses.replace(base, moe_kernel=kernel, expert_skew=0.65)
    on = dataclasses.replace(off, moe_tiles="sglang-default")
    curve = ComputeCurve(np.array([0.0]), np.array([0.0]))
    plain, tiled = BatchedPass(off, curve), BatchedPass(on, curve)
    w, gpu, gpus = on.weights, on.hardware.gpu, on.hardware.gpus
    assert w.experts is not None and w.experts_per_token is not None
    peak_per_ms = gpu.bf16_tflops * 1e9
    for tokens in (1, 4, w.experts):  # the default block is the floor: nothing changes
        assert tiled._token_terms(tokens) == plain._token_terms(tokens)
    tokens = 4 * w.experts
    rows = tile_extra_rows(w.experts, w.experts_per_token, tokens, 0.65)
    extra_ms = 2 * w.moe_layers * w.expert_params * rows / 0.25 / gpus / peak_per_ms
    assert tiled._token_terms(tokens)[1] - plain._token_terms(tokens)[1] == pytest.approx(
        extra_ms, rel=1e-9
    )
    assert tiled._token_terms(tokens)[0] == plain._token_terms(tokens)[0]  # reads unchanged
    assert extra_ms > 0
    with pytest.raises(ValueError, match="moe_tiles"):
        dataclasses.replace(off, moe_tiles="tuned")


def test_the_scenario_key_reaches_the_serving_passes_and_keeps_batch_one():
    from sim.binding.bound import bind
    from sim.binding.serving_cost import serving_cost
    from sim.scenario.load import load_scenario

    def cost(sets):
        scenario = load_scenario(SEED, sets)
        return serving_cost(bind(scenario), kv_bytes_per_token=70_000.0)

    off, on = cost([]), cost(["serving.moe_tiles=sglang-default"])
    assert on.curves.verify.physics.moe_tiles == "sglang-default"
    assert off.curves.verify.physics.moe_tiles == "none"
    experts = on.curves.verify.physics.weights.experts
    assert experts is not None
    k, context = 2, np.array([1000.0, 4000.0])
    for users in (1, experts // (k + 1)):  # at most E verify tokens: the same cost
        assert on.decode_ms(users, k, context) == pytest.approx(
            off.decode_ms(users, k, context), rel=1e-12
        )
    # E requests x 3 tokens > E: the verify's rows padded to 64-row blocks
    assert np.all(on.decode_ms(experts, k, context) > off.decode_ms(experts, k, context))
