"""Bounded reading of a trace file and the checks every trace format shares.

A trace is read as a regular file of at most ``MAX_TRACE_BYTES`` (sim/files.py refuses
FIFOs, devices, /proc entries and symbolic link loops); a CSV line is at most
``MAX_LINE_BYTES`` and a field at most ``MAX_FIELD_BYTES`` (a line of megabytes is one
error naming its line, not a parser's traceback); a JSON line is nested at most
``MAX_JSON_DEPTH`` deep. Every row's values are checked by ``RowChecker``: an arrival time
finite, >= 0, at most ``MAX_ARRIVAL_S`` and non-decreasing; token counts integers in the
scenario's own bounds. Errors are one ``SpecsimError`` naming the file, the column and the
row (1 = the first request).
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sim.errors import SpecsimError
from sim.files import json_depth, read_bounded_text
from sim.scenario.sections.bounds import MAX_OUTPUT_TOKENS
from sim.simulation.serving.workload import Trace

__all__ = [
    "MAX_ARRIVAL_S",
    "MAX_FIELD_BYTES",
    "MAX_INPUT_TOKENS",
    "MAX_LINE_BYTES",
    "MAX_TRACE_BYTES",
    "RowChecker",
    "csv_rows",
    "read_trace_text",
]

#: Largest trace file: the largest public traces (BurstGPT's 3.9 M rows, ~200 MB; Azure's
#: 2024 week of conversations, 1.1 GB) are cut to a window before a simulation can replay
#: them; 256 MiB holds ~5 M rows of any of the formats.
MAX_TRACE_BYTES = 256 * 1024 * 1024
#: Longest CSV line and field: a trace row is a few numbers and a name (Mooncake's hash
#: lists, the longest real rows, are a few KiB).
MAX_LINE_BYTES = 64 * 1024
MAX_FIELD_BYTES = 4 * 1024
#: Latest arrival: ~3.2 years in seconds (public traces span a day to four months); beyond
#: it a millisecond clock in float64 loses sub-millisecond resolution and a replay would
#: simulate years of idle time.
MAX_ARRIVAL_S = 1e8
#: A row's most prompt tokens: ten times the scenario's most output tokens.
MAX_INPUT_TOKENS = 10 * MAX_OUTPUT_TOKENS


def read_trace_text(path: str | Path) -> str:
    """The trace file's text (UTF-8, regular file, at most ``MAX_TRACE_BYTES``)."""
    return read_bounded_text(path, limit=MAX_TRACE_BYTES)


def _lines(text: str, source: str) -> Iterator[tuple[int, str]]:
    for number, line in enumerate(text.splitlines(), start=1):
        if len(line) > MAX_LINE_BYTES:
            raise SpecsimError(
                f"line longer than {MAX_LINE_BYTES // 1024} KiB (the trace line limit)",
                source=source,
                field=f"line {number}",
            )
        yield number, line


def csv_rows(text: str, source: str) -> tuple[list[str], Iterator[tuple[int, dict[str, str]]]]:
    """The header (comment lines starting with ``#`` before it skipped) and an iterator of
    (row number, {column: text}); a short row's missing cells are empty strings."""
    lines = iter(_lines(text, source))
    header_line = None
    for _number, line in lines:
        if line.strip() and not line.lstrip().startswith("#"):
            header_line = line
            break
    if header_line is None:
        raise SpecsimError("the trace has no header line and no requests", source=source)
    header = [h.strip() for h in _parse_csv_line(header_line, source, "header")]

    def rows() -> Iterator[tuple[int, dict[str, str]]]:
        row = 0
        for _number, line in lines:
            if not line.strip():
                continue
            row += 1
            cells = _parse_csv_line(line, source, f"row {row}")
            yield (
                row,
                {h: (cells[i].strip() if i < len(cells) else "") for i, h in enumerate(header)},
            )

    return header, rows()


def _parse_csv_line(line: str, source: str, where: str) -> list[str]:
    try:
        cells = next(csv.reader([line]), [])
    except csv.Error as exc:
        raise SpecsimError(f"not CSV: {exc}", source=source, field=where) from None
    for cell in cells:
        if len(cell) > MAX_FIELD_BYTES:
            raise SpecsimError(
                f"a field longer than {MAX_FIELD_BYTES // 1024} KiB (the trace field limit)",
                source=source,
                field=where,
            )
    return cells


@dataclass(slots=True)
class RowChecker:
    """Collects checked rows; ``trace()`` makes the ``Trace`` (arrival times in ms)."""

    source: str
    class_names: Sequence[str] = ()
    arrival_s: list[float] = field(default_factory=list)
    input_tokens: list[int] = field(default_factory=list)
    output_tokens: list[int] = field(default_factory=list)
    classes: list[int] = field(default_factory=list)
    skipped: int = 0

    def fail(self, message: str, column: str, row: int) -> SpecsimError:
        """The error for ``column`` of ``row`` (to raise)."""
        return SpecsimError(message, source=self.source, field=f"{column} (row {row})")

    def time(self, value: object, column: str, row: int, *, scale: float = 1.0) -> float:
        """A time (``value`` x ``scale`` seconds) checked: a finite number in
        [0, MAX_ARRIVAL_S]."""
        try:
            t = float(value) * scale  # type: ignore[arg-type]
        except (TypeError, ValueError, OverflowError):
            raise self.fail(f"{_quote(value)} is not a number", column, row) from None
        if isinstance(value, bool) or not math.isfinite(t) or t < 0:
            raise self.fail(f"must be a time >= 0, got {_quote(value)}", column, row)
        if t > MAX_ARRIVAL_S:
            raise self.fail(
                f"{t:.3g} s is past the latest arrival a replay takes ({MAX_ARRIVAL_S:g} s, "
                "~3 years; is the unit right?)",
                column,
                row,
            )
        return t

    def tokens(self, value: object, column: str, row: int, low: int, high: int) -> int:
        """A token count checked: an integer in [low, high]."""
        number: int | None = None
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        elif isinstance(value, float) and value.is_integer():
            number = int(value)
        elif isinstance(value, str):
            try:
                number = int(value.strip())
            except ValueError:
                number = None
        if number is None:
            raise self.fail(f"{_quote(value)} is not an integer", column, row)
        if not low <= number <= high:
            raise self.fail(f"must be in [{low}, {high:,}], got {number:,}", column, row)
        return number

    def add(self, row: int, column: str, t_s: float, n_in: int, n_out: int, cls: int = -1) -> None:
        """One request; arrivals must not go backwards."""
        if self.arrival_s and t_s < self.arrival_s[-1]:
            raise self.fail(
                f"arrivals must not go backwards ({t_s:g} s after {self.arrival_s[-1]:g} s)",
                column,
                row,
            )
        self.arrival_s.append(t_s)
        self.input_tokens.append(n_in)
        self.output_tokens.append(n_out)
        self.classes.append(cls)

    def trace(self, *, origin_s: float = 0.0) -> Trace:
        """The requests as a ``Trace``, times from ``origin_s`` (in ms)."""
        if not self.arrival_s:
            raise SpecsimError("the trace has no requests", source=self.source)
        return Trace(
            arrival_ms=(np.array(self.arrival_s) - origin_s) * 1000.0,
            input_tokens=np.array(self.input_tokens, dtype=np.int64),
            output_tokens=np.array(self.output_tokens, dtype=np.int64),
            request_class=np.array(self.classes, dtype=np.int64),
            source=self.source,
        )


def _quote(value: object) -> str:
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 40 else text[:18] + "..." + text[-18:]


def missing_columns(
    header: Collection[str],
    need: Sequence[str],
    source: str,
    what: str,
    *,
    noun: str = "column",
    field: str = "header",
) -> None:
    """SpecsimError naming the columns (or keys) of ``need`` absent from ``header``."""
    missing = [c for c in need if c not in header]
    if missing:
        raise SpecsimError(
            f"missing {noun}{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
            f"(a {what} trace has {', '.join(need)})",
            source=source,
            field=field,
        )


#: Deepest nesting of a JSON trace line (a Mooncake line is an object holding a list: 2).
MAX_JSON_DEPTH = 32


def json_lines(text: str, source: str) -> Iterator[tuple[int, dict[str, object]]]:
    """(row number, object) of each non-empty line of a JSON-lines text; every line must
    be one JSON object (no NaN or infinities), at most ``MAX_LINE_BYTES`` long and
    ``MAX_JSON_DEPTH`` deep."""
    row = 0
    for _number, line in _lines(text, source):
        if not line.strip():
            continue
        row += 1
        if json_depth(line) > MAX_JSON_DEPTH:
            raise SpecsimError(
                f"nested deeper than {MAX_JSON_DEPTH} levels", source=source, field=f"row {row}"
            )
        try:
            obj = json.loads(line, parse_constant=_no_constant)
        except ValueError as exc:
            raise SpecsimError(
                f"not JSON: {str(exc)[:200]}", source=source, field=f"row {row}"
            ) from None
        if not isinstance(obj, dict):
            raise SpecsimError(
                f"expected a JSON object, got {type(obj).__name__}",
                source=source,
                field=f"row {row}",
            )
        yield row, obj


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not a number JSON allows")
