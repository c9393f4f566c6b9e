"""Per-request speculative counts: how many verify steps each request ran and how many
drafted tokens they accepted, as SGLang and vLLM report them per request.

**SGLang** (sgl-project/sglang ``python/sglang/srt/managers/tokenizer_manager.py``, v0.5.23:
``_calculate_spec_decoding_metrics``) puts in each finished request's ``meta_info``:
``completion_tokens``, ``spec_verify_ct`` (verify steps), ``spec_num_correct_drafts``
(accepted drafts; ``spec_accepted_drafts`` in earlier releases), ``spec_num_proposed_drafts``
(= spec_verify_ct x (num_draft_tokens - 1); ``spec_proposed_drafts`` earlier) and
``spec_correct_drafts_histogram`` (``spec_accept_histogram`` earlier): entry j counts the
verify steps that accepted exactly j drafts (``schedule_batch.py``
``update_spec_correct_drafts_histogram``; the list grows to the largest j seen). Older
releases give ``spec_verify_ct`` and ``completion_tokens`` only; the first token comes from
the prefill and each verify step emits its accepted drafts plus one, so the accepted drafts
are ``completion_tokens - 1 - spec_verify_ct``. Three files hold it:

- the responses of the native ``/generate`` endpoint (an object with ``meta_info``, a list
  of them for a batch, or one a line), saved by the user;
- the server log of ``--log-requests`` (its ``Finish:`` lines, text or JSON;
  sim/calibration/importers/sglang_request_log.py);
- ``--export-metrics-to-file`` (``python/sglang/srt/managers/request_metrics_exporter.py``,
  ``FileRequestMetricsExporter``): ``sglang-request-metrics-YYYYMMDD_HH.log``, one JSON
  object a line per finished request, the ``meta_info`` keys at the top level beside
  ``request_parameters``.

**vLLM** (vllm-project/vllm PR #48915, "Per-request acceptance stats in OpenAI API
responses", merged 2026; off by default, on with ``--per-request-spec-decode-metrics
summary`` or ``detailed``): each ``/v1/completions`` or ``/v1/chat/completions`` response
(the last chunk of a stream with ``include_usage``) carries
``metrics.speculative_decoding`` = ``{num_spec_steps, num_accepted_draft_tokens,
num_draft_tokens, num_spec_tokens (k), acceptance_histogram (entry j: steps that accepted
exactly j drafts), mean_acceptance_length, draft_acceptance_rate}``, and with ``detailed``
also ``per_step_accepted`` and ``per_step_drafted`` (one entry a step). Saved responses,
one a line or a list, are read. vLLM releases before that PR have no per-request
acceptance output at all (docs/per-request.md says what was searched).

Each request becomes :class:`RequestCounts`: verify steps n, accepted drafts S and, when the
file says it, the steps that rejected a draft F (a step that accepted all its drafts did
not reject one). Figures no server can print are refused with the file, line and field.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sim.calibration.importers.files import read_text
from sim.calibration.importers.jsonfile import MAX_JSON_DEPTH, load_objects
from sim.calibration.importers.sglang_request_log import is_request_log, request_log_records
from sim.errors import SpecsimError
from sim.files import json_depth
from sim.scenario.sections.bounds import MAX_NUM_STEPS

__all__ = [
    "FORMATS",
    "PerRequestFile",
    "RequestCounts",
    "parse_per_request",
    "read_per_request",
]

#: The formats read, as ``--per-request-format`` names them (``auto``: by the records' keys).
FORMATS = ("auto", "sglang", "vllm")
#: Most records read from one file.
MAX_RECORDS = 1_000_000
#: Largest count accepted in a field (a request of a billion verify steps is no request).
MAX_COUNT = 10**9

_SGLANG_ACCEPTED = ("spec_num_correct_drafts", "spec_accepted_drafts")
_SGLANG_PROPOSED = ("spec_num_proposed_drafts", "spec_proposed_drafts")
_SGLANG_HISTOGRAM = ("spec_correct_drafts_histogram", "spec_accept_histogram")


@dataclass(frozen=True, slots=True)
class RequestCounts:
    """One request: ``verify_steps`` n, ``accepted`` drafts S and ``rejected`` F, the steps
    that rejected a draft (None: the file does not say; then it is latent)."""

    line: int
    verify_steps: int
    accepted: int
    rejected: int | None


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


def _where(line: int, listed: bool) -> str:
    return f"item {line}" if listed else f"line {line}"


def _picked(
    records: list[tuple[int, dict[str, Any]]], listed: bool, pick: Callable[[dict[str, Any]], Any]
) -> tuple[list[tuple[int, str, Any]], int]:
    """(line, where, what ``pick`` found) of the records it finds something in, and how
    many it found nothing in."""
    found = []
    for line, record in records:
        got = pick(record)
        if got is not None:
            found.append((line, _where(line, listed), got))
    return found, len(records) - len(found)


def _count(record: dict[str, Any], key: str, source: str, where: str, prefix: str = "") -> int:
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


def _counts(value: Any, key: str, source: str, where: str, max_len: int) -> list[int]:
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


def _first(meta: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    return next((k for k in keys if k in meta), None)


def _impossible(message: str, source: str, field: str) -> SpecsimError:
    return SpecsimError(message, source=source, field=field)


# --------------------------------------------------------------------------- SGLang


def _sglang_meta(record: dict[str, Any]) -> tuple[dict[str, Any], str] | None:
    """The meta_info of a /generate response, or an exported record's top level."""
    meta = record.get("meta_info")
    if isinstance(meta, dict) and "spec_verify_ct" in meta:
        return meta, "meta_info."
    if "spec_verify_ct" in record:
        return record, ""
    return None


def _sglang_k(records: list[tuple[int, dict[str, Any]]], source: str, listed: bool) -> int | None:
    """num_steps from spec_num_proposed_drafts / spec_verify_ct (num_draft_tokens - 1, a
    chain's k), the same on every record that gives it; None when none does."""
    k: int | None = None
    for line, record in records:
        found = _sglang_meta(record)
        if found is None:
            continue
        meta, prefix = found
        key = _first(meta, _SGLANG_PROPOSED)
        where = _where(line, listed)
        if key is None:
            continue
        steps = _count(meta, "spec_verify_ct", source, where, prefix)
        proposed = _count(meta, key, source, where, prefix)
        if steps == 0:
            continue
        if proposed % steps:
            raise _impossible(
                f"{proposed} proposed drafts over {steps} verify steps is not a whole number "
                "of drafts a step",
                source,
                f"{where}: {prefix}{key}",
            )
        if not 1 <= proposed // steps <= MAX_NUM_STEPS:
            raise _impossible(
                f"{proposed // steps} drafts a verify step: a speculative chain drafts 1 to "
                f"{MAX_NUM_STEPS}",
                source,
                f"{where}: {prefix}{key}",
            )
        if k is not None and proposed // steps != k:
            raise _impossible(
                f"{proposed // steps} drafts a step, earlier records {k}: one file is one "
                "server setting",
                source,
                f"{where}: {prefix}{key}",
            )
        k = proposed // steps
    return k


def _sglang_request(
    meta: dict[str, Any], prefix: str, k: int, line: int, source: str, where: str
) -> RequestCounts | None:
    """One SGLang request (None: no verify step, nothing to learn)."""
    steps = _count(meta, "spec_verify_ct", source, where, prefix)
    tokens = _count(meta, "completion_tokens", source, where, prefix)
    if steps == 0:
        if tokens > 1:
            raise _impossible(
                f"completion_tokens {tokens} with spec_verify_ct 0: every token after the "
                "prefill's comes from a verify step",
                source,
                f"{where}: {prefix}spec_verify_ct",
            )
        return None
    if tokens < steps + 1:
        raise _impossible(
            f"completion_tokens {tokens} < spec_verify_ct + 1 = {steps + 1}: the prefill "
            "emits the first token and every verify step at least one more",
            source,
            f"{where}: {prefix}completion_tokens",
        )
    hist_key = _first(meta, _SGLANG_HISTOGRAM)
    acc_key = _first(meta, _SGLANG_ACCEPTED)
    rejected = None
    if hist_key is not None:
        hist = _counts(meta[hist_key], prefix + hist_key, source, where, k + 1)
        if sum(hist) != steps:
            raise _impossible(
                f"the histogram counts {sum(hist)} verify steps, spec_verify_ct says {steps}",
                source,
                f"{where}: {prefix}{hist_key}",
            )
        accepted = sum(j * h for j, h in enumerate(hist))
        rejected = sum(hist[:k])
    elif acc_key is not None:
        accepted = _count(meta, acc_key, source, where, prefix)
    else:
        accepted = tokens - 1 - steps
    if acc_key is not None and hist_key is not None:
        given = _count(meta, acc_key, source, where, prefix)
        if given != accepted:
            raise _impossible(
                f"{given} accepted drafts, the histogram sums to {accepted}",
                source,
                f"{where}: {prefix}{acc_key}",
            )
    if tokens > 1 + steps + accepted:
        raise _impossible(
            f"completion_tokens {tokens} > 1 + spec_verify_ct + accepted drafts = "
            f"{1 + steps + accepted}: a verify step emits its accepted drafts and one token",
            source,
            f"{where}: {prefix}completion_tokens",
        )
    if accepted > k * steps:
        raise _impossible(
            f"{accepted} accepted drafts in {steps} verify steps: more than num_steps {k} a "
            f"step (accept length {1 + accepted / steps:.4g} > k + 1 = {k + 1})",
            source,
            f"{where}: {prefix}{acc_key or 'completion_tokens'}",
        )
    return RequestCounts(line, steps, accepted, rejected)


def _parse_sglang(records, source, listed, num_steps):
    k_file = _sglang_k(records, source, listed)
    notes = []
    if k_file is not None:
        if num_steps is not None and num_steps != k_file:
            notes.append(
                f"num_steps {k_file} from the file's proposed drafts (not {num_steps} given)"
            )
        k = k_file
    elif num_steps is None:
        raise SpecsimError(
            "num_steps unknown (the records have no spec_num_proposed_drafts): give "
            "--num-steps or --scenario",
            source=source,
        )
    else:
        k = num_steps
        notes.append(f"num_steps {k} taken from --num-steps or the scenario")
    out = []
    found, skipped = _picked(records, listed, _sglang_meta)
    for line, where, (meta, prefix) in found:
        retractions = meta.get("num_retractions", 0)
        finish = meta.get("finish_reason")
        aborted = isinstance(finish, dict) and finish.get("type") == "abort"
        if retractions or aborted:
            # a retracted request is prefilled again (one more token without a verify
            # step); an aborted one stopped at an arbitrary point
            skipped += 1
            continue
        counts = _sglang_request(meta, prefix, k, line, source, where)
        if counts is None:
            skipped += 1
        else:
            out.append(counts)
    return out, skipped, k, notes


# --------------------------------------------------------------------------- vLLM


def _vllm_stats(record: dict[str, Any]) -> dict[str, Any] | None:
    metrics = record.get("metrics")
    if isinstance(metrics, dict) and isinstance(metrics.get("speculative_decoding"), dict):
        return metrics["speculative_decoding"]
    return None


def _vllm_request(
    stats: dict[str, Any], line: int, source: str, where: str
) -> tuple[RequestCounts | None, int]:
    """One vLLM request and its k (None: no speculative step)."""
    p = "metrics.speculative_decoding."
    k = _count(stats, "num_spec_tokens", source, where, p)
    if not 1 <= k <= MAX_NUM_STEPS:
        raise _impossible(
            f"num_spec_tokens {k} is outside [1, {MAX_NUM_STEPS}]",
            source,
            f"{where}: {p}num_spec_tokens",
        )
    steps = _count(stats, "num_spec_steps", source, where, p)
    accepted = _count(stats, "num_accepted_draft_tokens", source, where, p)
    drafted = _count(stats, "num_draft_tokens", source, where, p)
    if steps == 0:
        if accepted or drafted:
            raise _impossible(
                f"{accepted} accepted of {drafted} drafts with num_spec_steps 0",
                source,
                f"{where}: {p}num_spec_steps",
            )
        return None, k
    if drafted > k * steps:
        raise _impossible(
            f"{drafted} drafts in {steps} steps: more than num_spec_tokens {k} a step",
            source,
            f"{where}: {p}num_draft_tokens",
        )
    if accepted > drafted:
        raise _impossible(
            f"{accepted} accepted drafts of {drafted} drafted",
            source,
            f"{where}: {p}num_accepted_draft_tokens",
        )
    hist = _counts(stats.get("acceptance_histogram"), p + "acceptance_histogram", source, where,
                   k + 1)  # fmt: skip
    if sum(hist) != steps:
        raise _impossible(
            f"the histogram counts {sum(hist)} steps, num_spec_steps says {steps}",
            source,
            f"{where}: {p}acceptance_histogram",
        )
    if sum(j * h for j, h in enumerate(hist)) != accepted:
        raise _impossible(
            f"the histogram accepts {sum(j * h for j, h in enumerate(hist))} drafts, "
            f"num_accepted_draft_tokens says {accepted}",
            source,
            f"{where}: {p}acceptance_histogram",
        )
    rejected: int | None = None
    if "per_step_accepted" in stats and "per_step_drafted" in stats:
        acc = _counts(stats["per_step_accepted"], p + "per_step_accepted", source, where, MAX_COUNT)
        dra = _counts(stats["per_step_drafted"], p + "per_step_drafted", source, where, MAX_COUNT)
        if len(acc) != steps or len(dra) != steps:
            raise _impossible(
                f"per-step lists of {len(acc)} and {len(dra)} entries for {steps} steps",
                source,
                f"{where}: {p}per_step_accepted",
            )
        if any(a > d or d > k for a, d in zip(acc, dra, strict=True)):
            raise _impossible(
                "a step accepts more drafts than it drafted, or drafts more than num_spec_tokens",
                source,
                f"{where}: {p}per_step_accepted",
            )
        rejected = sum(a < d for a, d in zip(acc, dra, strict=True))
    elif drafted == k * steps:
        rejected = sum(hist[:k])  # every step drafted k: a step below k rejected one
    return RequestCounts(line, steps, accepted, rejected), k


def _parse_vllm(records, source, listed):
    out, k_file = [], None
    found, skipped = _picked(records, listed, _vllm_stats)
    for line, where, stats in found:
        counts, k = _vllm_request(stats, line, source, where)
        if k_file is not None and k != k_file:
            raise _impossible(
                f"num_spec_tokens {k}, earlier records {k_file}: one file is one server setting",
                source,
                f"{where}: metrics.speculative_decoding.num_spec_tokens",
            )
        k_file = k
        if counts is None:
            skipped += 1
        else:
            out.append(counts)
    notes = []
    latent = sum(r.rejected is None for r in out)
    if latent:
        notes.append(
            f"{latent} requests drafted fewer than num_spec_tokens in some step and have no "
            "per-step lists (--per-request-spec-decode-metrics detailed gives them): their "
            "rejections are latent in the fit"
        )
    return out, skipped, k_file, notes


# --------------------------------------------------------------------------- the file


def _detect(records: list[tuple[int, dict[str, Any]]]) -> str | None:
    for _, record in records:
        if _vllm_stats(record) is not None:
            return "vllm"
        if _sglang_meta(record) is not None:
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
    if kind == "sglang":
        requests, skipped, k, notes = _parse_sglang(records, source, listed, num_steps)
        name = "SGLang per-request meta_info"
    else:
        requests, skipped, k, notes = _parse_vllm(records, source, listed)
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
