"""vLLM speculative-decoding counters from a Prometheus scrape (one snapshot or a difference).

vLLM v1 (vllm/v1/spec_decode/metrics.py, ``SpecDecodingProm``; labels from
vllm/v1/metrics/loggers.py: ``model_name`` and ``engine``) exposes four counters:

- ``vllm:spec_decode_num_drafts`` — verify cycles (one per request per step with drafts);
- ``vllm:spec_decode_num_draft_tokens`` — drafted tokens (k per draft for a chain);
- ``vllm:spec_decode_num_accepted_tokens`` — accepted drafts (bonus tokens excluded);
- ``vllm:spec_decode_num_accepted_tokens_per_pos`` with an extra label ``position`` =
  "0".."k-1" — how many drafts had position ``position + 1`` (1-based) accepted.

In the text exposition each appears as ``<name>_total{...}`` (plus ``<name>_created``,
ignored). Counters are summed over every other label (several engines under data
parallelism, several models). From the counts (docs/reference.md §Acceptance; the
formulas are vLLM's own, vllm/v1/spec_decode/metrics.py):

- cumulative per-position rate c_i = accepted_per_pos[i] / num_drafts;
- conditional per-position rate a_i = c_i / c_(i-1);
- draft acceptance rate = num_accepted_tokens / num_draft_tokens;
- accept length = 1 + num_accepted_tokens / num_drafts (bonus token included).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from sim.calibration.importers.files import read_text
from sim.calibration.importers.physical import check_step_ms
from sim.calibration.importers.prometheus import Exposition, counter_samples, parse_exposition
from sim.errors import SpecsimError

DRAFTS = "vllm:spec_decode_num_drafts"
DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens"
ACCEPTED = "vllm:spec_decode_num_accepted_tokens"
PER_POSITION = "vllm:spec_decode_num_accepted_tokens_per_pos"
EXAMPLE = f'{DRAFTS}_total{{engine="0",model_name="..."}} 1234.0'


@dataclass(frozen=True, slots=True)
class SpecDecodeCounters:
    """vLLM's speculative-decoding counters, summed over engines and models.

    ``accepted_per_position[i]`` counts drafts whose position i + 1 (1-based) was accepted;
    None where that position was absent from the scrape. ``label_sets`` is how many label
    sets (engines x models) the drafts counter was summed over.
    """

    num_drafts: float
    num_draft_tokens: float
    num_accepted_tokens: float
    accepted_per_position: tuple[float | None, ...]
    label_sets: int
    source: str
    #: The ``model_name`` labels of the drafts counter (the served model names), sorted.
    models: tuple[str, ...] = ()

    @property
    def num_spec_tokens(self) -> int | None:
        """k: draft tokens per draft (an integer for chain drafting), None without drafts."""
        if self.num_drafts <= 0:
            return None
        return round(self.num_draft_tokens / self.num_drafts)

    @property
    def accept_length(self) -> float:
        """1 + accepted / drafts (vLLM's "mean acceptance length", bonus included)."""
        return 1.0 + self.num_accepted_tokens / self.num_drafts

    @property
    def draft_acceptance_rate(self) -> float:
        """accepted / drafted tokens (vLLM's "draft acceptance rate")."""
        return self.num_accepted_tokens / self.num_draft_tokens

    @property
    def cumulative(self) -> tuple[float | None, ...]:
        """c_i = P(positions 1..i accepted), shape (k,); None where the position is missing."""
        return tuple(None if n is None else n / self.num_drafts for n in self.accepted_per_position)

    @property
    def conditional(self) -> tuple[float | None, ...]:
        """a_i = c_i / c_(i-1), shape (k,); None where c_i or c_(i-1) is missing.

        A position no draft reached (c_(i-1) = 0) gets rate 0, as in sim/model/metrics.py.
        """
        out: list[float | None] = []
        prev: float | None = 1.0
        for c in self.cumulative:
            if c is None or prev is None:
                out.append(None)
            else:
                out.append(c / prev if prev > 0 else 0.0)
            prev = c
        return tuple(out)

    def with_drafts(self) -> SpecDecodeCounters:
        """``self`` if it counts at least one draft (SpecsimError otherwise)."""
        if self.num_drafts <= 0:
            raise SpecsimError("0 drafts: no drafts yet", source=self.source, field=DRAFTS)
        return self

    def check(self) -> SpecDecodeCounters:
        """``self`` if the counters can be a measurement, else one SpecsimError naming the
        counter: at least one token per draft, no more tokens accepted than drafted, no
        position accepted by more drafts than there are, and no position accepted more
        often than the one before it (vLLM counts position i + 1 only when 1..i were
        accepted: vllm/v1/spec_decode/metrics.py). Holds for any scrape and for the
        difference of two."""
        n = self.num_drafts
        if self.num_draft_tokens < n:
            raise SpecsimError(
                f"{self.num_draft_tokens:g} draft tokens for {n:g} drafts: every draft has at "
                "least one token",
                source=self.source,
                field=DRAFT_TOKENS,
            )
        if self.num_accepted_tokens > self.num_draft_tokens:
            raise SpecsimError(
                f"{self.num_accepted_tokens:g} tokens accepted of {self.num_draft_tokens:g} "
                "drafted: more accepted than drafted cannot be measured",
                source=self.source,
                field=ACCEPTED,
            )
        previous = n
        for i, count in enumerate(self.accepted_per_position):
            if count is None:
                continue
            name = f'{PER_POSITION}{{position="{i}"}}'
            if count > n:
                raise SpecsimError(
                    f"{count:g} drafts accepted position {i} of {n:g} drafts",
                    source=self.source,
                    field=name,
                )
            if count > previous:
                raise SpecsimError(
                    f"{count:g} acceptances at position {i}, more than the {previous:g} at the "
                    "position before: a rising per-position profile cannot be measured (a "
                    "position counts only when every earlier one was accepted)",
                    source=self.source,
                    field=name,
                )
            previous = count
        return self

    def minus(self, before: SpecDecodeCounters) -> SpecDecodeCounters:
        """The counts between two scrapes (``self`` taken after ``before``).

        Raises SpecsimError when a counter went down (the server restarted in between) or
        when no draft happened in the interval.
        """

        def diff(after: float, earlier: float, name: str) -> float:
            if after < earlier:
                raise SpecsimError(
                    f"counter {name} went down from {earlier:g} to {after:g} between the two "
                    "scrapes (server restarted?)",
                    source=self.source,
                )
            return after - earlier

        n = max(len(self.accepted_per_position), len(before.accepted_per_position))
        per_pos: list[float | None] = []
        for i in range(n):
            a = self.accepted_per_position[i] if i < len(self.accepted_per_position) else None
            b = before.accepted_per_position[i] if i < len(before.accepted_per_position) else None
            if a is None:
                per_pos.append(None)
            else:
                per_pos.append(diff(a, b or 0.0, f'{PER_POSITION}{{position="{i}"}}'))
        out = SpecDecodeCounters(
            num_drafts=diff(self.num_drafts, before.num_drafts, DRAFTS),
            num_draft_tokens=diff(self.num_draft_tokens, before.num_draft_tokens, DRAFT_TOKENS),
            num_accepted_tokens=diff(
                self.num_accepted_tokens, before.num_accepted_tokens, ACCEPTED
            ),
            accepted_per_position=tuple(per_pos),
            label_sets=self.label_sets,
            source=f"{self.source} minus {before.source}",
            models=self.models,
        )
        if out.num_drafts <= 0:
            raise SpecsimError("no drafts between the two scrapes", source=out.source)
        return out.check()


def _sum(exposition: Exposition, family: str, source: str) -> tuple[float, int]:
    samples = counter_samples(exposition, family)
    if not samples:
        raise SpecsimError(
            f"no {family} counter (expected a line like {EXAMPLE!r}; is speculative decoding "
            "enabled and is this a vLLM v1 /metrics scrape?)",
            source=source,
        )
    total = 0.0
    for s in samples:
        if not math.isfinite(s.value) or s.value < 0:
            raise SpecsimError(
                f"{s.name} is {s.value} (a counter must be finite and >= 0)",
                source=source,
                field=f"line {s.line}",
            )
        total += s.value
    return total, len(samples)


def _describe(label_sets: set[tuple[tuple[str, str], ...]]) -> str:
    return "; ".join(
        sorted("{" + ",".join(f'{k}="{v}"' for k, v in labels) + "}" for labels in label_sets)
    )


def counters_from_exposition(exposition: Exposition, *, source: str) -> SpecDecodeCounters:
    """Sum the four counters over every label but ``position``."""
    drafts, label_sets = _sum(exposition, DRAFTS, source)
    draft_tokens, _ = _sum(exposition, DRAFT_TOKENS, source)
    accepted, _ = _sum(exposition, ACCEPTED, source)
    by_pos: dict[int, float] = {}
    pos_sets: set[tuple[tuple[str, str], ...]] = set()
    for s in counter_samples(exposition, PER_POSITION):
        pos_text = s.label("position")
        try:
            pos = int(pos_text) if pos_text is not None else -1
        except ValueError:
            pos = -1
        if pos < 0:
            raise SpecsimError(
                f'{s.name} needs a label position="0", "1", ...; got {pos_text!r}',
                source=source,
                field=f"line {s.line}",
            )
        if not math.isfinite(s.value) or s.value < 0:
            raise SpecsimError(
                f"{s.name} is {s.value} (a counter must be finite and >= 0)",
                source=source,
                field=f"line {s.line}",
            )
        by_pos[pos] = by_pos.get(pos, 0.0) + s.value
        pos_sets.add(tuple(kv for kv in s.labels if kv[0] != "position"))
    draft_sets = {s.labels for s in counter_samples(exposition, DRAFTS)}
    if pos_sets and pos_sets != draft_sets:
        raise SpecsimError(
            f"{PER_POSITION} covers label sets {_describe(pos_sets)} but {DRAFTS} covers "
            f"{_describe(draft_sets)}: the rates would mix different engines",
            source=source,
        )
    k = max(by_pos) + 1 if by_pos else 0
    per_pos = tuple(by_pos.get(i) for i in range(k))
    models = tuple(sorted({m for labels in draft_sets for key, m in labels if key == "model_name"}))
    return SpecDecodeCounters(
        drafts, draft_tokens, accepted, per_pos, label_sets, source, models
    ).check()


def parse_vllm_metrics(text: str, *, source: str = "<metrics>") -> SpecDecodeCounters:
    """vLLM's speculative-decoding counters from the text of one scrape."""
    return counters_from_exposition(parse_exposition(text, source=source), source=source)


def read_vllm_metrics(path: str | Path, before: str | Path | None = None) -> SpecDecodeCounters:
    """Read one scrape (or the difference ``path`` minus ``before``); errors name the file."""
    after = parse_vllm_metrics(read_text(path), source=str(path))
    if before is None:
        return after.with_drafts()
    return after.minus(parse_vllm_metrics(read_text(before), source=str(before)))


#: Histograms of the time of one engine step per request (``vllm/v1/metrics/loggers.py``):
#: the current name, then the deprecated one (v0.10-v0.12; per iteration, the same as ITL,
#: not the per-request TPOT its name suggests).
STEP_HISTOGRAMS = ("vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds")
#: Per finished request: (e2e - TTFT) / (output tokens - 1).
REQUEST_TPOT = "vllm:request_time_per_output_token_seconds"


@dataclass(frozen=True, slots=True)
class HistogramMean:
    """``_sum / _count`` of a histogram summed over label sets (a difference of scrapes)."""

    family: str
    total_s: float
    count: float

    @property
    def mean_ms(self) -> float:
        return 1000.0 * self.total_s / self.count


def histogram_mean(exposition: Exposition, family: str, source: str) -> HistogramMean | None:
    """The family's ``_sum`` and ``_count`` summed over label sets; None when absent."""
    sums = [s for s in exposition.samples if s.name == family + "_sum"]
    counts = [s for s in exposition.samples if s.name == family + "_count"]
    if not sums or not counts:
        return None
    for s in (*sums, *counts):
        if not math.isfinite(s.value) or s.value < 0:
            raise SpecsimError(
                f"{s.name} is {s.value} (must be finite and >= 0)",
                source=source,
                field=f"line {s.line}",
            )
    mean = HistogramMean(family, sum(s.value for s in sums), sum(s.value for s in counts))
    if mean.count > 0:
        check_step_ms(mean.mean_ms, source, f"{family} (mean of _sum / _count)")
    return mean


@dataclass(frozen=True, slots=True)
class VllmLatency:
    """Mean engine-step time (ITL) and mean per-request TPOT of a scrape, when present."""

    step: HistogramMean | None
    request_tpot: HistogramMean | None
    source: str

    def figures(self) -> dict[str, Any]:
        def one(h: HistogramMean | None) -> dict[str, Any] | None:
            return None if h is None else {**asdict(h), "mean_ms": h.mean_ms if h.count else None}

        return {"step_time": one(self.step), "request_tpot": one(self.request_tpot)}


def latency_from_text(text: str, source: str) -> dict[str, HistogramMean | None]:
    exposition = parse_exposition(text, source=source)
    step = next((h for f in STEP_HISTOGRAMS if (h := histogram_mean(exposition, f, source))), None)
    return {"step": step, "request_tpot": histogram_mean(exposition, REQUEST_TPOT, source)}


def read_vllm_latency(path: str | Path, before: str | Path | None = None) -> VllmLatency:
    """Latency histograms of a scrape (or ``path`` minus ``before``)."""
    after = latency_from_text(read_text(path), str(path))
    if before is not None:
        earlier = latency_from_text(read_text(before), str(before))
        for key, h in after.items():
            b = earlier.get(key)
            if h is not None and b is not None:
                if h.count < b.count or h.total_s < b.total_s:
                    raise SpecsimError(
                        f"{h.family} went down between the two scrapes (server restarted?)",
                        source=str(path),
                    )
                after[key] = HistogramMean(h.family, h.total_s - b.total_s, h.count - b.count)
    return VllmLatency(after["step"], after["request_tpot"], str(path))
