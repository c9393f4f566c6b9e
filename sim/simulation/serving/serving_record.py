"""What a serving replication returns (``ServingRecord``: frozen and typed, arrays
documented with their shapes), the per-request metrics read from its rows
(``metric_values``), and the running sums behind Little's law and the backlog over its
measurement window (``WindowTally``), kept exactly as requests leave.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim.simulation.serving.sketch import StreamedStat

__all__ = ["REQUEST_METRICS", "ServingRecord", "WindowTally", "metric_values"]

#: Per-request metrics, in report order.
REQUEST_METRICS: tuple[str, ...] = ("per_user_tok_s", "ttft_ms", "tpot_ms", "e2e_ms", "queue_ms")


def metric_values(
    arrival_ms: np.ndarray,
    admitted_ms: np.ndarray,
    first_token_ms: np.ndarray,
    decode_start_ms: np.ndarray,
    finish_ms: np.ndarray,
    output_tokens: np.ndarray,
    decode_tokens: np.ndarray,
) -> dict[str, np.ndarray]:
    """Per request (Q,): per-user tok/s = 1000 decode tokens / (finish - decode start),
    TTFT = first token - arrival, TPOT = (finish - first token) / (output tokens - 1) (NaN
    for one-token requests), E2E = finish - arrival, queueing delay = admission - arrival;
    ms unless named otherwise (sim/simulation/serving/metrics.py's definitions)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        tpot = np.where(
            output_tokens > 1, (finish_ms - first_token_ms) / (output_tokens - 1), np.nan
        )
        decode_ms = finish_ms - decode_start_ms
        tok_s = np.where(
            (decode_tokens > 0) & (decode_ms > 0), 1000.0 * decode_tokens / decode_ms, np.nan
        )
    return {
        "per_user_tok_s": tok_s,
        "ttft_ms": first_token_ms - arrival_ms,
        "tpot_ms": tpot,
        "e2e_ms": finish_ms - arrival_ms,
        "queue_ms": admitted_ms - arrival_ms,
    }


@dataclass(slots=True)
class WindowTally:
    """Running sums for Little's law and the backlog over the window [lo, hi]: lo is the
    first measured arrival (``open``), hi the run's end (``close``). A request counts when
    it leaves (``leave``: at its finish, or at the end for those still in the system), by
    the formulas of whole-run arrays: time in the system inside the window
    max(0, min(f, hi) - max(a, lo)); of it, the part of arrivals inside [lo, hi)
    (``arrived_ms``) and of those there before it opened (``carried_ms``); ``carried``
    counts the latter still there after lo (a < lo < f)."""

    lo: float = float("inf")
    in_system_ms: float = 0.0
    arrived_ms: float = 0.0
    carried_ms: float = 0.0
    carried: int = 0
    arrivals: int = 0  # arrivals at or after lo
    last_arrival_ms: float = -1.0
    at_last: int = 0  # arrivals at last_arrival_ms

    def open(self, at_ms: float) -> None:
        self.lo = at_ms

    def arrive(self, at_ms: float) -> None:
        self.arrive_many(at_ms, 1)

    def arrive_many(self, at_ms: float, m: int) -> None:
        """``m`` requests arrive at ``at_ms``."""
        if m <= 0:
            return
        if at_ms >= self.lo:
            self.arrivals += m
        if at_ms == self.last_arrival_ms:
            self.at_last += m
        else:
            self.last_arrival_ms, self.at_last = at_ms, m

    def leave(self, arrival_ms: float, finish_ms: float) -> None:
        lo = self.lo
        if finish_ms <= lo:  # gone before the window opened (or it never did)
            return
        if arrival_ms >= lo:
            self.in_system_ms += finish_ms - arrival_ms
            self.arrived_ms += finish_ms - arrival_ms
        else:
            self.in_system_ms += finish_ms - lo
            self.carried_ms += finish_ms - lo
            self.carried += 1

    def arrivals_before(self, hi_ms: float) -> int:
        """Arrivals in [lo, hi) (``arrivals`` counts [lo, hi]: hi is the last event)."""
        late = self.at_last if self.last_arrival_ms >= hi_ms >= self.lo else 0
        return self.arrivals - late


@dataclass(frozen=True, slots=True)
class ServingRecord:
    """One replication under one speculation policy.

    Measured requests (``measured`` of them), arrays of shape (Q,) in arrival order:
    ``arrival_ms``, ``admitted_ms`` (first scheduled), ``first_token_ms``,
    ``decode_start_ms`` (decoding possible: the end of the first prefill, or admission
    without prefill), ``finish_ms`` (-1 if not answered when a horizon ended the run),
    ``input_tokens``, ``output_tokens``, ``decode_tokens`` (output tokens after
    ``decode_start_ms``; 0 for a request whose prefill emitted its only token, which never
    decodes and keeps ``decode_start_ms`` -1), ``request_class``, ``preemptions``,
    ``cycles``; ``sample_index`` (Q,), each row's place among the measured requests. Q =
    ``measured`` up to ``KEEP_REQUESTS`` (kept_rows.py); beyond, the rows are every
    ``stride``-th measured request (``sampled``). ``request_stats[metric]`` streams every
    measured request's value (``REQUEST_METRICS`` and ``preemptions``): exact count, sum
    and mean, and quantiles within 0.1% (sim/simulation/serving/sketch.py).

    Window [``window_start_ms``, ``window_end_ms``]: ``itl_ms``/``itl_weight`` (m,), the
    gaps between successive deliveries to a request and how many deliveries had that gap
    (every gap up to ``KEEP_GAPS`` values, else empty: ``itl_exact`` False), and
    ``itl_stats``, all of them streamed (weighted; none when the run kept no gaps:
    ``Recorder``'s ``delivery_gaps``); ``batch_time_ms`` (max_running + 1,),
    time spent in decode iterations of each decode batch size; ``prefill_time_ms``;
    ``kv_token_ms``, the integral of KV tokens held (contexts, lookahead slots and a hybrid
    target's state) over time; ``kv_peak_tokens``; ``tokens_delivered``, output tokens
    delivered to users (the overshoot of a request's last cycle excluded); ``window``
    (``WindowTally``), the in-system time and arrivals behind Little's law and the backlog.

    Whole run: ``decode_iterations``, ``prefill_iterations``, ``request_cycles`` (decode
    cycles summed over requests), ``cycle_tokens`` (tokens those cycles emitted), and
    ``preemptions_total``; ``unfinished_at_end``, requests that had arrived and were not
    answered when the run ended (waiting, prefilling or decoding).
    """

    arrival_ms: np.ndarray
    admitted_ms: np.ndarray
    first_token_ms: np.ndarray
    decode_start_ms: np.ndarray
    finish_ms: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    decode_tokens: np.ndarray
    request_class: np.ndarray
    preemptions: np.ndarray
    cycles: np.ndarray
    sample_index: np.ndarray
    measured: int
    stride: int
    request_stats: dict[str, StreamedStat]
    window: WindowTally
    window_start_ms: float
    window_end_ms: float
    itl_ms: np.ndarray
    itl_weight: np.ndarray
    itl_exact: bool
    itl_stats: StreamedStat
    batch_time_ms: np.ndarray
    prefill_time_ms: float
    kv_token_ms: float
    kv_capacity_tokens: int | None
    kv_peak_tokens: int
    tokens_delivered: int
    decode_iterations: int
    prefill_iterations: int
    request_cycles: int
    cycle_tokens: int
    preemptions_total: int
    unfinished_at_end: int

    @property
    def window_ms(self) -> float:
        return self.window_end_ms - self.window_start_ms

    @property
    def sampled(self) -> bool:
        """The per-request rows are a sample (every ``stride``-th measured request)."""
        return self.stride > 1
