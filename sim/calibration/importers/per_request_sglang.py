"""SGLang's per-request speculative counts read from its records.

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
"""

from __future__ import annotations

from typing import Any

from sim.calibration.importers.per_request_counts import (
    RequestCounts,
    field_count,
    field_counts,
    first_key,
    impossible,
    picked,
    where_in,
)
from sim.errors import SpecsimError
from sim.scenario.sections.bounds import MAX_NUM_STEPS

__all__ = ["parse_sglang", "sglang_meta"]

_SGLANG_ACCEPTED = ("spec_num_correct_drafts", "spec_accepted_drafts")
_SGLANG_PROPOSED = ("spec_num_proposed_drafts", "spec_proposed_drafts")
_SGLANG_HISTOGRAM = ("spec_correct_drafts_histogram", "spec_accept_histogram")


def sglang_meta(record: dict[str, Any]) -> tuple[dict[str, Any], str] | None:
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
        found = sglang_meta(record)
        if found is None:
            continue
        meta, prefix = found
        key = first_key(meta, _SGLANG_PROPOSED)
        where = where_in(line, listed)
        if key is None:
            continue
        steps = field_count(meta, "spec_verify_ct", source, where, prefix)
        proposed = field_count(meta, key, source, where, prefix)
        if steps == 0:
            continue
        if proposed % steps:
            raise impossible(
                f"{proposed} proposed drafts over {steps} verify steps is not a whole number "
                "of drafts a step",
                source,
                f"{where}: {prefix}{key}",
            )
        if not 1 <= proposed // steps <= MAX_NUM_STEPS:
            raise impossible(
                f"{proposed // steps} drafts a verify step: a speculative chain drafts 1 to "
                f"{MAX_NUM_STEPS}",
                source,
                f"{where}: {prefix}{key}",
            )
        if k is not None and proposed // steps != k:
            raise impossible(
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
    steps = field_count(meta, "spec_verify_ct", source, where, prefix)
    tokens = field_count(meta, "completion_tokens", source, where, prefix)
    if steps == 0:
        if tokens > 1:
            raise impossible(
                f"completion_tokens {tokens} with spec_verify_ct 0: every token after the "
                "prefill's comes from a verify step",
                source,
                f"{where}: {prefix}spec_verify_ct",
            )
        return None
    if tokens < steps + 1:
        raise impossible(
            f"completion_tokens {tokens} < spec_verify_ct + 1 = {steps + 1}: the prefill "
            "emits the first token and every verify step at least one more",
            source,
            f"{where}: {prefix}completion_tokens",
        )
    hist_key = first_key(meta, _SGLANG_HISTOGRAM)
    acc_key = first_key(meta, _SGLANG_ACCEPTED)
    rejected = None
    if hist_key is not None:
        hist = field_counts(meta[hist_key], prefix + hist_key, source, where, k + 1)
        if sum(hist) != steps:
            raise impossible(
                f"the histogram counts {sum(hist)} verify steps, spec_verify_ct says {steps}",
                source,
                f"{where}: {prefix}{hist_key}",
            )
        accepted = sum(j * h for j, h in enumerate(hist))
        rejected = sum(hist[:k])
    elif acc_key is not None:
        accepted = field_count(meta, acc_key, source, where, prefix)
    else:
        accepted = tokens - 1 - steps
    if acc_key is not None and hist_key is not None:
        given = field_count(meta, acc_key, source, where, prefix)
        if given != accepted:
            raise impossible(
                f"{given} accepted drafts, the histogram sums to {accepted}",
                source,
                f"{where}: {prefix}{acc_key}",
            )
    if tokens > 1 + steps + accepted:
        raise impossible(
            f"completion_tokens {tokens} > 1 + spec_verify_ct + accepted drafts = "
            f"{1 + steps + accepted}: a verify step emits its accepted drafts and one token",
            source,
            f"{where}: {prefix}completion_tokens",
        )
    if accepted > k * steps:
        raise impossible(
            f"{accepted} accepted drafts in {steps} verify steps: more than num_steps {k} a "
            f"step (accept length {1 + accepted / steps:.4g} > k + 1 = {k + 1})",
            source,
            f"{where}: {prefix}{acc_key or 'completion_tokens'}",
        )
    return RequestCounts(line, steps, accepted, rejected)


def parse_sglang(
    records: list[tuple[int, dict[str, Any]]], source: str, listed: bool, num_steps: int | None
) -> tuple[list[RequestCounts], int, int, list[str]]:
    """The requests of SGLang records (``listed``: items of a JSON list), the records
    skipped (no counts, no verify step, retracted or aborted), num_steps k (the records'
    proposed drafts a step, else ``num_steps``) and notes on where k came from."""
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
    found, skipped = picked(records, listed, sglang_meta)
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
