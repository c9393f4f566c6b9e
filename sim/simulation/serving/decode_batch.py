"""The decoding batch as arrays (``DecodeBatch``): the requests decoding now, in admission
order, as views of one preallocated int64 table; what the block and step plans read
(sim/simulation/serving/block_plan.py, step_plan.py)."""

from __future__ import annotations

import struct
from collections.abc import Sequence

import numpy as np

from sim.simulation.serving.accept_lengths import expected_path
from sim.simulation.serving.counter_rng import weyl_step, weyl_term

__all__ = [
    "DecodeBatch",
]


def _float_bits(x: float) -> int:
    """The 64 bits of float ``x`` as a signed integer (a float column's entry)."""
    return int(_BITS_OF(_FLOAT_OF(x))[0])


_FLOAT_OF, _BITS_OF = struct.Struct("<d").pack, struct.Struct("<q").unpack
_NO_TIME = _float_bits(-1.0)


def _signed(x: int) -> int:
    """An unsigned 64-bit integer as the signed one with the same bits."""
    return x - (1 << 64) if x >= 1 << 63 else x


class DecodeBatch:
    """The requests decoding now, in admission order, as parallel arrays (B rows):

    ``ids`` int64 (request index in the replication), ``weyl`` uint64 (the Weyl term of
    the row's next cycle, key + (cycles + 1) x gamma: counter_rng.py ``weyl_terms``),
    ``thresholds`` int64 (B, columns: the chain's kmax, then each tree's depths), ``need``
    int64 (tokens still to emit), ``context`` int64 (tokens held in KV, without lookahead),
    ``cycles`` int64 (decode cycles run), ``last_ms`` float64 (time of the last delivery;
    -1 before the first token); ``fresh``: how many rows have no first token yet, and
    ``fresh_newest``: they are the newest rows (rows join at the end, and a delivery
    reaches every row, ``delivered``; a row with a token joining after one without breaks
    it until the next delivery). A
    server that holds its requests as rows (answers.py ``Answers.held``) keeps in the same
    table each row's ``arrival_ms`` and ``first_ms`` (float64), ``inputs``, ``outputs``,
    ``classes`` and ``users`` (int64): ``held_columns``.

    All are views of the first B rows of one preallocated int64 table (a column each,
    ``weyl`` and ``last_ms`` reinterpreting their 64 bits; grown by doubling), so an
    admission writes one row and a completion compacts the table in place; assigning to
    one of them in place (``batch.need[...] = x``, or ``batch.need -= x``) writes into its
    rows; a field is never rebound (a plain ``batch.need = x`` would detach it from the
    table, so nothing here does it, and the scalar attributes are plain attributes).
    """

    ids: np.ndarray
    weyl: np.ndarray
    need: np.ndarray
    context: np.ndarray
    cycles: np.ndarray
    last_ms: np.ndarray
    thresholds: np.ndarray

    _FIELDS = ("ids", "weyl", "need", "context", "cycles", "last_ms", "thresholds")
    _THRESHOLDS = 12  # first column of the thresholds (6 to 11: the held requests' columns)
    #: Rows removed by shifting the rows after them (more: one masked copy).
    _SHIFTS = 4

    def __init__(self, columns: int, capacity: int = 16):
        self.columns = columns
        self.size = 0
        self.fresh = 0
        self.fresh_newest = True  # the fresh rows are the newest ``fresh`` rows
        self._paths: dict[tuple[int, int], int] = {}  # ``expected_path`` by columns
        self._allocate(np.empty((capacity, self._THRESHOLDS + columns), dtype=np.int64))
        self._views()

    def _allocate(self, table: np.ndarray) -> None:
        """Use ``table``: its columns as whole-height views, made once (the fields are
        their first B rows)."""
        self._table = table
        self._columns = (
            table[:, 0],
            table[:, 1].view(np.uint64),
            table[:, 2],
            table[:, 3],
            table[:, 4],
            table[:, 5].view(np.float64),
            table[:, self._THRESHOLDS :],
            table[:, 6].view(np.float64),
            table[:, 7].view(np.float64),
            table[:, 8],
            table[:, 9],
            table[:, 10],
            table[:, 11],
        )

    def __getattr__(self, name: str) -> object:
        """A view dropped by ``append`` (rebuilt at its first use after admissions)."""
        if name in DecodeBatch._FIELDS:
            self._views()
            return self.__dict__[name]
        raise AttributeError(name)

    def _views(self) -> None:
        b = self.size
        d = self.__dict__
        for name, column in zip(DecodeBatch._FIELDS, self._columns[:7], strict=True):
            d[name] = column[:b]

    def append(
        self,
        rid: int,
        key: np.uint64,
        thresholds: np.ndarray,
        need: int,
        context: int,
        cycles: int,
        last_ms: float,
    ) -> None:
        """Add one request (its acceptance ``key``, ``cycles`` run) as the newest row."""
        b = self.size
        table = self._room(1)
        table[b, 0] = rid
        self._columns[1][b] = weyl_term(int(key), cycles)
        table[b, 2] = need
        table[b, 3] = context
        table[b, 4] = cycles
        self._columns[5][b] = last_ms
        table[b, self._THRESHOLDS :] = thresholds[: self.columns]
        self.size = b + 1
        if last_ms < 0:
            self.fresh += 1
        elif self.fresh:  # a row with a first token after a fresh one
            self.fresh_newest = False
        self._drop_views()

    def delivered(self) -> None:
        """Every row got a token: none is fresh any more."""
        self.fresh = 0
        self.fresh_newest = True

    def extend_held(
        self,
        rids: Sequence[int],
        keys: Sequence[np.uint64],
        thresholds: Sequence[np.ndarray],
        inputs: Sequence[int],
        outputs: Sequence[int],
        classes: Sequence[int],
        users: Sequence[int],
        now_ms: float,
    ) -> None:
        """Add m requests arriving now (``now_ms``) that decode at once, as the newest rows
        with their held columns (``users``: each one's sender): what m ``append`` calls
        write (``need`` their outputs, ``context`` their inputs, no cycle run, no token
        yet), in three array writes whatever m."""
        b = self.size
        m = len(rids)
        table = self._room(m)
        now, none = _float_bits(now_ms), _NO_TIME
        table[b : b + m, : self._THRESHOLDS] = [
            [rid, _signed(weyl_term(int(key), 0)), out, inp, 0, none, now, none, inp, out, c, u]
            for rid, key, inp, out, c, u in zip(
                rids, keys, inputs, outputs, classes, users, strict=True
            )
        ]
        if m == 1:
            table[b, self._THRESHOLDS :] = thresholds[0][: self.columns]
        else:  # ``np.stack`` of the rows, in one call
            rows = np.concatenate(thresholds).reshape(m, -1)
            table[b : b + m, self._THRESHOLDS :] = rows[:, : self.columns]
        self.size = b + m
        self.fresh += m
        self._drop_views()

    def held_rows(
        self, rows: np.ndarray
    ) -> list[tuple[int, int, float, float, int, int, int, int]]:
        """(id, cycles, arrival_ms, first_ms, input, output, class, user) of each of
        ``rows`` (indices), from the held columns."""
        sub = self._table[rows, : self._THRESHOLDS]
        ints = sub.tolist()
        times = sub[:, 6:8].view(np.float64).tolist()
        return [
            (r[0], r[4], t[0], t[1], r[8], r[9], r[10], r[11])
            for r, t in zip(ints, times, strict=True)
        ]

    def ids_cycles(self, rows: np.ndarray) -> list[list[int]]:
        """[id, cycles] of each of ``rows`` (indices), in one indexing of the table."""
        return self._table.take(rows, axis=0)[:, 0:5:4].tolist()  # take: half the cost

    def mark_first(self, end_ms: float) -> None:
        """The rows without a first token get it at ``end_ms``: held rows, the newest
        ``fresh`` (rows join at the end, and every delivery reaches every row)."""
        self._columns[8][self.size - self.fresh : self.size] = end_ms

    def _room(self, m: int) -> np.ndarray:
        """The table, grown (doubling) to hold ``m`` more rows."""
        table = self._table
        if self.size + m > table.shape[0]:
            height = table.shape[0]
            while self.size + m > height:
                height *= 2
            grown = np.empty((height, table.shape[1]), dtype=np.int64)
            grown[: self.size] = table[: self.size]
            self._allocate(grown)
        return self._table

    def expected_path(self, columns: slice) -> int:
        """``expected_path`` of the rows' threshold ``columns`` (a draft's), worked out once
        while the rows stay (every block of the batch extends the drafts this wide)."""
        key = (columns.start, columns.stop)
        path = self._paths.get(key)
        if path is None:
            path = self._paths[key] = expected_path(self.thresholds[:, columns])
        return path

    def _drop_views(self) -> None:
        """Forget the views (rebuilt when next used: admissions come in runs) and what was
        worked out from the rows (``expected_path``): called whenever rows change."""
        if self._paths:
            self._paths.clear()
        d = self.__dict__
        if "ids" in d:
            for name in DecodeBatch._FIELDS:
                del d[name]

    def advance(self, iterations: int) -> None:
        """Every row ran ``iterations`` more cycles."""
        cycles, weyl = self.cycles, self.weyl
        cycles += iterations
        weyl += weyl_step(iterations)

    def keep(self, rows: np.ndarray) -> None:
        """Keep only ``rows`` (bool mask of shape (B,)), order unchanged."""
        kept = self._table[: self.size][rows]
        self._table[: kept.shape[0]] = kept
        self.size = kept.shape[0]
        self._drop_views()

    def remove(self, rows: list[int]) -> None:
        """Remove ``rows`` (ascending row indices), the others' order unchanged: the rows
        after each removed one shifted up (a few rows), or one masked copy."""
        if len(rows) > self._SHIFTS:
            keep = np.ones(self.size, dtype=bool)
            keep[rows] = False
            self.keep(keep)
            return
        table, size = self._table, self.size
        to = rows[0]
        for i, row in enumerate(rows):
            until = rows[i + 1] if i + 1 < len(rows) else size
            if until > row + 1:
                table[to : to + until - row - 1] = table[row + 1 : until]
                to += until - row - 1
        self.size = to
        self._drop_views()
