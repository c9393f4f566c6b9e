"""specsim's own trace CSV: ``arrival_s, input_tokens, output_tokens[, class]``.

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
the row (1 = the first request) and the column.
"""

from __future__ import annotations

from collections.abc import Sequence

from sim.errors import SpecsimError
from sim.scenario.sections.bounds import MAX_OUTPUT_TOKENS
from sim.simulation.serving.traces.rows import (
    MAX_INPUT_TOKENS,
    RowChecker,
    csv_rows,
    missing_columns,
)
from sim.simulation.serving.workload import Trace

__all__ = ["COLUMNS", "parse_native"]

COLUMNS: tuple[str, ...] = ("arrival_s", "input_tokens", "output_tokens")


def parse_native(text: str, source: str, class_names: Sequence[str] = ()) -> Trace:
    """A trace from specsim CSV ``text``; errors name ``source``, the row and the column."""
    header, rows = csv_rows(text, source)
    missing_columns(header, COLUMNS, source, "specsim")
    known = {name: i for i, name in enumerate(class_names)}
    out = RowChecker(source, class_names)
    for row, cells in rows:
        t = out.time(cells["arrival_s"], "arrival_s", row)
        n_in = out.tokens(cells["input_tokens"], "input_tokens", row, 0, MAX_INPUT_TOKENS)
        n_out = out.tokens(cells["output_tokens"], "output_tokens", row, 1, MAX_OUTPUT_TOKENS)
        name = cells.get("class", "")
        if name and name not in known:
            listed = ", ".join(class_names) if class_names else "none: the scenario has no mix"
            raise SpecsimError(
                f"unknown class {name!r} (acceptance classes: {listed})",
                source=source,
                field=f"class (row {row})",
            )
        out.add(row, "arrival_s", t, n_in, n_out, known[name] if name else -1)
    return out.trace()
