"""The rows and delivery gaps a replication keeps: exactly those of a straightforward
reference (every row until ``KEEP_REQUESTS``, then the rows whose index is a multiple of
a doubling stride; every gap until ``KEEP_GAPS``, then none) at sizes across the limits,
in storage whose size in bytes is bounded by the limits and follows the rows kept."""

from __future__ import annotations

import numpy as np
import pytest

from sim.simulation.serving import kept_rows as records_module
from sim.simulation.serving.kept_rows import INT_COLUMNS, ROW_COLUMNS, KeptGaps, KeptRows
from sim.simulation.serving.sketch import StreamedStat

KEEP, CHUNK = records_module.KEEP_REQUESTS, records_module.CHUNK
#: Bytes of a kept row (index int64, 5 times float64, 6 counts int32) and of a kept gap.
ROW_BYTES, GAP_BYTES = 8 + 5 * 8 + 6 * 4, 16


def _rows(n: int, seed: int) -> np.ndarray:
    """(n, columns) rows in completion order (arrival order shuffled within windows of
    500): times with fractions, counts up to 2^31 - 1."""
    rng = np.random.default_rng(seed)
    index = np.arange(n, dtype=np.int64)
    for lo in range(0, n, 500):
        rng.shuffle(index[lo : lo + 500])
    out = np.empty((n, len(ROW_COLUMNS)))
    out[:, 0] = index
    out[:, 1:6] = np.cumsum(rng.exponential(3.7, (n, 5)), axis=0) + rng.random((n, 5))
    out[:, 6:] = rng.integers(0, 2**31, (n, len(INT_COLUMNS)))
    out[::97, 6:] = 2**31 - 1  # the largest count kept exactly
    return out


def _reference(rows: np.ndarray, keep: int, chunk: int) -> tuple[np.ndarray, int]:
    """The kept rows, sorted by index, and the stride: chunks of ``chunk`` rows in
    completion order, each sampled by the stride and appended to everything kept; while
    more than ``keep`` are kept, the stride doubles and the kept rows are re-sampled."""
    kept, stride = np.empty((0, rows.shape[1])), 1
    for lo in range(0, rows.shape[0], chunk):
        part = rows[lo : lo + chunk]
        kept = np.concatenate([kept, part[part[:, 0] % stride == 0]])
        while kept.shape[0] > keep:
            stride *= 2
            kept = kept[kept[:, 0] % stride == 0]
    return kept[np.argsort(kept[:, 0], kind="stable")], stride


@pytest.mark.parametrize(
    ("n", "keep", "chunk"),
    [
        (0, KEEP, CHUNK),
        (1, KEEP, CHUNK),
        (CHUNK - 1, KEEP, CHUNK),
        (10_000, KEEP, CHUNK),
        (KEEP, KEEP, CHUNK),  # exactly the limit: every row, stride 1
        (KEEP + 1, KEEP, CHUNK),
        (3 * KEEP + 17, KEEP, CHUNK),  # stride 4
        (5_000, 100, 16),  # small limits: the stride reaches 64
        (5_000, 100, 7),  # a chunk that does not divide the limit
    ],
)
def test_kept_rows_are_the_reference_rows(monkeypatch, n, keep, chunk):
    monkeypatch.setattr(records_module, "KEEP_REQUESTS", keep)
    monkeypatch.setattr(records_module, "CHUNK", chunk)
    rows = _rows(n, seed=n + keep)
    kept = KeptRows()
    for row in rows.tolist():
        kept.add(tuple(row))
    want, stride = _reference(rows, keep, chunk)
    got = kept.arrays()
    assert kept.stride == stride and (stride > 1) == (n > keep)
    assert want.shape[0] <= keep and got["sample_index"].shape == (want.shape[0],)
    assert got["sample_index"].dtype == np.int64
    np.testing.assert_array_equal(got["sample_index"], want[:, 0].astype(np.int64))
    for i, name in enumerate(ROW_COLUMNS[1:], start=1):
        dtype = np.int64 if name in INT_COLUMNS else np.float64
        assert got[name].dtype == dtype and got[name].flags.c_contiguous, name
        np.testing.assert_array_equal(got[name], want[:, i].astype(dtype), err_msg=name)
    # every row's metrics streamed, kept or not
    assert kept.stats["preemptions"].weight == n


def test_a_count_above_int32_is_refused():
    kept = KeptRows()
    row = [0.0] * len(ROW_COLUMNS)
    row[ROW_COLUMNS.index("input_tokens")] = 2.0**31
    kept.add(tuple(row))
    with pytest.raises(OverflowError):
        kept.flush()


def test_kept_rows_hold_bytes_that_follow_the_rows_up_to_the_limit():
    """A kept row is 72 bytes; the storage grows by doubling, so until the limit it holds
    at most twice the rows kept (a small run does not pay for the limit), and never more
    than the limit."""
    kept = KeptRows()
    rows = _rows(3 * KEEP, seed=1)
    for n, row in enumerate(rows.tolist(), start=1):
        kept.add(tuple(row))
        if n % CHUNK == 0:
            size, held = kept.kept.size, kept.kept.nbytes
            assert size * ROW_BYTES <= held <= KEEP * ROW_BYTES, n
            assert kept.stride > 1 or held <= 2 * size * ROW_BYTES, n
    assert kept.kept.nbytes == KEEP * ROW_BYTES  # 4.5 MiB at the limit (a float64 row: 6)
    kept.arrays()
    assert kept.kept.nbytes == 0  # given up to the record


@pytest.mark.parametrize("total", [0, 3, 50_000, records_module.KEEP_GAPS, 300_000])
def test_kept_gaps_are_every_gap_up_to_the_limit_and_none_beyond(total):
    rng = np.random.default_rng(total)
    sizes = []
    while sum(sizes) < total:
        sizes.append(int(min(rng.integers(1, 600), total - sum(sizes))))
    gaps, stat = KeptGaps(), StreamedStat()
    values, weights = [], []
    for size in sizes:
        v, w = rng.exponential(20.0, size), float(rng.integers(1, 300))
        gaps.add(v, w)
        values.append(v)
        weights.append(np.full(size, w))
        assert gaps.kept.nbytes <= 2 * gaps.kept.size * GAP_BYTES
        assert gaps.kept.nbytes <= records_module.KEEP_GAPS * GAP_BYTES
    got_v, got_w = gaps.arrays()
    exact = total <= records_module.KEEP_GAPS
    assert gaps.exact == exact
    if exact and total:
        np.testing.assert_array_equal(got_v, np.concatenate(values))
        np.testing.assert_array_equal(got_w, np.concatenate(weights))
    else:
        assert got_v.shape == got_w.shape == (0,)
    assert got_v.dtype == got_w.dtype == np.float64
    if total:
        stat.add(np.concatenate(values), np.concatenate(weights))
        assert gaps.stats.weight == stat.weight
        assert gaps.stats.total == pytest.approx(stat.total, rel=1e-12)
