"""vLLM's per-request speculative counts read from its responses.

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
"""

from __future__ import annotations

from typing import Any

from sim.calibration.importers.per_request_counts import (
    MAX_COUNT,
    RequestCounts,
    field_count,
    field_counts,
    impossible,
    picked,
)
from sim.scenario.sections.bounds import MAX_NUM_STEPS

__all__ = ["parse_vllm", "vllm_stats"]


def vllm_stats(record: dict[str, Any]) -> dict[str, Any] | None:
    """A response's ``metrics.speculative_decoding`` (None: it has none)."""
    metrics = record.get("metrics")
    if isinstance(metrics, dict) and isinstance(metrics.get("speculative_decoding"), dict):
        return metrics["speculative_decoding"]
    return None


def _vllm_request(
    stats: dict[str, Any], line: int, source: str, where: str
) -> tuple[RequestCounts | None, int]:
    """One vLLM request and its k (None: no speculative step)."""
    p = "metrics.speculative_decoding."
    k = field_count(stats, "num_spec_tokens", source, where, p)
    if not 1 <= k <= MAX_NUM_STEPS:
        raise impossible(
            f"num_spec_tokens {k} is outside [1, {MAX_NUM_STEPS}]",
            source,
            f"{where}: {p}num_spec_tokens",
        )
    steps = field_count(stats, "num_spec_steps", source, where, p)
    accepted = field_count(stats, "num_accepted_draft_tokens", source, where, p)
    drafted = field_count(stats, "num_draft_tokens", source, where, p)
    if steps == 0:
        if accepted or drafted:
            raise impossible(
                f"{accepted} accepted of {drafted} drafts with num_spec_steps 0",
                source,
                f"{where}: {p}num_spec_steps",
            )
        return None, k
    if drafted > k * steps:
        raise impossible(
            f"{drafted} drafts in {steps} steps: more than num_spec_tokens {k} a step",
            source,
            f"{where}: {p}num_draft_tokens",
        )
    if accepted > drafted:
        raise impossible(
            f"{accepted} accepted drafts of {drafted} drafted",
            source,
            f"{where}: {p}num_accepted_draft_tokens",
        )
    hist = field_counts(
        stats.get("acceptance_histogram"), p + "acceptance_histogram", source, where, k + 1
    )
    if sum(hist) != steps:
        raise impossible(
            f"the histogram counts {sum(hist)} steps, num_spec_steps says {steps}",
            source,
            f"{where}: {p}acceptance_histogram",
        )
    if sum(j * h for j, h in enumerate(hist)) != accepted:
        raise impossible(
            f"the histogram accepts {sum(j * h for j, h in enumerate(hist))} drafts, "
            f"num_accepted_draft_tokens says {accepted}",
            source,
            f"{where}: {p}acceptance_histogram",
        )
    rejected: int | None = None
    if "per_step_accepted" in stats and "per_step_drafted" in stats:
        acc = field_counts(
            stats["per_step_accepted"], p + "per_step_accepted", source, where, MAX_COUNT
        )
        dra = field_counts(
            stats["per_step_drafted"], p + "per_step_drafted", source, where, MAX_COUNT
        )
        if len(acc) != steps or len(dra) != steps:
            raise impossible(
                f"per-step lists of {len(acc)} and {len(dra)} entries for {steps} steps",
                source,
                f"{where}: {p}per_step_accepted",
            )
        if any(a > d or d > k for a, d in zip(acc, dra, strict=True)):
            raise impossible(
                "a step accepts more drafts than it drafted, or drafts more than num_spec_tokens",
                source,
                f"{where}: {p}per_step_accepted",
            )
        rejected = sum(a < d for a, d in zip(acc, dra, strict=True))
    elif drafted == k * steps:
        rejected = sum(hist[:k])  # every step drafted k: a step below k rejected one
    return RequestCounts(line, steps, accepted, rejected), k


def parse_vllm(
    records: list[tuple[int, dict[str, Any]]], source: str, listed: bool
) -> tuple[list[RequestCounts], int, int | None, list[str]]:
    """The requests of vLLM responses (``listed``: items of a JSON list), the records
    skipped (no counts or no speculative step), num_spec_tokens k (the same on every
    record; None: no record gives it) and a note on requests whose rejections are latent."""
    out, k_file = [], None
    found, skipped = picked(records, listed, vllm_stats)
    for line, where, stats in found:
        counts, k = _vllm_request(stats, line, source, where)
        if k_file is not None and k != k_file:
            raise impossible(
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
