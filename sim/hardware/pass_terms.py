"""The token-count terms of batched passes kept per physics (``PassTerms``): a table a
builder shares with every pass it builds, bounded, keyed by the physics' printed form
(``physics_key``), and pickled as its owner's name so that a worker process keeps one copy
of each (``received_terms``)."""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable
from dataclasses import fields

from sim.hardware.envelope import Envelope
from sim.hardware.launch import KernelSchedule
from sim.hardware.pass_physics import MeasuredPass, PassPhysics
from sim.hardware.passes import HardwarePoint, PassMemo

#: Physics a ``PassTerms`` keeps terms for (the oldest dropped), entries per physics
#: (emptied when full), and entries of all its physics together (the oldest physics dropped
#: while a new one would start above it; an entry is about 0.75 KB, so at most about
#: 200 MB). A study's interval draws each bring six passes of their own physics (a default
#: ``crossover``: 9 scenarios, 54 physics, 25,000 entries): with room for only 32 of them the
#: draws, visited in turn at every bisection step, found their tables dropped and computed
#: every prompt length's terms again (96,000 times, 27% of its CPU).
SHARED_PHYSICS = 1024
SHARED_ENTRIES = 1 << 16
SHARED_TERMS = 1 << 18

Terms = dict[tuple[int, int | None], tuple[float, float, Envelope]]
#: A physics' measured points -> their (work ms, calibrated compute ms).
Points = dict["MeasuredPass", tuple[float, float]]


#: ``PassPhysics`` fields but its hardware, in their order (``physics_key``).
_KEYED_FIELDS = tuple(f.name for f in fields(PassPhysics) if f.name != "hardware")
#: Hardware points whose printed form a ``PassTerms`` keeps (emptied when full).
SHARED_HARDWARE = 64


def physics_key(physics: PassPhysics, hardware: str | None = None) -> str:
    """``repr(physics.hardware)`` (or ``hardware``, that repr as printed before) followed by
    the repr of every other field's value in order: every field of its frozen dataclasses
    and pydantic models prints in full (floats round-trip, strings, tuples and dicts; no
    arrays), so equal keys are equal physics and a hit is the same computation. Unlike
    pickled bytes it does not depend on which sub-objects a copy shares. The hardware's
    repr (its interconnect's and GPU's figures) is about 95% of the cost of printing a
    physics, and every pass of a setup, and of a fit's every step, runs on one hardware
    point."""
    head = repr(physics.hardware) if hardware is None else hardware
    key = head + repr(tuple(getattr(physics, name) for name in _KEYED_FIELDS))
    if "array(" in key:  # an array's repr may elide its middle
        raise ValueError("a pass's physics must not hold arrays")
    return key


class PassTerms:
    """The token-count terms of batched passes, a table per physics (``physics_key``):
    {(tokens, sequences): terms}. What is built once holds one and hands it to every pass
    it builds (a serving setup's cost, a study's plan builder: sim/studies/serving/
    scenario_plans.py ``ScenarioPlans``, whose plans per load and k meet the same prompt
    lengths again), so passes of equal physics compute each token count once. At most
    ``SHARED_PHYSICS`` physics of ``SHARED_ENTRIES`` entries each, and a new physics drops
    the oldest while they hold ``SHARED_TERMS`` entries together.

    Pickled as its owner's name only (``owner``, random): every copy a process receives of
    one table (a worker's tasks, each carrying the study's table) is one table there
    (``received_terms``), so a worker's later tasks reuse what its earlier ones computed,
    as the study's own process does. The terms are a pure function of the physics and the
    token count, so which copy computed an entry never changes a number."""

    __slots__ = ("_hardware", "_kernels", "_last", "_lock", "_points", "_tables", "owner", "passes")

    def __init__(self, owner: str | None = None) -> None:
        self._tables: dict[str, Terms] = {}
        #: id(hardware point) -> (that point, its repr): held, so its id is not reused
        self._hardware: dict[int, tuple[HardwarePoint, str]] = {}
        #: the last physics asked for and its key (a calibrated pass asks for one physics
        #: once a measured point and twice more: sim/hardware/calibrated_pass.py)
        self._last: tuple[PassPhysics, str] | None = None
        self._kernels: dict[str, dict[bool, KernelSchedule]] = {}
        self._points: dict[str, Points] = {}
        # taken while the tables change: a Dask worker with several threads builds plans
        # concurrently (two threads dropping the oldest physics at once raised KeyError)
        self._lock = threading.Lock()
        self.owner = os.urandom(8).hex() if owner is None else owner
        #: The batch-1 hardware model's answers (sim/hardware/passes.py ``PassMemo``) for
        #: every scenario the owner binds: its draws at each load and k ask them again.
        self.passes = PassMemo()

    def __reduce__(self) -> tuple[Callable[[str], PassTerms], tuple[str]]:
        return received_terms, (self.owner,)

    def of(self, physics: PassPhysics) -> tuple[Terms, dict[bool, KernelSchedule], Points]:
        """The table kept for ``physics``, the newest kept, its kernel schedules by
        whether the pass is graphed (``pass_kernels``: the same for every token count, so
        built once a physics for every pass and measured point of it) and its measured
        points' (work, compute) ms (``_point_compute``: a load fit's every step calibrates
        the same batch-1 points again)."""
        last = self._last
        if last is not None and last[0] is physics:
            key = last[1]
        else:
            key = physics_key(physics, self._hardware_repr(physics.hardware))
            self._last = (physics, key)
        with self._lock:
            terms = self._tables.pop(key, None)
            if terms is None:
                terms = {}
                tables = self._tables
                while tables and (
                    len(tables) >= SHARED_PHYSICS or sum(map(len, tables.values())) >= SHARED_TERMS
                ):
                    oldest = next(iter(tables))
                    del tables[oldest]
                    self._kernels.pop(oldest, None)
                    self._points.pop(oldest, None)
            self._tables[key] = terms  # the newest last
            kernels = self._kernels.setdefault(key, {})
            points = self._points.setdefault(key, {})
        return terms, kernels, points

    def _hardware_repr(self, hardware: HardwarePoint) -> str:
        """``repr(hardware)``, printed once a hardware point object (a frozen dataclass of
        pydantic models, so its repr never changes): at most ``SHARED_HARDWARE`` kept."""
        found = self._hardware.get(id(hardware))
        if found is None or found[0] is not hardware:
            found = (hardware, repr(hardware))
            with self._lock:
                if len(self._hardware) >= SHARED_HARDWARE:
                    self._hardware.clear()
                self._hardware[id(hardware)] = found
        return found[1]


#: The tables this process keeps of other processes' owners (``PassTerms`` pickled by
#: their owner's name): at most this many owners, the least recently received dropped.
RECEIVED_TABLES = 4


@functools.lru_cache(maxsize=RECEIVED_TABLES)
def received_terms(owner: str) -> PassTerms:
    """This process's one copy of ``owner``'s table (empty when first received): a memo of
    pure results per process. A pool or Dask worker runs many tasks of one study, and each
    task's passes would otherwise compute every token count's terms again (measured: a
    40-point serving sweep's tasks, pickled one by one, took 1.5x the CPU)."""
    return PassTerms(owner)
