"""The serving engine of record, in SimPy: one replication (``run_replication``) of
arrivals, requests, a scheduler and a KV cache.

Its parts, one job a module: ``plan`` (``ServingPlan``: everything a replication needs
besides random numbers and the policy; ``Drafting``: a policy worked out on it once),
``streams`` (``ServingStreams``: the replication's independent random streams),
``server`` (``Server``: the scheduler's state between events, wiring its rooms
``admission``, ``planner``, ``advance``, ``answers``, ``prefills`` and ``kv_ledger``; with
``block_size``, ``deliveries`` and ``held_rows``), ``processes`` (the SimPy processes, plain
generators that only yield events: the arrivals and ``scheduler_process``), ``timeouts``
(``jumps``: the delays of timeouts that land exactly on a block's ends), and ``block_plan``
(the arithmetic of a block of decode iterations, pure and vectorized over the batch).
Here: the wiring of a replication, and whether its requests are held as rows of the
decode batch instead of objects (``holds_rows``, ``rows_pay``).
"""

from __future__ import annotations

import simpy

from sim.model.policy import SpeculationPolicy
from sim.simulation.serving.plan import Drafting, ServingPlan
from sim.simulation.serving.processes import (
    closed_loop_user,
    poisson_arrivals,
    scheduler_process,
    trace_arrivals,
)
from sim.simulation.serving.records import Recorder
from sim.simulation.serving.server import Server
from sim.simulation.serving.serving_record import ServingRecord
from sim.simulation.serving.streams import ServingStreams
from sim.simulation.serving.workload import (
    ClosedLoop,
    Poisson,
    RequestSource,
    Trace,
    refill_together,
    source_block,
)

__all__ = ["run_replication"]


def others_wait(arrivals: ClosedLoop | Poisson | Trace, horizon_ms: float | None) -> bool:
    """Whether a process other than the scheduler may resume at a completion's instant: a
    thinking user, an open arrival at that instant, the horizon. Not so in a closed loop
    without think time and without a horizon (its users send from the completion itself)."""
    return not (isinstance(arrivals, ClosedLoop) and arrivals.think_ms == 0 and horizon_ms is None)


def holds_rows(
    plan: ServingPlan, horizon_ms: float | None, policy: SpeculationPolicy | None = None
) -> bool:
    """Whether a replication of ``policy`` (None: the plan's largest admission cap) can
    hold its requests as rows of the decode batch (``Answers.hold_requests``): every
    request decodes from its arrival to its answer."""
    arrivals, config = plan.workload.arrivals, plan.scheduler
    cap = config.largest_running if policy is None else config.max_running(policy)
    return (
        isinstance(arrivals, ClosedLoop)
        and arrivals.think_ms == 0
        and arrivals.users <= cap
        and config.kv_capacity_tokens is None
        and (config.prefill == "skip" or plan.workload.input_tokens.max_tokens == 0)
        and horizon_ms is None
    )


#: Closed-loop users per output token (mean) from which requests are held as rows of the
#: decode batch instead of objects: about five completions an iteration, where rows cost
#: less (docs/speed.md, "Serving against a plain SimPy loop"). A speed knob only: both
#: give the same records.
HELD_USERS_PER_TOKEN = 2.0


def rows_pay(plan: ServingPlan) -> bool:
    """Whether holding requests as rows is the faster way for ``plan`` (when it can:
    ``holds_rows``): enough users that many requests finish in every iteration."""
    arrivals = plan.workload.arrivals
    users = arrivals.users if isinstance(arrivals, ClosedLoop) else 0
    return users >= HELD_USERS_PER_TOKEN * plan.workload.output_tokens.mean


def run_replication(
    plan: ServingPlan,
    drafting: Drafting,
    streams: ServingStreams,
    horizon_ms: float | None = None,
    *,
    delivery_gaps: bool = True,
) -> ServingRecord:
    """One replication under ``drafting`` (a policy checked on ``plan``:
    ``ServingPlan.check``): until every measured request is answered (or ``horizon_ms`` of
    simulated time). ``delivery_gaps`` False: the ITL is not recorded (``Recorder``)."""
    env = simpy.Environment()
    rec = Recorder(
        plan.scheduler.max_running(drafting.policy),
        drafting.kv_capacity,
        plan.workload.warmup,
        plan.workload.requests,
        delivery_gaps=delivery_gaps,
    )
    server = Server(env, plan, drafting, rec)
    arrivals = plan.workload.arrivals
    server.others_wait = others_wait(arrivals, horizon_ms)
    answers = server.answers
    if isinstance(arrivals, ClosedLoop):
        block = source_block(plan.workload, arrivals.users)
        sources = [
            RequestSource(plan.workload, plan.acceptance, own, server.trees, block)
            for own in streams.sources(arrivals.users)
        ]
        refill_together(sources)  # every user's first block of rates in one pass
        if holds_rows(plan, horizon_ms, drafting.policy) and rows_pay(plan):
            answers.hold_requests(sources)
            answers.send_held(list(range(arrivals.users)))
        for user, source in enumerate(sources if not answers.held else ()):
            if arrivals.think_ms > 0:
                think = streams.arrival(user)
                env.process(closed_loop_user(env, server, source, think, arrivals.think_ms))
            else:
                answers.send_next(source)
    else:
        source = RequestSource(
            plan.workload,
            plan.acceptance,
            streams.source(None),
            server.trees,
            source_block(plan.workload, 1),
        )
        if isinstance(arrivals, Poisson):
            gaps = streams.arrival(None)
            env.process(poisson_arrivals(env, server, source, gaps, arrivals.rate_per_s))
        else:
            env.process(trace_arrivals(env, server, source, arrivals))
    env.process(scheduler_process(env, server))
    until = server.stop if horizon_ms is None else server.stop | env.timeout(horizon_ms)
    env.run(until=until)
    return rec.record(env.now, answers.leave_held if answers.held else None)
