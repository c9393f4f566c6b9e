"""What one serving replication records: per request, per delivery gap, per iteration, in
memory that does not grow with the number of requests.

``Recorder`` accumulates during the run (time-weighted statistics only inside the
measurement window: from the arrival of the first measured request to the end of the
run, which is the completion of the last measured one); ``ServingRecord`` is the frozen,
typed result a replication returns (arrays documented with their shapes).

Bounded memory: a request is released when it is answered. Its row (times, lengths,
class, preemptions, cycles) goes into a chunk of ``CHUNK`` rows; a full chunk is streamed
into exact per-metric counts and sums and a quantile sketch (sim/simulation/serving/
sketch.py, relative error 0.1%) and into the kept rows: every measured request up to
``KEEP_REQUESTS`` of them, beyond that a systematic sample by arrival (every
``stride``-th measured request, the stride doubling whenever the sample would exceed
``KEEP_REQUESTS``, so it holds between half and all of them). Delivery gaps (ITL) stream
the same way (kept exactly up to ``KEEP_GAPS`` values). Little's law and the backlog use
running sums over the requests as they leave (``WindowTally``), exactly.

Kept rows and gaps live in column arrays filled in place (``_Columns``: grown by doubling,
one column at a time, up to the limit; a stride doubling moves the rows it keeps to the
front in place): 72 bytes a row (times float64, the index int64, counts int32) and 16 a
gap, so at most 4.5 MiB of rows and 4 MiB of gaps, and about twice the bytes of what a
short run keeps.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from sim.simulation.serving.batch import int_sum
from sim.simulation.serving.sketch import StreamedStat
from sim.simulation.serving.workload import Request

__all__ = [
    "CHUNK",
    "KEEP_GAPS",
    "KEEP_REQUESTS",
    "REQUEST_METRICS",
    "Recorder",
    "ServingRecord",
    "WindowTally",
    "metric_values",
]

#: Measured requests a replication keeps row by row (beyond: a systematic sample).
KEEP_REQUESTS = 1 << 16
#: Delivery gaps a replication keeps value by value (beyond: the streamed statistics only).
KEEP_GAPS = 1 << 18
#: Rows (requests) or gap values buffered before they are streamed into the statistics.
CHUNK = 4096
#: Per-request metrics, in report order.
REQUEST_METRICS: tuple[str, ...] = ("per_user_tok_s", "ttft_ms", "tpot_ms", "e2e_ms", "queue_ms")

#: Columns of a request's row.
_COLUMNS = (
    "index",
    "arrival_ms",
    "admitted_ms",
    "first_token_ms",
    "decode_start_ms",
    "finish_ms",
    "input_tokens",
    "output_tokens",
    "decode_tokens",
    "request_class",
    "preemptions",
    "cycles",
)
_INTS = ("input_tokens", "output_tokens", "decode_tokens", "request_class", "preemptions", "cycles")


def metric_values(
    arrival_ms: np.ndarray,
    admitted_ms: np.ndarray,
    first_token_ms: np.ndarray,
    decode_start_ms: np.ndarray,
    finish_ms: np.ndarray,
    output_tokens: np.ndarray,
    decode_tokens: np.ndarray,
) -> dict[str, np.ndarray]:
    """Per request (Q,): per-user tok/s = 1000 decode tokens / (finish - decode start),
    TTFT = first token - arrival, TPOT = (finish - first token) / (output tokens - 1) (NaN
    for one-token requests), E2E = finish - arrival, queueing delay = admission - arrival;
    ms unless named otherwise (sim/simulation/serving/metrics.py's definitions)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        tpot = np.where(
            output_tokens > 1, (finish_ms - first_token_ms) / (output_tokens - 1), np.nan
        )
        decode_ms = finish_ms - decode_start_ms
        tok_s = np.where(
            (decode_tokens > 0) & (decode_ms > 0), 1000.0 * decode_tokens / decode_ms, np.nan
        )
    return {
        "per_user_tok_s": tok_s,
        "ttft_ms": first_token_ms - arrival_ms,
        "tpot_ms": tpot,
        "e2e_ms": finish_ms - arrival_ms,
        "queue_ms": admitted_ms - arrival_ms,
    }


@dataclass(slots=True)
class WindowTally:
    """Running sums for Little's law and the backlog over the window [lo, hi]: lo is the
    first measured arrival (``open``), hi the run's end (``close``). A request counts when
    it leaves (``leave``: at its finish, or at the end for those still in the system), by
    the formulas of whole-run arrays: time in the system inside the window
    max(0, min(f, hi) - max(a, lo)); of it, the part of arrivals inside [lo, hi)
    (``arrived_ms``) and of those there before it opened (``carried_ms``); ``carried``
    counts the latter still there after lo (a < lo < f)."""

    lo: float = float("inf")
    in_system_ms: float = 0.0
    arrived_ms: float = 0.0
    carried_ms: float = 0.0
    carried: int = 0
    arrivals: int = 0  # arrivals at or after lo
    last_arrival_ms: float = -1.0
    at_last: int = 0  # arrivals at last_arrival_ms

    def open(self, at_ms: float) -> None:
        self.lo = at_ms

    def arrive(self, at_ms: float) -> None:
        self.arrive_many(at_ms, 1)

    def arrive_many(self, at_ms: float, m: int) -> None:
        """``m`` requests arrive at ``at_ms``."""
        if m <= 0:
            return
        if at_ms >= self.lo:
            self.arrivals += m
        if at_ms == self.last_arrival_ms:
            self.at_last += m
        else:
            self.last_arrival_ms, self.at_last = at_ms, m

    def leave(self, arrival_ms: float, finish_ms: float) -> None:
        lo = self.lo
        if finish_ms <= lo:  # gone before the window opened (or it never did)
            return
        if arrival_ms >= lo:
            self.in_system_ms += finish_ms - arrival_ms
            self.arrived_ms += finish_ms - arrival_ms
        else:
            self.in_system_ms += finish_ms - lo
            self.carried_ms += finish_ms - lo
            self.carried += 1

    def arrivals_before(self, hi_ms: float) -> int:
        """Arrivals in [lo, hi) (``arrivals`` counts [lo, hi]: hi is the last event)."""
        late = self.at_last if self.last_arrival_ms >= hi_ms >= self.lo else 0
        return self.arrivals - late


@dataclass(frozen=True, slots=True)
class ServingRecord:
    """One replication under one speculation policy.

    Measured requests (``measured`` of them), arrays of shape (Q,) in arrival order:
    ``arrival_ms``, ``admitted_ms`` (first scheduled), ``first_token_ms``,
    ``decode_start_ms`` (decoding possible: the end of the first prefill, or admission
    without prefill), ``finish_ms`` (-1 if not answered when a horizon ended the run),
    ``input_tokens``, ``output_tokens``, ``decode_tokens`` (output tokens after
    ``decode_start_ms``; 0 for a request whose prefill emitted its only token, which never
    decodes and keeps ``decode_start_ms`` -1), ``request_class``, ``preemptions``,
    ``cycles``; ``sample_index`` (Q,), each row's place among the measured requests. Q =
    ``measured`` up to ``KEEP_REQUESTS``; beyond, the rows are every ``stride``-th measured
    request (``sampled``). ``request_stats[metric]`` streams every measured request's value
    (``REQUEST_METRICS`` and ``preemptions``): exact count, sum and mean, and quantiles
    within 0.1% (sim/simulation/serving/sketch.py).

    Window [``window_start_ms``, ``window_end_ms``]: ``itl_ms``/``itl_weight`` (m,), the
    gaps between successive deliveries to a request and how many deliveries had that gap
    (every gap up to ``KEEP_GAPS`` values, else empty: ``itl_exact`` False), and
    ``itl_stats``, all of them streamed (weighted; none when the run kept no gaps:
    ``Recorder``'s ``delivery_gaps``); ``batch_time_ms`` (max_running + 1,),
    time spent in decode iterations of each decode batch size; ``prefill_time_ms``;
    ``kv_token_ms``, the integral of KV tokens held (contexts, lookahead slots and a hybrid
    target's state) over time; ``kv_peak_tokens``; ``tokens_delivered``, output tokens
    delivered to users (the overshoot of a request's last cycle excluded); ``window``
    (``WindowTally``), the in-system time and arrivals behind Little's law and the backlog.

    Whole run: ``decode_iterations``, ``prefill_iterations``, ``request_cycles`` (decode
    cycles summed over requests), ``cycle_tokens`` (tokens those cycles emitted), and
    ``preemptions_total``; ``unfinished_at_end``, requests that had arrived and were not
    answered when the run ended (waiting, prefilling or decoding).
    """

    arrival_ms: np.ndarray
    admitted_ms: np.ndarray
    first_token_ms: np.ndarray
    decode_start_ms: np.ndarray
    finish_ms: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    decode_tokens: np.ndarray
    request_class: np.ndarray
    preemptions: np.ndarray
    cycles: np.ndarray
    sample_index: np.ndarray
    measured: int
    stride: int
    request_stats: dict[str, StreamedStat]
    window: WindowTally
    window_start_ms: float
    window_end_ms: float
    itl_ms: np.ndarray
    itl_weight: np.ndarray
    itl_exact: bool
    itl_stats: StreamedStat
    batch_time_ms: np.ndarray
    prefill_time_ms: float
    kv_token_ms: float
    kv_capacity_tokens: int | None
    kv_peak_tokens: int
    tokens_delivered: int
    decode_iterations: int
    prefill_iterations: int
    request_cycles: int
    cycle_tokens: int
    preemptions_total: int
    unfinished_at_end: int

    @property
    def window_ms(self) -> float:
        return self.window_end_ms - self.window_start_ms

    @property
    def sampled(self) -> bool:
        """The per-request rows are a sample (every ``stride``-th measured request)."""
        return self.stride > 1


class _Columns:
    """Columns of equal length ``size`` filled in place: arrays of ``dtypes`` with room
    for ``capacity`` rows (doubled as rows arrive, never beyond ``limit``; each column
    grown on its own, so a growth copies one column at a time). Bytes held:
    ``nbytes`` = capacity x the row's bytes."""

    __slots__ = ("data", "limit", "size")

    def __init__(self, dtypes: dict[str, type], limit: int):
        self.data: dict[str, np.ndarray] = {
            name: np.empty(0, dtype=dtype) for name, dtype in dtypes.items()
        }
        self.limit = limit
        self.size = 0

    @property
    def nbytes(self) -> int:
        return sum(col.nbytes for col in self.data.values())

    def append(self, columns: list[np.ndarray]) -> None:
        """Add rows: ``columns`` (m,) each, in the order of ``dtypes`` (cast to them)."""
        size = self.size
        end = size + columns[0].shape[0]
        if end > self.limit:
            raise ValueError(f"{end} rows exceed the limit of {self.limit}")
        for name, values in zip(list(self.data), columns, strict=True):
            col = self.data[name]
            if end > col.shape[0]:
                grown = np.empty(min(self.limit, max(end, 2 * col.shape[0])), dtype=col.dtype)
                grown[:size] = col[:size]
                self.data[name] = col = grown
            col[size:end] = values
        self.size = end

    def keep(self, rows: np.ndarray) -> None:
        """Keep only ``rows`` (increasing positions), moved to the front in place."""
        for col in self.data.values():
            col[: rows.shape[0]] = col[rows]
        self.size = rows.shape[0]

    def release(self, order: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """The columns (size,) each, rows in ``order`` (None: as they are), in arrays of
        their own; the storage is given up one column at a time."""
        out = {}
        for name in list(self.data):
            col = self.data.pop(name)
            if order is not None:
                out[name] = col[: self.size][order]
            else:  # the array itself when full, else a copy of its rows
                out[name] = col if col.shape[0] == self.size else col[: self.size].copy()
        self.size = 0
        return out


#: A kept row's storage: times float64, the index int64 and the counts int32 (exact:
#: ``_Rows`` checks each is below 2^31), 72 bytes (a float64 row of 12 is 96).
_DTYPES: dict[str, type] = {
    name: np.int32 if name in _INTS else np.int64 if name == "index" else np.float64
    for name in _COLUMNS
}
_INT32_MAX = np.iinfo(np.int32).max
_COUNTS_AT = [_COLUMNS.index(name) for name in _INTS]
#: A kept delivery gap's storage: its value and its weight, 16 bytes.
_GAP_DTYPES: dict[str, type] = {"values": np.float64, "weights": np.float64}


@dataclass(slots=True)
class _Rows:
    """Measured requests' rows: a chunk being filled, then the kept rows (a systematic
    sample once more than ``KEEP_REQUESTS``: the rows whose index is a multiple of
    ``stride``), and every row's metrics streamed."""

    stats: dict[str, StreamedStat] = field(
        default_factory=lambda: {m: StreamedStat() for m in (*REQUEST_METRICS, "preemptions")}
    )
    chunk: list[tuple[float, ...]] = field(default_factory=list)  # made an array per chunk
    kept: _Columns = field(default_factory=lambda: _Columns(_DTYPES, KEEP_REQUESTS))
    stride: int = 1

    def add(self, row: tuple[float, ...]) -> None:
        chunk = self.chunk
        chunk.append(row)
        if len(chunk) == CHUNK:
            self.flush()

    def flush(self) -> None:
        rows = np.array(self.chunk, dtype=np.float64).reshape(-1, len(_COLUMNS))
        self.chunk = []
        if not rows.shape[0]:
            return
        cols = dict(zip(_COLUMNS, rows.T, strict=True))
        values = metric_values(
            cols["arrival_ms"],
            cols["admitted_ms"],
            cols["first_token_ms"],
            cols["decode_start_ms"],
            cols["finish_ms"],
            cols["output_tokens"],
            cols["decode_tokens"],
        )
        values["preemptions"] = cols["preemptions"]
        for name, stat in self.stats.items():
            stat.add(values[name])
        self._keep(rows[cols["index"] % self.stride == 0])

    def _keep(self, rows: np.ndarray) -> None:
        """Add ``rows`` (m, columns), already sampled by ``stride``; while the kept rows
        and these would be more than ``KEEP_REQUESTS``, the stride doubles and both keep
        the rows it selects (in place for the kept ones)."""
        kept = self.kept
        while kept.size + rows.shape[0] > KEEP_REQUESTS:
            self.stride *= 2
            kept.keep(np.flatnonzero(kept.data["index"][: kept.size] % self.stride == 0))
            rows = rows[rows[:, 0] % self.stride == 0]
        if rows.shape[0] and rows[:, _COUNTS_AT].max() > _INT32_MAX:
            raise OverflowError("a request's token count is above 2^31 - 1")
        kept.append(list(rows.T))

    def arrays(self) -> dict[str, np.ndarray]:
        """The kept rows by index, in the record's types (times float64, counts int64)."""
        self.flush()
        kept = self.kept
        order = np.argsort(kept.data["index"][: kept.size], kind="stable")
        out = kept.release(order)
        for name in _INTS:
            out[name] = out[name].astype(np.int64)
        out["sample_index"] = out.pop("index")
        return out


@dataclass(slots=True)
class _Gaps:
    """Delivery gaps: buffered arrays streamed into ``stats`` every ``CHUNK`` values, kept
    whole (values and weights, float64, filled in place) while the run has at most
    ``KEEP_GAPS`` of them, released as soon as it has more."""

    stats: StreamedStat = field(default_factory=StreamedStat)
    pending: list[np.ndarray] = field(default_factory=list)
    pending_weights: list[float] = field(default_factory=list)
    pending_size: int = 0
    kept: _Columns = field(default_factory=lambda: _Columns(_GAP_DTYPES, KEEP_GAPS))
    exact: bool = True

    def add(self, values_ms: np.ndarray, weight: float) -> None:
        self.pending.append(values_ms)
        self.pending_weights.append(weight)
        self.pending_size += values_ms.size
        if self.pending_size >= CHUNK:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        values = np.concatenate(self.pending)
        weights = np.repeat(self.pending_weights, [v.size for v in self.pending])
        self.pending, self.pending_weights, self.pending_size = [], [], 0
        self.stats.add(values, weights)
        if self.exact:
            if self.kept.size + values.size > KEEP_GAPS:
                self.exact, self.kept = False, _Columns(_GAP_DTYPES, 0)
            else:
                self.kept.append([values, weights])

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        self.flush()
        kept = self.kept.release()
        return kept["values"], kept["weights"]


class Recorder:
    """Accumulates one replication's statistics (see ``ServingRecord``); holds the
    requests in the system (``live``, by id) and no others. ``delivery_gaps`` False: the
    delivery gaps are not kept (a study that reads no ITL: its record's ``itl_ms`` and
    ``itl_stats`` are empty and ``itl_exact`` False), the rest the same bit for bit."""

    def __init__(
        self,
        max_running: int,
        kv_capacity: int | None,
        first: int,
        measured: int,
        *,
        delivery_gaps: bool = True,
    ):
        self.live: dict[int, Request] = {}
        self.arrived = 0
        self.first_measured = first
        self.measured = measured
        self.window_start_ms = float("inf")
        self.window = WindowTally()
        self._rows = _Rows()
        self._gaps = _Gaps()
        self._keep_gaps = delivery_gaps
        # time at each decode batch size: Python floats (an item of an array costs more to
        # add to), the record's array at the end; the same sums bit for bit
        self.batch_time_ms = [0.0] * (max_running + 1)
        self.prefill_time_ms = 0.0
        self.kv_token_ms = 0.0
        self.kv_capacity = kv_capacity
        self.kv_peak = 0
        self.tokens_delivered = 0
        self.decode_iterations = 0
        self.prefill_iterations = 0
        self.request_cycles = 0
        self.cycle_tokens = 0
        self.preemptions = 0
        self._end_ms = -1.0  # the run's end, once known (``record``)

    def arrive(self, req: Request, now_ms: float) -> None:
        """A request arrives: its id (arrival order), whether it is measured; the first
        measured one opens the window."""
        req.id = rid = self.arrive_id(now_ms)
        req.arrival_ms = now_ms
        self.live[rid] = req
        req.measured = self.first_measured <= rid < self.first_measured + self.measured

    def arrive_id(self, now_ms: float) -> int:
        """A request arrives at ``now_ms`` (held by the caller): its id, in arrival order
        (``arrive_ids`` of one; the window's bookkeeping inline unless it opens it)."""
        rid = self.arrived
        if rid == self.first_measured:  # it opens the window
            return self.arrive_ids(now_ms, 1)[0]
        self.arrived = rid + 1
        self.window.arrive_many(now_ms, 1)
        return rid

    def arrive_ids(self, now_ms: float, m: int) -> range:
        """``m`` requests arrive at ``now_ms`` (held by the caller): their ids, in arrival
        order; the first measured one opens the window."""
        first = self.arrived
        self.arrived += m
        before = self.first_measured - first  # arrivals before the window opens
        if 0 <= before < m:
            self.window.arrive_many(now_ms, before)
            self.window_start_ms = now_ms
            self.window.open(now_ms)
            self.window.arrive_many(now_ms, m - before)
        else:
            self.window.arrive_many(now_ms, m)
        return range(first, first + m)

    def leave(self, req: Request) -> None:
        """A request is answered: its row is recorded and it is released."""
        del self.live[req.id]
        self.window.leave(req.arrival_ms, req.finish_ms)
        if req.measured:
            self._row(req)

    def leave_decoded(
        self,
        rid: int,
        arrival_ms: float,
        first_token_ms: float,
        finish_ms: float,
        input_tokens: int,
        output_tokens: int,
        request_class: int,
        cycles: int,
    ) -> bool:
        """``leave`` of a request held by the caller that decoded from its arrival (admitted
        and decoding then, no preemption; ``finish_ms`` -1: unanswered at the end). Whether
        it was measured."""
        self.window.leave(arrival_ms, finish_ms if finish_ms >= 0 else self._end_ms)
        measured = self.first_measured <= rid < self.first_measured + self.measured
        if measured:
            self._rows.add(
                (
                    rid - self.first_measured,
                    arrival_ms,
                    arrival_ms,
                    first_token_ms,
                    arrival_ms,
                    finish_ms,
                    input_tokens,
                    output_tokens,
                    output_tokens,
                    request_class,
                    0,
                    cycles,
                )
            )
        return measured

    def _row(self, r: Request) -> None:
        decoded = r.output_tokens - r.decode_from if r.decode_start_ms >= 0 else 0
        self._rows.add(
            (
                r.id - self.first_measured,
                r.arrival_ms,
                r.admitted_ms,
                r.first_token_ms,
                r.decode_start_ms,
                r.finish_ms,
                r.input_tokens,
                r.output_tokens,
                decoded,
                r.request_class,
                r.preemptions,
                r.cycles,
            )
        )

    @property
    def keeps_gaps(self) -> bool:
        """Whether delivery gaps are kept (``gaps`` drops them otherwise)."""
        return self._keep_gaps

    def gaps(self, values_ms: np.ndarray, weight: float) -> None:
        """Delivery gaps (ms), each seen by ``weight`` deliveries (none kept when the
        recorder was made without ``delivery_gaps``)."""
        if values_ms.size and self._keep_gaps:
            self._gaps.add(values_ms, weight)

    def decode_iterations_done(
        self,
        batch: int,
        start_ms: float,
        ends_ms: np.ndarray,
        durations_ms: np.ndarray,
        held_tokens: np.ndarray,
        delivered: np.ndarray,
    ) -> None:
        """Time-weighted statistics of decode iterations of one batch size from
        ``start_ms``; arrays (n,): ends, durations, KV tokens held (non-decreasing: a
        block's contexts only grow, so the last is the most), useful output tokens
        delivered by each iteration."""
        self.decode_iterations += durations_ms.shape[0]
        if start_ms < self.window_start_ms:
            inside = ends_ms - durations_ms >= self.window_start_ms
            if not inside.any():
                return
            durations_ms, delivered = durations_ms * inside, delivered * inside
            peak = int(np.maximum.reduce(held_tokens[inside]))
        else:
            peak = int(held_tokens[-1])
        self.batch_time_ms[batch] += float(np.add.reduce(durations_ms))
        self.kv_token_ms += float(held_tokens @ durations_ms)
        self.kv_peak = max(self.kv_peak, peak)
        self.tokens_delivered += int_sum(delivered)

    def decode_step_done(
        self,
        batch: int,
        start_ms: float,
        end_ms: float,
        duration_ms: float,
        held_tokens: int,
        delivered: int,
    ) -> None:
        """``decode_iterations_done`` of one iteration, in scalars (the same bits)."""
        self.decode_iterations += 1
        if start_ms < self.window_start_ms and end_ms - duration_ms < self.window_start_ms:
            return
        self.batch_time_ms[batch] += duration_ms
        self.kv_token_ms += held_tokens * duration_ms
        self.kv_peak = max(self.kv_peak, held_tokens)
        self.tokens_delivered += delivered

    def prefill_done(self, start_ms: float, duration_ms: float, held_tokens: int, tokens: int):
        self.prefill_iterations += 1
        if start_ms < self.window_start_ms:
            return
        self.prefill_time_ms += duration_ms
        self.kv_token_ms += held_tokens * duration_ms
        self.kv_peak = max(self.kv_peak, held_tokens)
        self.tokens_delivered += tokens

    def record(self, end_ms: float, held: Callable[[], int] | None = None) -> ServingRecord:
        """The replication's record at ``end_ms``: requests still in the system leave at
        the end (measured ones recorded unanswered, ``finish_ms`` -1). ``held``: the
        caller's requests (``leave_decoded``) still in the system, made to leave first;
        it returns how many there were (they arrived before ``live``'s)."""
        self._end_ms = end_ms
        unfinished = len(self.live) + (held() if held is not None else 0)
        for req in list(self.live.values()):
            self.window.leave(req.arrival_ms, end_ms)
            if req.measured:
                self._row(req)
        self.live.clear()
        rows = self._rows.arrays()
        itl, weights = self._gaps.arrays()
        return ServingRecord(
            **rows,
            measured=self._measured_seen(),
            stride=self._rows.stride,
            request_stats=self._rows.stats,
            window=self.window,
            window_start_ms=self.window_start_ms,
            window_end_ms=end_ms,
            itl_ms=itl,
            itl_weight=weights,
            itl_exact=self._gaps.exact and self._keep_gaps,
            itl_stats=self._gaps.stats,
            batch_time_ms=np.array(self.batch_time_ms, dtype=float),
            prefill_time_ms=self.prefill_time_ms,
            kv_token_ms=self.kv_token_ms,
            kv_capacity_tokens=self.kv_capacity,
            kv_peak_tokens=self.kv_peak,
            tokens_delivered=self.tokens_delivered,
            decode_iterations=self.decode_iterations,
            prefill_iterations=self.prefill_iterations,
            request_cycles=self.request_cycles,
            cycle_tokens=self.cycle_tokens,
            preemptions_total=self.preemptions,
            unfinished_at_end=unfinished,
        )

    def _measured_seen(self) -> int:
        """Measured requests that arrived."""
        return max(0, min(self.arrived - self.first_measured, self.measured))
