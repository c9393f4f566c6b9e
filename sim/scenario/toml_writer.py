"""Scenario files written as TOML by tomli-w (tomllib reads TOML but cannot write it).

tomli-w (https://github.com/hukkin/tomli-w, the writer paired with tomli/tomllib) does the
TOML: strings with the spec's escapes, floats that stay floats, tables, arrays of tables.
This module only adds what it lacks: a header comment and a comment before any dotted
key or table, inserted line by line into tomli-w's output (it writes one ``key = value``
or ``[table]`` header a line). Output round-trips through tomllib (tests check this
through sim.scenario.load.load_scenario).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from typing import Any

import tomli_w

from sim.errors import SpecsimError
from sim.scenario.schema import Scenario
from sim.scenario.validate import scenario_from_dict

_HEADER = re.compile(r"^\[\[?(?P<path>[^\[\]]+)\]\]?$")
_ASSIGN = re.compile(r"^(?P<key>[A-Za-z0-9_-]+|\"(?:[^\"\\]|\\.)*\") = ")


def value_to_toml(value: Any) -> str:
    """One TOML value (str, bool, int, float, list), as tomli-w writes it."""
    return tomli_w.dumps({"v": value}).split(" = ", 1)[1].rstrip("\n")


def _path_of(header: str) -> str:
    """``a."b c".d`` -> ``a.b c.d`` (the dotted key the comments use)."""
    parts = re.findall(r'"((?:[^"\\]|\\.)*)"|([^.\s]+)', header)
    return ".".join(quoted or bare for quoted, bare in parts)


def _comment_lines(text: str | None) -> list[str]:
    return [f"# {line}".rstrip() for line in text.splitlines()] if text else []


def _key(key: str) -> str:
    """A bare TOML key when it can be one, else a quoted one (as tomli-w writes it)."""
    return tomli_w.dumps({key: 0}).split(" = ", 1)[0]


def inline_table(table: Mapping[str, Any]) -> str:
    """A flat mapping as a TOML inline table: ``{ a = 1, b = "x" }``."""
    return "{ " + ", ".join(f"{_key(k)} = {value_to_toml(v)}" for k, v in table.items()) + " }"


def _uncertainty_text(section: Mapping[str, Any]) -> str:
    """``[uncertainty]``: one ``[uncertainty.SECTION]`` table whose entries are inline
    tables, one line each (``verify_ms = { stderr = 0.5, origin = "measured" }``), then the
    correlation table as tomli-w writes it; empty tables are left out."""
    lines: list[str] = []
    for name, entries in section.items():
        if name == "correlation" or not entries:
            continue
        lines += ["", f"[uncertainty.{_key(name)}]"]
        lines += [f"{_key(k)} = {inline_table(v)}" for k, v in entries.items()]
    if section.get("correlation"):
        lines += ["", tomli_w.dumps({"uncertainty": {"correlation": section["correlation"]}})]
    return "\n".join(lines)


def dumps(
    document: Mapping[str, Any],
    *,
    header: str | None = None,
    comments: Mapping[str, str] | None = None,
) -> str:
    """``document`` (nested mappings) as TOML text; ``comments`` keyed by dotted key/table.

    ``[uncertainty]`` entries become inline tables (empty ones are left out)."""
    comments = comments or {}
    document = dict(document)
    uncertainty = document.pop("uncertainty", None)
    body = tomli_w.dumps(document)
    if isinstance(uncertainty, Mapping):
        body = body.rstrip("\n") + "\n" + _uncertainty_text(uncertainty)
    lines = _comment_lines(header)
    if header:
        lines.append("")
    table = ""
    commented: set[str] = set()
    for line in body.splitlines():
        head = _HEADER.match(line)
        if head:
            table = _path_of(head.group("path"))
            if table in comments and table not in commented:
                lines.extend(_comment_lines(comments[table]))
                commented.add(table)
        else:
            assign = _ASSIGN.match(line)
            if assign:
                key = assign.group("key").strip('"')
                dotted = f"{table}.{key}" if table else key
                lines.extend(_comment_lines(comments.get(dotted)))
        lines.append(line)
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
