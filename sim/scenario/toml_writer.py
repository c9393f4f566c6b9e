"""A small TOML emitter for scenario files (tomllib reads TOML but cannot write it).

It covers what the scenario schema holds: top-level strings, then one ``[table]`` per
section (nested tables as ``[a.b]``, lists of tables as ``[[a.b]]``) with strings,
booleans, integers, floats and arrays of them. Strings are TOML basic strings with the
spec's escapes; floats use Python's shortest round-trip ``repr`` (always with a ``.`` or
an exponent, so they stay floats); comments may be attached to any dotted key and a header
to the file. Output round-trips through tomllib (tests check this through
sim.scenario.load_scenario).
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Mapping, Sequence
from typing import Any

from sim.errors import SpecsimError
from sim.scenario.load import scenario_from_dict
from sim.scenario.schema import Scenario

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
}


def _key(key: str) -> str:
    return key if _BARE_KEY.match(key) else _string(key)


def _string(text: str) -> str:
    out = []
    for ch in text:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def value_to_toml(value: Any) -> str:
    """One TOML value: str, bool, int, float (inf/nan as TOML spells them) or a list."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        text = repr(value)
        return text if any(c in text for c in ".en") else text + ".0"
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, Sequence):
        return "[" + ", ".join(value_to_toml(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")


def _comment_lines(text: str | None) -> list[str]:
    return [f"# {line}".rstrip() for line in text.splitlines()] if text else []


def inline_table(table: Mapping[str, Any]) -> str:
    """A flat mapping as a TOML inline table: ``{ a = 1, b = "x" }``."""
    return "{ " + ", ".join(f"{_key(k)} = {value_to_toml(v)}" for k, v in table.items()) + " }"


def _is_uncertainty_entry(path: Sequence[str]) -> bool:
    """``uncertainty.SECTION.KEY`` entries are written inline, one line each."""
    return len(path) == 3 and path[0] == "uncertainty" and path[1] != "correlation"


def dumps(
    document: Mapping[str, Any],
    *,
    header: str | None = None,
    comments: Mapping[str, str] | None = None,
) -> str:
    """``document`` (nested mappings) as TOML text; ``comments`` keyed by dotted key/table.

    Empty tables are left out; ``[uncertainty]`` entries become inline tables."""
    comments = comments or {}
    lines = _comment_lines(header)

    def header(path: list[str]) -> str:
        return ".".join(_key(p) for p in path)

    def emit(table: Mapping[str, Any], path: list[str]) -> None:
        def is_array_of_tables(v: Any) -> bool:
            return isinstance(v, list) and bool(v) and all(isinstance(x, Mapping) for x in v)

        def inline(k: str, v: Any) -> bool:
            return isinstance(v, Mapping) and _is_uncertainty_entry([*path, k])

        scalars = {
            k: v
            for k, v in table.items()
            if (not isinstance(v, Mapping) or inline(k, v)) and not is_array_of_tables(v)
        }
        tables = {
            k: v for k, v in table.items() if isinstance(v, Mapping) and v and not inline(k, v)
        }
        arrays = {k: v for k, v in table.items() if is_array_of_tables(v)}
        for key, value in scalars.items():
            lines.extend(_comment_lines(comments.get(".".join([*path, key]))))
            text = inline_table(value) if isinstance(value, Mapping) else value_to_toml(value)
            lines.append(f"{_key(key)} = {text}")
        for key, sub in tables.items():
            lines.append("")
            lines.extend(_comment_lines(comments.get(".".join([*path, key]))))
            lines.append(f"[{header([*path, key])}]")
            emit(sub, [*path, key])
        for key, items in arrays.items():
            lines.extend(_comment_lines(comments.get(".".join([*path, key]))))
            for item in items:
                lines.append("")
                lines.append(f"[[{header([*path, key])}]]")
                emit(item, [*path, key])

    if header:
        lines.append("")
    emit(document, [])
    return "\n".join(lines).strip("\n") + "\n"


def dumps_scenario(
    scenario: Scenario,
    *,
    header: str | None = None,
    comments: Mapping[str, str] | None = None,
) -> str:
    """A scenario as TOML that reads back (tomllib + validation) as the same scenario.

    Raises SpecsimError if it would not: a file that ``specsim run`` rejects is never written.
    """
    raw = scenario.model_dump(exclude_none=True)
    for entry in raw.get("uncertainty", {}).values():  # an entry's defaults add nothing
        if isinstance(entry, dict):
            for item in entry.values():
                if isinstance(item, dict) and item.get("reason") == "":
                    item.pop("reason")
    text = dumps(raw, header=header, comments=comments)
    again = scenario_from_dict(tomllib.loads(text), source="written scenario")
    if again != scenario:
        raise SpecsimError("the written scenario does not read back the same", source="toml")
    return text
