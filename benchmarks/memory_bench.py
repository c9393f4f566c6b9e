"""Memory rows: what a streamed run holds per request.

Each run is its own subprocess, which reports its peak resident memory (``VmHWM`` of
/proc/self/status) at the end; the baseline is the same process running a 2-request
simulation (interpreter, NumPy, SciPy, pydantic, the scenario: memory that does not grow
with the run). Bytes a request are (peak - baseline) / requests. A streamed run keeps no
per-request arrays (sim/simulation/stream.py): what remains is one block's engine arrays,
whatever the number of requests.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SEED = REPO / "scenarios" / "kimi-k25-8xpcie-eagle3.toml"
GOAL_BYTES = 50

_RUN = """
import json, time
from sim.scenario.load import load_scenario
from sim.simulation.simulate import simulate
from sim.simulation.summary import summarize
sc = load_scenario({seed!r})
t0 = time.perf_counter()
res = simulate(sc, replications={reps}, requests={reqs}, stream={stream}, workers={workers})
summary = summarize(res)
wall = time.perf_counter() - t0
# VmHWM, not ru_maxrss: ru_maxrss survives exec, so a child of a large parent (the bench
# itself) would report the parent's peak; VmHWM belongs to this process's own memory map.
status = open("/proc/self/status").read().split("VmHWM:")[1]
peak = int(status.split()[0]) * 1024
print(json.dumps({{"peak": peak, "wall": wall, "mean": summary.tok_s_mean}}))
"""


def measure(reps: int, reqs: int, stream: bool = True, workers: int = 1) -> dict:
    """Peak memory (bytes) and wall time of one run in a fresh process."""
    code = _RUN.format(seed=str(SEED), reps=reps, reqs=reqs, stream=stream, workers=workers)
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd=REPO
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def memory_rows(rounds: int) -> list[tuple[str, str, str, str]]:
    del rounds  # one run each: peak memory does not need repeating
    rows = []
    base = measure(1, 2)["peak"]
    for reps, reqs in ((10_000, 100), (1_000, 1_000)):
        n = reps * reqs
        run = measure(reps, reqs)
        per = (run["peak"] - base) / n
        rows.append(
            (
                f"streamed run of {n:.0e} requests ({reps} x {reqs}): bytes a request",
                f"{per:.1f}",
                f"<= {GOAL_BYTES}",
                "met" if per <= GOAL_BYTES else "MISSED",
            )
        )
        rows.append(
            (
                f"  peak {run['peak'] / 2**20:.0f} MiB over a {base / 2**20:.0f} MiB "
                f"baseline, {run['wall']:.1f} s",
                "",
                "",
                "",
            )
        )
    kept = measure(10_000, 100, stream=False)
    per = (kept["peak"] - base) / 1e6
    rows.append(
        (
            "  (the same 1e6 requests keeping per-request arrays: bytes a request)",
            f"{per:.1f}",
            "",
            "",
        )
    )
    return rows
