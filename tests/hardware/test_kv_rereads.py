"""The verify's KV re-reads (``PassPhysics.kv_rereads``): the KV term by hand, every
evaluation path the same, and the scenario key reaching the verify only."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from sim.hardware.batched import BatchedPass
from sim.hardware.compute_curve import ComputeCurve
from sim.model.pass_curves import pass_load
from tests.conftest import SEED
from tests.hardware.test_batched import physics

KV_BYTES = 70_272.0


def _bare(share: float) -> BatchedPass:
    p = dataclasses.replace(physics(SEED, name="verify", kv=KV_BYTES, attn=2e6), kv_rereads=share)
    return BatchedPass(p, ComputeCurve(np.array([0.0]), np.array([0.0])))


def test_the_kv_term_moves_from_one_read_to_one_read_a_query_row_by_hand():
    once, row, third = _bare(0.0), _bare(1.0), _bare(1.0 / 3.0)
    gpu = once.physics.hardware.gpu
    assert gpu is not None
    kv_ms = KV_BYTES / (gpu.memory_bandwidth_gbps * 1e6)
    # 8 requests of 4 tokens over contexts summing to 8 x 1,000
    tokens, kv, pairs = pass_load(8, 4, np.array([8000.0]))
    assert float(kv[0]) == 8032.0 and float(pairs[0]) == 32_080.0
    base = float(once.work_ms(tokens, kv, pairs)[0])
    # once a query row: each row reads its own c + j keys, the pairs: 24,048 KV tokens more
    assert float(row.work_ms(tokens, kv, pairs)[0]) - base == pytest.approx(
        (32_080.0 - 8032.0) * kv_ms, rel=1e-12
    )
    # q blocks of 2 rows (AITER's unified attention at GQA 6): c + 2 and c + 4 a request,
    # (2c + 6) - (c + 4) = c + 2 = 1/3 of the per-row re-reads 3c + 6
    assert float(third.work_ms(tokens, kv, pairs)[0]) - base == pytest.approx(
        8 * (1000.0 + 2.0) * kv_ms, rel=1e-12
    )


def test_a_one_token_pass_and_share_zero_are_unchanged():
    once, row = _bare(0.0), _bare(1.0)
    tokens, kv, pairs = pass_load(16, 1, np.array([16 * 700.0, 16 * 3000.0]))
    np.testing.assert_allclose(row.work_ms(tokens, kv, pairs), once.work_ms(tokens, kv, pairs))
    plain = BatchedPass(
        physics(SEED, name="verify", kv=KV_BYTES, attn=2e6),
        ComputeCurve(np.array([0.0]), np.array([0.0])),
    )
    tokens, kv, pairs = pass_load(8, 4, np.array([8000.0]))
    assert np.array_equal(once.work_ms(tokens, kv, pairs), plain.work_ms(tokens, kv, pairs))


def test_the_scalar_and_the_array_paths_agree():
    row = _bare(1.0)
    tokens, kv, pairs = pass_load(8, 4, np.array([8000.0]))
    array = float(row.pass_ms(tokens, kv, pairs, 8)[0])
    scalar = row.scalar_pass(tokens, 8)(float(kv[0]), float(pairs[0]))
    assert scalar == pytest.approx(array, rel=1e-12)
    with pytest.raises(ValueError, match="kv_rereads"):
        dataclasses.replace(row.physics, kv_rereads=1.5)


def test_the_scenario_key_reaches_the_verify_only_and_keeps_batch_one():
    from sim.binding.bound import bind
    from sim.binding.serving_cost import serving_cost
    from sim.scenario.load import load_scenario

    def cost(sets):
        return serving_cost(bind(load_scenario(SEED, sets)), kv_bytes_per_token=KV_BYTES)

    off, on = cost([]), cost(["serving.verify_kv_rereads=1"])
    assert on.curves.verify.physics.kv_rereads == 1.0
    assert on.curves.decode.physics.kv_rereads == 0.0
    assert off.curves.verify.physics.kv_rereads == 0.0
    k, context = 3, np.array([2000.0, 8000.0])
    # batch 1 is anchored: the same cycle at the reference context
    ref = np.array([on.reference_context_tokens])
    assert on.decode_ms(1, k, ref) == pytest.approx(off.decode_ms(1, k, ref), rel=1e-12)
    # plain decoding does not move; a batch's verify costs more
    assert np.array_equal(on.decode_ms(32, 0, context), off.decode_ms(32, 0, context))
    assert np.all(on.decode_ms(32, k, context) > off.decode_ms(32, k, context))
