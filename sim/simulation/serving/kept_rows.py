"""A serving replication's kept rows in memory that does not grow with the number of
requests (records.py ``Recorder`` fills them).

A request is released when it is answered. Its row (times, lengths, class, preemptions,
cycles) goes into a chunk of ``CHUNK`` rows; a full chunk is streamed into exact
per-metric counts and sums and a quantile sketch (sim/simulation/serving/sketch.py,
relative error 0.1%) and into the kept rows (``KeptRows``): every measured request up to
``KEEP_REQUESTS`` of them, beyond that a systematic sample by arrival (every
``stride``-th measured request, the stride doubling whenever the sample would exceed
``KEEP_REQUESTS``, so it holds between half and all of them). Delivery gaps (ITL) stream
the same way (``KeptGaps``: kept exactly up to ``KEEP_GAPS`` values).

Kept rows and gaps live in column arrays filled in place (``_Columns``: grown by doubling,
one column at a time, up to the limit; a stride doubling moves the rows it keeps to the
front in place): 72 bytes a row (times float64, the index int64, counts int32) and 16 a
gap, so at most 4.5 MiB of rows and 4 MiB of gaps, and about twice the bytes of what a
short run keeps.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sim.simulation.serving.serving_record import REQUEST_METRICS, metric_values
from sim.simulation.serving.sketch import StreamedStat

__all__ = [
    "CHUNK",
    "INT_COLUMNS",
    "KEEP_GAPS",
    "KEEP_REQUESTS",
    "ROW_COLUMNS",
    "KeptGaps",
    "KeptRows",
]

#: Measured requests a replication keeps row by row (beyond: a systematic sample).
KEEP_REQUESTS = 1 << 16
#: Delivery gaps a replication keeps value by value (beyond: the streamed statistics only).
KEEP_GAPS = 1 << 18
#: Rows (requests) or gap values buffered before they are streamed into the statistics.
CHUNK = 4096

#: Columns of a request's row.
ROW_COLUMNS = (
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
#: The counts among them (the last six: lengths, class, preemptions, cycles).
INT_COLUMNS = ROW_COLUMNS[6:]


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
#: ``KeptRows`` checks each is below 2^31), 72 bytes (a float64 row of 12 is 96).
_DTYPES: dict[str, type] = {
    name: np.int32 if name in INT_COLUMNS else np.int64 if name == "index" else np.float64
    for name in ROW_COLUMNS
}
_INT32_MAX = np.iinfo(np.int32).max
_COUNTS_AT = [ROW_COLUMNS.index(name) for name in INT_COLUMNS]
#: A kept delivery gap's storage: its value and its weight, 16 bytes.
_GAP_DTYPES: dict[str, type] = {"values": np.float64, "weights": np.float64}


@dataclass(slots=True)
class KeptRows:
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
        rows = np.array(self.chunk, dtype=np.float64).reshape(-1, len(ROW_COLUMNS))
        self.chunk = []
        if not rows.shape[0]:
            return
        cols = dict(zip(ROW_COLUMNS, rows.T, strict=True))
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
        for name in INT_COLUMNS:
            out[name] = out[name].astype(np.int64)
        out["sample_index"] = out.pop("index")
        return out


@dataclass(slots=True)
class KeptGaps:
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
