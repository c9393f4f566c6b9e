"""The local process pool (``LocalExecutor``): its workers, which die with their parent
and leave interrupts to it, the pool kept for a whole study, stopping it at once on an
interrupt or an error, and ``drain``, results as their futures finish.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sim.parallel.executor import R, T

if TYPE_CHECKING:
    import multiprocessing.context
    from concurrent.futures import Future, ProcessPoolExecutor

# multiprocessing, concurrent.futures and ctypes are imported where a pool is used: a run in
# this process needs none of them (start-up).

__all__ = ["PR_SET_PDEATHSIG", "LocalExecutor", "drain"]


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
