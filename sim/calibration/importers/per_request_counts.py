"""One request's speculative counts as a per-request file gives them, and the checked
reading of its fields that the SGLang and vLLM readers share
(sim/calibration/importers/per_request_sglang.py, per_request_vllm.py): a count, a list of
counts, where a record sits in its file, and the error an impossible figure raises naming
the file, the record and the field.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sim.errors import SpecsimError

__all__ = [
    "MAX_COUNT",
    "RequestCounts",
    "field_count",
    "field_counts",
    "first_key",
    "impossible",
    "picked",
    "where_in",
]

#: Largest count accepted in a field (a request of a billion verify steps is no request).
MAX_COUNT = 10**9


@dataclass(frozen=True, slots=True)
class RequestCounts:
    """One request: ``verify_steps`` n, ``accepted`` drafts S and ``rejected`` F, the steps
    that rejected a draft (None: the file does not say; then it is latent)."""

    line: int
    verify_steps: int
    accepted: int
    rejected: int | None


def where_in(line: int, listed: bool) -> str:
    """Where a record sits: ``item i`` of a JSON list (``listed``), else ``line i``."""
    return f"item {line}" if listed else f"line {line}"


def picked(
    records: list[tuple[int, dict[str, Any]]], listed: bool, pick: Callable[[dict[str, Any]], Any]
) -> tuple[list[tuple[int, str, Any]], int]:
    """(line, where, what ``pick`` found) of the records it finds something in, and how
    many it found nothing in."""
    found = []
    for line, record in records:
        got = pick(record)
        if got is not None:
            found.append((line, where_in(line, listed), got))
    return found, len(records) - len(found)


def field_count(record: dict[str, Any], key: str, source: str, where: str, prefix: str = "") -> int:
    """A count (an integer in [0, MAX_COUNT]) at ``record[key]``; the error names
    ``where: prefix + key``."""
    value = record.get(key)
    field = f"{where}: {prefix}{key}"
    if isinstance(value, bool) or not isinstance(value, int | float):
        got = "missing" if key not in record else repr(value)[:60]
        raise SpecsimError(f"expected a count, got {got}", source=source, field=field)
    if not (value == value and 0 <= value <= MAX_COUNT and value == int(value)):
        raise SpecsimError(
            f"expected a count (an integer in [0, {MAX_COUNT:g}]), got {repr(value)[:60]}",
            source=source,
            field=field,
        )
    return int(value)


def field_counts(value: Any, key: str, source: str, where: str, max_len: int) -> list[int]:
    """A list of counts (a histogram or per-step list) of at most ``max_len`` entries."""
    field = f"{where}: {key}"
    if not isinstance(value, list) or not value or len(value) > max_len:
        raise SpecsimError(
            f"expected a list of 1 to {max_len} counts, got {str(value)[:60]}",
            source=source,
            field=field,
        )
    out = []
    for i, v in enumerate(value):
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= MAX_COUNT:
            raise SpecsimError(f"entry {i} is not a count: {v!r}", source=source, field=field)
        out.append(v)
    return out


def first_key(meta: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    """The first of ``keys`` (a field's names, newest first) that ``meta`` has (None: none)."""
    return next((k for k in keys if k in meta), None)


def impossible(message: str, source: str, field: str) -> SpecsimError:
    """The error of a figure no server can print, naming the file and the field."""
    return SpecsimError(message, source=source, field=field)
