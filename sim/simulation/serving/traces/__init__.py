"""Request traces a serving simulation replays: specsim's CSV and three public formats.

``read_trace(path, class_names, fmt=..., rate_scale=..., window_s=...)`` reads one
trace file into a ``Trace`` (arrival times in ms, prompt and output tokens, class):

* ``specsim``: ``arrival_s, input_tokens, output_tokens[, class]`` (native.py);
* ``azure``: the Azure LLM inference traces, ``TIMESTAMP, ContextTokens,
  GeneratedTokens`` (azure.py);
* ``burstgpt``: BurstGPT, ``Timestamp, Model, Request tokens, Response tokens, Total
  tokens, Log Type`` (burstgpt.py);
* ``mooncake``: Mooncake JSON lines, ``timestamp`` (ms), ``input_length``,
  ``output_length``, ``hash_ids`` (mooncake.py);
* ``auto`` (the default): the format is told by the first line that is not a ``#``
  comment (a JSON object: mooncake; else the CSV header's column names).

``window_s = (start, end)`` keeps the requests arriving in [start, end) seconds on the
trace's own clock (specsim: ``arrival_s``; Azure: seconds after the first row; BurstGPT:
``Timestamp``; Mooncake: ``timestamp`` / 1000) and starts the replay at ``start``;
``rate_scale`` then divides every arrival time (2: the same requests twice as fast, so
twice the rate). Files are read with the bounds of rows.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sim.errors import SpecsimError
from sim.simulation.serving.traces.azure import parse_azure
from sim.simulation.serving.traces.burstgpt import parse_burstgpt
from sim.simulation.serving.traces.mooncake import parse_mooncake
from sim.simulation.serving.traces.native import parse_native
from sim.simulation.serving.traces.rows import read_trace_text
from sim.simulation.serving.workload import Trace

__all__ = ["TRACE_FORMATS", "ReadTrace", "detect_format", "parse_trace", "read_trace"]

#: The formats ``read_trace`` reads (``auto``: told from the file).
TRACE_FORMATS: tuple[str, ...] = ("auto", "specsim", "azure", "burstgpt", "mooncake")


@dataclass(frozen=True, slots=True)
class ReadTrace:
    """A trace as read: the requests, its format and what reading it did (in words)."""

    trace: Trace
    fmt: str
    notes: tuple[str, ...] = ()


def detect_format(text: str, source: str) -> str:
    """The format of a trace text, told by its first line that is not a ``#`` comment."""
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith("{"):
            return "mooncake"
        head = stripped[:4096]
        columns = {c.strip().strip('"') for c in head.split(",")}
        if {"TIMESTAMP", "ContextTokens", "GeneratedTokens"} <= columns:
            return "azure"
        if {"Timestamp", "Request tokens", "Response tokens"} <= columns:
            return "burstgpt"
        if columns & {"arrival_s", "input_tokens", "output_tokens"}:
            return "specsim"
        raise SpecsimError(
            "unknown trace format: the header names none of specsim's (arrival_s, "
            "input_tokens, output_tokens), Azure's (TIMESTAMP, ContextTokens, "
            "GeneratedTokens), BurstGPT's (Timestamp, Request tokens, Response tokens) "
            "columns and the line is not a Mooncake JSON object",
            source=source,
            field="header",
        )
    raise SpecsimError("the trace is empty", source=source)


def parse_trace(
    text: str,
    source: str,
    class_names: Sequence[str] = (),
    *,
    fmt: str = "auto",
    rate_scale: float = 1.0,
    window_s: tuple[float, float] | None = None,
) -> ReadTrace:
    """A trace from ``text`` (see the module docstring)."""
    if fmt not in TRACE_FORMATS:
        raise SpecsimError(
            f"unknown trace format {fmt!r} ({', '.join(TRACE_FORMATS)})", param="trace_format"
        )
    if fmt == "auto":
        fmt = detect_format(text, source)
    notes: list[str] = []
    if fmt == "specsim":
        trace = parse_native(text, source, class_names)
    elif fmt == "azure":
        trace = parse_azure(text, source)
    elif fmt == "burstgpt":
        trace, failed = parse_burstgpt(text, source)
        if failed:
            notes.append(
                f"trace: {failed} failed request{'s' * (failed != 1)} (Response tokens 0) skipped"
            )
    else:
        trace = parse_mooncake(text, source)
    if window_s is not None:
        trace = _window(trace, window_s, source)
        notes.append(
            f"trace: the window {window_s[0]:g}-{window_s[1]:g} s, {trace.size} "
            f"request{'s' * (trace.size != 1)}, replayed from its start"
        )
    if rate_scale != 1.0:
        trace = _scaled(trace, rate_scale)
        notes.append(f"trace: arrivals {rate_scale:g}x as fast (rate scale)")
    return ReadTrace(trace, fmt, tuple(notes))


def read_trace(
    path: str | Path,
    class_names: Sequence[str] = (),
    *,
    fmt: str = "auto",
    rate_scale: float = 1.0,
    window_s: tuple[float, float] | None = None,
) -> ReadTrace:
    """The trace at ``path`` (a regular file, at most rows.MAX_TRACE_BYTES)."""
    return parse_trace(
        read_trace_text(path),
        str(path),
        class_names,
        fmt=fmt,
        rate_scale=rate_scale,
        window_s=window_s,
    )


def _window(trace: Trace, window_s: tuple[float, float], source: str) -> Trace:
    start, end = window_s
    t_s = trace.arrival_ms / 1000.0
    keep = (t_s >= start) & (t_s < end)
    if not keep.any():
        first, last = float(t_s[0]), float(t_s[-1])
        raise SpecsimError(
            f"no request arrives in {start:g}-{end:g} s (the trace's arrivals run from "
            f"{first:g} to {last:g} s)",
            source=source,
            field="serving.trace_window_s",
        )
    return Trace(
        arrival_ms=trace.arrival_ms[keep] - start * 1000.0,
        input_tokens=trace.input_tokens[keep],
        output_tokens=trace.output_tokens[keep],
        request_class=trace.request_class[keep],
        source=trace.source,
    )


def _scaled(trace: Trace, rate_scale: float) -> Trace:
    return Trace(
        arrival_ms=np.asarray(trace.arrival_ms) / rate_scale,
        input_tokens=trace.input_tokens,
        output_tokens=trace.output_tokens,
        request_class=trace.request_class,
        source=trace.source,
    )
