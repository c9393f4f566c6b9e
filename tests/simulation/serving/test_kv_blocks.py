"""vLLM's whole KV blocks in the serving engine (sim/model/kv_blocks.py): a running
request holds its context and lookahead slots rounded up to whole blocks, at admission,
as it grows, and when it leaves or is preempted."""

from __future__ import annotations

import numpy as np
import pytest

from sim.model.kv_blocks import whole_blocks, whole_blocks_array
from sim.simulation.serving import ClosedLoop, FixedK
from sim.simulation.serving.block_plan import _block_growth, plan_block
from sim.simulation.serving.decode_batch import DecodeBatch
from sim.simulation.serving.engine import run_replication
from sim.simulation.serving.simulate import serving_streams
from tests.simulation.serving.helpers import plan


@pytest.mark.parametrize(
    ("tokens", "block", "held"),
    [(0, 16, 0), (1, 16, 16), (16, 16, 16), (17, 16, 32), (9_601, 800, 10_400), (5, 1, 5)],
)
def test_whole_blocks_by_hand(tokens, block, held):
    assert whole_blocks(tokens, block) == held
    assert whole_blocks_array(np.array([tokens]), block).tolist() == [held]


def test_a_block_holds_at_least_one_token():
    with pytest.raises(ValueError):
        whole_blocks(3, 0)


def test_a_running_request_holds_its_context_and_slots_in_whole_blocks_by_hand():
    """k = 3: 4 lookahead slots. In blocks of 16, 12 tokens of context hold 16 + 0 = 16
    (12 + 4 = 16), 13 hold 32, 28 hold 32, 29 hold 48; per token, context + 4."""
    blocks = plan(ClosedLoop(2), kv_capacity_tokens=10_000, kv_block_tokens=16).check(FixedK(3))
    assert (blocks.lookahead, blocks.block_tokens) == (4, 16)
    assert [blocks.held(c) for c in (12, 13, 28, 29)] == [16, 32, 32, 48]
    tokens = plan(ClosedLoop(2), kv_capacity_tokens=10_000).check(FixedK(3))
    assert [tokens.held(c) for c in (12, 13, 28, 29)] == [16, 17, 32, 33]
    # no KV limit: nothing is charged, so no blocks either
    assert plan(ClosedLoop(2), kv_block_tokens=16).check(FixedK(3)).block_tokens == 1


def test_the_plain_server_keeps_its_own_block():
    p = plan(
        ClosedLoop(2),
        kv_capacity_tokens=10_000,
        kv_block_tokens=800,
        plain_kv_block_tokens=784,
    )
    assert p.check(FixedK(2)).block_tokens == 800
    assert p.check(FixedK(0)).block_tokens == 784


def test_the_plans_kv_growth_is_each_rows_new_blocks_by_hand():
    """Two rows of 10 and 15 tokens with 4 slots (14 and 19 tokens: one and two blocks of
    16), one token an iteration: the first row opens a block before its fourth iteration
    (17 tokens), the second before its fifteenth; the growth before iterations 0-4 is
    0, 0, 0, 16, 16 tokens, so 15 free tokens cut the plan after 3 iterations."""
    cost = plan(ClosedLoop(2)).cost
    batch = DecodeBatch(0, capacity=2)
    for rid, context in ((0, 10), (1, 15)):
        batch.append(rid, np.uint64(rid + 1), np.zeros(0), 100, context, 0, 0.0)
    whole = plan_block(batch, 0, 5, 1_000.0, cost, block_tokens=16, slot_tokens=4)
    assert whole.kv_growth.tolist() == [0, 0, 0, 16, 16]
    assert whole.growth.tolist() == [0, 2, 4, 6, 8]  # in tokens
    assert plan_block(batch, 0, 5, 15.0, cost, block_tokens=16, slot_tokens=4).iterations == 3
    per_token = plan_block(batch, 0, 5, 15.0, cost)
    assert per_token.kv_growth is None and per_token.iterations == 5


def _largest_batch(**scheduler) -> int:
    p = plan(ClosedLoop(12), output=200, input_tokens=100, requests=24, **scheduler)
    rec = run_replication(p, p.check(FixedK(3)), serving_streams(np.random.SeedSequence(5)))
    return int(np.flatnonzero(rec.batch_time_ms).max())


def test_whole_blocks_admit_fewer_requests_into_the_same_pool():
    """Prompts of 100 tokens decoded from admission (prefill skipped) with 4 lookahead
    slots: per token a request holds 104, so 1,040 tokens admit 10; in blocks of 16 it
    holds 112, and 9 fit (1,008), the tenth does not (1,120)."""
    assert _largest_batch(kv_capacity_tokens=1_040) == 10
    assert _largest_batch(kv_capacity_tokens=1_040, kv_block_tokens=16) == 9


@pytest.mark.parametrize("block", [2, 16, 800])
def test_the_growth_left_out_rows_is_the_growth_of_every_row(block):
    """``_block_growth`` sums only the rows that open a block; every row's own
    B x ceil((start + emitted before) / B) - B x ceil(start / B), summed, is the same."""
    rng = np.random.default_rng(block)
    for _ in range(50):
        b, n = int(rng.integers(1, 40)), int(rng.integers(1, 30))
        start = rng.integers(0, 3 * block, b).astype(np.int64)
        lengths = rng.integers(1, 9, (b, n)).astype(np.int8)
        before = np.cumsum(lengths, axis=1, dtype=np.int64) - lengths
        every = (
            whole_blocks_array(start[:, None] + before, block)
            - whole_blocks_array(start, block)[:, None]
        )
        np.testing.assert_array_equal(_block_growth(start, lengths, block), every.sum(axis=0))
