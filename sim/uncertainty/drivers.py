"""What a batch-1 answer depends on and what to measure next: each input's swing (the
answer with that input alone at its 5% and 95% end, ``Driver``, widest first:
``by_swing``) and the one measurement that narrows the interval most (``MeasureNext``,
in an inference engineer's words: ``measurement_for``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sim.scenario.schema import Scenario
from sim.uncertainty.interval import UNREACHABLE, Interval

__all__ = [
    "MEASURE_SAMPLES",
    "SWING_DIGITS",
    "TOP_DRIVERS",
    "TRTLLM_REPORTS",
    "Driver",
    "MeasureNext",
    "by_swing",
    "measurement_for",
]


#: Draws per input when measuring what removing its uncertainty would leave.
MEASURE_SAMPLES = 128


#: Drivers reported per answer.
TOP_DRIVERS = 4


#: Significant digits at which two drivers' swings count as tied.
SWING_DIGITS = 12


def by_swing(drivers: list[Driver], swing: Callable[[Driver], float]) -> list[Driver]:
    """``drivers`` widest ``swing`` first; swings equal to ``SWING_DIGITS`` significant
    digits are tied and keep their order (the inputs'): two inputs of mirrored effect (a
    perfectly anti-correlated pair) are not ordered by rounding."""
    return sorted(drivers, key=lambda d: -float(f"{swing(d):.{SWING_DIGITS}g}"))


@dataclass(frozen=True, slots=True)
class Driver:
    """One input's swing: the answer with the input at its low and its high end."""

    field: str
    input_low: float
    input_high: float
    low: float | None
    high: float | None

    @property
    def swing(self) -> float:
        lo = UNREACHABLE if self.low is None else self.low
        hi = UNREACHABLE if self.high is None else self.high
        return abs(hi - lo)

    def to_dict(self) -> dict[str, Any]:
        return {
            "field": self.field,
            "input_low": self.input_low,
            "input_high": self.input_high,
            "low": self.low,
            "high": self.high,
        }


@dataclass(frozen=True, slots=True)
class MeasureNext:
    """The one measurement that narrows the interval most, and the interval it leaves if
    it comes out at the current estimate."""

    what: str
    field: str
    interval90_after: Interval

    def to_dict(self) -> dict[str, Any]:
        return {
            "what": self.what,
            "field": self.field,
            "interval90_after": self.interval90_after.to_list(),
        }


#: What ``trtllm-bench --report_json`` states of acceptance (NVIDIA/TensorRT-LLM
#: tensorrt_llm/bench/dataclasses/reporting.py, read at commit 0249976575050d2c; the
#: fields sim/calibration/importers/trtllm_bench.py reads): per request, output tokens /
#: iterations and accepted drafts / (max_draft_len x iterations); no per-position count.
TRTLLM_REPORTS = (
    "trtllm-bench's decoding_stats hold only the accept length and the draft acceptance "
    "rate, no per-position counts"
)


def _position_counts(scenario: Scenario) -> str:
    """What the scenario's engine exposes of how many drafts each verify step accepted
    (``server.engine``; none: vLLM's, as before). vLLM: the per-position acceptance
    counters of its /metrics. SGLang (sgl-project/sglang tokenizer_manager.py, v0.5.23): each
    finished request's ``meta_info.spec_correct_drafts_histogram`` (``spec_accept_histogram``
    before), entry j the verify steps that accepted exactly j drafts, so the steps accepting
    at least j over all steps is position j's cumulative rate. TensorRT-LLM: none
    (``TRTLLM_REPORTS``; its advice is ``_trtllm_measurement``)."""
    engine = scenario.server.engine
    if engine == "sglang":
        return (
            "SGLang's per-request meta_info spec_correct_drafts_histogram (spec_accept_histogram"
            " before v0.5.23; steps accepting >= j drafts over all steps)"
        )
    return "vLLM's per-position counters"


def _trtllm_measurement(field: str, k0: int, measured: int, ka: int) -> str | None:
    """An acceptance input's measurement in what a TensorRT-LLM server's benchmark reports
    (``TRTLLM_REPORTS``): accept lengths at draft lengths (``max_draft_len``). With
    acceptance at a position independent of the draft length (the model's), the accept
    length at k is 1 + sum over j <= k of P(drafts 1..j all accepted), so each draft added
    raises it by the chance that every draft up to it is accepted: accept lengths at
    adjacent draft lengths give the per-position rates. ``k0``: the scenario's draft
    length, ``measured`` the one its accept length was measured at, ``ka`` another one.
    None: not an acceptance input."""
    if field in ("acceptance.decay", "acceptance.tilt"):
        return (
            f"run trtllm-bench at another max_draft_len (e.g. {ka}; measured at {measured}) and "
            "read its accept length: how acceptance falls with position "
            f"({TRTLLM_REPORTS})"
        )
    if field.startswith("acceptance.per_position"):
        if field.endswith("]"):  # one position p (entry p - 1): the lengths p - 1 and p
            p = int(field.split("[")[1].rstrip("]")) + 1
            where = f"max_draft_len {p - 1} and {p}" + (" (0: accept length 1)" if p == 1 else "")
        else:
            where = f"adjacent max_draft_len ({max(k0 - 1, 1)} to {k0 + 1})"
        return (
            f"run trtllm-bench at {where}: each draft added raises the accept length by the "
            f"chance that every draft up to it is accepted ({TRTLLM_REPORTS})"
        )
    if field.startswith("acceptance."):
        return (
            f"measure the accept length at max_draft_len {k0} over more requests "
            "(trtllm-bench --report_json: decoding_stats acceptance_length_percentiles)"
        )
    return None


def measurement_for(field: str, scenario: Scenario, best_k: int | None) -> str:
    """The measurement that pins ``field`` down, in the words of an inference engineer."""
    k = best_k or max(scenario.num_steps + 2, 4)
    k0 = scenario.num_steps
    m0 = scenario.timing.verify_tokens or k0 + 1
    if field == "hardware.expert_read_efficiency" and scenario.timing.verify_ms is None:
        return (
            f"time the verify pass at num_steps {k0} ({m0} tokens; it is derived from the "
            "decode): a speculative run's tok/s at concurrency 1 fixes it"
        )
    if field in (
        "timing.verify_ms_per_extra_token",
        "hardware.bandwidth_efficiency",
        "hardware.expert_read_efficiency",
    ):
        kv = k if k + 1 != m0 else max(m0 + 1, 4)  # another length than the one timed
        return (
            f"time a verify pass at num_steps {kv} ({kv + 1} tokens; measured only at {m0}): "
            "the per-token slope"
        )
    spec = scenario.acceptance
    measured = (spec.measured_num_steps if spec is not None else None) or k0
    ka = k if k != measured else max(measured + 2, 4)  # not the num_steps measured
    trtllm = scenario.server.engine == "trtllm"
    if trtllm and (said := _trtllm_measurement(field, k0, measured, ka)):
        return said
    if field in ("acceptance.decay", "acceptance.tilt"):
        return (
            f"measure the accept length at another num_steps (e.g. {ka}), or read "
            f"{_position_counts(scenario)} at K >= 4: how acceptance falls with position"
        )
    if field.startswith("acceptance.per_position"):
        return f"read {_position_counts(scenario)} over more drafts"
    if field.startswith("acceptance."):
        return f"measure the accept length at num_steps {k0} over more requests"
    named = {
        "timing.draft_step_ms": "time one drafter decode step (a profile of the draft passes)",
        "timing.draft_extend_ms": "time the draft-extend pass",
        "timing.cycle_overhead_ms": "time whole cycles at two num_steps (tok/s with their "
        "accept lengths): the per-cycle overhead",
        "timing.verify_ms": f"time the verify pass over {m0} tokens again",
        "timing.decode_ms": "time plain decoding again",
    }
    return named.get(field, f"measure {field}")
