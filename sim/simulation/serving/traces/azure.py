"""The Azure LLM inference traces (Azure/AzurePublicDataset): ``TIMESTAMP, ContextTokens,
GeneratedTokens``.

Format, as published (github.com/Azure/AzurePublicDataset, AzureLLMInferenceDataset2023.md
and AzureLLMInferenceDataset2024.md; files ``data/AzureLLMInferenceTrace_code.csv`` and
``_conv.csv``, the 2024 week-long ``*_1week.csv``)::

    TIMESTAMP,ContextTokens,GeneratedTokens
    2023-11-16 18:15:46.6805900,374,44
    2023-11-16 18:15:50.9951690,396,109

* ``TIMESTAMP``: the wall-clock arrival, ``YYYY-MM-DD HH:MM:SS[.fffffff]`` (up to seven
  fractional digits, 100 ns ticks; an ISO ``T`` separator and a UTC offset are accepted);
  the first row is time 0 and arrivals are seconds after it;
* ``ContextTokens``: prompt tokens; ``GeneratedTokens``: tokens generated. A row with 0
  generated tokens (none in the published files) is refused: a request the server answered
  generated at least one.

The traces carry no acceptance class: every request's class is drawn by the mix weights.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from sim.scenario.sections.bounds import MAX_OUTPUT_TOKENS
from sim.simulation.serving.traces.rows import (
    MAX_INPUT_TOKENS,
    RowChecker,
    csv_rows,
    missing_columns,
)
from sim.simulation.serving.workload import Trace

__all__ = ["COLUMNS", "parse_azure"]

COLUMNS: tuple[str, ...] = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")

_STAMP = re.compile(
    r"(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:?\d{2})?"
)


def _seconds(text: str) -> tuple[int, float] | None:
    """Whole seconds since the epoch of an Azure ``TIMESTAMP`` (naive stamps are UTC) and
    the fraction of a second, apart: their sum in float64 would keep only ~0.2 us of the
    100 ns ticks."""
    match = _STAMP.fullmatch(text.strip())
    if match is None:
        return None
    day, clock, fraction, zone = match.groups()
    try:
        stamp = datetime.fromisoformat(f"{day} {clock}")
    except ValueError:
        return None
    if zone and zone != "Z":
        sign = 1 if zone[0] == "+" else -1
        hours, minutes = int(zone[1:3]), int(zone[-2:])
        offset = sign * (hours * 3600 + minutes * 60)
    else:
        offset = 0
    whole = int(stamp.replace(tzinfo=UTC).timestamp()) - offset
    return whole, (int(fraction) / 10 ** len(fraction) if fraction else 0.0)


def parse_azure(text: str, source: str) -> Trace:
    """A trace from Azure CSV ``text``; arrivals in seconds after the first row."""
    header, rows = csv_rows(text, source)
    missing_columns(header, COLUMNS, source, "Azure LLM inference")
    out = RowChecker(source)
    origin: tuple[int, float] | None = None
    for row, cells in rows:
        stamp = _seconds(cells["TIMESTAMP"])
        if stamp is None:
            raise out.fail(
                f"{cells['TIMESTAMP'][:40]!r} is not a time (YYYY-MM-DD HH:MM:SS.fffffff)",
                "TIMESTAMP",
                row,
            )
        origin = stamp if origin is None else origin
        since = (stamp[0] - origin[0]) + (stamp[1] - origin[1])
        if since < 0:
            raise out.fail(
                f"arrivals must not go backwards ({-since:g} s before the first row)",
                "TIMESTAMP",
                row,
            )
        t = out.time(since, "TIMESTAMP", row)
        n_in = out.tokens(cells["ContextTokens"], "ContextTokens", row, 0, MAX_INPUT_TOKENS)
        n_out = out.tokens(cells["GeneratedTokens"], "GeneratedTokens", row, 1, MAX_OUTPUT_TOKENS)
        out.add(row, "TIMESTAMP", t, n_in, n_out)
    return out.trace()
