"""A Dask cluster lost mid-sweep: the scheduler is killed (SIGKILL) while a sweep runs on
it. The command ends with one line and exit 2 (no traceback, no log records of the Dask
client's retries), the points finished before are kept, and the same command on the local
pool resumes from them to the CSV an uninterrupted sweep writes. Every process is ended by
its PID."""

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


@pytest.mark.slow
def test_a_killed_scheduler_is_one_line_and_the_store_resumes(tmp_path: Path):
    pytest.importorskip("distributed")
    scenario = tmp_path / "s.toml"
    sizes = "[workload]\nrequests = 40\n[simulation]\nreplications = 4\n[targets]"
    scenario.write_text(MINIMAL.replace("[targets]", sizes))
    address, procs = start_cluster(1)
    scheduler = procs[0]
    out = tmp_path / "o"
    common = [sys.executable, "-m", "sim", "sweep", str(scenario), *GRID, "--quiet"]
    common += ["--engine", "des", "--out", str(out)]
    try:
        sweep = subprocess.Popen(
            [*common, "--executor", "dask", "--scheduler", address],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        procs.append(sweep)
        deadline = time.monotonic() + 120
        points = out / "points"
        while not (points.is_dir() and len(list(points.glob("*.json"))) >= 3):
            assert sweep.poll() is None, sweep.communicate()
            assert time.monotonic() < deadline, "no point finished in 120 s"
            time.sleep(0.2)
        os.kill(scheduler.pid, signal.SIGKILL)
        _, err = sweep.communicate(timeout=120)
    finally:
        _stop(procs)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert sweep.returncode == 2, err
    assert len(lines) == 1 and lines[0].startswith("specsim: error: "), err
    assert "lost the Dask cluster" in lines[0] and "resume" in lines[0]
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
