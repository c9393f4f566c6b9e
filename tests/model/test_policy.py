"""Speculation policies and scheduler configuration."""

from __future__ import annotations

import pytest

from sim.model.policy import DisableAbove, FixedK, KTable, k_lookup
from sim.simulation.serving.scheduler import SchedulerConfig


def test_vllm_table_rules():
    """vllm dynamic_speculative_decoding.md: inclusive ranges from 1, gaps inherit the
    previous K, batch sizes past the last range use the last K."""
    docs = KTable(((1, 16, 5), (17, 32, 4), (33, 64, 3), (65, 128, 1), (129, 512, 0)))
    assert [docs.k_for_batch(b) for b in (1, 16, 17, 32, 33, 64, 65, 128, 129, 600)] == [
        5,
        5,
        4,
        4,
        3,
        3,
        1,
        1,
        0,
        0,
    ]
    gappy = KTable(((1, 4, 3), (9, 12, 1)))
    assert [gappy.k_for_batch(b) for b in (4, 5, 8, 9, 13, 100)] == [3, 3, 3, 1, 1, 1]
    assert docs.max_k == 5


@pytest.mark.parametrize(
    "rows", [(), ((2, 4, 3),), ((1, 4, 3), (3, 8, 2)), ((1, 4, -1),), ((1, 4, 3), (6, 5, 1))]
)
def test_bad_tables_are_refused(rows):
    with pytest.raises(ValueError):
        KTable(rows)


def test_disable_above_and_fixed():
    p = DisableAbove(3, 8)
    assert [p.k_for_batch(b) for b in (1, 8, 9)] == [3, 3, 0]
    assert k_lookup(FixedK(2), 3) == [0, 2, 2, 2]


def test_chunked_budget_must_hold_a_full_decode_batch():
    config = SchedulerConfig(max_running_requests=64, batching="chunked", token_budget=200)
    with pytest.raises(ValueError, match="token_budget"):
        config.check_policy(FixedK(3))
    config.check_policy(DisableAbove(3, 40))  # 40 x 4 + 24 x 1 = 184 <= 200


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_running_requests": 0},
        {"max_running_requests": 4, "token_budget": 0},
        {"max_running_requests": 4, "kv_capacity_tokens": 0},
        {"max_running_requests": 4, "batching": "eager"},
    ],
)
def test_bad_scheduler_settings(kwargs):
    with pytest.raises(ValueError):
        SchedulerConfig(**kwargs)
