"""JSON and JSON Lines inputs, bounded: one object, or one object a line."""

from __future__ import annotations

import json
import math
from typing import Any

from sim.errors import SpecsimError
from sim.files import json_depth

#: Deepest nesting accepted in an imported JSON document (the bench outputs are 2 deep).
MAX_JSON_DEPTH = 16


def _finite(value: str) -> float:
    raise ValueError(f"{value} is not a finite number")


def _infinite(value: str) -> float:
    """``Infinity`` and ``-Infinity`` as floats (NaN still refused)."""
    if value == "NaN":
        raise ValueError(f"{value} is not a number")
    return float(value.replace("Infinity", "inf"))


def load_object(
    text: str, source: str, field: str | None = None, *, infinity: bool = False
) -> dict[str, Any]:
    """One JSON object (NaN and Infinity refused: they are not JSON; with ``infinity``,
    Infinity read as a float: Python's json.dumps writes float("inf") so, as SGLang's
    bench_serving does for its default request rate, and ``number`` still refuses it)."""
    if json_depth(text) > MAX_JSON_DEPTH:
        raise SpecsimError(f"JSON nested deeper than {MAX_JSON_DEPTH}", source=source, field=field)
    try:
        doc = json.loads(text, parse_constant=_infinite if infinity else _finite)
    except ValueError as exc:
        raise SpecsimError(f"not JSON: {exc}", source=source, field=field) from None
    if not isinstance(doc, dict):
        raise SpecsimError(
            f"expected a JSON object, got a {type(doc).__name__}", source=source, field=field
        )
    return doc


def load_objects(
    text: str, source: str, *, infinity: bool = False
) -> list[tuple[int, dict[str, Any]]]:
    """One JSON object, compact or pretty-printed, or JSON Lines (one object a line:
    ``--append-result`` files): the objects with their 1-based line numbers. The file is
    JSON Lines when its first non-empty line is a whole JSON object by itself.
    ``infinity``: as ``load_object``."""
    stripped = text.strip()
    if not stripped:
        raise SpecsimError("empty file", source=source)
    lines = [(n, ln) for n, ln in enumerate(text.split("\n"), start=1) if ln.strip()]
    if len(lines) == 1 or not _is_object(lines[0][1]):
        return [(lines[0][0], load_object(stripped, source, infinity=infinity))]
    return [(n, load_object(ln, source, f"line {n}", infinity=infinity)) for n, ln in lines]


def _is_object(line: str) -> bool:
    """Whether ``line`` alone is a JSON object (a pretty-printed object's first line, "{",
    is not)."""
    if not line.lstrip().startswith("{") or json_depth(line) > MAX_JSON_DEPTH:
        return False
    try:
        return isinstance(json.loads(line, parse_constant=_infinite), dict)
    except ValueError:
        return False


def number(record: dict[str, Any], key: str, source: str, where: str | None) -> float:
    """A finite number at ``record[key]``; SpecsimError naming the key otherwise."""
    value = record.get(key)
    field = f"{where}: {key}" if where else key
    if isinstance(value, bool) or not isinstance(value, int | float):
        got = "missing" if key not in record else f"{value!r}"
        raise SpecsimError(f"expected a number, got {got}", source=source, field=field)
    try:
        x = float(value)
    except OverflowError:  # an integer literal of hundreds of digits
        x = math.inf
    if not math.isfinite(x):
        raise SpecsimError("not a finite number", source=source, field=field)
    return x
