"""Per-request speculative counts: how many verify steps each request ran and how many
drafted tokens they accepted, as SGLang and vLLM report them per request.

SGLang's records (sim/calibration/importers/per_request_sglang.py: its ``/generate``
responses, its ``--log-requests`` log, its ``--export-metrics-to-file`` records) and
vLLM's responses with ``metrics.speculative_decoding`` (per_request_vllm.py: PR #48915's
``--per-request-spec-decode-metrics``) are read; each module's docstring names the fields
and their sources.

Each request becomes :class:`RequestCounts`: verify steps n, accepted drafts S and, when the
file says it, the steps that rejected a draft F (a step that accepted all its drafts did
not reject one). Figures no server can print are refused with the file, line and field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sim.calibration.importers.files import read_text
from sim.calibration.importers.jsonfile import MAX_JSON_DEPTH, load_objects
from sim.calibration.importers.per_request_counts import RequestCounts
from sim.calibration.importers.per_request_sglang import parse_sglang, sglang_meta
from sim.calibration.importers.per_request_vllm import parse_vllm, vllm_stats
from sim.calibration.importers.sglang_request_log import is_request_log, request_log_records
from sim.errors import SpecsimError
from sim.files import json_depth

__all__ = [
    "FORMATS",
    "PerRequestFile",
    "parse_per_request",
    "read_per_request",
]

#: The formats read, as ``--per-request-format`` names them (``auto``: by the records' keys).
FORMATS = ("auto", "sglang", "vllm")
#: Most records read from one file.
MAX_RECORDS = 1_000_000


@dataclass(frozen=True, slots=True)
class PerRequestFile:
    """The requests of one file, the ``num_steps`` k they ran at, and what was skipped."""

    requests: tuple[RequestCounts, ...]
    num_steps: int
    source: str
    format: str
    skipped: int
    notes: tuple[str, ...] = ()

    @property
    def pooled_accept_length(self) -> float:
        """1 + (all accepted drafts) / (all verify steps): the server-wide accept length."""
        steps = sum(r.verify_steps for r in self.requests)
        return 1.0 + sum(r.accepted for r in self.requests) / steps

    def figures(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "source": self.source,
            "requests": len(self.requests),
            "skipped": self.skipped,
            "num_steps": self.num_steps,
            "with_rejections": sum(r.rejected is not None for r in self.requests),
            "pooled_accept_length": self.pooled_accept_length,
        }


def _records(text: str, source: str) -> list[tuple[int, dict[str, Any]]]:
    """Objects of a JSON list, one object, or JSON Lines, with their line numbers."""
    stripped = text.strip()
    if stripped.startswith("["):
        if json_depth(stripped) > MAX_JSON_DEPTH:
            raise SpecsimError(f"JSON nested deeper than {MAX_JSON_DEPTH}", source=source)
        try:
            doc = json.loads(stripped, parse_constant=_no_constant)
        except ValueError as exc:
            raise SpecsimError(f"not JSON: {exc}", source=source) from None
        out = []
        for i, item in enumerate(doc):
            if not isinstance(item, dict):
                raise SpecsimError(
                    f"expected a JSON object, got a {type(item).__name__}",
                    source=source,
                    field=f"item {i}",
                )
            out.append((i, item))
        records = out
    else:
        records = load_objects(text, source)
    if len(records) > MAX_RECORDS:
        raise SpecsimError(f"more than {MAX_RECORDS} records", source=source)
    return records


def _no_constant(value: str) -> float:
    raise ValueError(f"{value} is not a finite number")


# --------------------------------------------------------------------------- the file


def _detect(records: list[tuple[int, dict[str, Any]]]) -> str | None:
    for _, record in records:
        if vllm_stats(record) is not None:
            return "vllm"
        if sglang_meta(record) is not None:
            return "sglang"
    return None


def parse_per_request(
    text: str, *, source: str = "<per-request>", fmt: str = "auto", num_steps: int | None = None
) -> PerRequestFile:
    """The requests of a per-request file (``fmt``: one of ``FORMATS``). ``num_steps``:
    the k of an SGLang file that does not state its proposed drafts."""
    if fmt not in FORMATS:
        raise SpecsimError(f"unknown format {fmt!r}; one of {', '.join(FORMATS)}", source=source)
    if is_request_log(text):  # an SGLang server log with --log-requests finish lines
        records, listed = request_log_records(text, source), False
    else:
        records, listed = _records(text, source), text.strip().startswith("[")
    kind = _detect(records) if fmt == "auto" else fmt
    if kind is None:
        raise SpecsimError(
            "no per-request speculative counts: expected SGLang meta_info with spec_verify_ct "
            "or vLLM metrics.speculative_decoding (vLLM: start the server with "
            "--per-request-spec-decode-metrics summary)",
            source=source,
        )
    k: int | None
    if kind == "sglang":
        requests, skipped, k, notes = parse_sglang(records, source, listed, num_steps)
        name = "SGLang per-request meta_info"
    else:
        requests, skipped, k, notes = parse_vllm(records, source, listed)
        name = "vLLM per-request speculative_decoding metrics"
    if k is None or not requests:
        raise SpecsimError(
            f"no request with a verify step ({skipped} records skipped: no speculative "
            "counts, no verify step, retracted or aborted)",
            source=source,
        )
    return PerRequestFile(tuple(requests), k, source, name, skipped, tuple(notes))


def read_per_request(
    path: str | Path, fmt: str = "auto", num_steps: int | None = None
) -> PerRequestFile:
    """``parse_per_request`` of a file (a regular file, bounded: sim/files.py)."""
    return parse_per_request(read_text(path), source=str(path), fmt=fmt, num_steps=num_steps)
