"""What one serving replication records: per request, per delivery gap, per iteration.

``Recorder`` accumulates during the run (time-weighted statistics only inside the
measurement window: from the arrival of the first measured request to the end of the
run, which is the completion of the last measured one); ``ServingRecord`` is the frozen,
typed result a replication returns (arrays documented with their shapes).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim.simulation.serving.workload import Request

__all__ = ["Recorder", "ServingRecord"]


@dataclass(frozen=True, slots=True)
class ServingRecord:
    """One replication under one speculation policy.

    Measured requests, arrays of shape (Q,) in arrival order: ``arrival_ms``,
    ``admitted_ms`` (first scheduled), ``first_token_ms``, ``decode_start_ms`` (decoding
    possible: the end of the first prefill, or admission without prefill), ``finish_ms``,
    ``input_tokens``, ``output_tokens``, ``decode_tokens`` (output tokens after
    ``decode_start_ms``; 0 for a request whose prefill emitted its only token, which never
    decodes and keeps ``decode_start_ms`` -1), ``request_class``, ``preemptions``, ``cycles``.

    Every request that arrived, (A,): ``all_arrival_ms``, ``all_finish_ms`` (the run's end
    for those still in the system), for Little's law.

    Window [``window_start_ms``, ``window_end_ms``]: ``itl_ms``/``itl_weight`` (m,), the
    gaps between successive deliveries to a request and how many deliveries had that gap;
    ``batch_time_ms`` (max_running + 1,), time spent in decode iterations of each decode
    batch size; ``prefill_time_ms``; ``kv_token_ms``, the integral of KV tokens held
    (contexts and lookahead slots) over time; ``kv_peak_tokens``; ``tokens_delivered``,
    output tokens delivered to users (the overshoot of a request's last cycle excluded).

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
    all_arrival_ms: np.ndarray
    all_finish_ms: np.ndarray
    window_start_ms: float
    window_end_ms: float
    itl_ms: np.ndarray
    itl_weight: np.ndarray
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


class Recorder:
    """Accumulates one replication's statistics (see ``ServingRecord``)."""

    def __init__(self, max_running: int, kv_capacity: int | None):
        self.requests: list[Request] = []
        self.measured: list[Request] = []
        self.window_start_ms = float("inf")
        self.itl_ms: list[np.ndarray] = []
        self.itl_weight: list[float] = []
        self.batch_time_ms = np.zeros(max_running + 1)
        self.prefill_time_ms = 0.0
        self.kv_token_ms = 0.0
        self.kv_capacity = kv_capacity
        self.kv_peak = 0
        self.tokens_delivered = 0
        self.decode_iterations = 0
        self.prefill_iterations = 0
        self.request_cycles = 0
        self.cycle_tokens = 0
        self.preemptions = 0

    def gaps(self, values_ms: np.ndarray, weight: float) -> None:
        """Delivery gaps (ms), each seen by ``weight`` deliveries."""
        if values_ms.size:
            self.itl_ms.append(values_ms)
            self.itl_weight.append(weight)

    def decode_iterations_done(
        self,
        batch: int,
        start_ms: float,
        ends_ms: np.ndarray,
        durations_ms: np.ndarray,
        held_tokens: np.ndarray,
        delivered: np.ndarray,
    ) -> None:
        """Time-weighted statistics of decode iterations of one batch size from
        ``start_ms``; arrays (n,): ends, durations, KV tokens held, useful output tokens
        delivered by each iteration."""
        self.decode_iterations += durations_ms.shape[0]
        if start_ms < self.window_start_ms:
            inside = ends_ms - durations_ms >= self.window_start_ms
            if not inside.any():
                return
            durations_ms, delivered = durations_ms * inside, delivered * inside
            peak = held_tokens[inside]
        else:
            peak = held_tokens
        self.batch_time_ms[batch] += durations_ms.sum()
        self.kv_token_ms += float(held_tokens @ durations_ms)
        self.kv_peak = max(self.kv_peak, int(peak.max()))
        self.tokens_delivered += int(delivered.sum())

    def prefill_done(self, start_ms: float, duration_ms: float, held_tokens: int, tokens: int):
        self.prefill_iterations += 1
        if start_ms < self.window_start_ms:
            return
        self.prefill_time_ms += duration_ms
        self.kv_token_ms += held_tokens * duration_ms
        self.kv_peak = max(self.kv_peak, held_tokens)
        self.tokens_delivered += tokens

    def record(self, end_ms: float) -> ServingRecord:
        m = self.measured
        arrays = {
            name: np.array([getattr(r, name) for r in m], dtype=float)
            for name in ("arrival_ms", "admitted_ms", "first_token_ms", "decode_start_ms")
        }
        finish = np.array([r.finish_ms for r in m], dtype=float)
        ints = {
            name: np.array([getattr(r, name) for r in m], dtype=np.int64)
            for name in ("input_tokens", "output_tokens", "request_class", "preemptions", "cycles")
        }
        decode_tokens = np.array(
            [r.output_tokens - r.decode_from if r.decode_start_ms >= 0 else 0 for r in m],
            dtype=np.int64,
        )  # a request its prefill finished (one output token) never decoded
        all_finish = np.array([r.finish_ms if r.finish_ms >= 0 else end_ms for r in self.requests])
        unfinished = sum(1 for r in self.requests if r.finish_ms < 0)
        itl = np.concatenate(self.itl_ms) if self.itl_ms else np.empty(0)
        weights = np.repeat(self.itl_weight, [v.size for v in self.itl_ms])
        return ServingRecord(
            **arrays,
            finish_ms=finish,
            decode_tokens=decode_tokens,
            **ints,
            all_arrival_ms=np.array([r.arrival_ms for r in self.requests]),
            all_finish_ms=all_finish,
            window_start_ms=self.window_start_ms,
            window_end_ms=end_ms,
            itl_ms=itl,
            itl_weight=weights,
            batch_time_ms=self.batch_time_ms,
            prefill_time_ms=self.prefill_time_ms,
            kv_token_ms=self.kv_token_ms,
            kv_capacity_tokens=self.kv_capacity,
            kv_peak_tokens=self.kv_peak,
            tokens_delivered=self.tokens_delivered,
            decode_iterations=self.decode_iterations,
            prefill_iterations=self.prefill_iterations,
            request_cycles=self.request_cycles,
            cycle_tokens=self.cycle_tokens,
            preemptions_total=self.preemptions,
            unfinished_at_end=unfinished,
        )
