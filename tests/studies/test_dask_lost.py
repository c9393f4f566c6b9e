"""A Dask cluster lost mid-sweep: the scheduler, or the only worker (its nanny and its
process), is killed (SIGKILL) while a sweep runs on it. The command ends with one line and
exit 2 (no traceback, no log records of the Dask client's retries), the points finished
before are kept, and the same command on the local pool resumes from them to the CSV an
uninterrupted sweep writes. Every process is ended by its PID."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import MINIMAL
from tests.studies.test_dask_cluster import _stop, start_cluster

GRID = ["--grid", "acceptance.alpha=0.30:0.95:0.01"]


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (from /proc)."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # ended meanwhile
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def _kill_scheduler(procs: list[subprocess.Popen]) -> None:
    os.kill(procs[0].pid, signal.SIGKILL)


def _kill_worker(procs: list[subprocess.Popen]) -> None:
    """The worker process and its nanny (which would start it again), SIGKILL both."""
    nanny = procs[1]
    workers = _children(nanny.pid)
    assert workers, "the nanny has no worker process"
    os.kill(nanny.pid, signal.SIGKILL)
    for pid in workers:
        os.kill(pid, signal.SIGKILL)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("kill", "said"),
    [
        (_kill_scheduler, "lost the Dask cluster ("),
        (_kill_worker, "lost the Dask cluster's workers"),
    ],
    ids=["scheduler", "worker"],
)
def test_a_killed_cluster_part_is_one_line_and_the_store_resumes(tmp_path: Path, kill, said):
    pytest.importorskip("distributed")
    scenario = tmp_path / "s.toml"
    sizes = "[workload]\nrequests = 40\n[simulation]\nreplications = 4\n[targets]"
    scenario.write_text(MINIMAL.replace("[targets]", sizes))
    address, procs = start_cluster(1)
    out = tmp_path / "o"
    common = [sys.executable, "-m", "sim", "sweep", str(scenario), *GRID, "--quiet"]
    common += ["--engine", "des", "--out", str(out)]
    env = {**os.environ, "DASK_DISTRIBUTED__SCHEDULER__NO_WORKERS_TIMEOUT": "5s"}
    try:
        sweep = subprocess.Popen(
            [*common, "--executor", "dask", "--scheduler", address],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
        procs.append(sweep)
        deadline = time.monotonic() + 120
        points = out / "points"
        while not (points.is_dir() and len(list(points.glob("*.json"))) >= 3):
            assert sweep.poll() is None, sweep.communicate()
            assert time.monotonic() < deadline, "no point finished in 120 s"
            time.sleep(0.2)
        kill(procs)
        _, err = sweep.communicate(timeout=120)
    finally:
        _stop(procs)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert sweep.returncode == 2, err
    assert len(lines) == 1 and lines[0].startswith("specsim: error: "), err
    assert said in lines[0] and "resume" in lines[0]
    kept = len(list((out / "points").glob("*.json")))
    assert kept >= 3
    resumed = subprocess.run(
        [*common, "--workers", "2"], capture_output=True, text=True, timeout=600
    )
    assert resumed.returncode == 0, resumed.stderr
    fresh = subprocess.run(
        [*common[:-1], str(tmp_path / "fresh"), "--workers", "2"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert fresh.returncode == 0, fresh.stderr
    assert (out / "sweep.csv").read_bytes() == (tmp_path / "fresh" / "sweep.csv").read_bytes()
