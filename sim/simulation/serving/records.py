"""What one serving replication records while it runs (``Recorder``): per request, per
delivery gap, per iteration, in memory that does not grow with the number of requests
(kept_rows.py), returned as a ``ServingRecord`` (serving_record.py).

``Recorder`` accumulates during the run (time-weighted statistics only inside the
measurement window: from the arrival of the first measured request to the end of the
run, which is the completion of the last measured one). Little's law and the backlog use
running sums over the requests as they leave (``WindowTally``), exactly.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from sim.simulation.serving.int_reductions import int_sum
from sim.simulation.serving.kept_rows import KeptGaps, KeptRows
from sim.simulation.serving.serving_record import ServingRecord, WindowTally
from sim.simulation.serving.workload import Request

__all__ = ["Recorder"]


class Recorder:
    """Accumulates one replication's statistics (see ``ServingRecord``); holds the
    requests in the system (``live``, by id) and no others. ``delivery_gaps`` False: the
    delivery gaps are not kept (a study that reads no ITL: its record's ``itl_ms`` and
    ``itl_stats`` are empty and ``itl_exact`` False), the rest the same bit for bit."""

    def __init__(
        self,
        max_running: int,
        kv_capacity: int | None,
        first: int,
        measured: int,
        *,
        delivery_gaps: bool = True,
    ):
        self.live: dict[int, Request] = {}
        self.arrived = 0
        self.first_measured = first
        self.measured = measured
        self.window_start_ms = float("inf")
        self.window = WindowTally()
        self._rows = KeptRows()
        self._gaps = KeptGaps()
        self._keep_gaps = delivery_gaps
        # time at each decode batch size: Python floats (an item of an array costs more to
        # add to), the record's array at the end; the same sums bit for bit
        self.batch_time_ms = [0.0] * (max_running + 1)
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
        self._end_ms = -1.0  # the run's end, once known (``record``)

    def arrive(self, req: Request, now_ms: float) -> None:
        """A request arrives: its id (arrival order), whether it is measured; the first
        measured one opens the window."""
        req.id = rid = self.arrive_id(now_ms)
        req.arrival_ms = now_ms
        self.live[rid] = req
        req.measured = self.first_measured <= rid < self.first_measured + self.measured

    def arrive_id(self, now_ms: float) -> int:
        """A request arrives at ``now_ms`` (held by the caller): its id, in arrival order
        (``arrive_ids`` of one; the window's bookkeeping inline unless it opens it)."""
        rid = self.arrived
        if rid == self.first_measured:  # it opens the window
            return self.arrive_ids(now_ms, 1)[0]
        self.arrived = rid + 1
        self.window.arrive_many(now_ms, 1)
        return rid

    def arrive_ids(self, now_ms: float, m: int) -> range:
        """``m`` requests arrive at ``now_ms`` (held by the caller): their ids, in arrival
        order; the first measured one opens the window."""
        first = self.arrived
        self.arrived += m
        before = self.first_measured - first  # arrivals before the window opens
        if 0 <= before < m:
            self.window.arrive_many(now_ms, before)
            self.window_start_ms = now_ms
            self.window.open(now_ms)
            self.window.arrive_many(now_ms, m - before)
        else:
            self.window.arrive_many(now_ms, m)
        return range(first, first + m)

    def leave(self, req: Request) -> None:
        """A request is answered: its row is recorded and it is released."""
        del self.live[req.id]
        self.window.leave(req.arrival_ms, req.finish_ms)
        if req.measured:
            self._row(req)

    def leave_decoded(
        self,
        rid: int,
        arrival_ms: float,
        first_token_ms: float,
        finish_ms: float,
        input_tokens: int,
        output_tokens: int,
        request_class: int,
        cycles: int,
    ) -> bool:
        """``leave`` of a request held by the caller that decoded from its arrival (admitted
        and decoding then, no preemption; ``finish_ms`` -1: unanswered at the end). Whether
        it was measured."""
        self.window.leave(arrival_ms, finish_ms if finish_ms >= 0 else self._end_ms)
        measured = self.first_measured <= rid < self.first_measured + self.measured
        if measured:
            self._rows.add(
                (
                    rid - self.first_measured,
                    arrival_ms,
                    arrival_ms,
                    first_token_ms,
                    arrival_ms,
                    finish_ms,
                    input_tokens,
                    output_tokens,
                    output_tokens,
                    request_class,
                    0,
                    cycles,
                )
            )
        return measured

    def _row(self, r: Request) -> None:
        decoded = r.output_tokens - r.decode_from if r.decode_start_ms >= 0 else 0
        self._rows.add(
            (
                r.id - self.first_measured,
                r.arrival_ms,
                r.admitted_ms,
                r.first_token_ms,
                r.decode_start_ms,
                r.finish_ms,
                r.input_tokens,
                r.output_tokens,
                decoded,
                r.request_class,
                r.preemptions,
                r.cycles,
            )
        )

    @property
    def keeps_gaps(self) -> bool:
        """Whether delivery gaps are kept (``gaps`` drops them otherwise)."""
        return self._keep_gaps

    def gaps(self, values_ms: np.ndarray, weight: float) -> None:
        """Delivery gaps (ms), each seen by ``weight`` deliveries (none kept when the
        recorder was made without ``delivery_gaps``)."""
        if values_ms.size and self._keep_gaps:
            self._gaps.add(values_ms, weight)

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
        ``start_ms``; arrays (n,): ends, durations, KV tokens held (non-decreasing: a
        block's contexts only grow, so the last is the most), useful output tokens
        delivered by each iteration."""
        self.decode_iterations += durations_ms.shape[0]
        if start_ms < self.window_start_ms:
            inside = ends_ms - durations_ms >= self.window_start_ms
            if not inside.any():
                return
            durations_ms, delivered = durations_ms * inside, delivered * inside
            peak = int(np.maximum.reduce(held_tokens[inside]))
        else:
            peak = int(held_tokens[-1])
        self.batch_time_ms[batch] += float(np.add.reduce(durations_ms))
        self.kv_token_ms += float(held_tokens @ durations_ms)
        self.kv_peak = max(self.kv_peak, peak)
        self.tokens_delivered += int_sum(delivered)

    def decode_step_done(
        self,
        batch: int,
        start_ms: float,
        end_ms: float,
        duration_ms: float,
        held_tokens: int,
        delivered: int,
    ) -> None:
        """``decode_iterations_done`` of one iteration, in scalars (the same bits)."""
        self.decode_iterations += 1
        if start_ms < self.window_start_ms and end_ms - duration_ms < self.window_start_ms:
            return
        self.batch_time_ms[batch] += duration_ms
        self.kv_token_ms += held_tokens * duration_ms
        self.kv_peak = max(self.kv_peak, held_tokens)
        self.tokens_delivered += delivered

    def prefill_done(self, start_ms: float, duration_ms: float, held_tokens: int, tokens: int):
        self.prefill_iterations += 1
        if start_ms < self.window_start_ms:
            return
        self.prefill_time_ms += duration_ms
        self.kv_token_ms += held_tokens * duration_ms
        self.kv_peak = max(self.kv_peak, held_tokens)
        self.tokens_delivered += tokens

    def record(self, end_ms: float, held: Callable[[], int] | None = None) -> ServingRecord:
        """The replication's record at ``end_ms``: requests still in the system leave at
        the end (measured ones recorded unanswered, ``finish_ms`` -1). ``held``: the
        caller's requests (``leave_decoded``) still in the system, made to leave first;
        it returns how many there were (they arrived before ``live``'s)."""
        self._end_ms = end_ms
        unfinished = len(self.live) + (held() if held is not None else 0)
        for req in list(self.live.values()):
            self.window.leave(req.arrival_ms, end_ms)
            if req.measured:
                self._row(req)
        self.live.clear()
        rows = self._rows.arrays()
        itl, weights = self._gaps.arrays()
        return ServingRecord(
            **rows,
            measured=self._measured_seen(),
            stride=self._rows.stride,
            request_stats=self._rows.stats,
            window=self.window,
            window_start_ms=self.window_start_ms,
            window_end_ms=end_ms,
            itl_ms=itl,
            itl_weight=weights,
            itl_exact=self._gaps.exact and self._keep_gaps,
            itl_stats=self._gaps.stats,
            batch_time_ms=np.array(self.batch_time_ms, dtype=float),
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

    def _measured_seen(self) -> int:
        """Measured requests that arrived."""
        return max(0, min(self.arrived - self.first_measured, self.measured))
