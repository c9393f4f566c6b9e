"""One length at a time, lengths and acceptance keys in blocks are the same draws as
before (``sample(rng, 1)``, one key per request); the decode batch's table keeps its rows."""

from __future__ import annotations

import numpy as np
import pytest

from sim.binding.acceptance_model import acceptance_model
from sim.simulation.serving import ClosedLoop, Empirical, Fixed, LogNormal, Workload
from sim.simulation.serving.accept_lengths import accept_lengths
from sim.simulation.serving.counter_rng import counter_bits, draw_keys, weyl_term, weyl_terms
from sim.simulation.serving.decode_batch import DecodeBatch
from sim.simulation.serving.workload import (
    KEY_BLOCK,
    LENGTH_BLOCK,
    RATE_BLOCK,
    RequestSource,
    SourceStreams,
    refill_together,
)
from tests.helpers import MIXED
from tests.simulation.serving.helpers import scenario


@pytest.mark.parametrize(
    "lengths",
    [
        LogNormal(512.0, 0.5, 2902),
        LogNormal(40.0, 1.5, 60, min_tokens=20),  # both ends clipped often
        LogNormal(100.0, 0.0, 1000),
        Fixed(7),
        Empirical((3, 9, 27, 81)),
    ],
)
def test_one_length_is_a_sample_of_one(lengths):
    one, many = np.random.default_rng(5), np.random.default_rng(5)
    drawn = [lengths.sample_one(one) for _ in range(3000)]
    assert drawn == [int(lengths.sample(many, 1)[0]) for _ in range(3000)]
    assert all(type(v) is int for v in drawn)
    assert one.random() == many.random()  # the same draws consumed
    in_blocks = np.random.default_rng(5)
    blocks = [
        lengths.sample(in_blocks, LENGTH_BLOCK).tolist() for _ in range(3000 // LENGTH_BLOCK + 1)
    ]
    assert [v for block in blocks for v in block][:3000] == drawn  # drawn LENGTH_BLOCK at once


def test_users_refilled_together_draw_the_requests_they_draw_alone():
    """Classes, rates and thresholds of a mix's requests, every user's first block drawn
    at once: each user's requests are those it draws alone, to the bit."""
    acceptance = acceptance_model(scenario(MIXED).acceptance, 3)
    workload = Workload(ClosedLoop(5), LogNormal(50.0, 0.5, 400), requests=10)

    def users() -> list[RequestSource]:
        return [
            RequestSource(
                workload,
                acceptance,
                SourceStreams(*(np.random.default_rng((u, s)) for s in range(3))),
            )
            for u in range(5)
        ]

    together, alone = users(), users()
    refill_together(together)
    for a, b in zip(together, alone, strict=True):
        for _ in range(RATE_BLOCK + 3):  # past the first block: the streams agree
            x, y = a.next(), b.next()
            assert (x.request_class, x.output_tokens, x.key) == (
                y.request_class,
                y.output_tokens,
                y.key,
            )
            assert np.array_equal(x.thresholds, y.thresholds)
    classes = {a.next().request_class for a in together for _ in range(RATE_BLOCK)}
    assert classes == {0, 1}  # both classes drawn


def test_keys_in_blocks_are_one_raw_draw_per_request():
    n = 3 * KEY_BLOCK + 5
    acceptance = acceptance_model(scenario().acceptance, 3)
    workload = Workload(ClosedLoop(1), Fixed(10), requests=n)
    streams = SourceStreams(*(np.random.default_rng(s) for s in (1, 2, 3)))
    source = RequestSource(workload, acceptance, streams)
    keys = [source.next().key for _ in range(n)]
    one_at_a_time = np.random.default_rng(3)
    assert keys == [draw_keys(one_at_a_time, 1)[0] for _ in range(n)]
    assert all(isinstance(k, np.uint64) for k in keys)


@pytest.mark.parametrize("columns", range(7))
@pytest.mark.parametrize(("rows", "iterations"), [(1, 300), (5, 40), (70, 3)])
def test_accept_lengths_count_the_thresholds_each_draw_is_below(columns, rows, iterations):
    """L = 1 + #{j : U < T_j} for every row and cycle, whether counted column by column
    (a few columns), by one reduce, or without draws (no columns)."""
    rng = np.random.default_rng(columns + 10 * rows)
    keys = draw_keys(rng, rows)
    cycles = rng.integers(0, 1000, rows)
    thresholds = rng.integers(0, 2**32 + 1, (rows, columns))
    got = accept_lengths(weyl_terms(keys, cycles), thresholds, iterations)
    bits = counter_bits(keys[:, None], cycles[:, None] + np.arange(iterations))
    want = 1 + (bits[:, :, None] < thresholds[:, None, :]).sum(axis=2)
    assert got.dtype == np.int8 and got.shape == (rows, iterations)
    assert np.array_equal(got, want)


def test_the_batch_table_keeps_rows_through_growth_and_compaction():
    batch = DecodeBatch(3, capacity=2)
    rows = []
    for i in range(9):
        key = np.uint64(2**64 - 1 - i)  # above 2^63: kept as its 64 bits
        thresholds = np.array([i, 2**32 - 1, 7, 99])  # one column more than kept
        last = -1.0 if i % 2 else 1e300 * (i + 1) / 10
        batch.append(100 + i, key, thresholds, 50 - i, 1000 * i, i, last)
        rows.append((100 + i, key, [i, 2**32 - 1, 7], 50 - i, 1000 * i, i, last))

    def check(expected):
        assert batch.size == len(expected)
        assert batch.ids.tolist() == [r[0] for r in expected]
        assert batch.weyl.dtype == np.uint64 and batch.weyl.tolist() == [
            weyl_term(int(r[1]), r[5]) for r in expected
        ]
        assert batch.thresholds.tolist() == [r[2] for r in expected]
        assert batch.need.tolist() == [r[3] for r in expected]
        assert batch.context.tolist() == [r[4] for r in expected]
        assert batch.cycles.tolist() == [r[5] for r in expected]
        assert batch.last_ms.tolist() == [r[6] for r in expected]
        odd = np.arange(1, batch.size, 2)  # a completion's rows: [id, cycles] each
        assert batch.ids_cycles(odd) == [[expected[i][0], expected[i][5]] for i in odd]

    check(rows)
    keep = np.array([i % 3 != 1 for i in range(9)])
    batch.keep(keep)
    rows = [r for r, k in zip(rows, keep, strict=True) if k]
    check(rows)
    # writing through the attributes writes the rows
    batch.context += np.arange(batch.size)
    batch.last_ms.fill(2.5)
    batch.need[...] = batch.need - 1
    rows = [(r[0], r[1], r[2], r[3] - 1, r[4] + j, r[5], 2.5) for j, r in enumerate(rows)]
    check(rows)
    batch.advance(3)  # three more cycles: the next draws are those of cycle + 3
    rows = [(*r[:5], r[5] + 3, r[6]) for r in rows]
    check(rows)
    batch.keep(np.zeros(batch.size, dtype=bool))
    check([])


@pytest.mark.parametrize("removed", [[0], [2, 3], [1, 4, 8], [0, 2, 5, 6, 7, 8], list(range(9))])
def test_removing_rows_keeps_the_others_in_order(removed):
    """``remove`` (shifts for a few rows, a masked copy for more) keeps the rows ``keep``
    keeps."""
    shifted, masked = DecodeBatch(2, capacity=4), DecodeBatch(2, capacity=4)
    for batch in (shifted, masked):
        for i in range(9):
            batch.append(i, np.uint64(7 * i), np.array([i, -i]), 10 + i, 20 * i, i, 0.5 * i)
    shifted.remove(removed)
    masked.keep(np.array([i not in removed for i in range(9)]))
    assert shifted.size == masked.size == 9 - len(removed)
    for name in DecodeBatch._FIELDS:
        assert np.array_equal(getattr(shifted, name), getattr(masked, name)), name
    assert shifted.ids.tolist() == [i for i in range(9) if i not in removed]


def test_held_rows_are_the_rows_append_writes():
    """``extend_held`` (a run of arrivals that decode at once, growing past the capacity)
    writes the rows ``append`` writes, and its held columns."""
    rows = [
        (i, np.uint64(2**64 - 1 - 3 * i), np.array([i, 2 * i, 5]), 9 + i, 4 * i) for i in range(7)
    ]
    one, held = DecodeBatch(2, capacity=2), DecodeBatch(2, capacity=2)
    for rid, key, thresholds, n_out, n_in in rows:
        one.append(rid, key, thresholds, n_out, n_in, 0, -1.0)
    for part in (rows[:1], rows[1:]):
        rid, key, thresholds, n_out, n_in = (list(c) for c in zip(*part, strict=True))
        held.extend_held(rid, key, thresholds, n_in, n_out, [1] * len(part), rid, 2.5)
    assert held.size == one.size == 7 and held.fresh == one.fresh == 7
    for name in DecodeBatch._FIELDS:
        assert np.array_equal(getattr(held, name), getattr(one, name)), name
    held.mark_first(4.0)
    assert held.held_rows(np.array([0, 6])) == [
        (0, 0, 2.5, 4.0, 0, 9, 1, 0),
        (6, 0, 2.5, 4.0, 24, 15, 1, 6),
    ]
