"""The state and bookkeeping of one serving replication between its events (``Server``),
and a request's arrival (``submit``, ``send_next``); the SimPy processes that drive it are
sim/simulation/serving/processes.py.

Each request joins the waiting queue (a ``simpy.PriorityStore``: FIFO by arrival,
preempted requests first) when it arrives (``submit``). At every iteration boundary the
scheduler admits waiting requests FIFO while a running slot is free
(``max_running_requests``) and the head's KV (context + lookahead) fits the KV cache (a
count of free tokens, kv_cache.py); ``block_size`` and ``uncut_iterations`` say how many
decode iterations run as one event. The arithmetic of a block of decode iterations is
``batch.plan_block`` (pure, vectorized over the batch), so the Python work per iteration
is at most one timeout and one admission check whatever the batch size. Decode iterations
follow the SGLang cycle of what the policy drafts at that batch size, a chain or a tree
(sim/model/batched_cost.py, sim/model/drafts.py): acceptance is decided per request from
its own rates, or its own tree's depth survival (``batch.accept_lengths``), finished
requests leave at the end of the iteration in which they reach their token count (the
last cycle may overshoot; only the tokens asked for count), and when the KV cache cannot
hold the batch's growth the newest requests are preempted (their KV freed, to be
recomputed by a prefill of prompt + generated tokens when readmitted; vLLM V1
``Scheduler._preempt_request``). A request's context and lookahead slots are held in
whole KV blocks where the plan's server hands them out so (vLLM:
``SchedulerConfig.block_tokens``, sim/model/kv_blocks.py), its recurrent state's blocks
beside them.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np
import simpy

from sim.model.batched_cost import PrefillLoad
from sim.model.controllers import AdaptivePolicy
from sim.model.drafts import Draft, max_tokens, verify_tokens
from sim.model.kv_blocks import whole_blocks_array
from sim.simulation.serving.batch import (
    BlockPlan,
    DecodeBatch,
    StepPlan,
    int_min,
    int_sum,
    plan_block,
    plan_step,
)
from sim.simulation.serving.job import JobPool
from sim.simulation.serving.kv_cache import KvCache
from sim.simulation.serving.plan import Drafting, ServingPlan
from sim.simulation.serving.records import Recorder
from sim.simulation.serving.workload import ClosedLoop, Request, RequestSource

__all__ = [
    "BLOCK_ELEMENTS",
    "MAX_BLOCK",
    "MIN_BLOCK",
    "PREEMPTED",
    "WAITING",
    "Prefilling",
    "Server",
    "Waiting",
    "send_next",
    "submit",
]


#: Decode iterations planned at once: at most ``BLOCK_ELEMENTS`` (requests x iterations)
#: and between ``MIN_BLOCK`` and ``MAX_BLOCK`` iterations. A speed knob only: results do
#: not depend on it (draws are per request and cycle).
BLOCK_ELEMENTS = 32768


MIN_BLOCK = 4


MAX_BLOCK = 512


#: Queue priorities: preempted requests are readmitted before new arrivals.
PREEMPTED, WAITING = 0, 1


#: A waiting request in the queue: (priority, request id, request). Ids are unique, so
#: the heap orders by (priority, id) and never compares requests.
Waiting = tuple[int, int, Request]


@dataclass
class Prefilling:
    """A request whose prompt (and, after a preemption, generated tokens) is being
    prefilled: ``done`` tokens so far, ``remaining`` to go."""

    request: Request
    done: int
    remaining: int


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
        cap = drafting.kv_capacity
        self.kv = None if cap is None else KvCache(cap)
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
        self.lookahead = drafting.lookahead
        self.drafting = drafting
        # whole KV blocks (1: per token, and without a KV limit)
        self.block = drafting.block_tokens if self.kv is not None else 1
        self.slots = drafting.slot_tokens
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
        self.held = False
        self.senders: list[RequestSource] = []

    def hold_requests(self, senders: list[RequestSource]) -> None:
        """Hold requests as rows of the decode batch (``senders``: the closed loop's
        users). Only where every request decodes from its arrival to its answer: a closed
        loop without think time whose users all fit in the running slots, no KV limit, no
        prefill, no horizon (``holds_rows``)."""
        self.held = True
        self.senders = senders

    def task(self) -> tuple[int, int, int] | None:
        """The task the request just taken from the job is (its lengths and class), None
        without given tasks (the user's source draws them)."""
        if self.tasks is None or self.job is None:
            return None
        return self.tasks.row(self.job.sent - 1)

    def send_held(self, users: list[int]) -> None:
        """``users`` send their next requests now (in a finite job only while it lasts);
        they join the batch at once (what ``send_next`` and the next admission do with
        request objects, in the same order)."""
        now = self.env.now
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
        rids = arrive(now, len(users))
        self.batch.extend_held(rids, keys, thresholds, inputs, outputs, classes, users, now)

    def _finish_held(self, rows: np.ndarray, end_ms: float) -> list[int]:
        """Held rows ``rows`` finished at ``end_ms``: recorded and answered (``_complete``);
        the users who send their next request now (all but those after the stop)."""
        leave = self.rec.leave_decoded
        senders: list[int] = []
        stopped = self.stop.triggered
        held = self.batch.held_rows(rows)
        for rid, cycles, arrival, first, n_in, n_out, cls, user in held:
            measured = leave(rid, arrival, first, end_ms, n_in, n_out, cls, cycles)
            if not stopped:
                senders.append(user)
            if measured:
                self.measured_left -= 1
                if self.measured_left == 0:
                    self.stop.succeed()
                    stopped = True
        self.completions += len(held)
        return senders

    def leave_held(self) -> int:
        """The held rows still in the system leave at the end (unanswered, in arrival
        order; ``cycles`` 0 as an unanswered request object's); how many."""
        rows = self.batch.held_rows(np.arange(self.batch.size))
        for rid, _, arrival, first, n_in, n_out, cls, _ in rows:
            self.rec.leave_decoded(rid, arrival, first, -1.0, n_in, n_out, cls, 0)
        return len(rows)

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
        its prefill emits (``Drafting.held``)."""
        context = req.context_tokens + (1 if self.needs_prefill(req) else 0)
        if self.block == 1:
            return context + self.lookahead
        return self.drafting.held(context)

    def held_rows(self, context: np.ndarray) -> int:
        """KV tokens decode rows of ``context`` (int64) tokens of context hold, together
        (``Drafting.held`` of each)."""
        if self.block == 1:
            return int_sum(context) + context.shape[0] * self.lookahead
        held = whole_blocks_array(context + self.slots, self.block)
        return int_sum(held) + context.shape[0] * self.drafting.state_tokens

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
        """Prompt chunks FIFO up to ``budget`` tokens, and their load."""
        chunks: list[tuple[Prefilling, int]] = []
        for state in self.prefilling:
            if budget <= 0:
                break
            c = min(state.remaining, budget)
            chunks.append((state, c))
            budget -= c
        load = PrefillLoad.of_chunks([c for _, c in chunks], [s.done for s, _ in chunks])
        return chunks, load

    def prefill_done(self, chunks: list[tuple[Prefilling, int]], end_ms: float) -> int:
        """Advance prompt chunks; requests whose prompt is complete emit a token and start
        decoding (or finish). Returns the tokens emitted."""
        emitted = 0
        for state, c in chunks:
            state.done += c
            state.remaining -= c
            if state.remaining:
                continue
            self.prefilling.remove(state)
            req = state.request
            self.prefill_hold -= self.hold(req)
            req.generated += 1
            emitted += 1
            if req.first_token_ms < 0:
                req.first_token_ms = end_ms
            else:  # recomputed after a preemption: the gap since its last delivery
                self.rec.gaps(np.array([end_ms - req.last_delivery_ms]), 1.0)
            req.last_delivery_ms = end_ms
            if req.generated >= req.output_tokens:
                if self.kv is not None:
                    self.kv.put(self.drafting.held(req.context_tokens))
                self._complete(req, end_ms)
            else:
                self._start_decoding([req])
        return emitted

    def held_tokens(self) -> int:
        """KV tokens held now: decode contexts + lookahead, and prefilling requests."""
        return self.held_rows(self.batch.context) + self.prefill_hold

    # ----- decode

    def kv_free(self) -> float:
        return float("inf") if self.kv is None else float(self.kv.level)

    def expect_arrival(self, at_ms: float) -> None:
        """An arrival process announces its next arrival (a hint for ``block_size``)."""
        heapq.heappush(self.upcoming, at_ms)

    def block_size(self, k: Draft) -> int:
        """Iterations to plan (a speed knob only): one when a request may finish in the
        next (many users: a completion nearly every iteration, and a longer plan would be
        cut there), else about twice the expected iterations to the next completion, and
        no further than the next announced arrival when it could be admitted."""
        shortest = int_min(self.batch.need)
        most = self.most_tokens.get(k)
        if most is None:
            most = self.most_tokens[k] = max_tokens(k)
        if shortest <= most:  # a request may finish now: one iteration, no more
            return 1
        widest = max(MIN_BLOCK, min(MAX_BLOCK, BLOCK_ELEMENTS // self.batch.size))
        size = max(MIN_BLOCK, min(widest, 2 * shortest // most + 1))
        if self.upcoming and self.batch.size + len(self.prefilling) < self.max_running:
            ahead = (self.upcoming[0] - self.env.now) / self.iteration_ms
            size = max(1, min(size, int(ahead) + 1))
        return size

    def uncut_iterations(self, durations_ms: np.ndarray) -> int:
        """How many of the block's first iterations (``durations_ms`` (n,), from now) end
        where no arrival can have made a waiting request admissible.

        Between iterations only an arrival changes what can be admitted (the batch, the
        prefills and the KV cache change at the scheduler's own steps), and only when the
        queue is empty (an arrival queues behind every waiting request) and a running slot
        is free; every arrival is announced (``expect_arrival``) before it happens. So the
        block runs uncut up to its last end before the next announced arrival (to its end
        once no arrival can be admitted; no check follows the last iteration)."""
        room = not self.queue.items and self.batch.size + len(self.prefilling) < self.max_running
        if not room or not self.upcoming:
            return len(durations_ms)
        limit = self.upcoming[0]
        last = len(durations_ms) - 1
        end = self.env.now
        for m, duration in enumerate(durations_ms[:last].tolist()):
            end += duration
            if end >= limit:  # an arrival may be waiting at this end
                return m
        return last + 1

    def _plan(self, k: Draft, iterations: int, prefill: PrefillLoad | None = None) -> BlockPlan:
        return plan_block(
            self.batch,
            k,
            iterations,
            self.kv_free(),
            self.cost,
            prefill,
            self.drafter,
            columns=self.columns.get(k),  # a tree's (the dict holds trees only)
            accepted_extend=self.accepted_extend,
            block_tokens=self.block,
            slot_tokens=self.slots,
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
        self._deliver(first_end)
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
            held = plan.context[:n] + (b * self.lookahead + self.prefill_hold)
        else:  # whole blocks: what the rows held before the block and their growth
            start = self.held_rows(batch.context) + self.prefill_hold
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
        self._deliver(end)
        batch.last_ms.fill(end)
        need = batch.need
        emitted = plan.lengths
        need -= emitted
        lowest = int_min(need)
        delivered = plan.tokens
        if lowest < 0:  # the last cycle of a finishing request overshoots its count
            delivered += int(np.add.reduce(need, where=need < 0))
        # KV held: the contexts before the step (``held_tokens`` then), lookahead, prefills
        if self.block == 1:
            held = plan.context_tokens + b * self.lookahead + self.prefill_hold
        else:
            held = self.held_rows(batch.context) + self.prefill_hold
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

    def _deliver(self, end_ms: float) -> None:
        """The delivery gaps of an iteration ending at ``end_ms`` (requests without a first
        token get it then)."""
        batch, rec = self.batch, self.rec
        if not batch.fresh:  # every row had a token before
            if rec.keeps_gaps:
                rec.gaps(end_ms - batch.last_ms, 1.0)
            return
        last = batch.last_ms
        had: slice | np.ndarray  # the rows that had a token before
        if self.held:  # the newest rows, without a first token yet
            had = slice(0, batch.size - batch.fresh)
            batch.mark_first(end_ms)
        elif batch.fresh_newest:  # the newest rows, without a first token
            since = batch.size - batch.fresh
            had = slice(0, since)
            for rid in batch.ids[since:].tolist():
                rec.live[rid].first_token_ms = end_ms
        else:  # requests without a first token yet get it now
            fresh = last < 0
            had = ~fresh
            for rid in batch.ids[fresh].tolist():
                rec.live[rid].first_token_ms = end_ms
        if rec.keeps_gaps:  # the gaps' arrays only where they are kept
            rec.gaps(end_ms - last[had], 1.0)
        batch.delivered()

    def _advance(self, emitted: np.ndarray, lowest: int, end_ms: float) -> None:
        """After iterations in which the rows emitted ``emitted`` (B,) tokens, ending at
        ``end_ms`` (``lowest``: the least tokens still needed): finished requests leave
        and free their KV, the survivors' growth is reserved."""
        batch, rec = self.batch, self.rec
        growth = emitted
        if lowest <= 0:
            finished = batch.need <= 0
            rows = finished.nonzero()[0]
            if self.held:
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
                self.kv.put(self.held_rows(batch.context[rows] - emitted[rows]))
                growth = emitted[~finished]
            batch.remove(rows.tolist())
        if self.kv is not None:
            self._reserve_growth(growth)

    def _reserve_growth(self, growth: np.ndarray) -> None:
        """Reserve the survivors' KV growth (``growth`` (B,), tokens per row, their
        contexts already grown), preempting the newest requests while it does not fit; in
        whole blocks, a row grows by the blocks its new tokens open."""
        assert self.kv is not None
        charged = growth
        context = self.batch.context
        if self.block > 1:
            after = context + self.slots
            charged = whole_blocks_array(after, self.block)
            charged -= whole_blocks_array(after - growth, self.block)
        need = int_sum(charged)
        rows = self.batch.size
        freed = 0
        while need > self.kv.level + freed:
            rows -= 1
            assert rows >= 0, "the KV cache cannot hold one request"
            need -= int(charged[rows])
            freed += self.drafting.held(int(context[rows] - growth[rows]))
        if rows < self.batch.size:
            self._preempt(rows)
            self.kv.put(freed)
        if need:
            self.kv.get(need)

    def _preempt(self, first_row: int) -> None:
        """Preempt rows ``first_row`` onwards (the newest): free them and requeue them."""
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
