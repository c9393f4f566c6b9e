"""The SimPy processes of a serving replication: plain generators that only yield
events, the state they move being the ``Server``'s (sim/simulation/serving/server.py).

* arrivals: ``closed_loop_user`` (one per user with think time: think, send, wait for
  the answer; a user without think time sends its next request from the completion itself,
  ``send_next``, with the same arrivals in the same order),
  ``poisson_arrivals``, ``trace_arrivals``; each request joins the waiting queue when it
  arrives (``submit``), and a thinking user's process waits for its ``done`` event (an
  open arrival's request has no process: nothing waits for its answer but the scheduler);
* ``scheduler_process``: iteration-level continuous batching. At every iteration boundary
  it admits waiting requests (``Server.admit_waiting``); then it runs one prefill
  iteration (prefill-first), one mixed iteration (chunked), or a block of decode
  iterations, cut at the first boundary where a waiting request can be admitted: one
  event for the iterations before the next announced arrival could be admitted
  (``Server.uncut_iterations``, all of them in a closed loop without think time; the
  delays from sim/simulation/serving/timeouts.py), then one timeout each.
"""

from __future__ import annotations

import numpy as np
import simpy

from sim.simulation.serving.batch import StepPlan
from sim.simulation.serving.server import Server, submit
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
    finite job (``server.job``) only while its conversations last."""
    while server.job is None or server.job.take(source):
        if think_ms > 0:
            pause = think_rng.exponential(think_ms)
            server.expect_arrival(env.now + pause)
            yield env.timeout(pause)
        req = source.next(server.task())
        submit(server, req)
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
    Each request joins the queue from here (``submit``): what a process per request did
    at its start, in the same order, without its three events (start, answer, end)."""
    mean_gap_ms = 1000.0 / rate_per_s
    while True:
        gap = gap_rng.standard_exponential() * mean_gap_ms
        server.expect_arrival(env.now + gap)
        yield env.timeout(gap)
        submit(server, source.next(), awaited=False)


def trace_arrivals(env: simpy.Environment, server: Server, source: RequestSource, trace: Trace):
    """The trace's requests at their arrival times (each joins the queue from here, as
    ``poisson_arrivals``'s)."""
    rows = zip(
        trace.arrival_ms.tolist(),
        trace.input_tokens.tolist(),
        trace.output_tokens.tolist(),
        trace.request_class.tolist(),
        strict=True,
    )
    for t, n_in, n_out, cls in rows:
        if t > env.now:
            server.expect_arrival(t)
            yield env.timeout(t - env.now)
        submit(server, source.next((n_in, n_out, cls)), awaited=False)


def scheduler_process(env: simpy.Environment, server: Server):
    """Iteration-level continuous batching (see the module docstring)."""
    rec = server.rec
    while True:
        completed = server.completions
        if server.idle:
            item = yield server.queue.get()
            server.admit(item[2])
        server.admit_waiting()  # the head is there: taken without an event
        start = env.now
        if server.prefilling and (server.prefill_first or server.batch.size == 0):
            chunks, load = server.prefill_chunks(server.config.token_budget)
            duration = server.cost.prefill_ms(load, server.drafter)
            held = server.held_tokens()
            yield env.timeout(duration)
            tokens = server.prefill_done(chunks, env.now)
            rec.prefill_done(start, duration, held, tokens)
        elif server.prefilling:
            mixed, chunks = server.plan_mixed()
            yield env.timeout(mixed.durations_ms[0])
            server.decode_done(mixed, 1, start)  # before new decoders join the batch
            tokens = server.prefill_done(chunks, env.now)
            rec.tokens_delivered += tokens if start >= rec.window_start_ms else 0
        else:
            plan = server.plan_decode()
            if isinstance(plan, StepPlan):  # one iteration: one timeout, nothing to cut
                yield env.timeout(jump(env.now, plan.duration_ms))
                server.step_done(plan, start)
            else:
                n = plan.iterations
                waiting = server.queue.items  # the store's own list: arrivals show up here
                durations = plan.durations_ms
                done = server.uncut_iterations(durations)
                for delay in jumps(env.now, durations[:done]):  # iterations no arrival can cut
                    yield env.timeout(delay)
                rest = durations[done:].tolist() if done < n else ()
                for duration in rest:  # one timeout each: an arrival may cut the block
                    yield env.timeout(duration)
                    done += 1
                    if waiting and done < n and server.admissible():
                        break
                server.decode_done(plan, done, start)
        if server.completions != completed and (server.others_wait or server.stop.triggered):
            yield env.timeout(0)  # users answered at this instant send before the next step
