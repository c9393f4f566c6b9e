"""Every heavy study on the cluster executor: ``--executor dask --scheduler ADDR`` gives
the local run's JSON byte for byte (every task carries its own seed), and the worker
protection undoes the nanny's malloc setting."""

from __future__ import annotations

import os

import pytest
from click.testing import CliRunner

from sim.cli import main
from tests.studies.serving.helpers import LLAMA, SCENARIOS

SEED = SCENARIOS / "kimi-k25-8xpcie-eagle3.toml"
#: Two draws of the 90% intervals (eight by default): their tasks cross the executor the same way.
SMALL = ["--set", "workload.output_tokens=24", "--requests", "6", "--replications", "2", "-q",
         "--draws", "2"]  # fmt: skip
MIX = 'acceptance.mix=[{name="chat",weight=0.7,alpha=0.6},{name="code",weight=0.3,alpha=0.9}]'
TREE = "acceptance.rank_profile=sequoia-jf68m-llama2-7b"
STUDIES = {
    "crossover": ["crossover", str(LLAMA), *SMALL, "--concurrency", "1,4", "--num-steps", "3"],
    "best-k": ["best-k", str(LLAMA), *SMALL, "--concurrency", "1,4", "--num-steps", "3"],
    # A 30 ms SLO: both policies and both draws find a rate within a few rungs (at 20 ms the
    # draws' ladders made 136 runs, each a round trip to the scheduler; at 30 ms, 14).
    "capacity": ["capacity", str(SEED), *SMALL, "--num-steps", "2", "--tpot-slo-ms", "30",
                 "--rtol", "0.2"],
    # A given k table: the default one is best-k on the whole mix at 1-64 users (three
    # quarters of the study's time; best-k on dask is its own case above).
    "controllers": ["controllers", str(SEED), "--set", MIX, *SMALL, "--phase",
                    "6,1,chat=0.9,code=0.1", "--phase", "6,4,chat=0.1,code=0.9",
                    "--k-table", "[[1,8,2]]"],
    "tree-load": ["tree-load", str(LLAMA), "--set", TREE, *SMALL, "--concurrency", "1,8",
                  "--tree", "5/4/8"],
}  # fmt: skip


@pytest.fixture(scope="module")
def scheduler():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
    ) as cluster:
        yield cluster.scheduler_address


@pytest.mark.parametrize("study", sorted(STUDIES))
def test_a_study_on_dask_is_the_local_study(study, scheduler):
    args = [*STUDIES[study], "--json"]
    local = CliRunner().invoke(main, args)
    assert local.exit_code == 0, local.output
    remote = CliRunner().invoke(main, [*args, "--executor", "dask", "--scheduler", scheduler])
    assert remote.exit_code == 0, remote.output
    assert remote.output == local.output


@pytest.mark.parametrize("study", ["crossover", "tree-load"])
def test_dask_without_a_scheduler_is_one_line(study):
    res = CliRunner().invoke(main, [*STUDIES[study], "--executor", "dask"])
    assert res.exit_code == 2 and "--scheduler" in res.output and "Traceback" not in res.output


def test_a_scheduler_without_dask_is_refused():
    res = CliRunner().invoke(main, [*STUDIES["crossover"], "--scheduler", "tcp://127.0.0.1:1"])
    assert res.exit_code == 2 and "--executor dask" in res.output


def test_protect_malloc_acts_only_under_the_nannys_setting(monkeypatch):
    from sim.parallel import protect_malloc

    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    assert protect_malloc() is False
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")
    assert protect_malloc() is (os.uname().sysname == "Linux")
