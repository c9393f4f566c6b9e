"""Kernel launch model: one pass as a sequence of kernels on one GPU stream.

Each layer is ``segments`` (= all-reduces per layer, attention and MLP/MoE) of compute
kernels, each segment ending with an all-reduce kernel. With a CUDA graph the whole pass is
launched at once; without one the CPU spends ``c_i`` issuing kernel ``i`` (the serving
framework's Python, PyTorch's dispatch and the launch itself; sim/hardware/eager.py) and the
GPU cannot start a kernel before it is issued. The pass then ends at the critical path

    T(x) = max_i ( C_i + sum_{j >= i} g_j(x) ),    C_i = c_0 + ... + c_i,
    g_j(x) = s_j x + a_j,

with ``x`` the pass's compute time, ``s_j`` the share of compute in kernel ``j`` and ``a_j``
its fixed (all-reduce) time. T is max(GPU work, CPU launch work) up to one kernel: about
``c_0 + x + sum a`` when the GPU is the bottleneck and ``sum c + g_last`` when launch-bound.

A host synchronisation after kernel ``i`` (``.item()``, ``.tolist()``, a blocking copy) makes
the CPU wait until the GPU has finished kernel ``i`` and then ``sync_ms`` more before it
issues kernel ``i + 1``: the pass splits into independent stretches, each with the critical
path above (its own cumulative CPU times), and

    T(x) = sum_stretches max_{i in stretch} ( C_i + sum_{j >= i in stretch} g_j(x) )
           + (number of syncs before the last kernel) x sync_ms.

T is convex, piecewise linear and nondecreasing in x; ``calibrate_compute_ms`` inverts it
exactly. The layer-level SimPy pass (sim/hardware/layer.py) reproduces T exactly without
jitter.
"""

from __future__ import annotations

import copy
import functools
import itertools
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class KernelSchedule:
    """The kernels of one pass in issue order. Arrays have shape (num_kernels,).

    ``compute_share``: fraction of the pass's compute in each kernel (sums to 1);
    ``fixed_ms``: non-compute GPU time of each kernel (an all-reduce's; an unfused op's or
    another path's extra work, sim/hardware/eager.py);
    ``is_allreduce``: True for all-reduce kernels (TP barriers);
    ``segment``: index of the layer segment (layer x segments + s) each kernel belongs to;
    ``cpu_ms``: CPU time to issue each kernel (all zero when the pass is graphed);
    ``host_sync``: True where the CPU waits for the GPU to finish the kernel before going on;
    ``sync_ms``: CPU time one host synchronisation adds after the GPU has caught up.
    """

    compute_share: np.ndarray
    fixed_ms: np.ndarray
    is_allreduce: np.ndarray
    segment: np.ndarray
    cpu_ms: np.ndarray
    host_sync: np.ndarray
    sync_ms: float = 0.0

    def __post_init__(self) -> None:
        n = self.compute_share.shape[0]
        for name in ("fixed_ms", "is_allreduce", "segment", "cpu_ms", "host_sync"):
            if getattr(self, name).shape != (n,):
                raise ValueError(f"{name} must have shape ({n},)")
        if np.any(self.cpu_ms < 0) or np.any(self.fixed_ms < 0) or self.sync_ms < 0:
            raise ValueError("CPU, fixed and sync times must be >= 0")

    def with_allreduce_ms(self, allreduce_ms: float) -> KernelSchedule:
        """This schedule with every all-reduce kernel's fixed time set to ``allreduce_ms``
        (the other kernels' unchanged; the other arrays, and what ``_fixed_free`` keeps
        of them, shared)."""
        if allreduce_ms < 0:
            raise ValueError("CPU, fixed and sync times must be >= 0")
        schedule = copy.copy(self)  # checked already, but for the new fixed times
        fixed = np.where(self.is_allreduce, allreduce_ms, self.fixed_ms)
        object.__setattr__(schedule, "fixed_ms", fixed)
        return schedule

    def with_head_kernels(
        self, layers: int, per_layer: int, fixed_ms: float, cpu_ms: float
    ) -> KernelSchedule:
        """This schedule with ``per_layer`` more kernels at the head of each of its
        ``layers`` layers: no compute share, ``fixed_ms`` of GPU time and ``cpu_ms`` of CPU
        to issue each, no all-reduce and no sync (unfused ops, sim/hardware/eager.py)."""
        n = self.num_kernels
        at = np.repeat(np.arange(layers) * (n // layers), per_layer)
        return KernelSchedule(
            compute_share=np.insert(self.compute_share, at, 0.0),
            fixed_ms=np.insert(self.fixed_ms, at, fixed_ms),
            is_allreduce=np.insert(self.is_allreduce, at, False),
            segment=np.insert(self.segment, at, self.segment[at]),
            cpu_ms=np.insert(self.cpu_ms, at, cpu_ms),
            host_sync=np.insert(self.host_sync, at, False),
            sync_ms=self.sync_ms,
        )

    def read_only(self) -> KernelSchedule:
        """This schedule with its arrays (and ``_fixed_free``'s) made read-only, to share
        it safely."""
        for name in ("compute_share", "fixed_ms", "is_allreduce", "segment", "cpu_ms", "host_sync"):
            getattr(self, name).flags.writeable = False
        for _, issued, share in self._fixed_free:  # computed once, for every copy
            issued.flags.writeable = share.flags.writeable = False
        self.syncs_ms  # noqa: B018 (cached: every copy carries it)
        self.shares_descending  # noqa: B018
        return self

    @property
    def num_kernels(self) -> int:
        return int(self.compute_share.shape[0])

    @property
    def launch_work_ms(self) -> float:
        """CPU time to issue every kernel: sum of c_i (syncs not included)."""
        return float(self.cpu_ms.sum())

    @property
    def eager(self) -> bool:
        """True when the CPU issues kernels one by one (some issue cost or a sync)."""
        return bool(np.any(self.cpu_ms > 0) or np.any(self.host_sync))

    @property
    def fixed_total_ms(self) -> float:
        return float(self.fixed_ms.sum())

    @functools.cached_property
    def syncs_ms(self) -> float:
        """Time the syncs before the last kernel add: their count x sync_ms (kept through
        ``with_allreduce_ms``, which changes neither)."""
        return float(np.count_nonzero(self.host_sync[:-1])) * self.sync_ms

    @functools.cached_property
    def shares_descending(self) -> tuple[bool, ...]:
        """Per stretch (``stretch_terms``' order): whether its compute share suffix never
        increases along the stretch (so its lines' slopes do not increase with their index:
        sim/hardware/envelope.py takes their envelope without a sort). Kept through
        ``with_allreduce_ms`` (the shares do not change)."""
        return tuple(
            not bool(np.greater(share[1:], share[:-1]).any()) for _, _, share in self._fixed_free
        )

    def stretches(self) -> list[slice]:
        """Kernel ranges between host syncs (a sync closes its stretch)."""
        ends = np.flatnonzero(self.host_sync[:-1]) + 1
        bounds = [0, *ends.tolist(), self.num_kernels]
        return [slice(a, b) for a, b in itertools.pairwise(bounds) if b > a]

    def _terms(self, part: slice) -> tuple[np.ndarray, np.ndarray]:
        """(a_i, f_i) of one stretch: its time is max_i a_i + f_i x; shapes (len,)."""
        issued = np.cumsum(self.cpu_ms[part])
        fixed_suffix = np.cumsum(self.fixed_ms[part][::-1])[::-1]
        share_suffix = np.cumsum(self.compute_share[part][::-1])[::-1]
        return issued + fixed_suffix, share_suffix

    @functools.cached_property
    def _fixed_free(self) -> list[tuple[slice, np.ndarray, np.ndarray]]:
        """(stretch, cumulative CPU, compute share suffix) of every stretch: the parts of
        ``_terms`` that do not depend on ``fixed_ms`` (kept through ``with_allreduce_ms``)."""
        return [
            (part, np.cumsum(self.cpu_ms[part]), np.cumsum(self.compute_share[part][::-1])[::-1])
            for part in self.stretches()
        ]

    def stretch_terms(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """``_terms`` of every stretch, in order."""
        fixed = self.fixed_ms
        # add.accumulate: ``np.cumsum`` without its Python wrapper (the same sums)
        return [
            (issued + np.add.accumulate(fixed[part][::-1])[::-1], share)
            for part, issued, share in self._fixed_free
        ]


def kernel_schedule(
    *,
    layers: int,
    kernels_per_layer: int,
    allreduces_per_layer: int,
    allreduce_ms: float,
    tensor_parallel: bool,
    launch_ms: float,
    allreduce_launch_ms: float | None = None,
) -> KernelSchedule:
    """Kernels of a pass: per layer, ``allreduces_per_layer`` segments of compute kernels
    each closed by an all-reduce kernel (none without tensor parallelism).

    ``kernels_per_layer`` counts the all-reduce kernels; compute kernels are spread as
    evenly as possible over the segments and share the layer's compute equally. Every
    kernel costs ``launch_ms`` of CPU to issue (an all-reduce ``allreduce_launch_ms``,
    default the same); no host syncs (sim/hardware/eager.py adds them).
    """
    segments = max(allreduces_per_layer, 1)
    n_ar = allreduces_per_layer if tensor_parallel else 0
    n_compute = kernels_per_layer - allreduces_per_layer
    if n_compute < segments:
        raise ValueError(
            f"kernels_per_layer ({kernels_per_layer}) must exceed allreduces_per_layer "
            f"({allreduces_per_layer}) by at least one compute kernel per segment"
        )
    per_segment = [
        n_compute // segments + (1 if s < n_compute % segments else 0) for s in range(segments)
    ]
    layer_is_ar: list[bool] = []
    layer_segment: list[int] = []
    for s, count in enumerate(per_segment):
        layer_is_ar += [False] * count
        layer_segment += [s] * count
        if s < n_ar:
            layer_is_ar.append(True)
            layer_segment.append(s)
    is_ar = np.tile(np.array(layer_is_ar, dtype=bool), layers)
    per_layer = len(layer_segment)
    segment = np.tile(np.array(layer_segment), layers) + segments * (
        np.arange(layers * per_layer) // per_layer
    )
    share = np.where(is_ar, 0.0, 1.0 / (layers * n_compute))
    fixed = np.where(is_ar, allreduce_ms, 0.0)
    ar_launch = launch_ms if allreduce_launch_ms is None else allreduce_launch_ms
    cpu = np.where(is_ar, ar_launch, launch_ms)
    return KernelSchedule(share, fixed, is_ar, segment, cpu, np.zeros(is_ar.shape, dtype=bool))


def _stretch_terms(schedule: KernelSchedule) -> list[tuple[np.ndarray, np.ndarray]]:
    """(a_i, f_i) of every stretch: T(x) = sum_stretches max_i (a_i + f_i x) + syncs."""
    return [schedule._terms(part) for part in schedule.stretches()]


def _value_and_slope(
    terms: list[tuple[np.ndarray, np.ndarray]], const: float, t: float
) -> tuple[float, float]:
    """sum_k max_i (a_ki + f_ki t) + const and its right derivative in t."""
    total, slope = const, 0.0
    for a, f in terms:
        values = a + f * t
        best = float(values.max())
        total += best
        slope += float(f[values >= best - 1e-12 * max(1.0, abs(best))].max())
    return total, slope


def _largest_root(
    terms: list[tuple[np.ndarray, np.ndarray]], const: float, target: float, start: float
) -> float:
    """The largest t >= 0 with value(t) <= target, value convex piecewise linear and
    nondecreasing, from a ``start`` where value >= target: Newton's method from the right
    lands on the root of a supporting line each step, never overshoots, and ends exactly
    on the last linear piece."""
    t = start
    pieces = sum(a.shape[0] for a, _ in terms)
    for _ in range(4 * pieces + 8):
        value, slope = _value_and_slope(terms, const, t)
        excess = value - target
        if excess <= 1e-13 * max(1.0, abs(target)) or slope <= 0.0:
            break
        t = max(t - excess / slope, 0.0)
    return t


def critical_path_ms(schedule: KernelSchedule, compute_ms: float) -> float:
    """Pass time T(compute_ms) (see module docstring)."""
    return _value_and_slope(_stretch_terms(schedule), schedule.syncs_ms, compute_ms)[0]


def floor_ms(schedule: KernelSchedule) -> float:
    """T(0): the pass time with no compute at all (communication and launch only)."""
    return critical_path_ms(schedule, 0.0)


def calibrate_compute_ms(schedule: KernelSchedule, measured_ms: float) -> float:
    """The largest compute time x with T(x) <= measured_ms; T(x) == measured_ms exactly.

    Raises ValueError when ``measured_ms`` is below the floor T(0).
    """
    terms, syncs = _stretch_terms(schedule), schedule.syncs_ms
    floor = _value_and_slope(terms, syncs, 0.0)[0]  # floor_ms, on the terms built once
    if measured_ms < floor:
        raise ValueError(f"below the floor {floor:.4g} ms")
    # The shares sum to 1, so T(x) >= x and x = measured_ms starts at or above the root.
    return _largest_root(terms, syncs, measured_ms, measured_ms)


def calibrate_cpu_scale(schedule: KernelSchedule, compute_ms: float, measured_ms: float) -> float:
    """The largest factor s on every CPU issue cost (``cpu_ms``) with T <= measured_ms.

    For fixed compute, each stretch is max_i (s C_i + b_i) with C_i the cumulative CPU
    times and b_i the GPU work from kernel i on: convex and piecewise linear in s, so the
    same Newton inversion is exact. Raises ValueError when the GPU work alone (s = 0)
    already exceeds ``measured_ms`` or when the pass has no CPU issue work to scale.
    """
    terms = []
    for part in schedule.stretches():
        issued = np.cumsum(schedule.cpu_ms[part])
        fixed_suffix = np.cumsum(schedule.fixed_ms[part][::-1])[::-1]
        share_suffix = np.cumsum(schedule.compute_share[part][::-1])[::-1]
        terms.append((fixed_suffix + share_suffix * compute_ms, issued))
    zero, _ = _value_and_slope(terms, schedule.syncs_ms, 0.0)
    if zero > measured_ms:
        raise ValueError(f"the GPU work alone takes {zero:.4g} ms")
    reach = sum(float(f.max()) for _, f in terms)
    if reach <= 0.0:
        raise ValueError("the pass has no CPU issue work")
    return _largest_root(terms, schedule.syncs_ms, measured_ms, measured_ms / reach)
