"""The SimPy processes of a serving replication: plain generators that only yield
events, the state they move being the ``Server``'s rooms (sim/simulation/serving/server.py:
``Admission``, ``BlockPlanner``, ``Advance``, ``Answers``).

* arrivals: ``closed_loop_user`` (one per user with think time: think, send, wait for
  the answer; a user without think time sends its next request from the completion itself,
  ``Answers.send_next``, with the same arrivals in the same order),
  ``poisson_arrivals``, ``trace_arrivals``; each request joins the waiting queue when it
  arrives (``Admission.submit``), and a thinking user's process waits for its ``done``
  event (an open arrival's request has no process: nothing waits for its answer but the
  scheduler);
* ``scheduler_process``: iteration-level continuous batching. At every iteration boundary
  it admits waiting requests (``Admission.admit_waiting``); then it runs one prefill
  iteration (prefill-first), one mixed iteration (chunked), or a block of decode
  iterations, cut at the first boundary where a waiting request can be admitted: one
  event for the iterations before the next announced arrival could be admitted
  (``BlockPlanner.uncut_iterations``, all of them in a closed loop without think time; the
  delays from sim/simulation/serving/timeouts.py), then one timeout each.
"""

from __future__ import annotations

import numpy as np
import simpy

from sim.simulation.serving.server import Server
from sim.simulation.serving.step_plan import StepPlan
from sim.simulation.serving.timeouts import jump, jumps
from sim.simulation.serving.workload import RequestSource, Trace

__all__ = ["closed_loop_user", "poisson_arrivals", "scheduler_process", "trace_arrivals"]


def closed_loop_user(
    env: simpy.Environment,
    server: Server,
    source: RequestSource,
    think_rng: np.random.Generator,
    think_ms: float,
):
    """A user sending one request at a time, with exponential think times between; the
    user's process is its requests' process (it resumes the instant its answer is done,
    so without think time its next request is waiting before the next iteration); in a
    finite job (``Answers.job``) only while its conversations last."""
    admission, answers = server.admission, server.answers
    while answers.job is None or answers.job.take(source):
        if think_ms > 0:
            pause = think_rng.exponential(think_ms)
            admission.expect_arrival(env.now + pause)
            yield env.timeout(pause)
        req = source.next(answers.task())
        admission.submit(req)
        yield req.done


def poisson_arrivals(
    env: simpy.Environment,
    server: Server,
    source: RequestSource,
    gap_rng: np.random.Generator,
    rate_per_s: float,
):
    """Open arrivals: unit exponential gaps scaled by 1000 / rate (ms), so that the same
    stream at another rate gives the same arrivals, compressed (common random numbers).
    Each request joins the queue from here (``Admission.submit``): what a process per
    request did at its start, in the same order, without its three events (start, answer,
    end)."""
    admission = server.admission
    mean_gap_ms = 1000.0 / rate_per_s
    while True:
        gap = gap_rng.standard_exponential() * mean_gap_ms
        admission.expect_arrival(env.now + gap)
        yield env.timeout(gap)
        admission.submit(source.next(), awaited=False)


def trace_arrivals(env: simpy.Environment, server: Server, source: RequestSource, trace: Trace):
    """The trace's requests at their arrival times (each joins the queue from here, as
    ``poisson_arrivals``'s)."""
    admission = server.admission
    rows = zip(
        trace.arrival_ms.tolist(),
        trace.input_tokens.tolist(),
        trace.output_tokens.tolist(),
        trace.request_class.tolist(),
        strict=True,
    )
    for t, n_in, n_out, cls in rows:
        if t > env.now:
            admission.expect_arrival(t)
            yield env.timeout(t - env.now)
        admission.submit(source.next((n_in, n_out, cls)), awaited=False)


def scheduler_process(env: simpy.Environment, server: Server):
    """Iteration-level continuous batching (see the module docstring)."""
    rec, batch, prefilling = server.rec, server.batch, server.prefilling
    admission, planner, advance = server.admission, server.planner, server.advance
    answers = server.answers
    waiting = admission.queue.items  # the store's own list: arrivals show up here
    while True:
        completed = answers.completions
        if server.idle:
            item = yield admission.queue.get()
            admission.admit(item[2])
        admission.admit_waiting()  # the head is there: taken without an event
        start = env.now
        if prefilling and (server.prefill_first or batch.size == 0):
            chunks, load = server.prefills.chunks(server.config.token_budget)
            duration = server.cost.prefill_ms(load, server.drafter)
            held = server.held_tokens()
            yield env.timeout(duration)
            tokens = advance.prefill_done(chunks, env.now)
            rec.prefill_done(start, duration, held, tokens)
        elif prefilling:
            mixed, chunks = planner.plan_mixed()
            yield env.timeout(mixed.durations_ms[0])
            advance.decode_done(mixed, 1, start)  # before new decoders join the batch
            tokens = advance.prefill_done(chunks, env.now)
            rec.tokens_delivered += tokens if start >= rec.window_start_ms else 0
        else:
            plan = planner.plan_decode()
            if isinstance(plan, StepPlan):  # one iteration: one timeout, nothing to cut
                yield env.timeout(jump(env.now, plan.duration_ms))
                advance.step_done(plan, start)
            else:
                n = plan.iterations
                durations = plan.durations_ms
                done = planner.uncut_iterations(durations)
                for delay in jumps(env.now, durations[:done]):  # iterations no arrival can cut
                    yield env.timeout(delay)
                rest = durations[done:].tolist() if done < n else ()
                for duration in rest:  # one timeout each: an arrival may cut the block
                    yield env.timeout(duration)
                    done += 1
                    if waiting and done < n and admission.admissible():
                        break
                advance.decode_done(plan, done, start)
        if answers.completions != completed and (server.others_wait or server.stop.triggered):
            yield env.timeout(0)  # users answered at this instant send before the next step
