"""``make bench``: specsim's speed goals as ratios measured in the same run.

Sections (``--only NAME`` runs one; ``--rounds N`` sets the interleaved rounds):
  startup   specsim run / bare imports, --help / import click and / python -c pass
  search    the seed's Monte Carlo search and its closed-form search against older commits
  engine    the fast engine against its floor, the 20-line NumPy version and the stdlib loop
  special   the share of inverse-CDF special functions in Beta, mix and jitter runs
  memory    bytes a request of a streaming run, and peak memory
  parallel  a 2-worker sweep's wall time against 1 worker
  des       the SimPy engine against a bare SimPy loop
  uncertainty  the seed's 90% intervals (issue 10) against one closed-form analysis

Every comparison is CPU time (wall time for the parallel row) in interleaved rounds,
median (min beside it); figures move with the machine's load, ratios less. Not part of the
test suite: no test asserts a time.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

Row = tuple[str, str, str, str]


def des_rows(rounds: int) -> list[Row]:
    """The SimPy engine's events/s against a bare SimPy timeout loop's (goal >= 0.5)."""
    import simpy
    from timing import cpu_of, interleaved

    from sim.scenario.load import load_scenario
    from sim.simulation.simulate import simulate

    sc = load_scenario(
        Path(__file__).resolve().parent.parent / "scenarios" / "kimi-k25-8xpcie-eagle3.toml"
    )
    res = simulate(sc, engine="des", replications=2, requests=100)
    events = int(res.cycles.sum()) * 4  # four timed phases a cycle

    def bare() -> None:
        env = simpy.Environment()

        def loop(env: simpy.Environment):
            for _ in range(events):
                yield env.timeout(1.0)

        env.process(loop(env))
        env.run()

    t = interleaved(
        {
            "des": lambda: cpu_of(lambda: simulate(sc, engine="des", replications=2, requests=100)),
            "bare": lambda: cpu_of(bare),
        },
        rounds,
    )
    ratio = t["bare"].median / t["des"].median
    return [
        (
            "SimPy engine events/s / bare SimPy timeouts/s",
            f"{ratio:.2f}",
            ">= 0.5",
            "met" if ratio >= 0.5 else "MISSED",
        )
    ]


def uncertainty_rows(rounds: int) -> list[Row]:
    """Issue 10: the seed's answer with its 90% interval, drivers and next measurement,
    against one closed-form analysis of the same scenario (both re-validate it)."""
    from timing import cpu_of, interleaved

    from sim.scenario.load import load_scenario
    from sim.studies.analysis import analyze
    from sim.uncertainty.answers import answer_uncertainty

    seed = Path(__file__).resolve().parent.parent / "scenarios" / "kimi-k25-8xpcie-eagle3.toml"
    t = interleaved(
        {
            "uncertainty": lambda: cpu_of(lambda: answer_uncertainty(load_scenario(seed))),
            "analysis": lambda: cpu_of(lambda: analyze(load_scenario(seed))),
        },
        rounds,
    )
    u = t["uncertainty"]
    return [
        (
            "seed uncertainty (256 Sobol draws, 2 targets), s",
            f"{u.median:.3f}",
            "< 1",
            "met" if u.median < 1.0 else "MISSED",
        ),
        (
            "  ratio to one closed-form analysis of it",
            f"{u.median / t['analysis'].median:.1f}x",
            "report",
            f"min {u.min:.3f} s",
        ),
    ]


def sections(workdir: Path) -> dict[str, Callable[[int], list[Row]]]:
    from engine_bench import engine_rows, special_function_rows
    from memory_bench import memory_rows
    from parallel_bench import parallel_rows
    from search_bench import search_rows
    from startup import startup_rows

    return {
        "startup": startup_rows,
        "search": lambda r: search_rows(r, workdir),
        "engine": engine_rows,
        "special": special_function_rows,
        "memory": memory_rows,
        "parallel": parallel_rows,
        "des": des_rows,
        "uncertainty": uncertainty_rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", help="run only these sections")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        table = sections(Path(tmp))
        names = args.only or list(table)
        load = os.getloadavg()
        print(
            f"# {os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
            f" at start; {args.rounds} interleaved rounds; CPU time unless said"
        )
        rows: list[Row] = []
        for name in names:
            rows.append((f"[{name}]", "", "", ""))
            rows.extend(table[name](args.rounds))
    width = max(len(r[0]) for r in rows)
    print(f"{'measure':<{width}}  {'value':>9}  {'goal':>9}  verdict")
    for measure, value, goal, verdict in rows:
        print(f"{measure:<{width}}  {value:>9}  {goal:>9}  {verdict}".rstrip())
    load = os.getloadavg()
    print(f"# load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at the end")


if __name__ == "__main__":
    main()
