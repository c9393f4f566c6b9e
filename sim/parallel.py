"""The one parallel executor of specsim: a local process pool or an existing Dask cluster.

``simulate`` (blocks of replications), ``search`` (draft lengths) and ``sweep`` (grid
points) all run their independent tasks through an ``Executor``. Every task carries its own
seed, so results never depend on the executor, the worker count or the order tasks finish.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from sim.errors import SpecsimError

if TYPE_CHECKING:
    import multiprocessing.context
    from concurrent.futures import Future, ProcessPoolExecutor

# multiprocessing, concurrent.futures, ctypes and socket are imported where a pool or a
# scheduler is used: a run in this process needs none of them (start-up).

T = TypeVar("T")
R = TypeVar("R")


class Executor(Protocol):
    """Runs ``fn`` over items in any order, yielding ``(index, result)`` as each finishes;
    ``width()``: how many items it runs at once (to cut work into enough tasks)."""

    def map_unordered(
        self, fn: Callable[[T], R], items: Sequence[T]
    ) -> Iterator[tuple[int, R]]: ...

    def width(self) -> int: ...


def longest_first(
    executor: Executor, fn: Callable[[T], R], items: Sequence[T], cost: Callable[[T], float]
) -> Iterator[tuple[int, R]]:
    """``executor.map_unordered(fn, items)`` with the items sent in decreasing ``cost``
    (ties in their order), each result still under its index in ``items``.

    A batch ends when its last task does: sent longest first, the tasks left for a free
    worker at the end are short ones, so a worker waits less for the last long one (the
    longest-processing-time rule; a study's batches are sequential). Results never
    depend on the order tasks run (each carries its own seed)."""
    order = sorted(range(len(items)), key=lambda i: -cost(items[i]))
    for j, result in executor.map_unordered(fn, [items[i] for i in order]):
        yield order[j], result


def close_executor(executor: Executor) -> None:
    """End what ``executor`` keeps open between calls (a Dask executor's connection to its
    scheduler); nothing for the local pool. Commands call it once their study is done."""
    close = getattr(executor, "close", None)
    if close is not None:
        close()


def _pool_context() -> multiprocessing.context.BaseContext | None:
    """The platform's default start method, unless this process runs other threads.

    Forking a process that runs threads (a Dask client, an IO loop) can deadlock the child,
    so then workers come from a fork server that has imported the simulator once. Without
    threads the default (fork on Linux) starts workers fastest and needs no importable
    ``__main__``.
    """
    import multiprocessing

    if threading.active_count() == 1 or "forkserver" not in multiprocessing.get_all_start_methods():
        return None
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["sim.studies.sweep", "sim.simulation.simulate"])
    return ctx


def _worker_init() -> None:
    """Run in each pool worker: die with the parent, leave interrupts to the parent.

    Linux's ``PR_SET_PDEATHSIG`` sends the worker SIGKILL when its parent dies (kill -9 or
    SIGTERM of the sweep), so no worker lives on reparented to PID 1 holding the output
    pipes open; under a fork server the parent is the fork server, which exits when the
    main process does. SIGINT (Ctrl-C reaches the whole process group) is ignored here: the
    parent stops the pool and says so once, instead of every worker printing a traceback.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):  # no prctl: the worker may outlive a killed parent
            return
        if os.getppid() == 1:  # the parent died before prctl took effect
            os._exit(1)


#: linux/prctl.h
PR_SET_PDEATHSIG = 1


def _stop_pool(pool: ProcessPoolExecutor) -> None:
    """Cancel queued tasks and end the workers now (on an interrupt or an error).

    The pool's manager thread is joined last. Left running, it closes its wake-up pipe
    while the interpreter's exit hook for process pools writes to that pipe without the
    pool's lock (CPython 3.11 ``concurrent.futures.process._python_exit``), and an
    interrupted sweep then ended with ``OSError: [Errno 9] Bad file descriptor`` printed
    under its one line (seen in CI, one run in many). Once the thread has finished, its
    pipe is closed and the hook writes nothing.
    """
    procs = list((getattr(pool, "_processes", None) or {}).values())  # the stdlib keeps them
    manager = getattr(pool, "_executor_manager_thread", None)  # shutdown() forgets it
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        if proc.is_alive():
            proc.terminate()
    for proc in procs:
        proc.join(timeout=5)
    if manager is not None:
        manager.join(timeout=5)


class _Pool:
    """The process pool a ``LocalExecutor`` keeps between calls (``keep_pool``): one pool
    for a whole study instead of one a batch. Pickles as an empty holder (a task that
    carries its executor gets none of the parent's processes)."""

    __slots__ = ("lock", "pool", "size")

    def __init__(self) -> None:
        self.pool: ProcessPoolExecutor | None = None
        self.size = 0
        # several threads of one study may share the pool (capacity's interleaved
        # searches): one of them starts it
        self.lock = threading.Lock()

    def __reduce__(self) -> tuple[type[_Pool], tuple[()]]:
        return _Pool, ()

    def get(self, workers: int) -> ProcessPoolExecutor:
        """The kept pool, started (or widened to ``workers``) on first use."""
        with self.lock:
            if self.pool is not None and self.size < workers:
                self.close()
            if self.pool is None:
                self.pool, self.size = _new_pool(workers), workers
            return self.pool

    def drop(self) -> None:
        """Forget the pool without waiting (``_stop_pool`` has ended it)."""
        self.pool, self.size = None, 0

    def close(self) -> None:
        pool, self.pool, self.size = self.pool, None, 0
        if pool is not None:
            pool.shutdown(wait=True)


def _new_pool(workers: int) -> ProcessPoolExecutor:
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(
        max_workers=workers, mp_context=_pool_context(), initializer=_worker_init
    )


def drain(pending: dict[Future[R], int]) -> Iterator[tuple[int, R]]:
    """(index, result) of each of ``pending`` (future -> index) as it finishes; an error
    of one is raised when it is reached."""
    from concurrent.futures import FIRST_COMPLETED, wait

    while pending:
        done, _ = wait(pending, return_when=FIRST_COMPLETED)
        for fut in done:
            yield pending.pop(fut), fut.result()


@dataclass(frozen=True, slots=True)
class LocalExecutor:
    """The default: a local process pool of ``workers`` processes (1: in this process).

    ``keep_pool``: the pool started by the first call is kept for every later one (a
    study's hundreds of batches and bisection steps then start ``workers`` processes
    once, not a pool each) until ``close``; the commands that make their executor with
    ``make_executor`` close it when their study ends. Off, each call starts and ends its
    own pool. Results never depend on it."""

    workers: int = 1
    keep_pool: bool = field(default=False, compare=False)
    _pool: _Pool = field(default_factory=_Pool, compare=False, repr=False, hash=False)

    def width(self) -> int:
        return max(1, self.workers)

    def close(self) -> None:
        """End the kept pool (nothing without one); the next call starts a new one."""
        self._pool.close()

    def __enter__(self) -> LocalExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def map_unordered(self, fn: Callable[[T], R], items: Sequence[T]) -> Iterator[tuple[int, R]]:
        if self.workers <= 1 or len(items) <= 1:
            for i, item in enumerate(items):
                yield i, fn(item)
            return
        if self.keep_pool:
            pool = self._pool.get(self.workers)
        else:
            pool = _new_pool(min(self.workers, len(items)))
        finished = False
        try:
            yield from drain({pool.submit(fn, it): i for i, it in enumerate(items)})
            finished = True
        finally:
            if finished:
                if not self.keep_pool:
                    pool.shutdown(wait=True)
            else:  # interrupted, an error, or the consumer stopped: do not wait for the rest
                _stop_pool(pool)
                if self.keep_pool:
                    self._pool.drop()


#: glibc mallopt parameters (malloc.h) and the values restored in a Dask worker: the
#: largest dynamic mmap threshold of 64-bit glibc (DEFAULT_MMAP_THRESHOLD_MAX) and twice it
#: for trimming.
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD_BYTES = 32 * 1024 * 1024


def protect_malloc() -> bool:
    """Undo a ``MALLOC_TRIM_THRESHOLD_`` in this process's environment (Linux, glibc).

    Dask's worker manager (the nanny) starts workers with ``MALLOC_TRIM_THRESHOLD_=65536``
    to hand memory back to the system. Setting it also fixes glibc's mmap threshold at
    128 KiB (no dynamic adjustment), so every NumPy array above 128 KiB is a fresh mmap and
    its pages fault in again: measured, a local sweep's CPU doubled, half of it system
    time. Raising both thresholds to the dynamic maximum restores the default behaviour
    for the arrays a simulation makes. Returns whether it changed anything."""
    if "MALLOC_TRIM_THRESHOLD_" not in os.environ or not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None)
        ok = libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)
        ok &= libc.mallopt(M_TRIM_THRESHOLD, 2 * MMAP_THRESHOLD_BYTES)
    except (OSError, AttributeError):  # not glibc
        return False
    return bool(ok)


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


def check_scheduler_address(address: str, timeout_s: float = 3.0) -> None:
    """Fail fast, before any work, when ``tcp://HOST:PORT`` is malformed or refuses a TCP
    connection (the Dask client would retry for its whole timeout first)."""
    scheme, sep, rest = address.partition("://")
    if not sep:
        scheme, rest = "tcp", address
    if scheme not in ("tcp", "tls"):
        return  # inproc://, ucx://, ...: left to the Dask client
    host, _, port_text = rest.rpartition(":")
    host = host.strip("[]")
    try:
        port = int(port_text)
        if not 0 < port < 65536 or not host:
            raise ValueError
    except ValueError:
        raise SpecsimError(
            f"not a scheduler address {address!r} (expected tcp://HOST:PORT)", param="scheduler"
        ) from None
    import socket

    try:
        socket.create_connection((host, port), timeout=timeout_s).close()
    except OSError as exc:
        reason = exc.strerror or exc.__class__.__name__
        raise SpecsimError(
            f"cannot reach the Dask scheduler at {address}: {reason.lower()}", param="scheduler"
        ) from None


#: The environment variable that sets the default worker count of the heavy studies.
WORKERS_ENV = "SPECSIM_WORKERS"


def default_workers() -> int:
    """The local workers of a heavy study when ``--workers`` is not given: ``SPECSIM_WORKERS``
    when set (a whole number >= 1), else the processors this process may run on (its CPU
    affinity, which a container or ``taskset`` narrows). Results never depend on it."""
    text = os.environ.get(WORKERS_ENV)
    if text is not None and text.strip():
        try:
            n = int(text)
            if n < 1:
                raise ValueError
        except ValueError:
            raise SpecsimError(
                f"{WORKERS_ENV}={text!r}: expected a whole number >= 1", param="workers"
            ) from None
        return n
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # no sched_getaffinity (macOS)
        return max(1, os.cpu_count() or 1)


def resolve_workers(kind: str, workers: int | None) -> int:
    """``workers`` as given, or when None the default of ``kind``: ``default_workers()`` for
    the local pool, 1 for Dask (whose cluster has its own workers)."""
    if workers is not None:
        return workers
    return default_workers() if kind == "local" else 1


def make_executor(kind: str, *, workers: int | None = 1, scheduler: str | None = None) -> Executor:
    """``local`` (process pool of ``workers``; None: ``default_workers()``) or ``dask``
    (needs ``scheduler``, reachable; ``workers`` 1 or None). A setting the chosen executor
    would not use is refused rather than ignored."""
    if kind == "local":
        if scheduler is not None:
            raise SpecsimError(
                "only the dask executor has a scheduler: add --executor dask", param="scheduler"
            )
        return LocalExecutor(resolve_workers(kind, workers), keep_pool=True)
    if kind == "dask":
        if not scheduler:
            raise SpecsimError("the dask executor needs a scheduler address", param="scheduler")
        if workers not in (1, None):
            raise SpecsimError(
                "the dask cluster's own workers run the points; --workers is for the local "
                "executor",
                param="workers",
            )
        check_scheduler_address(scheduler)
        return DaskExecutor(scheduler)
    raise SpecsimError(f"unknown executor {kind!r} (local or dask)", param="executor")
