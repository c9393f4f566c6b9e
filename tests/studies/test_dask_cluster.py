"""A real Dask cluster: ``dask scheduler`` and two ``dask worker`` processes on 127.0.0.1,
as a user's cluster is (separate processes, TCP), running a sweep whose CSV must match the
local pool's byte for byte. Bounded in time; every process is ended by its PID."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import MINIMAL

BIN = Path(sys.executable).parent
# the cluster bench's process helpers (free port, joined workers, ending by PID), shared
_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "cluster_bench.py"
_SPEC = importlib.util.spec_from_file_location("cluster_bench", _PATH)
assert _SPEC and _SPEC.loader
cluster_bench = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(cluster_bench)
_free_port, _wait_for_workers, _stop = (
    cluster_bench._free_port,
    cluster_bench._wait_for_workers,
    cluster_bench.stop,
)


def start_cluster(workers: int) -> tuple[str, list[subprocess.Popen]]:
    """``dask scheduler`` and ``workers`` one-thread ``dask worker`` processes on
    127.0.0.1, the workers joined; the address and the processes (scheduler first)."""
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    env = {**os.environ, "DASK_DISTRIBUTED__WORKER__DAEMON": "False"}
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "env": env}
    procs = [
        subprocess.Popen(
            [str(BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port", str(port),
             "--no-dashboard"], **quiet,
        )
    ]  # fmt: skip
    try:
        for _ in range(workers):
            procs.append(
                subprocess.Popen(
                    [str(BIN / "dask"), "worker", address, "--nworkers", "1", "--nthreads", "1",
                     "--no-dashboard", "--host", "127.0.0.1"], **quiet,
                )
            )  # fmt: skip
        _wait_for_workers(address, workers)
    except BaseException:
        _stop(procs)
        raise
    return address, procs


@pytest.mark.slow
def test_sweep_on_a_real_scheduler_and_two_workers_matches_the_local_pool(tmp_path: Path):
    pytest.importorskip("distributed")
    scenario = tmp_path / "s.toml"
    sizes = "[workload]\nrequests = 20\n[simulation]\nreplications = 3\n[targets]"
    scenario.write_text(MINIMAL.replace("[targets]", sizes))
    address, procs = start_cluster(2)
    try:
        grid = ["--grid", "acceptance.alpha=0.5:0.9:0.1", "--grid", "speculation.num_steps=1:3"]
        common = [sys.executable, "-m", "sim", "sweep", str(scenario), *grid, "--quiet"]
        on_dask = subprocess.run(
            [*common, "--out", str(tmp_path / "dask"), "--executor", "dask", "--scheduler",
             address], capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert on_dask.returncode == 0, on_dask.stderr
    finally:
        _stop(procs)
    local = subprocess.run(
        [*common, "--out", str(tmp_path / "local"), "--workers", "2"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert local.returncode == 0, local.stderr
    dask_csv = (tmp_path / "dask" / "sweep.csv").read_bytes()
    assert dask_csv == (tmp_path / "local" / "sweep.csv").read_bytes()
    assert dask_csv.count(b"\n") == 1 + 5 * 3
    assert all(p.poll() is not None for p in procs)
