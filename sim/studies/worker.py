"""What a Dask worker loads once, at its start (``dask worker ADDR --preload sim.studies.worker``).

Without it, each worker imports the simulation when the first task of the first command
it serves arrives, inside that command (docs/cluster.md measures it). With it, the import
happens once when the worker starts, before any command; the tasks are the same tasks,
every result identical. It also undoes the nanny's malloc setting at start
(``sim.parallel.protect_malloc``); each task still does so too, for workers started
without this module.

The modules are those whose functions the heavy commands send as tasks: ``sweep``'s
points, the studies' (load, policy) points and their blocks of replications, and
``tree-load``'s draws. Dask calls ``dask_setup(worker)`` after the import.
"""

from __future__ import annotations

from typing import Any

from sim.parallel import protect_malloc
from sim.simulation.serving import simulate
from sim.studies import sweep
from sim.studies.serving import point_tasks

__all__ = ["TASK_MODULES", "dask_setup"]

#: The modules whose functions the heavy commands send as tasks, loaded by importing this
#: one: blocks of replications and tree-load's draws, the studies' points, sweep's points.
TASK_MODULES = (simulate, point_tasks, sweep)


def dask_setup(worker: Any) -> None:
    """Dask's preload hook: undo a ``MALLOC_TRIM_THRESHOLD_`` in this worker process once
    (a nanny sets it; ``protect_malloc``). ``worker``: the Dask worker (unused)."""
    protect_malloc()
