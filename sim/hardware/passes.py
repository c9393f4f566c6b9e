"""One pass on one piece of hardware: compute + tensor-parallel all-reduces + kernel launch.

- communication = layers x all-reduces per layer x all-reduce time for the pass's message
  (tokens x hidden_size x activation_bytes; sim/hardware/allreduce.py, with the library
  the hardware point names);
- launch = kernels per layer x layers x the CPU cost of one eager kernel, only when the
  pass is not graphed (sim/hardware/eager.py); the pass ends at the critical path of GPU
  work and CPU issue work (sim/hardware/launch.py), i.e. max(GPU work, CPU launch work) up
  to one kernel;
- compute = what is left: given (derived), or calibrated so that the pass reproduces a
  measured time on the hardware it was measured on (``calibrate_pass``).

Physics only: no scenario here (sim/hardware/pass_model.py composes every pass of one
configuration from it; sim/binding/decompose.py reads a scenario into that).

Memoised by an owner: a pass's calibrated compute, its composition and the per-kernel CPU
cost that a measured ungraphed pass fixes are pure functions of frozen inputs (the pass
shape, the hardware point, the geometry and the times). A ``PassMemo`` keeps them for
whoever holds it: a pass model its own (``PassModel.memo``), a study one for every
scenario it binds (sim/hardware/pass_terms.py ``PassTerms.passes``: a serving study's draws
at every load and k ask the same questions of the hardware model over and over), a fit
one for every trial scenario (sim/calibration/calibrate.py: the base's model's, passed
to the timing fit's residuals; sim/calibration/load_fit.py: one a load fit). Without
one each call computes afresh; the answers are the same floats either way. Errors are not
memoised (each call raises afresh).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, TypeVar

from sim.errors import SpecsimError
from sim.hardware.allreduce import AllReduceTime, allreduce_time
from sim.hardware.eager import EagerCosts, eager_schedule
from sim.hardware.gpus import GpuPreset
from sim.hardware.interconnects import Interconnect
from sim.hardware.launch import (
    KernelSchedule,
    calibrate_compute_ms,
    calibrate_cpu_scale,
    critical_path_ms,
    floor_ms,
)

#: The passes of a speculative cycle (and of plain decoding: ``decode``).
PASS_NAMES: tuple[str, ...] = ("decode", "verify", "draft_step", "draft_extend")
#: Entries a ``PassMemo`` keeps of calibrated computes and per-kernel costs (the oldest
#: dropped when full): a search over k = 1..32 on two hardware points asks for about 150
#: distinct passes; an entry holds the pass's kernel schedule (about 60 kB at 61 layers).
MEMO_SIZE = 1024
#: Entries it keeps of composed passes (a breakdown, a few hundred bytes): `hardware` on
#: the seed composes about 1,430 distinct passes, a fit's trials of a derived verify
#: table over 2,000.
COMPOSED_SIZE = 4096

R = TypeVar("R")


class PassMemo:
    """The answers of ``compose_pass``, ``calibrate_pass`` and ``calibrate_launch_us``
    its holder met (module docstring): one table each, {inputs: answer}, at most
    ``COMPOSED_SIZE`` or ``MEMO_SIZE`` entries (the oldest dropped when full). Keys hold
    each float's type beside it (``1`` and ``1.0`` are other inputs, as ``compute_ms`` is
    kept as given). Pickled empty: a copy sent to another process starts its own
    (``PassTerms`` carries a study's to its workers' tables). A Dask worker's threads may
    share one: an entry is added, and the oldest dropped, under its lock."""

    __slots__ = ("_lock", "composed", "computes", "launches")

    def __init__(self) -> None:
        self.composed: dict[Hashable, PassBreakdown] = {}
        self.computes: dict[Hashable, tuple[float | None, KernelSchedule]] = {}
        self.launches: dict[Hashable, float] = {}
        self._lock = threading.Lock()

    def __reduce__(self) -> tuple[type[PassMemo], tuple[()]]:
        return PassMemo, ()

    def kept(
        self,
        table: dict[Hashable, R],
        size: int,
        key: Hashable,
        make: Callable[..., R],
        *args: Any,
    ) -> R:
        """``table[key]`` (one of this memo's tables, at most ``size`` entries), made by
        ``make(*args)`` and kept the first time; an error is raised, not kept."""
        found = table.get(key)
        if found is None:
            found = make(*args)
            with self._lock:
                if len(table) >= size:
                    del table[next(iter(table))]  # the oldest (a dict keeps insertion order)
                table[key] = found
        return found


@dataclass(frozen=True, slots=True)
class HardwarePoint:
    """The hardware a pass runs on. ``launch_us``: CPU cost per eager kernel (all-in,
    sim/hardware/eager.py); ``allreduce``: ``nccl``, ``custom`` or ``auto``
    (sim/hardware/allreduce.py)."""

    interconnect: Interconnect
    gpus: int
    gpu: GpuPreset | None
    verify_cuda_graph: bool
    launch_us: float
    allreduce: str = "auto"

    def __hash__(self) -> int:
        # The interconnect (a pydantic model holding mappings) has no hash: its name stands
        # for it here, while equality still compares every field of every member, so two
        # interconnects that share a name but not their figures are never taken as one.
        return hash((*self.key(), self.launch_us))

    def key(self) -> tuple[str, int, str | None, bool, str]:
        return (
            self.interconnect.name,
            self.gpus,
            None if self.gpu is None else self.gpu.name,
            self.verify_cuda_graph,
            self.allreduce,
        )

    def with_launch_us(self, launch_us: float) -> HardwarePoint:
        if launch_us == self.launch_us and type(launch_us) is type(self.launch_us):
            return self
        ic, gpus, gpu, graph = self.interconnect, self.gpus, self.gpu, self.verify_cuda_graph
        return HardwarePoint(ic, gpus, gpu, graph, launch_us, self.allreduce)


@dataclass(frozen=True, slots=True)
class Geometry:
    """What the hardware model needs to know about the target model and drafter."""

    layers: int
    draft_layers: int
    hidden_size: int
    kernels_per_layer: int | None
    allreduces_per_layer: int
    activation_bytes: int
    moe: bool = False  # routed experts (model.experts given): the layer's kernel count differs


#: Kernels one eager decoder layer issues, (low, high), for the error that asks for
#: ``model.kernels_per_layer``: a dense layer roughly 11-18 (docs/reference.md §All-reduce;
#: pie #348 counted ~15), a routed-MoE layer of the DeepSeek-V3 family (Kimi-K2.5) under
#: SGLang 28-42, counted op by op from its source (sim/validation/hardware_data.py
#: ``SGLANG_KIMI_LAYER_OPS``; a test keeps the two equal).
DENSE_LAYER_KERNELS = (11, 18)
MOE_LAYER_KERNELS = (28, 42)
#: The same DeepSeek-V3 MoE layer in TensorRT-LLM's PyTorch backend (TRTLLM-Gen MoE
#: backend), counted op by op (sim/validation/hardware_data.py
#: ``TRTLLM_DEEPSEEK_V3_LAYER_OPS``; a test keeps the two equal): ``specsim init --engine
#: trtllm``'s range for a routed-MoE layer.
TRTLLM_MOE_LAYER_KERNELS = (19, 28)


@dataclass(frozen=True, slots=True)
class PassShape:
    """One pass: its name, tokens processed, decoder layers, and whether it is graphed."""

    name: str
    tokens: int
    layers: int
    graphed: bool


@dataclass(frozen=True, slots=True)
class PassBreakdown:
    """A pass time taken apart (ms). ``launch_ms`` is the CPU launch work (0 when graphed);
    ``total_ms`` the critical path of GPU work and launch work; ``origin`` is ``measured``,
    ``recomposed`` (measured elsewhere, moved to this hardware) or ``derived``."""

    name: str
    tokens: int
    graphed: bool
    compute_ms: float
    allreduces: int
    allreduce: AllReduceTime
    message_bytes: int
    launch_ms: float
    total_ms: float
    origin: str

    @property
    def comm_ms(self) -> float:
        return self.allreduces * self.allreduce.us / 1000.0

    @property
    def gpu_ms(self) -> float:
        return self.compute_ms + self.comm_ms

    @property
    def launch_bound(self) -> bool:
        return self.launch_ms > self.gpu_ms


# --------------------------------------------------------------------------- one pass


def pass_schedule(
    shape: PassShape, hw: HardwarePoint, geom: Geometry
) -> tuple[KernelSchedule, AllReduceTime, int]:
    """(kernel schedule, all-reduce per call, message bytes) of a pass on ``hw``:
    ``pass_kernels`` with ``pass_allreduce``'s time on every all-reduce kernel."""
    ar, nbytes = pass_allreduce(shape, hw, geom)
    return pass_kernels(shape, hw, geom).with_allreduce_ms(ar.us / 1000.0), ar, nbytes


def pass_allreduce(
    shape: PassShape, hw: HardwarePoint, geom: Geometry
) -> tuple[AllReduceTime, int]:
    """(all-reduce per call, message bytes) of a pass on ``hw``: a message of tokens x
    hidden size x activation bytes (sim/hardware/allreduce.py)."""
    nbytes = shape.tokens * geom.hidden_size * geom.activation_bytes
    ar = allreduce_time(
        hw.interconnect, hw.gpus, nbytes, graphed=shape.graphed, library=hw.allreduce
    )
    return ar, nbytes


def pass_kernels(shape: PassShape, hw: HardwarePoint, geom: Geometry) -> KernelSchedule:
    """The pass's kernel schedule with all-reduces of 0 ms (``pass_schedule`` sets their
    time): the same for every token count (``shape.tokens`` is not read)."""
    kernels = geom.kernels_per_layer
    if kernels is None:
        if not shape.graphed:
            if geom.moe:
                low, high = MOE_LAYER_KERNELS
                typical = (
                    f"a routed-MoE layer run eagerly issues about {low}-{high} kernels (SGLang's "
                    "DeepSeek-V3/Kimi layer, counted from its source: "
                    "sim/validation/hardware_data.py)"
                )
            else:
                low, high = DENSE_LAYER_KERNELS
                typical = (
                    f"a dense transformer layer runs roughly {low}-{high} kernels "
                    "(docs/reference.md §All-reduce)"
                )
            raise SpecsimError(
                f"needed for the launch cost of the ungraphed {shape.name} pass: {typical}",
                field="model.kernels_per_layer",
            )
        kernels = geom.allreduces_per_layer + max(geom.allreduces_per_layer, 1)
    return eager_schedule(
        layers=shape.layers,
        kernels_per_layer=kernels,
        allreduces_per_layer=geom.allreduces_per_layer,
        allreduce_ms=0.0,
        tensor_parallel=hw.gpus > 1,
        costs=EagerCosts(kernel_us=hw.launch_us),
        mode="graphed" if shape.graphed else "eager",
    )


def _as_key(shape: PassShape, hw: HardwarePoint) -> HardwarePoint:
    """``hw`` as a memo key for ``shape``: a graphed pass issues no kernel from the CPU, so
    the per-kernel cost cannot change it and is left out of the key."""
    return hw.with_launch_us(0.0) if shape.graphed else hw


def compose_pass(
    shape: PassShape,
    hw: HardwarePoint,
    geom: Geometry,
    compute_ms: float,
    origin: str,
    memo: PassMemo | None = None,
) -> PassBreakdown:
    """The pass on ``hw`` with the given compute time (kept in ``memo``: module
    docstring)."""
    key = _as_key(shape, hw)
    if memo is None:
        return _compose_pass(shape, key, geom, compute_ms, origin)
    return memo.kept(
        memo.composed,
        COMPOSED_SIZE,
        (shape, key, geom, compute_ms, type(compute_ms), origin),
        _compose_pass,
        *(shape, key, geom, compute_ms, origin),
    )


def _compose_pass(
    shape: PassShape, hw: HardwarePoint, geom: Geometry, compute_ms: float, origin: str
) -> PassBreakdown:
    schedule, ar, nbytes = pass_schedule(shape, hw, geom)
    return PassBreakdown(
        name=shape.name,
        tokens=shape.tokens,
        graphed=shape.graphed,
        compute_ms=compute_ms,
        allreduces=int(schedule.is_allreduce.sum()),
        allreduce=ar,
        message_bytes=nbytes,
        launch_ms=schedule.launch_work_ms,
        total_ms=critical_path_ms(schedule, compute_ms),
        origin=origin,
    )


def calibrate_pass(
    shape: PassShape,
    hw: HardwarePoint,
    geom: Geometry,
    measured_ms: float,
    field: str,
    given: str | None = None,
    launch_stated: bool | None = None,
    memo: PassMemo | None = None,
) -> float:
    """Compute time (ms) that reproduces ``measured_ms`` on ``hw``; SpecsimError below floor
    (``given``: how the measured time came from what the user gave, if not given as is).

    ``launch_stated`` (not None): an ungraphed pass below its floor is first checked for
    launches that alone, at ``hw.launch_us`` (stated in the file when True, the public
    default when False), take longer than ``measured_ms``: that error names the field
    behind the cost and the largest cost the measurement allows (``memo``: module
    docstring)."""
    key = _as_key(shape, hw)
    compute_ms, schedule = (
        _calibrated_compute_ms(shape, key, geom, measured_ms)
        if memo is None
        else memo.kept(
            memo.computes,
            MEMO_SIZE,
            (shape, key, geom, measured_ms, type(measured_ms)),
            _calibrated_compute_ms,
            *(shape, key, geom, measured_ms),
        )
    )
    if compute_ms is not None:
        return compute_ms
    if launch_stated is not None and not shape.graphed:
        _raise_launches_exceed(shape, hw, geom, schedule, measured_ms, launch_stated)
    tokens = f"{shape.tokens} token{'s' if shape.tokens != 1 else ''}"
    raise SpecsimError(
        f"{given or f'{measured_ms:.4g} ms'} (over {tokens}) is less than the modelled "
        f"communication {schedule.fixed_total_ms:.4g} ms plus launch "
        f"{schedule.launch_work_ms:.4g} ms (critical path {floor_ms(schedule):.4g} ms) on "
        f"{hw.gpus}x {hw.interconnect.name}; check the timing, model.kernels_per_layer, "
        "hardware.launch_us or timing.measured_on",
        field=field,
    )


def _raise_launches_exceed(
    shape: PassShape,
    hw: HardwarePoint,
    geom: Geometry,
    schedule: KernelSchedule,
    measured_ms: float,
    stated: bool,
) -> None:
    """SpecsimError for an ungraphed measured pass whose launches alone, at ``hw``'s
    per-kernel cost, take longer than it: names the field behind the cost (``stated``:
    ``hardware.launch_us``, else the kernel count) and the largest cost the measurement
    allows (no-op when the launches fit and something else is wrong)."""
    if schedule.launch_work_ms <= measured_ms:
        return
    try:
        largest = calibrate_launch_us(shape, hw, geom, 0.0, measured_ms)
    except ValueError:
        largest = 0.0
    cost = "stated" if stated else "the public default"
    raise SpecsimError(
        f"{shape.layers} layers x {geom.kernels_per_layer} kernels at "
        f"{hw.launch_us:.4g} us a kernel ({cost}) take "
        f"{schedule.launch_work_ms:.4g} ms to launch, more than the measured ungraphed "
        f"{shape.name} ({measured_ms:.4g} ms): set timing.verify_compute = 'decode' to "
        "derive the per-kernel cost from it, or a hardware.launch_us of at most "
        f"{largest:.4g} us",
        field="hardware.launch_us" if stated else "model.kernels_per_layer",
    )


def _calibrated_compute_ms(
    shape: PassShape, hw: HardwarePoint, geom: Geometry, measured_ms: float
) -> tuple[float | None, KernelSchedule]:
    """(``calibrate_compute_ms`` of the pass's schedule, None below its floor; the
    schedule)."""
    schedule, _, _ = pass_schedule(shape, hw, geom)
    try:
        return calibrate_compute_ms(schedule, measured_ms), schedule
    except ValueError:
        return None, schedule


def calibrate_launch_us(
    shape: PassShape,
    hw: HardwarePoint,
    geom: Geometry,
    compute_ms: float,
    measured_ms: float,
    memo: PassMemo | None = None,
) -> float:
    """The per-kernel CPU cost (us) at which the ungraphed pass ``shape`` with
    ``compute_ms`` of GPU compute takes ``measured_ms`` on ``hw`` (whose own ``launch_us``
    is not used): every CPU issue cost scales with it, so the exact inversion of
    sim/hardware/launch.py applies to the schedule at 1 us a kernel (kept in ``memo``).
    Raises ValueError when the GPU work alone exceeds ``measured_ms``."""
    unit_hw = hw.with_launch_us(1.0)
    if memo is None:
        return _launch_us(shape, unit_hw, geom, compute_ms, measured_ms)
    return memo.kept(
        memo.launches,
        MEMO_SIZE,
        (shape, unit_hw, geom, compute_ms, type(compute_ms), measured_ms, type(measured_ms)),
        _launch_us,
        *(shape, unit_hw, geom, compute_ms, measured_ms),
    )


def _launch_us(
    shape: PassShape, unit_hw: HardwarePoint, geom: Geometry, compute_ms: float, measured_ms: float
) -> float:
    schedule, _, _ = pass_schedule(shape, unit_hw, geom)
    return calibrate_cpu_scale(schedule, compute_ms, measured_ms)
