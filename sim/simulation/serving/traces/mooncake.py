"""Mooncake traces (kvcache-ai/Mooncake, FAST'25): JSON lines of ``timestamp``,
``input_length``, ``output_length``, ``hash_ids``.

Format, as published (github.com/kvcache-ai/Mooncake ``mooncake_trace.jsonl`` and
``FAST25-release/traces``; the same format NVIDIA's Dynamo and AIPerf replay)::

    {"timestamp": 0, "input_length": 6755, "output_length": 500, "hash_ids": [0, 1, 2]}
    {"timestamp": 3052, "input_length": 7234, "output_length": 794, "hash_ids": [0, 28]}

* ``timestamp``: the arrival in milliseconds since the first request (requests arriving
  together share it);
* ``input_length``: prompt tokens; ``output_length``: tokens generated;
* ``hash_ids``: the prompt's KV blocks (512 tokens each; shared ids are a shared prefix).
  The serving model has no prefix cache, so they are checked to be a list of integers
  and not used.

Each line is one JSON object of at most 64 KiB nested at most ``MAX_JSON_DEPTH`` deep.
"""

from __future__ import annotations

from typing import Any

from sim.scenario.sections.bounds import MAX_OUTPUT_TOKENS
from sim.simulation.serving.traces.rows import (
    MAX_INPUT_TOKENS,
    RowChecker,
    json_lines,
    missing_columns,
)
from sim.simulation.serving.workload import Trace

__all__ = ["KEYS", "parse_mooncake"]

KEYS: tuple[str, ...] = ("timestamp", "input_length", "output_length")


def parse_mooncake(text: str, source: str) -> Trace:
    """A trace from Mooncake JSONL ``text``; arrivals in seconds (timestamp / 1000)."""
    out = RowChecker(source)
    for row, obj in json_lines(text, source):
        missing_columns(obj, KEYS, source, "Mooncake", noun="key", field=f"row {row}")
        t = out.time(obj["timestamp"], "timestamp", row, scale=1e-3)
        n_in = out.tokens(obj["input_length"], "input_length", row, 0, MAX_INPUT_TOKENS)
        n_out = out.tokens(obj["output_length"], "output_length", row, 1, MAX_OUTPUT_TOKENS)
        _check_hash_ids(obj.get("hash_ids", []), out, row)
        out.add(row, "timestamp", t, n_in, n_out)
    return out.trace()


def _check_hash_ids(value: Any, out: RowChecker, row: int) -> None:
    if not isinstance(value, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in value
    ):
        raise out.fail("must be a list of integers", "hash_ids", row)
