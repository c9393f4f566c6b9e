"""The honest peer of the serving rows: a plain SimPy continuous-batching loop.

Closed-loop users without think time, a fixed prompt, output lengths drawn per request, no
prefill, no KV limit, every running request in every decode iteration, one SimPy timeout
per iteration. It prices an iteration with the same cost function as specsim
(``IterationCost.decode_ms`` at the batch's context sum, the padded draft extend) and draws
each request's accept length from the same law (the request's rates from the scenario's
acceptance classes, then L = 1 + #{j <= k : U < c_j}, c_j the cumulative rates), with its
own random numbers: its results agree with specsim's in law, not draw for draw. What it
leaves out (prefill, the KV cache, preemption, trees, adaptive policies, the measurement
window, every metric beyond the mean E2E) is what specsim pays for.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import simpy

from sim.model.rates import cumulative_rates
from sim.simulation.serving import ServingPlan


@dataclass(frozen=True, slots=True)
class PlainResult:
    completions: int
    mean_e2e_ms: float
    #: The standard deviation of the requests' E2E (ms).
    e2e_sd_ms: float = float("nan")


def plain_loop(plan: ServingPlan, k: int, users: int, seed: int) -> PlainResult:
    """Run ``plan.workload.requests`` requests of ``users`` closed-loop users at draft
    length ``k``; the mean E2E of the first ``requests`` sent (specsim's measured ones)."""
    env = simpy.Environment()
    rng = np.random.default_rng(seed)
    acceptance = plan.acceptance
    n_in = int(plan.workload.input_tokens.sample_one(rng))
    cut = np.cumsum(acceptance.weights)[:-1]
    queue: simpy.Store = simpy.Store(env)
    e2e: list[float] = []
    target = plan.workload.requests

    def new_rates(n: int) -> np.ndarray:
        u = rng.random((n, 2))
        cls = np.searchsorted(cut, u[:, 0], side="right")
        out = np.empty((n, max(k, 1)))
        for c in np.unique(cls).tolist():
            at = cls == c
            rates = acceptance.classes[c].rates_from_uniform(u[at, 1])
            out[at] = cumulative_rates(rates)[:, : max(k, 1)]
        return out

    sent = 0

    def user():
        nonlocal sent
        while True:
            done = env.event()
            queue.put((env.now, done, sent))
            sent += 1
            yield done

    def server():
        arrival = np.empty(0)
        order = np.empty(0, dtype=np.int64)
        need = np.empty(0, dtype=np.int64)
        context = np.empty(0, dtype=np.int64)
        cum = np.empty((0, max(k, 1)))
        events: list[simpy.Event] = []
        while len(e2e) < target:  # the first ``target`` requests sent, all answered
            items = [(yield queue.get())] if not events and not queue.items else []
            room = users - len(events) - len(items)
            items += queue.items[:room]
            del queue.items[:room]
            if items:
                arrival = np.append(arrival, [t for t, _, _ in items])
                order = np.append(order, [i for _, _, i in items])
                lengths = [plan.workload.output_tokens.sample_one(rng) for _ in items]
                need = np.append(need, lengths)
                context = np.append(context, np.full(len(items), n_in))
                cum = np.concatenate([cum, new_rates(len(items))])
                events += [done for _, done, _ in items]
            b = len(events)
            ms = plan.cost.decode_ms(b, k, np.array([float(context.sum())]), None, k > 0)[0]
            draws = rng.random((b, 1))
            accepted = 1 + (draws < cum[:, :k]).sum(axis=1) if k else np.ones(b, np.int64)
            yield env.timeout(ms)
            need -= accepted
            context += accepted
            finished = need <= 0
            if finished.any():
                for i in np.flatnonzero(finished).tolist():
                    if order[i] < target:
                        e2e.append(env.now - arrival[i])
                    events[i].succeed()
                keep = ~finished
                arrival, order, need = arrival[keep], order[keep], need[keep]
                context, cum = context[keep], cum[keep]
                events = [e for e, f in zip(events, finished.tolist(), strict=True) if not f]
                yield env.timeout(0)  # answered users send before the next iteration

    for _ in range(users):
        env.process(user())
    env.run(until=env.process(server()))
    return PlainResult(len(e2e), float(np.mean(e2e)), float(np.std(e2e, ddof=1)))
