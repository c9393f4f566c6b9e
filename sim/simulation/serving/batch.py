"""The decoding batch as arrays, and the pure arithmetic of a block of decode iterations.

Between two scheduling decisions (an admission, a completion, a preemption) the decode
batch does not change, so the iterations in between are computed together: for B requests
and up to K iterations, one (B, K) array of acceptance draws, accept lengths, running
token counts and, per iteration, the batch's context and the iteration's time. The
scheduler then lets the iterations happen (as one SimPy event up to where an arrival
could be admitted, then one timeout each; block_size.py ``uncut_iterations``) and cuts the
block at the first boundary where something must change (``plan_block`` already stops at the
first completion and at the first iteration the KV cache could not hold; an arrival that
can be admitted cuts it at the next boundary). Nothing in a block depends on how long the
block is: a request's c-th cycle always uses the draw (key, c) (counter_rng.py), so cutting
a block early and planning the next one gives the same numbers as one long block.

Accept length of request b in its c-th cycle at draft length k: with the request's
integer thresholds T_1..T_kmax (``workload.acceptance_thresholds``) and its 32-bit draw U,
L = 1 + #{j <= k : U < T_j}: the inverse cdf of the chain (P(L >= j + 1) = c_j), monotone
in k and in the rates for a fixed draw. A tree's cycle has the law of a chain whose
cumulative rates are the tree's depth survival S_d = P(L >= d + 1) (sim/model/tree/theory.py),
so a tree is the same draw against the request's own S_1..S_D: its threshold columns
(``DecodeBatch.thresholds`` holds the chain's columns and then each tree's; ``columns``
selects a draft's). The same (key, cycle) draw serves every draft, so a chain and a tree
run on the same requests are paired draw by draw.

The draft extend's width (``IterationCost``): the batch's expected accepted path per
request, 1 + the mean of sum_j T_j / 2^32 over its rows (the request's E[L]), rounded;
fixed while the batch is, so a block's plan does not depend on where it is cut.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sim.model.batched_cost import IterationCost, PrefillLoad
from sim.model.drafts import Draft, max_tokens
from sim.model.kv_blocks import whole_blocks_array
from sim.simulation.serving.counter_rng import weyl_bits, weyl_bits_block, weyl_step, weyl_term

__all__ = [
    "BlockPlan",
    "DecodeBatch",
    "StepPlan",
    "accept_lengths",
    "expected_path",
    "int_min",
    "int_sum",
    "plan_block",
    "plan_step",
]


def _float_bits(x: float) -> int:
    """The 64 bits of float ``x`` as a signed integer (a float column's entry)."""
    return int(_BITS_OF(_FLOAT_OF(x))[0])


_FLOAT_OF, _BITS_OF = struct.Struct("<d").pack, struct.Struct("<q").unpack
_NO_TIME = _float_bits(-1.0)


#: Elements up to which ``int_sum`` and ``int_min`` take a 1-D integer array through its
#: list (a ufunc reduction's call costs more than Python's loop over a few; measured
#: crossing at 30-50 elements); beyond, the reduction. A speed knob only: integer sums
#: and minima of token counts are exact either way.
LIST_ROWS = 32


def int_sum(values: np.ndarray) -> int:
    """The sum of a 1-D integer array (token counts), as a Python int."""
    if values.shape[0] <= LIST_ROWS:
        return sum(values.tolist())
    return int(np.add.reduce(values))


def int_min(values: np.ndarray) -> int:
    """The least of a non-empty 1-D integer array (token counts), as a Python int."""
    if values.shape[0] <= LIST_ROWS:
        return min(values.tolist())
    return int(np.minimum.reduce(values))


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


#: Threshold columns up to which, or rows from which, ``step_lengths`` compares column
#: by column (a row reduce over a few columns costs a call per row; a speed knob only).
#: ``accept_lengths`` compares column by column up to ``STEP_COLUMNS`` columns too.
STEP_COLUMNS, STEP_ROWS = 3, 256


def accept_lengths(weyl: np.ndarray, thresholds: np.ndarray, iterations: int) -> np.ndarray:
    """Tokens per cycle, int8 (B, iterations): request b's next cycles (``weyl`` (B,), the
    Weyl terms of their first: ``DecodeBatch.weyl``) against its thresholds
    ``thresholds`` (B, d): a chain's first k columns or a tree's columns (d < 127).
    Without columns (no drafts) every cycle emits one token and nothing is drawn."""
    b, d = thresholds.shape
    if d == 0:
        return np.ones((b, iterations), dtype=np.int8)
    bits = weyl_bits_block(weyl, iterations)
    if d > STEP_COLUMNS:  # one reduce over (B, iterations, d)
        passed = bits[:, :, None] < thresholds[:, None, :]
        return np.add.reduce(passed, axis=2, dtype=np.int8, initial=1)
    lengths = np.add(bits < thresholds[:, 0, None], 1, dtype=np.int8)
    for j in range(1, d):
        lengths += bits < thresholds[:, j, None]
    return lengths


def step_lengths(bits: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """1 + #{j : bits_b < T_bj}, int64 (B,): each row's accept length from its draw
    ``bits`` (B,) and ``thresholds`` (B, d)."""
    b, d = thresholds.shape
    if d == 0 or (d > STEP_COLUMNS and b < STEP_ROWS):
        return np.add.reduce(bits[:, None] < thresholds, axis=1, initial=1)
    lengths = np.add(bits < thresholds[:, 0], 1, dtype=np.int64)
    for j in range(1, d):
        lengths += bits < thresholds[:, j]
    return lengths


#: 2^32: the thresholds' scale (a draw is a 32-bit integer).
_BITS = float(2**32)


def expected_path(thresholds: np.ndarray) -> int:
    """The batch's expected tokens per cycle per request, rounded (>= 1): 1 + the mean
    over rows of sum_j T_j / 2^32 (``thresholds`` (B, d))."""
    total = np.add.reduce(thresholds, axis=None, dtype=np.float64)
    mean = 1.0 + float(total) / (_BITS * thresholds.shape[0])
    return max(1, int(np.floor(mean + 0.5)))


_NO_LIMIT = float("inf")

#: Batch rows from which ``plan_block`` looks for a completion only among the requests
#: close to their count (fewer: all rows, one indexing less; a speed knob only).
CLOSE_ROWS = 64


@dataclass(frozen=True, slots=True)
class BlockPlan:
    """Up to ``iterations`` decode iterations of a fixed batch drafting ``k`` (a Draft).

    With B requests and n planned iterations: ``lengths`` int8 (B, >= n), tokens request
    b emits in iteration i; ``context`` float (n,), the batch's context sum before each
    iteration; ``durations_ms`` float (n,); ``ends_ms`` float (n,), the iterations' ends
    relative to the block start; ``growth`` int64 (n,), KV tokens the batch gained in the
    block before each iteration (0 for the first); ``total`` int64 (n,), tokens the whole
    batch emitted in the block after each iteration; ``per_iteration`` int64 (n,), tokens
    it emitted in each; ``emitted_by`` int64 (B, >= n) or None, the tokens each request
    emitted after each iteration, when the plan counted them for every row; ``kv_growth``
    int64 (n,) or None, the KV tokens the batch gained before each iteration in whole
    blocks (planned with ``block_tokens`` > 1 under a KV limit; None: ``growth``).
    """

    k: Draft
    lengths: np.ndarray
    context: np.ndarray
    durations_ms: np.ndarray
    ends_ms: np.ndarray
    growth: np.ndarray
    total: np.ndarray
    per_iteration: np.ndarray
    emitted_by: np.ndarray | None = None
    kv_growth: np.ndarray | None = None

    @property
    def iterations(self) -> int:
        return int(self.durations_ms.shape[0])

    def emitted(self, n: int) -> np.ndarray:
        """Tokens each request emitted in the first ``n`` iterations, int64 (B,)."""
        if isinstance(self.k, int) and self.k == 0:  # one token an iteration each
            return np.full(self.lengths.shape[0], n, dtype=np.int64)
        if self.emitted_by is not None:  # the plan's running counts (whole numbers: exact)
            return self.emitted_by[:, n - 1]
        return np.add.reduce(self.lengths[:, :n], axis=1, dtype=np.int64)


def _block_growth(start: np.ndarray, lengths: np.ndarray, block_tokens: int) -> np.ndarray:
    """KV tokens rows holding ``start`` (B,) tokens in whole blocks of ``block_tokens``
    gain before each of n iterations in which they emit ``lengths`` (B, n), together,
    int64 (n,): sum over rows of B x ceil((start + emitted before) / B) - B x ceil(start /
    B). Only the rows whose tokens before the last iteration pass their last block's free
    slots open a block at all; the others are left out of the sum."""
    n = lengths.shape[1]
    free = whole_blocks_array(start, block_tokens) - start
    crossing = (np.add.reduce(lengths[:, : n - 1], axis=1, dtype=np.int64) > free).nonzero()[0]
    if crossing.shape[0] == 0:
        return np.zeros(n, dtype=np.int64)
    rows = lengths[crossing]
    before = np.add.accumulate(rows, axis=1, dtype=np.int64) - rows
    # past its free slots a row opens ceil(over / B) blocks (none while over <= 0)
    opened = whole_blocks_array(before - free[crossing, None], block_tokens)
    return np.add.reduce(np.maximum(opened, 0), axis=0)


def plan_block(
    batch: DecodeBatch,
    k: Draft,
    max_iterations: int,
    kv_free_tokens: float,
    cost: IterationCost,
    prefill: PrefillLoad | None = None,
    drafter: bool = False,
    *,
    columns: slice | None = None,
    accepted_extend: bool = False,
    block_tokens: int = 1,
    slot_tokens: int = 0,
) -> BlockPlan:
    """Plan up to ``max_iterations`` (>= 1) iterations of ``batch`` drafting ``k``.

    The plan stops after the first iteration in which a request reaches its token count,
    and before the first iteration whose KV growth would exceed ``kv_free_tokens`` (the
    free KV after every running request's context and lookahead; the first iteration
    always fits, its tokens go to reserved lookahead slots). ``prefill`` (one iteration
    only): prompt chunks fused into the pass (chunked batching). ``columns``: the draft's
    threshold columns (default: a chain's first k); ``accepted_extend``: the draft extend
    runs over the accepted paths (``expected_path`` wide, moved by each iteration's tokens)
    rather than padded to the verify's width. ``block_tokens`` > 1: each request holds its
    context and its ``slot_tokens`` lookahead slots in whole blocks of that many tokens
    (sim/model/kv_blocks.py), so the KV growth the cut compares is each row's in whole
    blocks, B x ceil((context + slots + emitted) / B) - B x ceil((context + slots) / B),
    summed (``kv_growth``).
    """
    if max_iterations < 1:
        raise ValueError("plan at least one iteration")
    if prefill is not None and max_iterations != 1:
        raise ValueError("an iteration with prompt chunks is planned alone")
    b = batch.size
    if columns is None:
        if not isinstance(k, int):
            raise ValueError("a tree's threshold columns must be given")
        columns = slice(0, k)
    thresholds = batch.thresholds[:, columns]
    lengths = accept_lengths(batch.weyl, thresholds, max_iterations)
    n = max_iterations
    drafts = thresholds.shape[1] > 0 or b == 0
    if not drafts:  # no drafts: every row emits one token an iteration
        per_iteration = np.full(max_iterations, b, dtype=np.int64)
        total = np.arange(b, b * (max_iterations + 1), b, dtype=np.int64)
        # after iteration i every row has emitted i + 1 tokens: the first to finish is
        # the one that needs least, at its count (one iteration whoever finishes)
        least = int_min(batch.need)
        if max_iterations > 1 and least <= max_iterations:
            n = max(least, 1)
    else:
        per_iteration = np.add.reduce(lengths, axis=0, dtype=np.int64)  # (K,)
        total = np.add.accumulate(per_iteration)  # cumsum without its Python wrapper
    emitted_by = None  # each row's running count, when taken for every row
    if max_iterations > 1 and drafts:  # one iteration is planned whoever finishes
        need = batch.need
        if b > CLOSE_ROWS:  # only requests that could reach their count (L <= k + 1)
            close = (need <= max_tokens(k) * max_iterations).nonzero()[0]
            lengths_close, need = lengths[close], need[close]
        else:
            lengths_close = lengths
        emitted = np.add.accumulate(lengths_close, axis=1, dtype=np.int64)
        if b <= CLOSE_ROWS:
            emitted_by = emitted
        finishing = np.logical_or.reduce(emitted >= need[:, None], axis=0)
        first = int(finishing.argmax())
        if finishing[first]:
            n = first + 1
    growth = total[:n] - per_iteration[:n]  # tokens emitted before each iteration
    kv_growth = None
    if block_tokens > 1 and kv_free_tokens < _NO_LIMIT:  # whole blocks a row
        kv_growth = _block_growth(batch.context + slot_tokens, lengths[:, :n], block_tokens)
    # growth is increasing: cut at its first excess (none without a KV limit)
    charged = growth if kv_growth is None else kv_growth
    if kv_free_tokens < _NO_LIMIT and charged[n - 1] > kv_free_tokens:
        n = int(np.searchsorted(charged, kv_free_tokens, side="right"))  # >= 1
        growth = growth[:n]
        if kv_growth is not None:
            kv_growth = kv_growth[:n]
    context = float(int_sum(batch.context)) + growth
    speculates = not (isinstance(k, int) and k == 0)
    if accepted_extend and speculates:
        durations = cost.decode_ms(
            b,
            k,
            context,
            prefill,
            drafter,
            extend_tokens=batch.expected_path(columns),
            accepted_tokens=per_iteration[:n],
        )
    else:
        durations = cost.decode_ms(b, k, context, prefill, drafter)
    ends = np.add.accumulate(durations)
    return BlockPlan(
        k,
        lengths,
        context,
        durations,
        ends,
        growth,
        total[:n],
        per_iteration[:n],
        emitted_by,
        kv_growth,
    )


@dataclass(frozen=True, slots=True)
class StepPlan:
    """One decode iteration of a fixed batch drafting ``k`` (a Draft): ``lengths`` int64
    (B,), the tokens request b emits; ``tokens``, their sum; ``duration_ms``;
    ``context_tokens``, the batch's context sum before it. The same numbers as
    ``plan_block`` with one iteration, in Python scalars where it had arrays of one
    element."""

    k: Draft
    lengths: np.ndarray
    tokens: int
    duration_ms: float
    context_tokens: int


def plan_step(
    batch: DecodeBatch,
    k: Draft,
    cost: IterationCost,
    drafter: bool = False,
    *,
    columns: slice | None = None,
    accepted_extend: bool = False,
) -> StepPlan:
    """Plan one iteration of ``batch`` drafting ``k`` (arguments as ``plan_block``'s):
    request b's accept length is 1 + #{j : U_b < T_bj}, U_b its draw of the cycle
    ``batch.cycles[b]`` (the first column of ``accept_lengths``)."""
    if columns is None:
        if not isinstance(k, int):
            raise ValueError("a tree's threshold columns must be given")
        columns = slice(0, k)
    thresholds = batch.thresholds[:, columns]
    if thresholds.shape[1]:
        lengths = step_lengths(weyl_bits(batch.weyl), thresholds)
    else:  # no drafts: one token each, nothing drawn
        lengths = np.ones(batch.size, dtype=np.int64)
    # ufuncs' reduce: the arrays' sum and min without their Python wrappers
    tokens = int_sum(lengths)
    held = int_sum(batch.context)
    context = float(held)
    if accepted_extend and not (isinstance(k, int) and k == 0):
        duration = cost.decode_ms_at(
            batch.size,
            k,
            context,
            drafter,
            extend_tokens=batch.expected_path(columns),
            accepted_tokens=tokens,
        )
    else:
        duration = cost.decode_ms_at(batch.size, k, context, drafter)
    return StepPlan(k, lengths, tokens, duration, held)
