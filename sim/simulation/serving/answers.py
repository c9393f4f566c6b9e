"""A serving replication's answers (``Answers``): a request answered (its record, the
process that waits for it, the run's ``stop`` once every measured request is answered)
and what its closed-loop user does next. A user without think time sends its next
request the instant its answer is done (``send_next``); in a finite job only while its
conversations last (``JobPool``), the j-th request sent being the job's task j when it
has given tasks (``task``). Where every request decodes from its arrival to its answer
the users' requests are rows of the decode batch instead (``hold_requests``,
held_rows.py ``HeldRows``), answered and sending together.
"""

from __future__ import annotations

import numpy as np
import simpy

from sim.simulation.serving.admission import Admission
from sim.simulation.serving.held_rows import HeldRows
from sim.simulation.serving.job import JobPool
from sim.simulation.serving.records import Recorder
from sim.simulation.serving.workload import ClosedLoop, Request, RequestSource, Workload

__all__ = ["Answers"]


class Answers:
    """The answers to ``workload``'s requests, recorded in ``rec``; users' next requests
    arrive through ``admission``. ``completions``: requests answered so far;
    ``measured_left``: measured requests still to answer; ``job``: a finite job's pool
    (None: no end); ``held``: the users' requests as rows of the batch (None: request
    objects)."""

    def __init__(
        self, env: simpy.Environment, workload: Workload, rec: Recorder, admission: Admission
    ):
        self.env = env
        self.rec = rec
        self.admission = admission
        self.measured_left = workload.requests
        arrivals = workload.arrivals
        self.job = (
            JobPool(arrivals.conversations, arrivals.turns)
            if isinstance(arrivals, ClosedLoop) and arrivals.conversations is not None
            else None
        )
        # a job of given tasks: the j-th request sent is task j (``task``)
        self.tasks = arrivals.tasks if isinstance(arrivals, ClosedLoop) else None
        self.stop = env.event()
        self.completions = 0
        self.held: HeldRows | None = None

    def task(self) -> tuple[int, int, int] | None:
        """The task the request just taken from the job is (its lengths and class), None
        without given tasks (the user's source draws them)."""
        if self.tasks is None or self.job is None:
            return None
        return self.tasks.row(self.job.sent - 1)

    def send_next(self, source: RequestSource) -> None:
        """A closed-loop user without think time sends its next request the instant its
        answer is done: the same arrivals, in the same order, as a process per user that
        resumes on the answer (those answered before the run's stop event send, the
        others do not), without the process and its events. In a finite job (``job``)
        only while its conversations last."""
        if self.job is not None and not self.job.take(source):
            return
        req = source.next(self.task())
        req.source = source
        self.admission.submit(req)

    def complete(self, req: Request, now: float) -> None:
        """``req`` is answered at ``now``: recorded, its waiting process resumed (or its
        user's next request sent), and the run stopped after the last measured answer."""
        self.completions += 1
        req.finish_ms = now
        self.rec.leave(req)
        if req.done is not None:  # a thinking user's process waits for it
            req.done.succeed()
        elif req.source is not None and not self.stop.triggered:
            self.send_next(req.source)  # a user without think time: its next, now
        if req.measured:
            self.measured_left -= 1
            if self.measured_left == 0:
                self.stop.succeed()

    def hold_requests(self, senders: list[RequestSource]) -> None:
        """Hold requests as rows of the decode batch (``senders``: the closed loop's
        users; ``HeldRows``). Only where every request decodes from its arrival to its
        answer (engine.py ``holds_rows``)."""
        self.held = HeldRows(senders, self.admission.batch, self.rec, self.job, self.task)

    def send_held(self, users: list[int]) -> None:
        """``users`` send their next requests now, as rows of the batch (``HeldRows.send``)."""
        assert self.held is not None
        self.held.send(users, self.env.now)

    def finish_held(self, rows: np.ndarray, end_ms: float) -> list[int]:
        """Held rows ``rows`` finished at ``end_ms``: recorded and answered (as
        ``complete``); the users who send their next request now."""
        assert self.held is not None
        left = self.measured_left
        senders, self.measured_left = self.held.finish(rows, end_ms, left, self.stop.triggered)
        if self.measured_left <= 0 < left:
            self.stop.succeed()
        self.completions += len(rows)
        return senders

    def leave_held(self) -> int:
        """The held rows still in the system leave at the end (``HeldRows.leave``); how
        many."""
        assert self.held is not None
        return self.held.leave()
