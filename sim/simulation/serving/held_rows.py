"""Closed-loop users whose requests are rows of the decode batch, not request objects
(``HeldRows``): their sends, their completions and their leaving at the end.

Only where every request decodes from its arrival to its answer (engine.py
``holds_rows``: a closed loop without think time whose users all fit in the running
slots, no KV limit, no prefill, no horizon); the records are a request object's
(``Recorder.leave_decoded``), in the same order.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from sim.simulation.serving.decode_batch import DecodeBatch
from sim.simulation.serving.job import JobPool
from sim.simulation.serving.records import Recorder
from sim.simulation.serving.workload import RequestSource

__all__ = ["HeldRows"]


class HeldRows:
    """``senders`` (the closed loop's users, by index) whose requests are rows of
    ``batch``, recorded in ``rec``; ``job`` the finite job's pool (None: no end),
    ``task`` the given task the request just taken from it is (None: the user's source
    draws its lengths)."""

    def __init__(
        self,
        senders: list[RequestSource],
        batch: DecodeBatch,
        rec: Recorder,
        job: JobPool | None,
        task: Callable[[], tuple[int, int, int] | None],
    ):
        self.senders = senders
        self.batch = batch
        self.rec = rec
        self.job = job
        self.task = task

    def send(self, users: list[int], now_ms: float) -> None:
        """``users`` send their next requests at ``now_ms`` (in a finite job only while it
        lasts); they join the batch at once (what ``send_next`` and the next admission do
        with request objects, in the same order)."""
        senders, arrive, job = self.senders, self.rec.arrive_ids, self.job
        drawn, sending = [], []
        for u in users:
            if job is not None and not job.take(u):
                continue
            drawn.append(senders[u].next_drawn(self.task()))
            sending.append(u)
        if not sending:
            return
        users = sending
        inputs, outputs, classes, thresholds, keys = zip(*drawn, strict=True)
        rids = arrive(now_ms, len(users))
        self.batch.extend_held(rids, keys, thresholds, inputs, outputs, classes, users, now_ms)

    def finish(
        self, rows: np.ndarray, end_ms: float, measured_left: int, stopped: bool
    ) -> tuple[list[int], int]:
        """Rows ``rows`` finished at ``end_ms``: recorded and answered, ``measured_left``
        measured requests still to answer before them, ``stopped`` whether the run's stop
        event has happened. The users who send their next request now (all but those
        answered after the stop: the one answering the last measured request and those
        before it send), and the measured requests still to answer after them."""
        leave = self.rec.leave_decoded
        senders: list[int] = []
        for rid, cycles, arrival, first, n_in, n_out, cls, user in self.batch.held_rows(rows):
            measured = leave(rid, arrival, first, end_ms, n_in, n_out, cls, cycles)
            if not stopped:
                senders.append(user)
            if measured:
                measured_left -= 1
                if measured_left == 0:
                    stopped = True
        return senders, measured_left

    def leave(self) -> int:
        """The rows still in the system leave at the end (unanswered, in arrival order;
        ``cycles`` 0 as an unanswered request object's); how many."""
        rows = self.batch.held_rows(np.arange(self.batch.size))
        for rid, _, arrival, first, n_in, n_out, cls, _ in rows:
            self.rec.leave_decoded(rid, arrival, first, -1.0, n_in, n_out, cls, 0)
        return len(rows)
