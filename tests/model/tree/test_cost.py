"""Tree cycle cost: topk = 1 is today's chain cycle exactly; the terms by hand."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sim.model.cycle import PassTimes, cycle_cost
from sim.model.tree.cost import draft_over_ms, tree_cycle_cost

PASSES = PassTimes(
    decode_ms=10.0,
    verify_ms=20.0,
    verify_tokens=4,
    verify_ms_per_extra_token=0.4,
    draft_step_ms=1.1,
    draft_extend_ms=2.3,
    cycle_overhead_ms=0.7,
)
TABLED = dataclasses.replace(PASSES, verify_table_ms=(15.0, 16.0, 18.5, 19.0))


@given(st.integers(1, 40), st.sampled_from([PASSES, TABLED]))
def test_topk_one_is_the_chain_cycle_exactly(k, passes):
    assert tree_cycle_cost(passes, k, 1, k + 1) == cycle_cost(passes, k)


def test_tree_cycle_by_hand():
    cost = tree_cycle_cost(PASSES, 4, 3, 10, draft_ms_per_extra_token=0.05)
    assert cost.draft_ms == pytest.approx(3 * (1.1 + 2 * 0.05))
    assert cost.verify_ms == pytest.approx(20.0 + 6 * 0.4)
    assert cost.extend_ms == 2.3 and cost.overhead_ms == 0.7


def test_draft_pass_table_and_extension():
    table = (1.0, 1.1, 1.3)
    assert draft_over_ms(9.9, 2, table_ms=table) == 1.1
    assert draft_over_ms(9.9, 5, table_ms=table) == pytest.approx(1.3 + 2 * 0.2)
    assert draft_over_ms(1.5, 1, ms_per_extra_token=0.3) == 1.5
    with pytest.raises(ValueError, match="at least 1 token"):
        draft_over_ms(1.0, 0)


def test_bad_tree_cycle():
    with pytest.raises(ValueError, match="num_draft_tokens >= 2"):
        tree_cycle_cost(PASSES, 2, 2, 1)
