"""Tasks on an existing Dask cluster (``DaskExecutor``): one client a command, the results
fetched at each look at the cluster, and a lost scheduler or the last worker gone for
``NO_WORKERS_S`` ended in one line saying the finished points are kept.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from sim.errors import SpecsimError
from sim.parallel.executor import R, T
from sim.parallel.malloc import protect_malloc

__all__ = ["NO_WORKERS_S", "DaskExecutor"]


class _Connection:
    """The Dask client a ``DaskExecutor`` opened from an address, kept for every later call
    of the same command (a study makes hundreds of batches: a client a batch cost the
    scheduler and the client a connection each)."""

    __slots__ = ("client",)

    def __init__(self) -> None:
        self.client: Any = None

    def close(self, gone: tuple[type[BaseException], ...]) -> None:
        client, self.client = self.client, None
        if client is not None:
            with contextlib.suppress(*gone):
                client.close()


def _protected(fn: Callable[[T], R], item: T) -> R:
    """``fn(item)`` in a Dask worker after ``protect_malloc`` (one call to mallopt a task)."""
    protect_malloc()
    return fn(item)


@dataclass(frozen=True, slots=True)
class DaskExecutor:
    """Points as tasks on an existing Dask cluster (``dask.distributed``; extra
    ``specsim-llm[dask]``).

    ``scheduler`` is a scheduler address (``tcp://host:8786``) or a ``distributed.Client``.
    Workers must be able to import ``sim`` (install specsim on them). Results are identical
    to the local pool's: every point carries its own seed. Each task first undoes the
    nanny's ``MALLOC_TRIM_THRESHOLD_`` in its worker (``protect_malloc``).

    A cluster that loses its scheduler, or its last worker for longer than
    ``no_workers_s`` (Dask's own ``distributed.scheduler.no-workers-timeout`` when set,
    e.g. ``DASK_DISTRIBUTED__SCHEDULER__NO_WORKERS_TIMEOUT=5s``; otherwise
    ``NO_WORKERS_S``), ends the run with a SpecsimError saying the finished points are
    kept; a worker its nanny restarts in time only re-runs its task.
    """

    scheduler: Any
    timeout_s: float = 10.0
    no_workers_s: float | None = None
    #: Seconds between looks at the cluster while tasks run: the results finished since
    #: the last look are fetched together, at each look and when the last task finishes.
    poll_s: float = 1.0
    #: The client opened from an address (``close`` ends it), shared by every call.
    _connection: _Connection = field(
        default_factory=_Connection, compare=False, repr=False, hash=False
    )

    def _client(self) -> Any:
        """The scheduler given as a client, or the one client opened from its address."""
        try:
            from distributed import Client
        except ImportError:
            raise SpecsimError(
                "the Dask executor needs dask.distributed: pip install 'specsim-llm[dask]'",
                param="executor",
            ) from None
        _quiet_dask_logs()
        if isinstance(self.scheduler, Client):
            return self.scheduler
        if self._connection.client is None:
            try:
                self._connection.client = Client(self.scheduler, timeout=self.timeout_s)
            except (OSError, TimeoutError, ValueError) as exc:
                raise SpecsimError(
                    f"cannot reach the Dask scheduler: {exc}", param="scheduler"
                ) from None
        return self._connection.client

    def close(self) -> None:
        """Close the client opened from the scheduler's address (a client given as the
        scheduler is its owner's to close); the next call opens a new one."""
        self._connection.close((*_cluster_lost_errors(), RuntimeError))

    def __enter__(self) -> DaskExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def width(self) -> int:
        """The cluster's worker threads now (at least 1)."""
        return max(1, sum(self._client().nthreads().values()))

    def map_unordered(self, fn: Callable[[T], R], items: Sequence[T]) -> Iterator[tuple[int, R]]:
        client = self._client()
        if not items:  # a study's batch with nothing left to run: no round trip
            return
        lost = _cluster_lost_errors()
        gone: tuple[type[BaseException], ...] = (*lost, RuntimeError)  # nothing to undo
        failed = True
        try:
            task = functools.partial(_protected, fn)
            futures = client.map(task, list(items), pure=False)
            index = {fut.key: i for i, fut in enumerate(futures)}
            try:
                for done in _completed(client, futures, self._no_workers_s(), self.poll_s):
                    # the results of every task finished since the last look in one call
                    # (a consumer's progress follows them at most ``poll_s`` late)
                    for fut, result in zip(done, client.gather(done), strict=True):
                        yield index[fut.key], result
                failed = False
            except lost as exc:
                raise SpecsimError(
                    f"lost the Dask cluster ({type(exc).__name__}: "
                    f"{str(exc).splitlines()[0][:200] if str(exc) else 'no detail'}); the "
                    "finished points are kept: run the same command again to resume",
                    param="scheduler",
                ) from None
            finally:
                # what has not finished (an error, an interrupt, a consumer that stopped):
                # a finished run has nothing to cancel, and its futures are released
                unfinished = [fut for fut in futures if not fut.done()]
                if unfinished:
                    with contextlib.suppress(*gone):  # the scheduler is gone: nothing to cancel
                        client.cancel(unfinished)
        finally:
            if failed:  # a client that lost its cluster is not kept for the next call
                self._connection.close(gone)

    def _no_workers_s(self) -> float:
        if self.no_workers_s is not None:
            return self.no_workers_s
        import dask  # lazy: only a Dask run needs it (start-up)

        configured = dask.config.get("distributed.scheduler.no-workers-timeout", None)
        return NO_WORKERS_S if configured is None else dask.utils.parse_timedelta(configured)


#: Seconds a Dask run waits for a worker when its cluster has none left (a nanny restarts
#: a killed worker in a few seconds; an adaptive cluster may take longer to scale up).
NO_WORKERS_S = 60.0


def _completed(
    client: Any, futures: list[Any], no_workers_s: float, poll_s: float
) -> Iterator[list[Any]]:
    """``futures`` as they finish, in lists of those finished at each look: a look when
    the last one finishes, or ``poll_s`` seconds after the last look, whichever is first
    (a batch shorter than ``poll_s`` is one look, its results fetched in one call; a look
    at each task's end cost the client and the scheduler a round trip a task).
    SpecsimError once the cluster has had no worker for ``no_workers_s`` seconds (its
    tasks would wait for one forever)."""
    import time  # lazy: start-up

    from distributed import wait

    pending = set(futures)
    alone_since: float | None = None
    while pending:
        with contextlib.suppress(TimeoutError):  # not all finished in poll_s: a look
            wait(pending, timeout=poll_s, return_when="ALL_COMPLETED")
        done = [fut for fut in pending if fut.done()]
        pending.difference_update(done)
        if done:
            yield done
        if done or client.nthreads():
            alone_since = None
            continue
        now = time.monotonic()
        alone_since = now if alone_since is None else alone_since
        if now - alone_since >= no_workers_s:
            raise SpecsimError(
                f"lost the Dask cluster's workers (none for {no_workers_s:g} s, "
                f"{len(pending)} task{'' if len(pending) == 1 else 's'} left); the finished "
                "points are kept: run the same command again to resume",
                param="scheduler",
            )


def _quiet_dask_logs() -> None:
    """Keep Dask's own log records (a lost connection logs tracebacks while its client
    retries) off the command's stderr: the command reports the outcome in one line."""
    import logging  # lazy: start-up

    roots = ("distributed", "tornado", "asyncio")
    names = [n for n in logging.root.manager.loggerDict if n.split(".")[0] in roots]
    for name in (*roots, *names):
        logging.getLogger(name).disabled = True


def _cluster_lost_errors() -> tuple[type[BaseException], ...]:
    """The exceptions of a Dask cluster that went away mid-run: its scheduler's connection
    closed or timed out, a worker killed while running a task, the futures cancelled
    because the scheduler restarted (not the exceptions of the task itself)."""
    import asyncio  # lazy: only a Dask run needs it (start-up)

    found: list[type[BaseException]] = [OSError, TimeoutError, asyncio.CancelledError]
    for module, name in (
        ("distributed.comm.core", "CommClosedError"),
        ("distributed.scheduler", "KilledWorker"),
        ("distributed.client", "FutureCancelledError"),
        ("concurrent.futures", "CancelledError"),
    ):
        try:
            found.append(getattr(importlib.import_module(module), name))
        except (ImportError, AttributeError):
            continue
    return tuple(found)
