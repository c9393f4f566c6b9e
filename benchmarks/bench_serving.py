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

4. against the plain SimPy continuous-batching loop (benchmarks/plain_serving_loop.py, the
   same cost function and acceptance law, lognormal output lengths so completions and the
   users' next arrivals cut the batch all the time): CPU per simulated request, specsim /
   plain, at 1, 16, 128 and 1,024 closed-loop users (goal <= 1), with both mean E2Es:
   flagged where they differ by more than ``E2E_SE`` standard errors of the difference
   (the two runs draw their own random numbers: the standard error of two independent
   means, each its requests' standard deviation over the root of their count; a closed
   loop's requests are correlated, so this understates it somewhat).
5. peak memory (VmHWM of a subprocess each) at 1e4, 1e5 and 1e6 requests, at 1,024 users
   and at 1 user (goal: 1e6 within 1.2x of 1e4).

Each figure is the best of a few repeats of CPU time (the machine may be shared). Not part of the
test suite. ``--only iterations|realistic|slope|peer|memory`` (repeatable) runs those
sections; ``--rounds N`` sets the alternating rounds of the peer rows (default 3).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import simpy

from sim.binding.acceptance_model import acceptance_model
from sim.binding.bound import bind
from sim.binding.serving_cost import serving_cost
from sim.scenario.load import load_scenario
from sim.simulation.serving import (
    ClosedLoop,
    Fixed,
    FixedK,
    LogNormal,
    SchedulerConfig,
    ServingPlan,
    Workload,
    simulate_serving,
    summarize_serving,
    work_out,
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
        cost=serving_cost(
            bind(scenario), kv_bytes_per_token=70_272.0, reference_context_tokens=2048
        ),
        acceptance=acceptance_model(scenario.acceptance, scenario.num_steps),
    )


def iteration_seconds(users: int, k: int) -> float:
    """Marginal wall time per decode iteration at ``users`` concurrent never-ending requests."""
    plan = seed_plan(users, 10**9, users, "skip")
    cycle_ms = float(plan.cost.decode_ms(users, k, np.array([users * 512.0]))[0])

    def run(iterations: int) -> tuple[float, int]:
        t0 = time.process_time()
        out = simulate_serving(
            plan,
            work_out(plan, {"k": FixedK(k)}),
            replications=1,
            seed=1,
            horizon_ms=iterations * cycle_ms,
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
    setup = serving_setup(bind(scenario))

    def run() -> tuple[float, int]:
        t0 = time.process_time()
        out = simulate_serving(setup.plan, setup.draftings, replications=1, seed=1)
        return time.process_time() - t0, sum(r[0].decode_iterations for r in out.records.values())

    run()
    best, iterations = min(run() for _ in range(3))
    return best / iterations, iterations


#: (users, requests) of the rows against the plain loop; memory rows' requests and users.
PEER_ROWS = ((1, 1_000), (16, 2_000), (128, 4_000), (1024, 8_000))
MEMORY_REQUESTS = (10_000, 100_000, 1_000_000)
MEMORY_USERS = (1024, 1)


def peer_plan(users: int, requests: int, output: int = 128) -> ServingPlan:
    """The seed scenario's costs and acceptance, a 512-token prompt, lognormal output
    (mean ``output``), no prefill, the padded draft extend (the plain loop's pricing)."""
    scenario = load_scenario(SEED_SCENARIO)
    return ServingPlan(
        workload=Workload(
            ClosedLoop(users), LogNormal(output, 0.5, 8 * output), Fixed(512), requests=requests
        ),
        scheduler=SchedulerConfig(max_running_requests=users, prefill="skip"),
        cost=serving_cost(
            bind(scenario), kv_bytes_per_token=70_272.0, reference_context_tokens=2048
        ),
        acceptance=acceptance_model(scenario.acceptance, scenario.num_steps),
        draft_extend="padded",
    )


#: Standard errors of the difference beyond which the two mean E2Es are flagged.
E2E_SE = 4.0


def e2e_difference_se(run: object, plain: object) -> float:
    """The standard error of specsim's mean E2E minus the plain loop's (ms): sqrt(s1^2 /
    n1 + s2^2 / n2), specsim's s from its kept request rows (every measured request up to
    the records' limit, else an evenly strided sample of them), n the measured counts."""
    rec = run.records["k"][0]  # type: ignore[attr-defined]
    done = rec.finish_ms >= 0
    e2e = (rec.finish_ms - rec.arrival_ms)[done]
    ours = float(np.std(e2e, ddof=1)) ** 2 / rec.measured
    theirs = plain.e2e_sd_ms**2 / plain.completions  # type: ignore[attr-defined]
    return float(np.sqrt(ours + theirs))


def peer_row(
    users: int, requests: int, rounds: int = 3
) -> tuple[float, float, float, float, float, float]:
    """(specsim CPU per request, plain loop's, specsim mean E2E, plain's, the ratio of the
    medians, the standard error of the E2E difference): the best of ``rounds`` alternating
    runs each, and their medians."""
    from plain_serving_loop import plain_loop

    plan = peer_plan(users, requests)
    k = plan.max_k
    ours, theirs = [], []
    for _ in range(rounds):
        t0 = time.process_time()
        run = simulate_serving(plan, work_out(plan, {"k": FixedK(k)}), replications=1, seed=1)
        ours.append(time.process_time() - t0)
        t0 = time.process_time()
        plain = plain_loop(plan, k, users, seed=1)
        theirs.append(time.process_time() - t0)
    e2e = summarize_serving(run.records, baseline=None).policies["k"].metrics["e2e_ms"].mean
    medians = float(np.median(ours)) / requests / (float(np.median(theirs)) / plain.completions)
    se = e2e_difference_se(run, plain)
    return (
        min(ours) / requests,
        min(theirs) / plain.completions,
        e2e,
        plain.mean_e2e_ms,
        medians,
        se,
    )


_MEMORY_RUN = """
import json, sys
sys.path.insert(0, {bench!r})
from bench_serving import peer_plan
from sim.simulation.serving import FixedK, simulate_serving, summarize_serving, work_out
plan = peer_plan({users}, {requests}, output=16)
run = simulate_serving(plan, work_out(plan, {{"k": FixedK(plan.max_k)}}), replications=1, seed=1)
summarize_serving(run.records, baseline=None)
peak = int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0]) * 1024
print(json.dumps({{"peak": peak}}))
"""


def peak_memory_bytes(users: int, requests: int) -> int:
    """Peak resident memory of a subprocess running ``requests`` requests (16-token
    outputs: the count, not the tokens, is what memory must not follow)."""
    code = _MEMORY_RUN.format(bench=str(Path(__file__).parent), users=users, requests=requests)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return int(json.loads(out.stdout.strip().splitlines()[-1])["peak"])


SECTIONS = ("iterations", "realistic", "slope", "peer", "memory")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", choices=SECTIONS, help="run only these")
    parser.add_argument("--rounds", type=int, default=3, help="peer rows' alternating rounds")
    args = parser.parse_args()
    only = set(args.only or SECTIONS)
    bare = bare_simpy_s_per_event() if only & {"iterations", "realistic"} else 0.0
    k = load_scenario(SEED_SCENARIO).num_steps
    if "iterations" in only:
        print(f"bare SimPy timeout loop: {1 / bare:,.0f} events/s")
        print(
            f"serving engine, seed scenario at k = {k}, decode iterations/s "
            f"(ratio, goal >= {GOAL_RATIO}):"
        )
        for users in BATCHES:
            per = iteration_seconds(users, k)
            ratio = bare / per
            flag = "ok" if ratio >= GOAL_RATIO else "BELOW GOAL"
            print(f"  batch {users:>4}: {1 / per:>10,.0f} it/s   ratio {ratio:.2f}   {flag}")
    if "realistic" in only:
        print("realistic serve (serving scenario, prefill, both policies), per decode iteration:")
        for users, requests in REALISTIC:
            per, iterations = realistic_seconds(users, requests)
            print(
                f"  {users:>4} users: {per * 1e6:>7.1f} us ({iterations:,} iterations)   "
                f"ratio {bare / per:.3f}"
            )
    if "slope" in only:
        sizes = (100, 200, 400, 800)
        times = []
        for q in sizes:
            plan = seed_plan(16, 256, q, "model")
            t0 = time.process_time()
            policies = {"baseline": FixedK(0), "spec": FixedK(k)}
            simulate_serving(plan, work_out(plan, policies), replications=1, seed=2)
            times.append(time.process_time() - t0)
        slope = np.polyfit(np.log(sizes), np.log(times), 1)[0]
        print(
            "run time vs simulated requests (16 users, 256 output tokens, prefill, both "
            "policies): "
            + ", ".join(f"{q}: {t:.2f} s" for q, t in zip(sizes, times, strict=True))
            + f"; log-log slope {slope:.2f} (goal about 1)"
        )
    if "peer" in only:
        print("serving vs a plain SimPy continuous-batching loop (lognormal outputs, no prefill):")
        print(
            "  CPU per simulated request, specsim / plain (goal <= 1), best of each and "
            "of the medians; mean E2E of each"
        )
        for users, requests in PEER_ROWS:
            ours, theirs, e2e, plain_e2e, medians, se = peer_row(users, requests, args.rounds)
            flag = "ok" if ours <= theirs else "ABOVE GOAL"
            agree = abs(e2e / plain_e2e - 1)
            ses = abs(e2e - plain_e2e) / se if se > 0 else float("inf")
            apart = f"{agree:.2%} apart, {ses:.1f} SE"
            print(
                f"  {users:>5} users: {ours * 1e6:>8.1f} us vs {theirs * 1e6:>8.1f} us   "
                f"ratio {ours / theirs:.2f} {flag} (medians {medians:.2f})   "
                f"E2E {e2e:,.0f} vs {plain_e2e:,.0f} ms "
                f"({apart}{'' if ses <= E2E_SE else f', MORE THAN {E2E_SE:g} SE'})"
            )
    if "memory" in only:
        print("peak memory (subprocess VmHWM), goal: 1e6 requests within 1.2x of 1e4:")
        for users in MEMORY_USERS:
            peaks = [peak_memory_bytes(users, n) for n in MEMORY_REQUESTS]
            ratio = peaks[-1] / peaks[0]
            print(
                f"  {users:>5} users: "
                + ", ".join(
                    f"{n:.0e}: {p / 2**20:,.0f} MiB"
                    for n, p in zip(MEMORY_REQUESTS, peaks, strict=True)
                )
                + f"   1e6 / 1e4 {ratio:.2f} {'ok' if ratio <= 1.2 else 'ABOVE GOAL'}"
            )


if __name__ == "__main__":
    main()
