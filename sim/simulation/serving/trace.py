"""Request traces: the CSV format, read and checked row by row.

Format (one request per row, a header line first, comma-separated)::

    arrival_s,input_tokens,output_tokens,class
    0.000,812,231,chat
    0.137,1534,96,code

* ``arrival_s``: arrival time in seconds from the start of the trace, >= 0 and
  non-decreasing down the file;
* ``input_tokens``: prompt tokens, an integer in [0, 10,000,000];
* ``output_tokens``: tokens to generate, an integer in [1, 1,000,000] (the bounds of the
  scenario's own ``workload`` fields);
* ``class`` (optional column; an empty cell is allowed): the name of an acceptance class
  of the scenario's ``[[acceptance.mix]]``; empty or absent, the class is drawn by the
  mix weights like any other request.

Lines starting with ``#`` before the header are comments (say where the trace comes
from). Other columns are ignored. Every problem is one ``SpecsimError`` naming the file,
the row (1 = the first request, the header is row 0) and the column.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from sim.errors import SpecsimError
from sim.scenario.schema import MAX_OUTPUT_TOKENS
from sim.simulation.serving.workload import Trace

__all__ = ["COLUMNS", "parse_trace", "read_trace"]

COLUMNS: tuple[str, ...] = ("arrival_s", "input_tokens", "output_tokens")


def read_trace(path: str | Path, class_names: Sequence[str] = ()) -> Trace:
    """The trace at ``path`` (see the module docstring for the format)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecsimError("no such file", source=str(path)) from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as exc:
        raise SpecsimError(f"cannot read: {exc.__class__.__name__}", source=str(path)) from None
    return parse_trace(text, str(path), class_names)


#: A row's most tokens: the bounds of the scenario's own ``workload`` fields.
MAX_INPUT_TOKENS = 10 * MAX_OUTPUT_TOKENS


def _int(value: str, low: int, high: int, where: str, field: str, source: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise SpecsimError(
            f"{value!r} is not an integer", source=source, field=field + where
        ) from None
    if not low <= number <= high:
        raise SpecsimError(
            f"must be in [{low}, {high:,}], got {number:,}", source=source, field=field + where
        )
    return number


def parse_trace(text: str, source: str, class_names: Sequence[str] = ()) -> Trace:
    """A trace from CSV ``text``; errors name ``source``, the row and the column."""
    lines = text.splitlines(keepends=True)
    while lines and lines[0].lstrip().startswith("#"):
        lines.pop(0)
    reader = csv.DictReader(io.StringIO("".join(lines)))
    header = reader.fieldnames or []
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise SpecsimError(
            f"missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
            f"(need {', '.join(COLUMNS)}[, class])",
            source=source,
            field="header",
        )
    known = {name: i for i, name in enumerate(class_names)}
    arrival, n_in, n_out, cls = [], [], [], []
    last = 0.0
    for row_number, row in enumerate(reader, start=1):
        where = f" (row {row_number})"
        raw = row["arrival_s"]
        try:
            t = float(raw)
        except (TypeError, ValueError):
            raise SpecsimError(
                f"{raw!r} is not a number", source=source, field="arrival_s" + where
            ) from None
        if not math.isfinite(t) or t < 0:
            raise SpecsimError(
                f"must be a time >= 0, got {raw}", source=source, field="arrival_s" + where
            )
        if t < last:
            raise SpecsimError(
                f"arrivals must not go backwards ({t:g} s after {last:g} s)",
                source=source,
                field="arrival_s" + where,
            )
        last = t
        arrival.append(t * 1000.0)
        n_in.append(
            _int(row["input_tokens"] or "", 0, MAX_INPUT_TOKENS, where, "input_tokens", source)
        )
        n_out.append(
            _int(row["output_tokens"] or "", 1, MAX_OUTPUT_TOKENS, where, "output_tokens", source)
        )
        name = (row.get("class") or "").strip()
        if name and name not in known:
            listed = ", ".join(class_names) if class_names else "none: the scenario has no mix"
            raise SpecsimError(
                f"unknown class {name!r} (acceptance classes: {listed})",
                source=source,
                field="class" + where,
            )
        cls.append(known[name] if name else -1)
    if not arrival:
        raise SpecsimError("the trace has no requests", source=source)
    return Trace(
        arrival_ms=np.array(arrival),
        input_tokens=np.array(n_in, dtype=np.int64),
        output_tokens=np.array(n_out, dtype=np.int64),
        request_class=np.array(cls, dtype=np.int64),
        source=source,
    )
