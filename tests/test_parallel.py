"""The local process pool stops cleanly when its consumer stops early.

An interrupted sweep leaves the pool through ``_stop_pool``. Its manager thread must have
finished before the interpreter exits: CPython 3.11's exit hook for process pools writes to
the thread's wake-up pipe without the pool's lock, and a thread still closing that pipe made
an interrupted sweep print ``OSError: [Errno 9] Bad file descriptor`` (seen in CI).
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time

import pytest

from sim.errors import SpecsimError
from sim.parallel import LocalExecutor


def _slow_square(x: int) -> int:
    time.sleep(0.05)
    return x * x


def _pool_threads() -> list[threading.Thread]:
    from concurrent.futures.process import _ExecutorManagerThread

    return [t for t in threading.enumerate() if isinstance(t, _ExecutorManagerThread)]


def test_a_consumer_that_stops_early_leaves_no_pool_thread_or_worker() -> None:
    threads_before = set(_pool_threads())  # other tests in this process may have left some
    children_before = set(multiprocessing.active_children())
    for _ in range(5):  # one stop can win the race by luck; five in a row do not
        results = LocalExecutor(workers=2).map_unordered(_slow_square, list(range(40)))
        index, value = next(results)
        assert value == index * index
        assert set(_pool_threads()) - threads_before, "the pool's manager thread runs"
        results.close()  # what an interrupt or an error does to the generator: its finally
        left = set(_pool_threads()) - threads_before
        assert not left, "the exit hook would race the thread closing its pipe"
        assert set(multiprocessing.active_children()) <= children_before


def test_a_finished_map_returns_every_result_once() -> None:
    got = dict(LocalExecutor(workers=2).map_unordered(_slow_square, list(range(6))))
    assert got == {i: i * i for i in range(6)}


def _pid(_: int) -> int:
    time.sleep(0.05)
    return os.getpid()


def test_a_kept_pool_runs_every_call_on_the_same_workers_until_closed() -> None:
    children_before = set(multiprocessing.active_children())
    executor = LocalExecutor(workers=2, keep_pool=True)
    first = {pid for _, pid in executor.map_unordered(_pid, list(range(6)))}
    second = {pid for _, pid in executor.map_unordered(_pid, list(range(6)))}
    assert first and second <= first  # no new processes for the second call
    assert os.getpid() not in first
    executor.close()
    assert set(multiprocessing.active_children()) <= children_before
    third = {pid for _, pid in executor.map_unordered(_pid, list(range(6)))}
    assert not third & first  # a new pool after close
    executor.close()
    assert set(multiprocessing.active_children()) <= children_before


def test_default_workers_follow_the_environment_then_the_cpu_affinity(monkeypatch):
    from sim.parallel import WORKERS_ENV, default_workers, resolve_workers

    monkeypatch.setenv(WORKERS_ENV, "3")
    assert default_workers() == 3
    assert resolve_workers("local", None) == 3
    assert resolve_workers("local", 5) == 5
    assert resolve_workers("dask", None) == 1  # the cluster has its own workers
    monkeypatch.delenv(WORKERS_ENV)
    assert default_workers() == len(os.sched_getaffinity(0))


@pytest.mark.parametrize("text", ["0", "-1", "two", "1.5"])
def test_a_bad_workers_environment_is_one_clear_error(monkeypatch, text):
    from sim.parallel import WORKERS_ENV, default_workers

    monkeypatch.setenv(WORKERS_ENV, text)
    with pytest.raises(SpecsimError, match="SPECSIM_WORKERS"):
        default_workers()


def test_make_executor_defaults_a_local_pool_to_the_default_workers(monkeypatch):
    from sim.parallel import WORKERS_ENV, LocalExecutor, make_executor

    monkeypatch.setenv(WORKERS_ENV, "2")
    made = make_executor("local", workers=None)
    assert made == LocalExecutor(2)
    assert isinstance(made, LocalExecutor) and made.keep_pool  # one pool for the study


def test_a_dask_cluster_without_workers_ends_the_run_with_one_error():
    """Tasks on a cluster with no worker would wait forever: after ``no_workers_s`` the
    run ends with the error a lost cluster gives (the finished points are kept)."""
    distributed = pytest.importorskip("distributed")
    from sim.parallel import DaskExecutor

    with (
        distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=":0") as cluster,
        distributed.Client(cluster) as client,
    ):
        executor = DaskExecutor(client, no_workers_s=0.5, poll_s=0.1)
        with pytest.raises(SpecsimError, match=r"workers \(none for 0.5 s, 3 tasks left\)"):
            list(executor.map_unordered(_slow_square, [1, 2, 3]))


def test_a_dask_executor_keeps_one_client_for_every_call_until_closed():
    distributed = pytest.importorskip("distributed")
    from sim.parallel import DaskExecutor

    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=":0"
    ) as cluster:
        executor = DaskExecutor(cluster.scheduler_address)
        assert executor.width() == 2
        assert dict(executor.map_unordered(_slow_square, [1, 2])) == {0: 1, 1: 4}
        first = executor._connection.client
        assert dict(executor.map_unordered(_slow_square, [3])) == {0: 9}
        assert executor._connection.client is first  # not a client a batch
        executor.close()
        assert executor._connection.client is None and first.status == "closed"


def _nap(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def test_a_dask_batch_fetches_its_results_once_a_look_not_once_a_task():
    """Tasks ending at different times within one look (``poll_s``) come back in one
    fetch; a batch longer than a look in one fetch a look (the client and the scheduler
    paid a round trip a task when each finished task was a look)."""
    distributed = pytest.importorskip("distributed")
    from sim.parallel import DaskExecutor

    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=2, processes=False, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        fetched: list[int] = []
        gather = client.gather

        def counted(futures, *args, **kwargs):
            fetched.append(len(futures))
            return gather(futures, *args, **kwargs)

        client.gather = counted
        naps = [0.05, 0.15, 0.25, 0.35]
        assert dict(DaskExecutor(client, poll_s=30.0).map_unordered(_nap, naps)) == dict(
            enumerate(naps)
        )
        assert fetched == [4]
        fetched.clear()
        slow = [0.05, 1.5]
        assert dict(DaskExecutor(client, poll_s=0.5).map_unordered(_nap, slow)) == dict(
            enumerate(slow)
        )
        assert fetched == [1, 1]  # the short one at the first look, the long one at its end


class _InOrder:
    """An executor that runs its items in the order it is given them, recording it."""

    def __init__(self) -> None:
        self.sent: list[int] = []

    def width(self) -> int:
        return 2

    def map_unordered(self, fn, items):
        self.sent = list(items)
        for i, item in enumerate(items):
            yield i, fn(item)


def test_longest_first_sends_the_costliest_items_first_and_keeps_their_indices() -> None:
    from sim.parallel import longest_first

    executor = _InOrder()
    items = [3, 1, 4, 1, 5, 9, 2, 6]
    got = list(longest_first(executor, lambda x: x * x, items, cost=lambda x: x % 5))
    assert executor.sent == [4, 9, 3, 2, 1, 1, 6, 5]  # cost 4, 4, 3, 2, 1, 1, 1, 0: ties in order
    assert sorted(got) == [(i, x * x) for i, x in enumerate(items)]
