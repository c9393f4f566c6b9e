"""The waiting queue of a serving replication and admission from it (``Admission``).

A request joins the waiting queue (a ``simpy.PriorityStore``: FIFO by arrival, preempted
requests first) when it arrives (``submit``). At every iteration boundary the scheduler
admits waiting requests FIFO while a running slot is free (``max_running_requests``) and
the head's KV (context + lookahead) fits the KV cache: a request with a context to
prefill starts its prefill (``Prefills``), the others join the decode batch together, in
admission order. When the KV cache cannot hold the batch's growth the newest rows are
preempted (``preempt``): requeued ahead of new arrivals, their KV freed, to be recomputed
by a prefill of prompt + generated tokens when readmitted (vLLM V1
``Scheduler._preempt_request``). Arrival processes announce their next arrival
(``expect_arrival``): the heap ``upcoming`` the block planner cuts blocks at.
"""

from __future__ import annotations

import heapq

import numpy as np
import simpy

from sim.simulation.serving.decode_batch import DecodeBatch
from sim.simulation.serving.kv_cache import KvCache
from sim.simulation.serving.prefills import Prefills
from sim.simulation.serving.records import Recorder
from sim.simulation.serving.workload import Request

__all__ = ["PREEMPTED", "WAITING", "Admission", "Waiting"]


#: Queue priorities: preempted requests are readmitted before new arrivals.
PREEMPTED, WAITING = 0, 1


#: A waiting request in the queue: (priority, request id, request). Ids are unique, so
#: the heap orders by (priority, id) and never compares requests.
Waiting = tuple[int, int, Request]


class Admission:
    """The waiting queue (``queue``) and admission into ``batch`` or ``prefills`` under
    ``max_running`` running requests and the KV cache ``kv`` (None: no KV limit);
    ``upcoming``: the announced arrival times (a heap)."""

    def __init__(
        self,
        env: simpy.Environment,
        batch: DecodeBatch,
        prefills: Prefills,
        kv: KvCache | None,
        rec: Recorder,
        max_running: int,
    ):
        self.env = env
        self.queue = simpy.PriorityStore(env)
        self.batch = batch
        self.prefills = prefills
        self.prefilling = prefills.states
        self.kv = kv
        self.rec = rec
        self.max_running = max_running
        self.upcoming: list[float] = []

    def expect_arrival(self, at_ms: float) -> None:
        """An arrival process announces its next arrival (a hint for the block planner)."""
        heapq.heappush(self.upcoming, at_ms)

    def submit(self, req: Request, awaited: bool = True) -> None:
        """A request arrives and joins the waiting queue (an unbounded store: the put is
        immediate); ``awaited`` False: no process waits for its answer (an open arrival)."""
        self.arrive(req, awaited)
        self.enqueue((WAITING, req.id, req))

    def arrive(self, req: Request, awaited: bool = True) -> None:
        """``req`` arrives now; ``awaited``: a process waits for its answer (``done``),
        unless the request has a sender (``Answers.send_next``)."""
        if self.upcoming and self.upcoming[0] <= self.env.now:
            heapq.heappop(self.upcoming)
        if awaited and req.source is None:  # a process waits for the answer
            req.done = self.env.event()
        self.rec.arrive(req, self.env.now)

    def enqueue(self, item: Waiting) -> None:
        """Put ``item`` in the waiting queue: a put event only when the scheduler waits
        for one (an unbounded store's put is immediate; nothing else waits on it)."""
        if self.queue.get_queue:
            self.queue.put(item)
        else:
            heapq.heappush(self.queue.items, item)

    def admissible(self) -> bool:
        """A waiting request can be admitted at this boundary."""
        items = self.queue.items
        if not items or self.batch.size + len(self.prefilling) >= self.max_running:
            return False
        return self.kv is None or self.prefills.holds(items[0][2]) <= self.kv.level

    def admit(self, req: Request) -> None:
        """Admit ``req`` (taken from the queue by the scheduler's get)."""
        if self._admit(req):
            self.start_decoding([req])

    def admit_waiting(self) -> None:
        """Admit the waiting requests FIFO while ``admissible``; those that decode at once
        join the batch together, in admission order."""
        items = self.queue.items
        room = self.max_running - self.batch.size - len(self.prefilling)
        joining: list[Request] = []
        kv = self.kv
        hold = None
        while items and room > 0:
            req = items[0][2]
            if kv is not None:
                hold = self.prefills.holds(req)
                if hold > kv.level:
                    break
            heapq.heappop(items)
            room -= 1
            if self._admit(req, hold):
                joining.append(req)
        if joining:
            self.start_decoding(joining)

    def _admit(self, req: Request, hold: int | None = None) -> bool:
        """Take ``req``'s KV (``hold``: its ``Prefills.holds``, when the caller has it);
        start its prefill, or return True: it decodes now."""
        prefills = self.prefills
        prefill = prefills.needs(req)
        if hold is None and (prefill or self.kv is not None):
            hold = prefills.holds(req)
        if self.kv is not None:
            assert hold is not None and hold <= self.kv.level, "admitted beyond the KV cache"
            self.kv.get(hold)
        if req.admitted_ms < 0:
            req.admitted_ms = self.env.now
        if prefill:
            assert hold is not None
            prefills.start(req, hold)
            return False
        return True

    def start_decoding(self, reqs: list[Request]) -> None:
        """``reqs`` join the decode batch as its newest rows, in order."""
        now = self.env.now
        for req in reqs:
            if req.decode_start_ms < 0:
                req.decode_start_ms = now
                req.decode_from = req.generated
        for req in reqs:
            self.batch.append(
                req.id,
                req.key,
                req.thresholds,
                req.output_tokens - req.generated,
                req.context_tokens,
                req.cycles,
                req.last_delivery_ms,
            )

    def preempt(self, first_row: int) -> None:
        """Preempt rows ``first_row`` onwards (the newest): requeue them (their KV given
        back by ``KvLedger.reserve_growth``)."""
        batch = self.batch
        for row in range(first_row, batch.size):
            req = self.rec.live[int(batch.ids[row])]
            req.generated = req.output_tokens - int(batch.need[row])
            req.cycles = int(batch.cycles[row])
            req.last_delivery_ms = float(batch.last_ms[row])
            req.preemptions += 1
            self.rec.preemptions += 1
            self.enqueue((PREEMPTED, req.id, req))
        keep = np.zeros(batch.size, dtype=bool)
        keep[:first_row] = True
        batch.keep(keep)
