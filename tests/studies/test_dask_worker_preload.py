"""``dask worker --preload sim.studies.worker``: a worker loads the modules of every task the
heavy commands send, once, when it starts (docs/cluster.md), and runs their tasks as before."""

from __future__ import annotations

import os

import pytest

from sim.parallel import DaskExecutor
from sim.studies import worker


def _square(x: int) -> int:
    return x * x


def test_the_preload_loads_the_module_of_every_task_the_commands_send():
    from sim.simulation.serving.simulate import _replicate_block
    from sim.studies.serving.point_tasks import run_point
    from sim.studies.sweep import evaluate_point, evaluate_serving_point

    sent = (_replicate_block, run_point, evaluate_point, evaluate_serving_point)
    loaded = {m.__name__ for m in worker.TASK_MODULES}
    assert {fn.__module__ for fn in sent} <= loaded


def test_the_preload_hook_undoes_the_nannys_malloc_setting(monkeypatch):
    calls = []
    monkeypatch.setattr(worker, "protect_malloc", lambda: calls.append(os.getpid()) or True)
    worker.dask_setup(None)
    assert calls == [os.getpid()]


def test_a_worker_started_with_the_preload_runs_the_tasks():
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=1,
            threads_per_worker=1,
            processes=False,
            dashboard_address=None,
            preload=["sim.studies.worker"],
        ) as cluster,
        DaskExecutor(cluster.scheduler_address) as executor,
    ):
        client = executor._client()
        preloads = client.run(lambda dask_worker: [p.name for p in dask_worker.preloads])
        assert list(preloads.values()) == [["sim.studies.worker"]]
        assert dict(executor.map_unordered(_square, [1, 2, 3])) == {0: 1, 1: 4, 2: 9}
        assert list(executor.map_unordered(_square, [])) == []
