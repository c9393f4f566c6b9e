"""The executor a command's options choose (``make_executor``): the local pool of
``--workers`` (default: ``SPECSIM_WORKERS`` or the processors this process may use) or the
Dask cluster at ``--scheduler``, checked before any work; a setting the chosen executor
would not use is refused.
"""

from __future__ import annotations

import os

from sim.errors import SpecsimError
from sim.parallel.dask_executor import DaskExecutor
from sim.parallel.executor import Executor
from sim.parallel.local import LocalExecutor

__all__ = [
    "WORKERS_ENV",
    "check_scheduler_address",
    "default_workers",
    "make_executor",
    "resolve_workers",
]


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
    import socket  # lazy: only a Dask run needs it (start-up)

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
