"""``make bench``: a 2-worker Dask cluster on this machine against one local process.

The cluster is started the way docs/cluster.md says (``dask scheduler``, then two
``dask worker ADDRESS --nthreads 1 --no-nanny --preload sim.studies.worker``, in the
environment ``CLUSTER_ENV``), on 127.0.0.1 with a free port, and stopped by PID at the
end; the CPU its processes spend starting (the workers load the simulation's modules then)
is printed apart, as a persistent cluster pays it once, not per command. Two workloads,
each run as a whole ``specsim`` process, once with ``--workers 1`` (one local process) and
once with ``--executor dask --scheduler ADDRESS``, in interleaved rounds (the order
alternates):

- a 40-point serving sweep of the serving scenario (``acceptance.alpha`` 0.50 to 0.89 at
  16 users, each point both policies on 4 replications), the tables compared byte for
  byte;
- ``crossover`` on the serving scenario at its defaults but 100 requests a replication
  (half the default: the same batches and bisection steps, each task half as long, so the
  cluster's fixed costs weigh twice as much), the JSON compared byte for byte.

Printed: each wall time (``time.perf_counter``: the point of a cluster is wall time), the
ratio local / cluster (goal >= 1.5) from the medians and from the minima, the CPU seconds
of the client, the scheduler and each worker (from /proc), each worker's task thread apart
from its other threads (Dask's event loop and comms), what that CPU allows two idle
cores at most (local CPU over the client's CPU plus half the scheduler's and workers': the
client mostly waits for the tasks or works between batches), ``nproc`` and the load
average before and after. Each round also runs the workload on the local pool of two
processes (``--workers 2``): what two processes spend on the same tasks without Dask (each
process fills its own caches, e.g. the pass terms), against which the cluster's own cost
(client, scheduler, event loops) stands apart. On a shared machine the other jobs' load
moves wall times; the CPU columns say whether the cluster spends more CPU than the local
process for the same work.
Not part of the test suite. ``--rounds N`` (default 2), ``--only sweep|crossover``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "scenarios" / "kimi-k25-8xpcie-eagle3-serving.toml"
BIN = Path(sys.executable).parent
SPECSIM = [sys.executable, "-m", "sim"]
GOAL = 1.5
#: What each worker loads when it starts (sim/studies/worker.py).
PRELOAD = "sim.studies.worker"
#: crossover's options: the defaults but half the requests (module docstring).
CROSSOVER = ["--requests", "100"]
#: The cluster's environment of docs/cluster.md: the workers' statistical profiler off and
#: the event loop's watchdog, the system and the memory monitors less often (measured idle:
#: 1.5% of a core a process with Dask's defaults, 0.2-0.4% with these).
CLUSTER_ENV = {
    "DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED": "False",
    "DASK_DISTRIBUTED__ADMIN__TICK__INTERVAL": "1s",
    "DASK_DISTRIBUTED__ADMIN__SYSTEM_MONITOR__INTERVAL": "5s",
    "DASK_DISTRIBUTED__WORKER__MEMORY__MONITOR_INTERVAL": "1s",
}
#: A serving sweep (a ``serving.*`` axis): 40 acceptance rates at 16 users, each point
#: both policies on 4 replications of the scenario's 200 requests.
SWEEP = [
    "--grid", "serving.concurrency=16", "--grid", "acceptance.alpha=0.50:0.89:0.01",
    "--replications", "4",
]  # fmt: skip


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _cpu_s(pid: int) -> float:
    """utime + stime of a live process (Linux /proc)."""
    return _stat_cpu_s(Path(f"/proc/{pid}/stat"))


def _stat_cpu_s(stat: Path) -> float:
    """utime + stime of a /proc ``stat`` file (a process's or one of its threads')."""
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _threads_cpu_s(pid: int) -> dict[str, float]:
    """utime + stime of each thread of a live process, by thread id (Linux /proc)."""
    found = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(FileNotFoundError):  # a thread that ended meanwhile
            found[task.name] = _stat_cpu_s(task / "stat")
    return found


def _task_thread_s(before: dict[str, float], after: dict[str, float]) -> float:
    """The CPU a one-thread worker's task thread spent between two looks: the thread that
    spent the most (the others run Dask's event loop and its comms)."""
    return max((c - before.get(t, 0.0) for t, c in after.items()), default=0.0)


def start_cluster(workers: int) -> tuple[str, list[subprocess.Popen[bytes]]]:
    """A scheduler and ``workers`` one-thread workers without nanny, joined."""
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    quiet: dict[str, object] = {
        "stdout": subprocess.DEVNULL,
        "stderr": subprocess.DEVNULL,
        "env": {**os.environ, **CLUSTER_ENV},
    }
    procs = [
        subprocess.Popen(
            [str(BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port", str(port),
             "--no-dashboard"], **quiet,  # type: ignore[call-overload]
        )
    ]  # fmt: skip
    try:
        for _ in range(workers):
            procs.append(
                subprocess.Popen(
                    [str(BIN / "dask"), "worker", address, "--nthreads", "1", "--no-nanny",
                     "--no-dashboard", "--host", "127.0.0.1", "--preload", PRELOAD],
                    **quiet,  # type: ignore[call-overload]
                )
            )  # fmt: skip
        _wait_for_workers(address, workers)
    except BaseException:
        stop(procs)
        raise
    return address, procs


def _wait_for_workers(address: str, n: int, timeout_s: float = 120.0) -> None:
    from distributed import Client

    deadline = time.monotonic() + timeout_s
    with Client(address, timeout=timeout_s) as client:
        while len(client.scheduler_info()["workers"]) < n:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{n} workers did not join {address}")
            time.sleep(0.2)


def stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=5)


def timed(
    argv: list[str], cluster: list[subprocess.Popen[bytes]], stdout: object
) -> tuple[float, float, list[float], list[float]]:
    """(wall s, this command's CPU s with its children's, each cluster process's CPU s,
    each worker's task thread's CPU s) of one ``specsim`` process, its standard output
    into ``stdout`` (an open file)."""
    env = {k: v for k, v in os.environ.items() if k != "SPECSIM_WORKERS"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    farm0 = [_cpu_s(p.pid) for p in cluster]
    threads0 = [_threads_cpu_s(p.pid) for p in cluster[1:]]
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, env=env, cwd=ROOT, stdout=stdout)  # type: ignore[call-overload]
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    farm = [_cpu_s(p.pid) - c for p, c in zip(cluster, farm0, strict=True)]
    tasks = [
        _task_thread_s(t0_, _threads_cpu_s(p.pid))
        for p, t0_ in zip(cluster[1:], threads0, strict=True)
    ]
    own = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, own, farm, tasks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--only", choices=("sweep", "crossover"), action="append")
    args = parser.parse_args()
    only = set(args.only or ("sweep", "crossover"))
    print(
        f"2-worker Dask cluster on localhost / one local process (nproc {os.cpu_count()}, "
        f"load average {os.getloadavg()[0]:.1f} at the start):"
    )
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the cluster on the way out
    address, procs = start_cluster(2)
    started = [_cpu_s(p.pid) for p in procs]
    print(
        f"  cluster start: {started[0]:.1f} s CPU scheduler, "
        f"{' + '.join(f'{c:.1f}' for c in started[1:])} s workers (not in the rows below)"
    )
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for study in ("sweep", "crossover"):
                if study in only:
                    row(study, address, procs, Path(tmp), args.rounds)
    finally:
        stop(procs)
    print(f"  load average {os.getloadavg()[0]:.1f} at the end")


#: The runs of each round: one local process, the cluster, the local pool of two
#: processes (in this order in even rounds, reversed in odd ones).
KINDS = ("local", "dask", "pool")


def row(
    study: str, address: str, procs: list[subprocess.Popen[bytes]], tmp: Path, rounds: int
) -> None:
    """Interleaved rounds of one workload locally, on the cluster and on the local pool of
    two processes; one printed row."""
    options = {"local": ["--workers", "1"], "pool": ["--workers", "2"],
               "dask": ["--executor", "dask", "--scheduler", address]}  # fmt: skip
    walls: dict[str, list[float]] = {kind: [] for kind in KINDS}
    cpus: dict[str, list[tuple[float, list[float], list[float]]]] = {kind: [] for kind in KINDS}
    outputs: dict[str, set[bytes]] = {kind: set() for kind in KINDS}
    for r in range(rounds):
        for kind in KINDS if r % 2 == 0 else KINDS[::-1]:
            out = tmp / f"{study}-{kind}.out"
            if study == "sweep":
                store = tmp / f"store-{kind}"
                shutil.rmtree(store, ignore_errors=True)
                argv = [*SPECSIM, "sweep", str(SCENARIO), *SWEEP, "--out", str(store), "-q",
                        *options[kind]]  # fmt: skip
            else:
                argv = [*SPECSIM, "crossover", str(SCENARIO), *CROSSOVER, "--json", "-q",
                        *options[kind]]  # fmt: skip
            with out.open("wb") as f:
                wall, own, farm, tasks = timed(argv, procs if kind == "dask" else [], f)
            walls[kind].append(wall)
            cpus[kind].append((own, farm, tasks))
            data = (store / "sweep.csv").read_bytes() if study == "sweep" else out.read_bytes()
            outputs[kind].add(data)
    same = len(set().union(*outputs.values())) == 1
    med = statistics.median(walls["local"]) / statistics.median(walls["dask"])
    low = min(walls["local"]) / min(walls["dask"])
    what = "40-point serving sweep" if study == "sweep" else "crossover (100 requests)"
    print(
        f"  {what}: local / cluster wall {med:.2f} (minima {low:.2f}), goal >= {GOAL}: "
        f"{'met' if med >= GOAL else 'MISSED'}; output "
        f"{'identical' if same else 'DIFFERS'} (one process, cluster, pool of two)"
    )
    local_cpu = statistics.median(c[0] for c in cpus["local"])
    pool_cpu = statistics.median(c[0] for c in cpus["pool"])
    client = statistics.median(c[0] for c in cpus["dask"])
    each = [statistics.median(c[1][j] for c in cpus["dask"]) for j in range(len(procs))]
    threads = [statistics.median(c[2][j] for c in cpus["dask"]) for j in range(len(procs) - 1)]
    total = client + sum(each)
    print(
        f"    local {', '.join(f'{w:.1f}' for w in walls['local'])} s wall, "
        f"{local_cpu:.1f} s CPU; cluster {', '.join(f'{w:.1f}' for w in walls['dask'])} s wall, "
        f"CPU {client:.1f} s client + {each[0]:.1f} s scheduler + "
        f"{' + '.join(f'{c:.1f}' for c in each[1:])} s workers = {total / local_cpu:.2f}x the "
        f"local CPU (two idle cores: at most {local_cpu / (client + (total - client) / 2):.2f}x, "
        f"the client's CPU taken as serial); load average "
        f"{os.getloadavg()[0]:.1f}"
    )
    print(
        f"    workers' task threads {' + '.join(f'{t:.1f}' for t in threads)} s, their other "
        f"threads {sum(each[1:]) - sum(threads):.1f} s; local pool of two "
        f"{', '.join(f'{w:.1f}' for w in walls['pool'])} s wall, {pool_cpu:.1f} s CPU "
        f"({pool_cpu / local_cpu:.2f}x the one process's)"
    )


if __name__ == "__main__":
    main()
