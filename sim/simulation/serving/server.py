"""The state of one serving replication between its events (``Server``): admission,
prefill completion, the decode iterations planned and committed, completions and
preemptions; and a request's arrival (``submit``, ``send_next``). The SimPy processes
that drive it are sim/simulation/serving/processes.py.

Each request joins the waiting queue (a ``simpy.PriorityStore``: FIFO by arrival,
preempted requests first) when it arrives (``submit``). At every iteration boundary the
scheduler admits waiting requests FIFO while a running slot is free
(``max_running_requests``) and the head's KV (context + lookahead) fits the KV cache.
Decode iterations follow the SGLang cycle of what the policy drafts at that batch size, a
chain or a tree (sim/model/batched_cost.py, sim/model/drafts.py): acceptance is decided
per request from its own rates, or its own tree's depth survival
(``batch.accept_lengths``), finished requests leave at the end of the iteration in which
they reach their token count (the last cycle may overshoot; only the tokens asked for
count), and when the KV cache cannot hold the batch's growth the newest requests are
preempted (their KV freed, to be recomputed by a prefill of prompt + generated tokens when
readmitted; vLLM V1 ``Scheduler._preempt_request``).

The ``Server`` composes the parts that each do one job, in their own modules:
``kv_ledger`` (``KvLedger``: the KV a request and the decode rows hold, in whole blocks
where the plan's server hands them out so, and the growth reserved with its preemptions),
``prefills`` (prompt chunks under the token budget), ``block_size`` (how many decode
iterations one event plans, and how many no arrival can cut), ``batch`` (the arithmetic of
a block of iterations, ``plan_block``, pure and vectorized over the batch, so the Python
work per iteration is at most one timeout and one admission check whatever the batch
size), ``deliveries`` (an iteration's token deliveries and gaps) and ``held_rows``
(closed-loop users whose requests are rows of the batch, ``HeldRows``).
"""

from __future__ import annotations

import heapq

import numpy as np
import simpy

from sim.model.batched_cost import PrefillLoad
from sim.model.controllers import AdaptivePolicy
from sim.model.drafts import Draft, max_tokens, verify_tokens
from sim.simulation.serving.batch import (
    BlockPlan,
    DecodeBatch,
    StepPlan,
    int_min,
    plan_block,
    plan_step,
)
from sim.simulation.serving.block_size import block_iterations, uncut_iterations
from sim.simulation.serving.deliveries import deliver
from sim.simulation.serving.held_rows import HeldRows
from sim.simulation.serving.job import JobPool
from sim.simulation.serving.kv_ledger import KvLedger
from sim.simulation.serving.plan import Drafting, ServingPlan
from sim.simulation.serving.prefills import Prefilling, advance_chunks, prefill_chunks
from sim.simulation.serving.records import Recorder
from sim.simulation.serving.workload import ClosedLoop, Request, RequestSource

__all__ = ["PREEMPTED", "WAITING", "Server", "Waiting", "send_next", "submit"]


#: Queue priorities: preempted requests are readmitted before new arrivals.
PREEMPTED, WAITING = 0, 1


#: A waiting request in the queue: (priority, request id, request). Ids are unique, so
#: the heap orders by (priority, id) and never compares requests.
Waiting = tuple[int, int, Request]


class Server:
    """Scheduler state and bookkeeping of one replication (see the module docstring)."""

    def __init__(
        self, env: simpy.Environment, plan: ServingPlan, drafting: Drafting, rec: Recorder
    ):
        self.env = env
        self.plan = plan
        self.config = plan.scheduler
        self.cost = plan.cost
        self.rec = rec
        self.queue = simpy.PriorityStore(env)
        policy = drafting.policy
        self.ledger = KvLedger(drafting)
        self.kv = self.ledger.cache
        self.k_of = list(drafting.by_batch)
        # threshold columns: the chain's max_k, then each tree the policy drafts
        self.trees = tuple(acc for _, acc in drafting.trees)
        self.columns: dict[Draft, slice] = {}
        start = plan.max_k
        for draft, acc in drafting.trees:
            self.columns[draft] = slice(start, start + acc.depth)
            start += acc.depth
        self.batch = DecodeBatch(start)
        self.accepted_extend = plan.draft_extend == "accepted"
        self.prefilling: list[Prefilling] = []
        self.prefill_hold = 0  # KV held by prefilling requests
        # an adaptive policy (sim/model/controllers.py): a fresh controller per replication
        self.controller = policy.start() if isinstance(policy, AdaptivePolicy) else None
        self.drafter = policy.max_k > 0
        self.prefill_first = self.config.batching == "prefill_first"
        self.skip_prefill = self.config.prefill == "skip"
        self.max_running = self.config.max_running(policy)
        self.measured_left = plan.workload.requests
        arrivals = plan.workload.arrivals
        self.job = (
            JobPool(arrivals.conversations, arrivals.turns)
            if isinstance(arrivals, ClosedLoop) and arrivals.conversations is not None
            else None
        )
        # a job of given tasks: the j-th request sent is task j (``task``)
        self.tasks = arrivals.tasks if isinstance(arrivals, ClosedLoop) else None
        self.stop = env.event()
        self.upcoming: list[float] = []  # announced arrival times (heap)
        self.completions = 0
        # a completion resumes other processes (a thinking user, an open request, the
        # horizon) at its instant: they run before the scheduler's next step
        self.others_wait = True
        self.iteration_ms = 1.0  # mean duration of the last block's iterations
        self.most_tokens: dict[Draft, int] = {}  # max_tokens of each draft run
        # requests held as rows of the decode batch, not objects (``hold_requests``)
        self.held: HeldRows | None = None

    def hold_requests(self, senders: list[RequestSource]) -> None:
        """Hold requests as rows of the decode batch (``senders``: the closed loop's
        users; ``HeldRows``). Only where every request decodes from its arrival to its
        answer (engine.py ``holds_rows``)."""
        self.held = HeldRows(senders, self.batch, self.rec, self.job, self.task)

    def task(self) -> tuple[int, int, int] | None:
        """The task the request just taken from the job is (its lengths and class), None
        without given tasks (the user's source draws them)."""
        if self.tasks is None or self.job is None:
            return None
        return self.tasks.row(self.job.sent - 1)

    def send_held(self, users: list[int]) -> None:
        """``users`` send their next requests now, as rows of the batch (``HeldRows.send``)."""
        assert self.held is not None
        self.held.send(users, self.env.now)

    def leave_held(self) -> int:
        """The held rows still in the system leave at the end (``HeldRows.leave``); how
        many."""
        assert self.held is not None
        return self.held.leave()

    def _finish_held(self, rows: np.ndarray, end_ms: float) -> list[int]:
        """Held rows ``rows`` finished at ``end_ms``: recorded and answered (as
        ``_complete``); the users who send their next request now."""
        assert self.held is not None
        left = self.measured_left
        senders, self.measured_left = self.held.finish(rows, end_ms, left, self.stop.triggered)
        if self.measured_left <= 0 < left:
            self.stop.succeed()
        self.completions += len(rows)
        return senders

    # ----- arrivals and admission

    def arrive(self, req: Request, awaited: bool = True) -> None:
        """``req`` arrives now; ``awaited``: a process waits for its answer (``done``),
        unless the request has a sender (``send_next``)."""
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

    def needs_prefill(self, req: Request) -> bool:
        """Prefill is modelled and the request has a context to prefill (a prompt, or
        tokens generated before a preemption)."""
        return not self.skip_prefill and req.context_tokens > 0

    def hold(self, req: Request) -> int:
        """KV tokens a request holds from admission: context, lookahead, and the token
        its prefill emits (``KvLedger.holds``)."""
        return self.ledger.holds(req.context_tokens + (1 if self.needs_prefill(req) else 0))

    @property
    def idle(self) -> bool:
        return self.batch.size == 0 and not self.prefilling

    def admissible(self) -> bool:
        """A waiting request can be admitted at this boundary."""
        items = self.queue.items
        if not items or self.batch.size + len(self.prefilling) >= self.max_running:
            return False
        return self.kv is None or self.hold(items[0][2]) <= self.kv.level

    def admit(self, req: Request) -> None:
        if self._admit(req):
            self._start_decoding([req])

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
                hold = self.hold(req)
                if hold > kv.level:
                    break
            heapq.heappop(items)
            room -= 1
            if self._admit(req, hold):
                joining.append(req)
        if joining:
            self._start_decoding(joining)

    def _admit(self, req: Request, hold: int | None = None) -> bool:
        """Take ``req``'s KV (``hold``: its ``hold``, when the caller has it); start its
        prefill, or return True: it decodes now."""
        prefill = self.needs_prefill(req)
        if hold is None and (prefill or self.kv is not None):
            hold = self.hold(req)
        if self.kv is not None:
            assert hold is not None and hold <= self.kv.level, "admitted beyond the KV cache"
            self.kv.get(hold)
        if req.admitted_ms < 0:
            req.admitted_ms = self.env.now
        if prefill:
            assert hold is not None
            self.prefilling.append(Prefilling(req, 0, req.context_tokens))
            self.prefill_hold += hold
            return False
        return True

    def _start_decoding(self, reqs: list[Request]) -> None:
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

    def _complete(self, req: Request, now: float) -> None:
        self.completions += 1
        req.finish_ms = now
        self.rec.leave(req)
        if req.done is not None:  # a thinking user's process waits for it
            req.done.succeed()
        elif req.source is not None and not self.stop.triggered:
            send_next(self, req.source)  # a user without think time: its next, now
        if req.measured:
            self.measured_left -= 1
            if self.measured_left == 0:
                self.stop.succeed()

    # ----- prefill

    def prefill_chunks(self, budget: int) -> tuple[list[tuple[Prefilling, int]], PrefillLoad]:
        """Prompt chunks FIFO up to ``budget`` tokens, and their load (``prefill_chunks``)."""
        return prefill_chunks(self.prefilling, budget)

    def prefill_done(self, chunks: list[tuple[Prefilling, int]], end_ms: float) -> int:
        """Advance prompt chunks; requests whose prompt is complete emit a token and start
        decoding (or finish). Returns the tokens emitted."""
        complete = advance_chunks(chunks)
        for state in complete:
            self.prefilling.remove(state)
            req = state.request
            self.prefill_hold -= self.hold(req)
            req.generated += 1
            if req.first_token_ms < 0:
                req.first_token_ms = end_ms
            else:  # recomputed after a preemption: the gap since its last delivery
                self.rec.gaps(np.array([end_ms - req.last_delivery_ms]), 1.0)
            req.last_delivery_ms = end_ms
            if req.generated >= req.output_tokens:
                if self.kv is not None:
                    self.kv.put(self.ledger.holds(req.context_tokens))
                self._complete(req, end_ms)
            else:
                self._start_decoding([req])
        return len(complete)

    def held_tokens(self) -> int:
        """KV tokens held now: decode contexts + lookahead, and prefilling requests."""
        return self.ledger.rows_hold(self.batch.context) + self.prefill_hold

    # ----- decode

    def expect_arrival(self, at_ms: float) -> None:
        """An arrival process announces its next arrival (a hint for ``block_size``)."""
        heapq.heappush(self.upcoming, at_ms)

    def block_size(self, k: Draft) -> int:
        """Iterations to plan (a speed knob only: ``block_iterations``)."""
        most = self.most_tokens.get(k)
        if most is None:
            most = self.most_tokens[k] = max_tokens(k)
        b = self.batch.size
        return block_iterations(
            int_min(self.batch.need),
            most,
            b,
            b + len(self.prefilling),
            self.max_running,
            self.upcoming,
            self.env.now,
            self.iteration_ms,
        )

    def uncut_iterations(self, durations_ms: np.ndarray) -> int:
        """How many of the block's first iterations (``durations_ms`` (n,), from now) end
        where no arrival can have made a waiting request admissible (``uncut_iterations``).

        Between iterations only an arrival changes what can be admitted (the batch, the
        prefills and the KV cache change at the scheduler's own steps), and only when the
        queue is empty (an arrival queues behind every waiting request) and a running slot
        is free; every arrival is announced (``expect_arrival``) before it happens."""
        room = not self.queue.items and self.batch.size + len(self.prefilling) < self.max_running
        limit = self.upcoming[0] if room and self.upcoming else None
        return uncut_iterations(durations_ms, self.env.now, limit)

    def _plan(self, k: Draft, iterations: int, prefill: PrefillLoad | None = None) -> BlockPlan:
        ledger = self.ledger
        return plan_block(
            self.batch,
            k,
            iterations,
            ledger.free(),
            self.cost,
            prefill,
            self.drafter,
            columns=self.columns.get(k),  # a tree's (the dict holds trees only)
            accepted_extend=self.accepted_extend,
            block_tokens=ledger.block,
            slot_tokens=ledger.slots,
        )

    def k_now(self, batch: int) -> Draft:
        """Draft of a decode iteration of ``batch`` requests (the controller's k, if adaptive)."""
        return self.k_of[batch] if self.controller is None else self.controller.k_for_batch(batch)

    def plan_decode(self) -> BlockPlan | StepPlan:
        """The next decode iterations: a block, or one iteration alone (``plan_step``, the
        same numbers as a block of one with less work: many users' batches finish a
        request nearly every iteration)."""
        b = self.batch.size
        k = self.k_now(b)
        size = self.block_size(k)
        if self.controller is not None:  # no further than the controller keeps its k
            size = min(size, self.controller.horizon(b))
        if size == 1:
            return plan_step(
                self.batch,
                k,
                self.cost,
                self.drafter,
                columns=self.columns.get(k),  # a tree's (the dict holds trees only)
                accepted_extend=self.accepted_extend,
            )
        return self._plan(k, size)

    def plan_mixed(self) -> tuple[BlockPlan, list[tuple[Prefilling, int]]]:
        """One chunked iteration: the decode batch first (k + 1 tokens each, a tree's
        nodes), then prompt chunks in what is left of the token budget, in one pass."""
        b = self.batch.size
        k = self.k_now(b)
        chunks, load = self.prefill_chunks(self.config.token_budget - b * verify_tokens(k))
        return self._plan(k, 1, load if load.tokens else None), chunks

    def decode_done(self, plan: BlockPlan, n: int, start_ms: float) -> None:
        """Commit the first ``n`` iterations of ``plan`` (started at ``start_ms``)."""
        batch, rec = self.batch, self.rec
        b = batch.size
        emitted = plan.emitted(n)
        durations = plan.durations_ms[:n]
        ends = plan.ends_ms[:n] + start_ms
        first_end, last_end = float(ends[0]), float(ends[-1])
        self.iteration_ms = last_end / n - start_ms / n
        # deliveries: every request gets its tokens at the end of every iteration
        deliver(batch, rec, first_end, self.held is not None)
        if n > 1 and rec.keeps_gaps:
            rec.gaps(durations[1:], float(b))
        batch.last_ms.fill(last_end)
        need = batch.need
        need -= emitted
        delivered = plan.per_iteration[:n]
        lowest = int_min(need)
        if lowest < 0:  # the last cycle of a finishing request overshoots its count
            delivered = delivered.copy()
            delivered[-1] += int(need[need < 0].sum())
        # KV held in each iteration: the contexts before it (the plan's context sums, whole
        # numbers in floats), the lookahead, the prefills (``held_tokens`` + growth)
        if plan.kv_growth is None:
            held = plan.context[:n] + (b * self.ledger.lookahead + self.prefill_hold)
        else:  # whole blocks: what the rows held before the block and their growth
            start = self.ledger.rows_hold(batch.context) + self.prefill_hold
            held = (plan.kv_growth[:n] + start).astype(np.float64)
        rec.decode_iterations_done(b, start_ms, ends, durations, held, delivered)
        if self.controller is not None:  # accepted drafts per request and iteration (B, n)
            k = plan.k
            assert isinstance(k, int)  # the controller's own k_for_batch: a chain
            self.controller.observe(b, k, plan.lengths[:, :n].astype(np.int64) - 1)
        rec.request_cycles += b * n
        rec.cycle_tokens += int(plan.total[n - 1])
        context = batch.context
        context += emitted
        batch.advance(n)
        self._advance(emitted, lowest, last_end)

    def step_done(self, plan: StepPlan, start_ms: float) -> None:
        """Commit one iteration planned by ``plan_step`` (started at ``start_ms``): what
        ``decode_done`` does with a block of one, in scalars."""
        batch, rec = self.batch, self.rec
        b = batch.size
        duration = plan.duration_ms
        end = duration + start_ms
        self.iteration_ms = end - start_ms
        deliver(batch, rec, end, self.held is not None)
        batch.last_ms.fill(end)
        need = batch.need
        emitted = plan.lengths
        need -= emitted
        lowest = int_min(need)
        delivered = plan.tokens
        if lowest < 0:  # the last cycle of a finishing request overshoots its count
            delivered += int(np.add.reduce(need, where=need < 0))
        # KV held: the contexts before the step (``held_tokens`` then), lookahead, prefills
        ledger = self.ledger
        if ledger.block == 1:
            held = plan.context_tokens + b * ledger.lookahead + self.prefill_hold
        else:
            held = ledger.rows_hold(batch.context) + self.prefill_hold
        rec.decode_step_done(b, start_ms, end, duration, held, delivered)
        if self.controller is not None:  # accepted drafts per request, (B, 1)
            k = plan.k
            assert isinstance(k, int)  # the controller's own k_for_batch: a chain
            self.controller.observe(b, k, (emitted - 1)[:, None])
        rec.request_cycles += b
        rec.cycle_tokens += plan.tokens
        context = batch.context
        context += emitted
        batch.advance(1)
        self._advance(emitted, lowest, end)

    def _advance(self, emitted: np.ndarray, lowest: int, end_ms: float) -> None:
        """After iterations in which the rows emitted ``emitted`` (B,) tokens, ending at
        ``end_ms`` (``lowest``: the least tokens still needed): finished requests leave
        and free their KV, the survivors' growth is reserved (``KvLedger.reserve_growth``)
        and the rows it cannot hold preempted."""
        batch, rec = self.batch, self.rec
        growth = emitted
        if lowest <= 0:
            finished = batch.need <= 0
            rows = finished.nonzero()[0]
            if self.held is not None:
                senders = self._finish_held(rows, end_ms)
                batch.remove(rows.tolist())
                if senders:
                    self.send_held(senders)
                return
            live = rec.live
            for rid, cycles in batch.ids_cycles(rows):
                req = live[rid]
                req.generated = req.output_tokens
                req.cycles = cycles
                req.last_delivery_ms = end_ms
                self._complete(req, end_ms)
            if self.kv is not None:  # their KV: context before the iteration and lookahead
                self.kv.put(self.ledger.rows_hold(batch.context[rows] - emitted[rows]))
                growth = emitted[~finished]
            batch.remove(rows.tolist())
        if self.kv is not None:
            first = self.ledger.reserve_growth(batch.context, growth)
            if first < batch.size:
                self._preempt(first)

    def _preempt(self, first_row: int) -> None:
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


def submit(server: Server, req: Request, awaited: bool = True) -> None:
    """A request arrives and joins the waiting queue (an unbounded store: the put is
    immediate); ``awaited`` False: no process waits for its answer (an open arrival)."""
    server.arrive(req, awaited)
    server.enqueue((WAITING, req.id, req))


def send_next(server: Server, source: RequestSource) -> None:
    """A closed-loop user without think time sends its next request the instant its
    answer is done: the same arrivals, in the same order, as a process per user that
    resumes on the answer (those answered before the run's stop event send, the others
    do not), without the process and its events. In a finite job (``server.job``) only
    while its conversations last."""
    if server.job is not None and not server.job.take(source):
        return
    req = source.next(server.task())
    req.source = source
    submit(server, req)
