"""``make bench``: speed of the serving engine as ratios measured in the same run.

1. decode iterations/s at batch 1, 16 and 128 / a bare SimPy loop of timeouts' events/s
   (goal >= 0.3 at every batch size: the Python work per iteration must not grow with the
   batch). Measured as the marginal cost: two horizons of a closed loop whose requests
   never finish, the difference in wall time over the difference in iterations, so set-up
   (one generator per user) is not counted.
2. run time against simulated requests at 16 users (goal: log-log slope about 1).
3. a realistic run, reported against the same floor: ``serve`` on the serving scenario
   (prefill-first with prompts of ~1,024 tokens, lognormal lengths, speculation and plain
   decoding, one replication) at 16, 64 and 128 closed-loop users, CPU per decode
   iteration (every block cut at a completion, a prefill per request), after one run that
   fills the cost model's token-count tables (a study's second point onwards sees them
   filled; a single run pays for them once).

Each figure is the best of a few repeats of CPU time (the machine may be shared). Not part of the
test suite.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import simpy

from sim.binding.bind import acceptance_model, serving_cost
from sim.scenario.load import load_scenario
from sim.simulation.serving import (
    ClosedLoop,
    Fixed,
    FixedK,
    SchedulerConfig,
    ServingPlan,
    Workload,
    simulate_serving,
)
from sim.simulation.serving.setup import serving_setup

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"
SEED_SCENARIO = SCENARIOS / "kimi-k25-8xpcie-eagle3.toml"
SERVING_SCENARIO = SCENARIOS / "kimi-k25-8xpcie-eagle3-serving.toml"
BATCHES = (1, 16, 128)
#: (closed-loop users, measured requests) of the realistic rows.
REALISTIC = ((16, 200), (64, 300), (128, 400))
GOAL_RATIO = 0.3


def best_of(fn: Callable[[], float], repeats: int = 3) -> float:
    return min(fn() for _ in range(repeats))


def bare_simpy_s_per_event(n: int = 300_000) -> float:
    def loop(env: simpy.Environment):
        for _ in range(n):
            yield env.timeout(1.0)

    def run() -> float:
        env = simpy.Environment()
        env.process(loop(env))
        t0 = time.process_time()
        env.run()
        return (time.process_time() - t0) / n

    return best_of(run)


def seed_plan(users: int, output: int, requests: int, prefill: str) -> ServingPlan:
    scenario = load_scenario(SEED_SCENARIO)
    return ServingPlan(
        workload=Workload(ClosedLoop(users), Fixed(output), Fixed(512), requests=requests),
        scheduler=SchedulerConfig(max_running_requests=users, prefill=prefill),
        cost=serving_cost(scenario, kv_bytes_per_token=70_272.0, reference_context_tokens=2048),
        acceptance=acceptance_model(scenario.acceptance, scenario.num_steps),
    )


def iteration_seconds(users: int, k: int) -> float:
    """Marginal wall time per decode iteration at ``users`` concurrent never-ending requests."""
    plan = seed_plan(users, 10**9, users, "skip")
    cycle_ms = float(plan.cost.decode_ms(users, k, np.array([users * 512.0]))[0])

    def run(iterations: int) -> tuple[float, int]:
        t0 = time.process_time()
        out = simulate_serving(
            plan, {"k": FixedK(k)}, replications=1, seed=1, horizon_ms=iterations * cycle_ms
        )
        return time.process_time() - t0, out.records["k"][0].decode_iterations

    # the best of each horizon, then their difference: the best of differences would
    # reward a noisy short run (a negative cost per iteration on a loaded machine)
    short = [run(4_000) for _ in range(3)]
    long = [run(24_000) for _ in range(3)]
    (t1, i1), (t2, i2) = min(short), min(long)
    return (t2 - t1) / (i2 - i1)


def realistic_seconds(users: int, requests: int) -> tuple[float, int]:
    """(CPU per decode iteration, iterations) of ``serve`` on the serving scenario at
    ``users`` users: both policies, one replication; the best of three after a first run."""
    scenario = load_scenario(
        SERVING_SCENARIO, [f"serving.concurrency={users}", f"workload.requests={requests}"]
    )
    setup = serving_setup(scenario)

    def run() -> tuple[float, int]:
        t0 = time.process_time()
        out = simulate_serving(setup.plan, setup.policies, replications=1, seed=1)
        return time.process_time() - t0, sum(r[0].decode_iterations for r in out.records.values())

    run()
    best, iterations = min(run() for _ in range(3))
    return best / iterations, iterations


def main() -> None:
    bare = bare_simpy_s_per_event()
    print(f"bare SimPy timeout loop: {1 / bare:,.0f} events/s")
    k = load_scenario(SEED_SCENARIO).num_steps
    print(
        f"serving engine, seed scenario at k = {k}, decode iterations/s "
        f"(ratio, goal >= {GOAL_RATIO}):"
    )
    for users in BATCHES:
        per = iteration_seconds(users, k)
        ratio = bare / per
        flag = "ok" if ratio >= GOAL_RATIO else "BELOW GOAL"
        print(f"  batch {users:>4}: {1 / per:>10,.0f} it/s   ratio {ratio:.2f}   {flag}")
    print("realistic serve (serving scenario, prefill, both policies), per decode iteration:")
    for users, requests in REALISTIC:
        per, iterations = realistic_seconds(users, requests)
        print(
            f"  {users:>4} users: {per * 1e6:>7.1f} us ({iterations:,} iterations)   "
            f"ratio {bare / per:.3f}"
        )
    sizes = (100, 200, 400, 800)
    times = []
    for q in sizes:
        plan = seed_plan(16, 256, q, "model")
        t0 = time.process_time()
        simulate_serving(plan, {"baseline": FixedK(0), "spec": FixedK(k)}, replications=1, seed=2)
        times.append(time.process_time() - t0)
    slope = np.polyfit(np.log(sizes), np.log(times), 1)[0]
    print(
        "run time vs simulated requests (16 users, 256 output tokens, prefill, both policies): "
        + ", ".join(f"{q}: {t:.2f} s" for q, t in zip(sizes, times, strict=True))
        + f"; log-log slope {slope:.2f} (goal about 1)"
    )


if __name__ == "__main__":
    main()
