"""Kernel launch model: one pass as a sequence of kernels on one GPU stream.

Each layer is ``segments`` (= all-reduces per layer, attention and MLP/MoE) of compute
kernels, each segment ending with an all-reduce kernel. With a CUDA graph the whole pass is
launched at once; without one the CPU issues kernel ``i`` at ``(i + 1) c`` (``c`` the
launch cost per kernel, docs/reference.md §All-reduce: ~5 us per kernel) and the GPU cannot start a
kernel before it is issued. The pass then ends at the critical path

    T(x) = max_i ( (i + 1) c + sum_{j >= i} g_j(x) ),    g_j(x) = s_j x + a_j,

with ``x`` the pass's compute time, ``s_j`` the share of compute in kernel ``j`` and ``a_j``
its fixed (all-reduce) time. T is max(GPU work, CPU launch work) up to one kernel: about
``c + x + sum a`` when the GPU is the bottleneck and ``N c + g_last`` when launch-bound.
The layer-level SimPy pass (sim/engines/layer.py) reproduces T exactly without jitter.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class KernelSchedule:
    """The kernels of one pass in issue order. Arrays have shape (num_kernels,).

    ``compute_share``: fraction of the pass's compute in each kernel (sums to 1);
    ``fixed_ms``: non-compute GPU time (all-reduce) of each kernel;
    ``is_allreduce``: True for all-reduce kernels (TP barriers);
    ``segment``: index of the layer segment (layer x segments + s) each kernel belongs to;
    ``launch_ms``: CPU cost to issue one kernel (0 when the pass is graphed).
    """

    compute_share: np.ndarray
    fixed_ms: np.ndarray
    is_allreduce: np.ndarray
    segment: np.ndarray
    launch_ms: float

    @property
    def num_kernels(self) -> int:
        return int(self.compute_share.shape[0])

    @property
    def launch_work_ms(self) -> float:
        """CPU time to issue every kernel: N x c."""
        return self.num_kernels * self.launch_ms

    @property
    def fixed_total_ms(self) -> float:
        return float(self.fixed_ms.sum())

    def _terms(self) -> tuple[np.ndarray, np.ndarray]:
        """(a_i, f_i): T(x) = max_i a_i + f_i x; each of shape (num_kernels,)."""
        issued = self.launch_ms * np.arange(1, self.num_kernels + 1)
        fixed_suffix = np.cumsum(self.fixed_ms[::-1])[::-1]
        share_suffix = np.cumsum(self.compute_share[::-1])[::-1]
        return issued + fixed_suffix, share_suffix


def kernel_schedule(
    *,
    layers: int,
    kernels_per_layer: int,
    allreduces_per_layer: int,
    allreduce_ms: float,
    tensor_parallel: bool,
    launch_ms: float,
) -> KernelSchedule:
    """Kernels of a pass: per layer, ``allreduces_per_layer`` segments of compute kernels
    each closed by an all-reduce kernel (none without tensor parallelism).

    ``kernels_per_layer`` counts the all-reduce kernels; compute kernels are spread as
    evenly as possible over the segments and share the layer's compute equally.
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
    return KernelSchedule(share, fixed, is_ar, segment, launch_ms)


def critical_path_ms(schedule: KernelSchedule, compute_ms: float) -> float:
    """Pass time T(compute_ms) (see module docstring)."""
    a, f = schedule._terms()
    return float(np.max(a + f * compute_ms))


def floor_ms(schedule: KernelSchedule) -> float:
    """T(0): the pass time with no compute at all (communication and launch only)."""
    return critical_path_ms(schedule, 0.0)


def calibrate_compute_ms(schedule: KernelSchedule, measured_ms: float) -> float:
    """The largest compute time x with T(x) <= measured_ms; T(x) == measured_ms exactly.

    Raises ValueError when ``measured_ms`` is below the floor T(0).
    """
    a, f = schedule._terms()
    floor = float(np.max(a))
    if measured_ms < floor:
        raise ValueError(f"below the floor {floor:.4g} ms")
    live = f > 0
    return float(np.min((measured_ms - a[live]) / f[live]))
