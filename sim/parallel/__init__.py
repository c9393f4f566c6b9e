"""The one parallel executor of specsim: a local process pool or an existing Dask cluster.

``simulate`` (blocks of replications), ``search`` (draft lengths) and ``sweep`` (grid
points) all run their independent tasks through an ``Executor``. Every task carries its own
seed, so results never depend on the executor, the worker count or the order tasks finish.

Modules: ``executor`` (the ``Executor`` protocol, ``longest_first``, ``close_executor``),
``local`` (the local process pool, ``LocalExecutor``, ``drain``), ``dask_executor``
(``DaskExecutor`` on an existing Dask cluster), ``malloc`` (``protect_malloc``, a Dask
worker's allocator) and ``choice`` (``make_executor`` from a command's options, the
default worker count). The names below are the package's face.
"""

from sim.parallel.choice import (
    WORKERS_ENV,
    check_scheduler_address,
    default_workers,
    make_executor,
    resolve_workers,
)
from sim.parallel.dask_executor import NO_WORKERS_S, DaskExecutor
from sim.parallel.executor import Executor, close_executor, longest_first
from sim.parallel.local import LocalExecutor, drain
from sim.parallel.malloc import protect_malloc

__all__ = [
    "NO_WORKERS_S",
    "WORKERS_ENV",
    "DaskExecutor",
    "Executor",
    "LocalExecutor",
    "check_scheduler_address",
    "close_executor",
    "default_workers",
    "drain",
    "longest_first",
    "make_executor",
    "protect_malloc",
    "resolve_workers",
]
