"""The Prometheus text exposition format (what ``curl SERVER/metrics`` returns), parsed.

Rules followed (prometheus.io/docs/instrumenting/exposition_formats, "Text-based format"):

- one sample a line: ``name[{label="value",...}] value [timestamp_ms]``, fields separated
  by blanks (spaces or tabs); a trailing comma inside the braces is allowed;
- label values are double-quoted with the escapes ``\\\\``, ``\\"`` and ``\\n``;
- values are Go floats, including ``NaN``, ``+Inf`` and ``-Inf``; the timestamp is an
  optional integer in milliseconds;
- ``# HELP name text`` (escapes ``\\\\`` and ``\\n``) and ``# TYPE name type`` describe a
  family; a sample repeated with the same labels is an error; any other line starting
  with ``#`` is a comment (``# EOF`` ends an OpenMetrics exposition); blank lines are ignored;
- OpenMetrics exemplars (`` # {trace_id="..."} 1.0``) after the value are dropped.

A counter family ``X`` is exposed by prometheus_client as ``X_total`` plus ``X_created``
(its creation time, not a count); :func:`counter_samples` finds the ``_total`` series (or a
bare ``X`` from exporters without the suffix) and never the ``_created`` one.
A line that breaks these rules is an error naming its line number: a scrape is all or
nothing, as in Prometheus itself.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from sim.errors import SpecsimError

_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_NAME_RE = re.compile(_NAME)
_LABEL_NAME_RE = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_BLANK = " \t"
_ESCAPES = {"\\": "\\", '"': '"', "n": "\n"}


@dataclass(frozen=True)
class Sample:
    """One sample line. ``labels`` are (name, value) pairs sorted by name."""

    name: str
    labels: tuple[tuple[str, str], ...]
    value: float
    timestamp_ms: int | None
    line: int

    def label(self, name: str) -> str | None:
        return dict(self.labels).get(name)


@dataclass(frozen=True)
class Exposition:
    """All samples of one scrape, with the ``# TYPE`` and ``# HELP`` of each family."""

    samples: tuple[Sample, ...]
    types: tuple[tuple[str, str], ...]
    helps: tuple[tuple[str, str], ...]

    def type_of(self, family: str) -> str | None:
        return dict(self.types).get(family)


def _parse_value(text: str, what: str, line: int, source: str) -> float:
    lowered = text.lower()
    if lowered in ("nan", "+nan", "-nan"):
        return math.nan
    if lowered in ("+inf", "inf"):
        return math.inf
    if lowered == "-inf":
        return -math.inf
    try:
        return float(text)
    except ValueError:
        raise SpecsimError(
            f"{what} {text!r} is not a number", source=source, field=f"line {line}"
        ) from None


def _parse_labels(text: str, pos: int, line: int, source: str) -> tuple[dict[str, str], int]:
    """Labels from ``text[pos]`` == '{' to the matching '}'; returns labels, index after '}'."""
    labels: dict[str, str] = {}
    i = pos + 1

    def fail(msg: str) -> SpecsimError:
        return SpecsimError(msg, source=source, field=f"line {line}")

    while True:
        while i < len(text) and text[i] in _BLANK:
            i += 1
        if i < len(text) and text[i] == "}":
            return labels, i + 1
        m = _LABEL_NAME_RE.match(text, i)
        if not m:
            raise fail(f"expected a label name at column {i + 1}")
        name = m.group(0)
        i = m.end()
        while i < len(text) and text[i] in _BLANK:
            i += 1
        if text[i : i + 2] != '="':
            raise fail(f'expected =" after label {name!r}')
        i += 2
        value = []
        while True:
            if i >= len(text):
                raise fail(f"unterminated value of label {name!r}")
            ch = text[i]
            if ch == "\\":
                nxt = text[i + 1 : i + 2]
                if nxt not in _ESCAPES:
                    raise fail(f"bad escape \\{nxt} in label {name!r}")
                value.append(_ESCAPES[nxt])
                i += 2
            elif ch == '"':
                i += 1
                break
            else:
                value.append(ch)
                i += 1
        if name in labels:
            raise fail(f"label {name!r} given twice")
        labels[name] = "".join(value)
        while i < len(text) and text[i] in _BLANK:
            i += 1
        if i < len(text) and text[i] == ",":
            i += 1
        elif i < len(text) and text[i] == "}":
            continue
        else:
            raise fail("expected , or } after a label value")


def _parse_sample(text: str, line: int, source: str) -> Sample:
    m = _NAME_RE.match(text)
    if not m:
        raise SpecsimError(
            f"not a metric sample: {text[:60]!r}", source=source, field=f"line {line}"
        )
    name = m.group(0)
    i = m.end()
    labels: dict[str, str] = {}
    if i < len(text) and text[i] == "{":
        labels, i = _parse_labels(text, i, line, source)
    rest = text[i:]
    if rest and rest[0] not in _BLANK:
        raise SpecsimError(f"expected a blank after {name!r}", source=source, field=f"line {line}")
    rest = rest.split(" # ", 1)[0]  # OpenMetrics exemplar
    fields = rest.split()
    if not 1 <= len(fields) <= 2:
        raise SpecsimError(
            f"expected 'value [timestamp]' after {name!r}", source=source, field=f"line {line}"
        )
    value = _parse_value(fields[0], "value", line, source)
    timestamp = None
    if len(fields) == 2:
        try:
            timestamp = int(fields[1])
        except ValueError:
            # OpenMetrics timestamps are float seconds; keep them as milliseconds.
            timestamp = round(_parse_value(fields[1], "timestamp", line, source) * 1000)
    return Sample(name, tuple(sorted(labels.items())), value, timestamp, line)


def _unescape_help(text: str) -> str:
    """HELP text escapes only backslash and newline."""
    return re.sub(r"\\\\|\\n", lambda m: "\n" if m.group(0) == "\\n" else "\\", text)


def parse_exposition(text: str, *, source: str = "<metrics>") -> Exposition:
    """Parse a whole text exposition. Raises SpecsimError naming the first bad line."""
    samples: list[Sample] = []
    types: dict[str, str] = {}
    helps: dict[str, str] = {}
    seen: dict[tuple[str, tuple[tuple[str, str], ...]], int] = {}
    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw.strip(_BLANK + "\r")
        if not line:
            continue
        if line.startswith("#"):
            parts = line[1:].strip(_BLANK).split(None, 2)
            if len(parts) >= 2 and parts[0] in ("TYPE", "HELP"):
                if parts[0] == "TYPE":
                    types[parts[1]] = parts[2].strip() if len(parts) > 2 else ""
                else:
                    helps[parts[1]] = _unescape_help(parts[2]) if len(parts) > 2 else ""
            continue
        sample = _parse_sample(line, number, source)
        key = (sample.name, sample.labels)
        if key in seen:
            raise SpecsimError(
                f"duplicate sample {sample.name} with the same labels as line {seen[key]}",
                source=source,
                field=f"line {number}",
            )
        seen[key] = number
        samples.append(sample)
    return Exposition(tuple(samples), tuple(types.items()), tuple(helps.items()))


def counter_samples(exposition: Exposition, family: str) -> tuple[Sample, ...]:
    """The samples of counter ``family``: ``family_total`` if present, else bare ``family``.

    ``family_created`` (a creation timestamp) is never included.
    """
    base = family.removesuffix("_total")
    total = tuple(s for s in exposition.samples if s.name == base + "_total")
    if total:
        return total
    return tuple(s for s in exposition.samples if s.name == base)
