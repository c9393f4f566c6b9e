"""What the scheduler's steps leave behind (``Advance``): a block of decode iterations or
one iteration committed (``decode_done``, ``step_done``: every request's tokens delivered
at each iteration's end, the iterations and the KV they held recorded, an adaptive
controller told the accepted drafts), then the batch advanced: finished requests leave
and free their KV (the last cycle may overshoot; only the tokens asked for count), the
survivors' growth is reserved (``KvLedger.reserve_growth``) and the rows it cannot hold
preempted (``Admission.preempt``); and a prefill step's complete prompts
(``prefill_done``: each emits its first token, then decodes or is answered).
"""

from __future__ import annotations

import numpy as np

from sim.simulation.serving.admission import Admission
from sim.simulation.serving.answers import Answers
from sim.simulation.serving.block_plan import BlockPlan
from sim.simulation.serving.decode_batch import DecodeBatch
from sim.simulation.serving.deliveries import deliver
from sim.simulation.serving.int_reductions import int_min
from sim.simulation.serving.kv_ledger import KvLedger
from sim.simulation.serving.planner import BlockPlanner
from sim.simulation.serving.prefills import Prefilling, Prefills, advance_chunks
from sim.simulation.serving.records import Recorder
from sim.simulation.serving.step_plan import StepPlan

__all__ = ["Advance"]


class Advance:
    """Commits the plans of ``planner`` to ``batch`` and ``rec``: the KV as ``ledger``
    counts it (with the prefills' hold, ``prefills``), answers through ``answers``,
    preemptions and new decoders through ``admission``."""

    def __init__(
        self,
        batch: DecodeBatch,
        rec: Recorder,
        ledger: KvLedger,
        prefills: Prefills,
        planner: BlockPlanner,
        admission: Admission,
        answers: Answers,
    ):
        self.batch = batch
        self.rec = rec
        self.ledger = ledger
        self.kv = ledger.cache
        self.prefills = prefills
        self.planner = planner
        self.controller = planner.controller
        self.admission = admission
        self.answers = answers

    def decode_done(self, plan: BlockPlan, n: int, start_ms: float) -> None:
        """Commit the first ``n`` iterations of ``plan`` (started at ``start_ms``)."""
        batch, rec = self.batch, self.rec
        b = batch.size
        emitted = plan.emitted(n)
        durations = plan.durations_ms[:n]
        ends = plan.ends_ms[:n] + start_ms
        first_end, last_end = float(ends[0]), float(ends[-1])
        self.planner.iteration_ms = last_end / n - start_ms / n
        # deliveries: every request gets its tokens at the end of every iteration
        deliver(batch, rec, first_end, self.answers.held is not None)
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
        # numbers in floats), the lookahead, the prefills (``Server.held_tokens`` + growth)
        prefill_hold = self.prefills.hold_tokens
        if plan.kv_growth is None:
            held = plan.context[:n] + (b * self.ledger.lookahead + prefill_hold)
        else:  # whole blocks: what the rows held before the block and their growth
            start = self.ledger.rows_hold(batch.context) + prefill_hold
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
        self.planner.iteration_ms = end - start_ms
        deliver(batch, rec, end, self.answers.held is not None)
        batch.last_ms.fill(end)
        need = batch.need
        emitted = plan.lengths
        need -= emitted
        lowest = int_min(need)
        delivered = plan.tokens
        if lowest < 0:  # the last cycle of a finishing request overshoots its count
            delivered += int(np.add.reduce(need, where=need < 0))
        # KV held: the contexts before the step (``Server.held_tokens`` then), lookahead,
        # prefills
        ledger = self.ledger
        if ledger.block == 1:
            held = plan.context_tokens + b * ledger.lookahead + self.prefills.hold_tokens
        else:
            held = ledger.rows_hold(batch.context) + self.prefills.hold_tokens
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
        batch = self.batch
        growth = emitted
        if lowest <= 0:
            finished = batch.need <= 0
            rows = finished.nonzero()[0]
            answers = self.answers
            if answers.held is not None:
                senders = answers.finish_held(rows, end_ms)
                batch.remove(rows.tolist())
                if senders:
                    answers.send_held(senders)
                return
            live = self.rec.live
            for rid, cycles in batch.ids_cycles(rows):
                req = live[rid]
                req.generated = req.output_tokens
                req.cycles = cycles
                req.last_delivery_ms = end_ms
                answers.complete(req, end_ms)
            if self.kv is not None:  # their KV: context before the iteration and lookahead
                self.kv.put(self.ledger.rows_hold(batch.context[rows] - emitted[rows]))
                growth = emitted[~finished]
            batch.remove(rows.tolist())
        if self.kv is not None:
            first = self.ledger.reserve_growth(batch.context, growth)
            if first < batch.size:
                self.admission.preempt(first)

    def prefill_done(self, chunks: list[tuple[Prefilling, int]], end_ms: float) -> int:
        """Advance prompt chunks; requests whose prompt is complete emit a token and start
        decoding (or finish). Returns the tokens emitted."""
        complete = advance_chunks(chunks)
        for state in complete:
            req = self.prefills.finish(state)
            req.generated += 1
            if req.first_token_ms < 0:
                req.first_token_ms = end_ms
            else:  # recomputed after a preemption: the gap since its last delivery
                self.rec.gaps(np.array([end_ms - req.last_delivery_ms]), 1.0)
            req.last_delivery_ms = end_ms
            if req.generated >= req.output_tokens:
                if self.kv is not None:
                    self.kv.put(self.ledger.holds(req.context_tokens))
                self.answers.complete(req, end_ms)
            else:
                self.admission.start_decoding([req])
        return len(complete)
