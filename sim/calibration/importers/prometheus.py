"""The Prometheus text exposition format (what ``curl SERVER/metrics`` returns), parsed.

Each sample line goes through prometheus_client's parser (the Prometheus project's Python
client, ``prometheus_client.parser.text_string_to_metric_families``); this module adds line
numbers to errors, refuses a repeated series, and keeps the rules below the client does
not enforce.

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

import re
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

from sim.errors import SpecsimError

_BLANK = " \t"
_ESCAPES = ("\\", '"', "n")
_ESCAPE = re.compile(r"\\(.)")
#: An OpenMetrics exemplar at the end of a sample: `` # {trace_id="..."} 1.0 [ts]``.
_EXEMPLAR = re.compile(r"\s+#\s+\{[^{}]*\}[^{}]*$")


@dataclass(frozen=True, slots=True)
class Sample:
    """One sample line. ``labels`` are (name, value) pairs sorted by name."""

    name: str
    labels: tuple[tuple[str, str], ...]
    value: float
    timestamp_ms: int | None
    line: int

    def label(self, name: str) -> str | None:
        return dict(self.labels).get(name)


@dataclass(frozen=True, slots=True)
class Exposition:
    """All samples of one scrape, with the ``# TYPE`` and ``# HELP`` of each family."""

    samples: tuple[Sample, ...]
    types: tuple[tuple[str, str], ...]
    helps: tuple[tuple[str, str], ...]

    def type_of(self, family: str) -> str | None:
        return dict(self.types).get(family)


def _library_sample(text: str, line: int, source: str) -> tuple[str, dict[str, str], float]:
    """Name, labels and value of one sample line, parsed by prometheus_client's own text
    parser (``prometheus_client.parser``, the Prometheus project's Python client)."""
    try:
        families = list(text_string_to_metric_families(text + "\n"))
    except (ValueError, IndexError, KeyError, TypeError) as exc:
        raise SpecsimError(
            f"not a valid sample ({exc})", source=source, field=f"line {line}"
        ) from None
    samples = [smp for fam in families for smp in fam.samples]
    if len(samples) != 1:
        raise SpecsimError("not a metric sample", source=source, field=f"line {line}")
    smp = samples[0]
    return smp.name, dict(smp.labels), float(smp.value)


def _parse_sample(text: str, line: int, source: str) -> Sample:
    """One sample line. prometheus_client parses name, labels and value; around it this
    adds what the text format requires and the client tolerates: OpenMetrics exemplars are
    dropped, at most a value and a timestamp follow the labels, label escapes are only
    ``\\\\``, ``\\"`` and ``\\n``, and float-second (OpenMetrics) timestamps are kept as
    milliseconds."""

    def fail(msg: str) -> SpecsimError:
        return SpecsimError(msg, source=source, field=f"line {line}")

    text = _EXEMPLAR.sub("", text)
    close = text.rfind("}")
    if "{" in text and close > text.index("{"):
        labels_text, rest = text[text.index("{") + 1 : close], text[close + 1 :]
        for escaped in _ESCAPE.findall(labels_text):
            if escaped not in _ESCAPES:
                raise fail(f"bad escape \\{escaped} in a label value")
    else:
        rest = text.split(None, 1)[1] if len(text.split(None, 1)) > 1 else ""
    fields = rest.split()
    if not 1 <= len(fields) <= 2:
        raise fail("expected 'value [timestamp]' after the metric name and labels")
    timestamp: int | None = None
    if len(fields) == 2:
        ts = fields[1]
        try:
            timestamp = int(ts)
        except ValueError:
            try:  # OpenMetrics: float seconds
                timestamp = round(float(ts) * 1000)
            except ValueError:
                raise fail(f"timestamp {ts!r} is not a number") from None
        text = text[: len(text) - len(rest)] + " " + fields[0]
    name, labels, value = _library_sample(text, line, source)
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
