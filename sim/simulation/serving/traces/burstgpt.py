"""BurstGPT traces (HPMLL/BurstGPT): ``Timestamp, Model, Request tokens, Response tokens,
Total tokens, Log Type``.

Format, as published (github.com/HPMLL/BurstGPT README and ``data/BurstGPT_1.csv``; the
v1.1 release files ``BurstGPT_without_fails_1.csv`` etc.)::

    Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type
    5,ChatGPT,472,18,490,Conversation log
    45,ChatGPT,1087,230,1317,Conversation log

* ``Timestamp``: the arrival in seconds on the trace's clock (the files start a few
  seconds after 0); later files add ``Session ID`` and ``Elapsed time`` columns, read
  the same way (extra columns are ignored);
* ``Request tokens``: prompt tokens; ``Response tokens``: tokens generated. The README
  says the files "with some failure" carry failed requests as ``Response tokens`` 0:
  those rows are skipped (no request was answered), and their count is reported;
* ``Model`` (ChatGPT or GPT-4) and ``Log Type`` (Conversation log, API log) are kept
  out of the replay: they are not acceptance classes of the scenario.
"""

from __future__ import annotations

from sim.scenario.sections.bounds import MAX_OUTPUT_TOKENS
from sim.simulation.serving.traces.rows import (
    MAX_INPUT_TOKENS,
    RowChecker,
    csv_rows,
    missing_columns,
)
from sim.simulation.serving.workload import Trace

__all__ = ["COLUMNS", "parse_burstgpt"]

COLUMNS: tuple[str, ...] = ("Timestamp", "Request tokens", "Response tokens")


def parse_burstgpt(text: str, source: str) -> tuple[Trace, int]:
    """A trace from BurstGPT CSV ``text`` and the number of failed rows skipped."""
    header, rows = csv_rows(text, source)
    missing_columns(header, COLUMNS, source, "BurstGPT")
    out = RowChecker(source)
    failed = 0
    for row, cells in rows:
        t = out.time(cells["Timestamp"], "Timestamp", row)
        n_in = out.tokens(cells["Request tokens"], "Request tokens", row, 0, MAX_INPUT_TOKENS)
        n_out = out.tokens(cells["Response tokens"], "Response tokens", row, 0, MAX_OUTPUT_TOKENS)
        if n_out == 0:
            failed += 1
            continue
        out.add(row, "Timestamp", t, n_in, n_out)
    return out.trace(), failed
