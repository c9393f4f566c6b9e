"""``make bench``: speed of the Monte Carlo engines as ratios measured in the same run.

1. fast engine: simulated cycles/s / NumPy's raw uniform draws/s    (goal >= 0.25)
2. SimPy engine: events/s / a bare SimPy loop of timeouts' events/s  (goal >= 0.5)
3. fast engine vs the straightforward per-cycle Python loop, same sample (goal >= 100x)
4. fast engine run time against requests x output tokens            (goal: linear)

Each figure is the best of a few repeats (the machine may be shared); the ratios compare
numbers measured back to back. Not part of the test suite.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import simpy

from sim.scenario.bind import cycle_cost as scenario_cycle_cost
from sim.scenario.bind import scenario_rates
from sim.scenario.load import load_scenario, with_overrides
from sim.simulation.simulate import simulate
from sim.studies.analysis import analyze
from sim.studies.uncertainty import answer_uncertainty

SEED_SCENARIO = Path(__file__).resolve().parent.parent / "scenarios" / "kimi-k25-8xpcie-eagle3.toml"


def best_of(fn: Callable[[], object], repeats: int = 3) -> tuple[float, object]:
    """Shortest wall time (s) of ``repeats`` calls and the last call's value."""
    best, value = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - t0)
    return best, value


def uniform_draws_per_s(n: int = 4_000_000) -> float:
    rng = np.random.default_rng(0)
    buf = np.empty(n)
    rng.random(out=buf)  # touch the pages once
    t, _ = best_of(lambda: rng.random(out=buf), 5)
    return n / t


def bare_simpy_events_per_s(n: int = 400_000) -> float:
    def loop(env: simpy.Environment):
        for _ in range(n):
            yield env.timeout(1.0)

    def run() -> None:
        env = simpy.Environment()
        env.process(loop(env))
        env.run()

    t, _ = best_of(run, 3)
    return n / t


def naive_loop(
    rates: list[float], tokens: int, requests: int, cycle_ms: float, draw: Callable[[], float]
) -> list[float]:
    """The per-cycle loop a user would write: one Python iteration per cycle and draft."""
    out = []
    for _ in range(requests):
        emitted, ms = 0, 0.0
        while emitted < tokens:
            length = 1
            for a in rates:
                if draw() < a:
                    length += 1
                else:
                    break
            emitted += length
            ms += cycle_ms
        out.append(1000.0 * tokens / ms)
    return out


def main() -> None:
    sc = load_scenario(SEED_SCENARIO)
    rows: list[tuple[str, str, str]] = []

    # 1. fast engine vs raw uniforms
    big = dict(replications=100, requests=1000)
    simulate(sc, **big)  # warm up
    t_fast, res = best_of(lambda: simulate(sc, **big), 5)
    cycles = int(res.cycles.sum())
    fast_cps = cycles / t_fast
    unif = uniform_draws_per_s()
    rows.append(("uniform draws/s (rng.random, float64)", f"{unif:.3g}", ""))
    rows.append(
        (
            "fast engine cycles/s (seed scenario, k=2)",
            f"{fast_cps:.3g}",
            f"{cycles} cycles in {t_fast:.3f} s",
        )
    )
    rows.append(("  ratio fast / uniforms (goal >= 0.25)", f"{fast_cps / unif:.2f}", ""))
    k6 = with_overrides(sc, {"speculation.num_steps": 6, "acceptance.alpha": 0.8})
    t6, res6 = best_of(lambda: simulate(k6, **big), 3)
    rows.append(
        (
            "fast engine cycles/s (k=6, alpha 0.8)",
            f"{res6.cycles.sum() / t6:.3g}",
            f"ratio {res6.cycles.sum() / t6 / unif:.2f}",
        )
    )
    het = with_overrides(sc, {"acceptance.concentration": 5.0, "timing.jitter_cv": 0.2})
    t_het, res_het = best_of(lambda: simulate(het, **big), 3)
    rows.append(
        (
            "fast engine cycles/s (Beta c=5, jitter 0.2)",
            f"{res_het.cycles.sum() / t_het:.3g}",
            f"ratio {res_het.cycles.sum() / t_het / unif:.2f}",
        )
    )

    # 2. SimPy engine vs a bare timeout loop
    bare = bare_simpy_events_per_s()
    small = dict(replications=2, requests=100)
    t_des, res_des = best_of(lambda: simulate(sc, engine="des", **small), 3)
    phases = sum(1 for v in scenario_cycle_cost(sc).as_dict().values() if v > 0)
    events = int(res_des.cycles.sum()) * phases
    des_eps = events / t_des
    rows.append(("bare SimPy timeouts/s", f"{bare:.3g}", ""))
    rows.append(
        (
            "SimPy engine events/s",
            f"{des_eps:.3g}",
            f"{events} timeouts ({phases} a cycle) in {t_des:.3f} s",
        )
    )
    rows.append(("  ratio SimPy engine / bare loop (goal >= 0.5)", f"{des_eps / bare:.2f}", ""))

    # 3. fast engine vs the naive loop, same sample
    req, tok = 4000, 512
    cycle_ms = scenario_cycle_cost(sc).total_ms
    rates = list(scenario_rates(sc))
    rng = np.random.default_rng(1)
    t_naive, _ = best_of(lambda: naive_loop(rates, tok, req, cycle_ms, rng.random), 1)
    stdlib = random.Random(1)
    t_naive_std, _ = best_of(lambda: naive_loop(rates, tok, req, cycle_ms, stdlib.random), 1)
    t_same, _ = best_of(lambda: simulate(sc, replications=1, requests=req), 5)
    rows.append(
        (f"naive loop, rng.random() ({req} requests x {tok} tokens)", f"{t_naive:.3f} s", "")
    )
    rows.append(("naive loop, random.random() (stdlib)", f"{t_naive_std:.3f} s", ""))
    rows.append(("fast engine, same sample", f"{t_same:.4f} s", ""))
    rows.append(("  speed-up vs rng.random() loop (goal >= 100)", f"{t_naive / t_same:.0f}x", ""))
    rows.append(("  speed-up vs random.random() loop", f"{t_naive_std / t_same:.0f}x", ""))

    # 4. scaling with requests x output tokens
    grid = [(250, 512), (500, 512), (1000, 512), (1000, 1024), (1000, 2048), (2000, 2048)]
    sizes, times = [], []
    for q, n in grid:
        s_qn = with_overrides(sc, {"workload.output_tokens": n})
        t_qn, _ = best_of(lambda s_qn=s_qn, q=q: simulate(s_qn, replications=20, requests=q), 5)
        sizes.append(20 * q * n)
        times.append(t_qn)
        rows.append(
            (
                f"fast, 20 x {q} requests x {n} tokens",
                f"{t_qn:.4f} s",
                f"{1e9 * t_qn / (20 * q * n):.2f} ns per token",
            )
        )
    slope = np.polyfit(np.log(sizes), np.log(times), 1)[0]
    rows.append(("  log-log slope of time vs requests x tokens (goal ~1)", f"{slope:.2f}", ""))

    # issue 10: the seed's answer with its 90% interval, drivers and next measurement,
    # against one closed-form analysis of the same scenario (both re-validate it)
    t_unc, _ = best_of(lambda: answer_uncertainty(load_scenario(SEED_SCENARIO)), 3)
    t_one, _ = best_of(lambda: analyze(load_scenario(SEED_SCENARIO)), 3)
    rows.append(
        (
            "seed uncertainty (256 Sobol draws, 2 targets)",
            f"{t_unc:.3f} s",
            "goal: well under 1 s (90% intervals, drivers, measure next)",
        )
    )
    rows.append(("  ratio to one closed-form analysis of it", f"{t_unc / t_one:.1f}x", ""))

    width = max(len(r[0]) for r in rows)
    print(f"{'measure':<{width}}  {'value':>10}  note")
    for name, value, note in rows:
        print(f"{name:<{width}}  {value:>10}  {note}")


if __name__ == "__main__":
    main()
