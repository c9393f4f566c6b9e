"""The server's parts by hand: how many iterations a block plans (block_size.py), how
many of them no arrival can cut, the KV a request and decode rows hold and the growth
reserved with its preemptions (kv_ledger.py), prompt chunks advanced (prefills.py)."""

from __future__ import annotations

import numpy as np
import pytest

from sim.model.policy import FixedK
from sim.simulation.serving.block_size import (
    BLOCK_ELEMENTS,
    MAX_BLOCK,
    block_iterations,
    uncut_iterations,
)
from sim.simulation.serving.kv_ledger import KvLedger
from sim.simulation.serving.plan import Drafting
from sim.simulation.serving.prefills import Prefilling, advance_chunks, prefill_chunks


def test_a_request_that_may_finish_next_plans_one_iteration():
    """The fewest tokens still needed (3) within one iteration's most (3): one."""
    assert block_iterations(3, 3, 10, 10, 64, [], 0.0, 1.0) == 1
    assert block_iterations(4, 3, 10, 10, 64, [], 0.0, 1.0) == 4  # 2 x 4 // 3 + 1 = 3 -> MIN


def test_a_block_is_twice_the_iterations_to_the_next_completion_within_its_bounds():
    """100 tokens at up to 3 an iteration: 2 x 100 // 3 + 1 = 67 iterations; 1,000 rows
    cap it at BLOCK_ELEMENTS // 1000 = 32; 10,000 tokens at 1 row at MAX_BLOCK."""
    assert block_iterations(100, 3, 10, 10, 64, [], 0.0, 1.0) == 67
    assert BLOCK_ELEMENTS // 1000 == 32
    assert block_iterations(100, 3, 1000, 1000, 2000, [], 0.0, 1.0) == 32
    assert block_iterations(10_000, 3, 1, 1, 64, [], 0.0, 1.0) == MAX_BLOCK


def test_a_block_stops_at_the_next_announced_arrival_only_when_a_slot_is_free():
    """Iterations of 2 ms from 10 ms, an arrival announced at 31 ms: (31 - 10) / 2 =
    10.5, 11 iterations; all 64 slots held: the arrival cannot join, 67."""
    assert block_iterations(100, 3, 10, 10, 64, [31.0, 50.0], 10.0, 2.0) == 11
    assert block_iterations(100, 3, 10, 64, 64, [31.0, 50.0], 10.0, 2.0) == 67
    assert block_iterations(100, 3, 10, 10, 64, [10.0], 10.0, 2.0) == 1  # at least one


def test_uncut_iterations_end_before_the_next_arrival_that_could_join():
    """Ends 1, 2, 3, 4 ms from 0: an arrival at 2.5 ms cuts after the second iteration,
    one at exactly 2 ms after the first (its end is the arrival's instant); only the last
    end reaching it, or no arrival that could join, leaves the block whole."""
    durations = np.ones(4)
    assert uncut_iterations(durations, 0.0, 2.5) == 2
    assert uncut_iterations(durations, 0.0, 2.0) == 1
    assert uncut_iterations(durations, 0.0, 3.5) == 4
    assert uncut_iterations(durations, 0.0, None) == 4


def _ledger(capacity: int | None, lookahead: int = 3, block: int = 1) -> KvLedger:
    policy = FixedK(2)
    return KvLedger(Drafting(policy, (2, 2), (), lookahead, capacity, 0, block))


def test_requests_hold_context_and_lookahead_or_whole_blocks():
    """Per token: context + 3 lookahead; in blocks of 16 with 3 slots: 14 + 3 = 17 ->
    32 tokens, 13 + 3 = 16 -> 16. Without a KV limit, per token whatever the block."""
    assert _ledger(100).holds(10) == 13
    assert _ledger(100).rows_hold(np.array([10, 20])) == 36
    blocks = _ledger(1000, block=16)
    assert (blocks.holds(14), blocks.holds(13)) == (32, 16)
    assert blocks.rows_hold(np.array([14, 13])) == 48
    unlimited = _ledger(None, block=16)
    assert (unlimited.block, unlimited.holds(14), unlimited.free()) == (1, 17, float("inf"))


@pytest.mark.parametrize(("capacity", "first_preempted", "free_after"), [(100, 3, 31), (67, 2, 31)])
def test_growth_is_reserved_or_the_newest_rows_preempted(capacity, first_preempted, free_after):
    """Rows of 8, 18, 28 tokens hold 63 and grow by 2 each. With 100 tokens the 6 fit
    (37 free, 31 left). With 67 (4 free) they do not: the newest row gives back what it
    held (28 + 3 = 31) and reserves nothing; 4 fit in 4 + 31, 31 left."""
    ledger = _ledger(capacity)
    assert ledger.cache is not None
    ledger.cache.get(63)
    assert ledger.reserve_growth(np.array([10, 20, 30]), np.array([2, 2, 2])) == first_preempted
    assert ledger.cache.level == free_after


def test_growth_in_whole_blocks_charges_the_blocks_new_tokens_open():
    """Blocks of 16, 3 slots: a row from 12 to 14 tokens of context (15 -> 17 with its
    slots) opens a block, 16 tokens; one from 2 to 4 (5 -> 7) opens none."""
    ledger = _ledger(100, block=16)
    assert ledger.cache is not None
    ledger.cache.get(32)
    assert ledger.reserve_growth(np.array([14, 4]), np.array([2, 2])) == 2
    assert ledger.cache.level == 100 - 32 - 16


def test_chunks_advance_and_complete_prompts_in_order():
    """Prompts of 4 and 5 tokens, budget 5: chunks of 4 and 1; the first is complete,
    the second has 4 left; a budget of 8 then completes it."""
    states = [Prefilling(None, 0, 4), Prefilling(None, 0, 5)]
    chunks, _ = prefill_chunks(states, 5)
    assert advance_chunks(chunks) == [states[0]]
    assert (states[1].done, states[1].remaining) == (1, 4)
    assert advance_chunks(prefill_chunks(states[1:], 8)[0]) == [states[1]]
    assert (states[1].done, states[1].remaining) == (5, 0)
