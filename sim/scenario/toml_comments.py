"""The comments a scenario file states for its values (``value_comments``): where each
value came from, as ``specsim init`` and ``calibrate`` write them (sim/scenario/
toml_writer.py: the comment lines just above a ``key = value`` line) or as a person
writes them (a ``# comment`` after the value on its line).

tomllib drops comments and no comment-preserving TOML library is a dependency, so this
reads the file's lines: ``[table]`` headers set the table, a block of ``#`` lines
directly above an assignment (no blank line between) or a comment after its value is
that key's, keyed ``table.key`` as the writer's ``comments`` are. Keys inside arrays of
tables (``[[...]]``) and inline tables are not one value's and are skipped; a value over
several lines (an array, a multi-line string) has its comment above or on its first line.
"""

from __future__ import annotations

import re

__all__ = ["value_comments"]

_HEADER = re.compile(r"^\s*(?P<array>\[\[?)\s*(?P<path>[^\[\]]+?)\s*\]\]?\s*(#.*)?$")
_ASSIGN = re.compile(r"^\s*(?P<key>[A-Za-z0-9_-]+|\"(?:[^\"\\]|\\.)*\")\s*=\s*(?P<value>.*)$")
#: What opens a value that may run over several lines, and what closes it.
_MULTILINE = (('"""', '"""'), ("'''", "'''"))


def _path(header: str) -> str:
    """``a."b c".d`` -> ``a.b c.d``."""
    parts = re.findall(r'"((?:[^"\\]|\\.)*)"|([^.\s]+)', header)
    return ".".join(quoted or bare for quoted, bare in parts)


def _split_comment(value: str) -> tuple[str, str | None]:
    """A value's text and the comment after it on its line (None: none): the first ``#``
    outside a basic ("...", with escapes) or literal ('...') string."""
    quote: str | None = None
    i = 0
    while i < len(value):
        ch = value[i]
        if quote is None:
            if ch in "\"'":
                quote = ch
            elif ch == "#":
                return value[:i].rstrip(), value[i + 1 :].strip() or None
        elif ch == "\\" and quote == '"':
            i += 1  # an escaped character
        elif ch == quote:
            quote = None
        i += 1
    return value.rstrip(), None


def _open_until(value: str) -> str | None:
    """What closes a value that continues on the next lines (None: it ends on its line):
    a multi-line string's closing quotes, or ``]`` for an array left open."""
    for opener, closer in _MULTILINE:
        if value.startswith(opener) and value.count(opener) == 1:
            return closer
    if value.startswith("[") and value.count("[") > value.count("]"):
        return "]"
    return None


def value_comments(text: str) -> dict[str, str]:
    """Each commented value of a TOML document's ``text``: dotted key (``table.key``) ->
    its comment, the lines above it joined by newlines and the one after its value last
    (``#`` and one space removed from each line)."""
    out: dict[str, str] = {}
    table: str | None = ""
    pending: list[str] = []
    until: str | None = None  # inside a value over several lines: what ends it
    depth = 0
    for line in text.splitlines():
        stripped = line.strip()
        if until is not None:  # the rest of a multi-line value
            if until == "]":
                depth += stripped.count("[") - stripped.count("]")
                if depth <= 0:
                    until = None
            elif until in stripped:
                until = None
            continue
        if not stripped:
            pending = []
            continue
        if stripped.startswith("#"):
            pending.append(stripped[1:].removeprefix(" ").rstrip())
            continue
        head = _HEADER.match(line)
        if head:
            table = None if head.group("array") == "[[" else _path(head.group("path"))
            pending = []
            continue
        assign = _ASSIGN.match(line)
        if assign is None:
            pending = []
            continue
        value, after = _split_comment(assign.group("value"))
        until = _open_until(value)
        if until == "]":
            depth = value.count("[") - value.count("]")
        said = [*pending, *([after] if after else [])]
        pending = []
        if table is None or value.startswith("{") or not said:
            continue
        key = assign.group("key").strip('"')
        out[f"{table}.{key}" if table else key] = "\n".join(said)
    return out
