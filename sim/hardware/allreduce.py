"""All-reduce time: NCCL's tuner (fastest algorithm and protocol) and the custom all-reduce.

Formulas: sim/hardware/interconnects.py (NVIDIA/nccl src/graph/tuning.cc, reference section
4). Times are microseconds, sizes bytes. ``library`` chooses what answers:

- ``nccl``: NCCL (or RCCL) alone, its tuner's fastest (algorithm, protocol): what
  nccl-tests measure;
- ``custom``: the serving engine's custom all-reduce wherever it applies (message size and
  GPU count within its limits, an interconnect that has one), NCCL elsewhere: what
  vLLM and SGLang do by default;
- ``auto``: the faster of the two for each message.
"""

from __future__ import annotations

from dataclasses import dataclass

from sim.hardware.interconnects import (
    ALGORITHMS,
    LIBRARIES,
    NCCL_TREE_CORRECTION,
    NCCL_TREE_EFFICIENCY,
    CustomAllReduce,
    Interconnect,
)


@dataclass(frozen=True, slots=True)
class AllReduceTime:
    """One all-reduce: its time (us) and the (algorithm, protocol) that gives it."""

    us: float
    algorithm: str
    protocol: str

    def as_dict(self) -> dict[str, float | str]:
        return {"us": self.us, "algorithm": self.algorithm, "protocol": self.protocol}


def nccl_latency_us(ic: Interconnect, algorithm: str, protocol: str, gpus: int) -> float:
    """NCCL's latency term: base + 2(n-1) per-step latencies (NVLS: one figure)."""
    if algorithm == "nvls":
        if ic.nvls_latency_us is None:
            raise ValueError(f"{ic.name} has no NVLS")
        return ic.nvls_latency_us
    steps = 2 * (gpus - 1)
    return ic.base_latency_us[algorithm][protocol] + steps * ic.step_latency_us[algorithm][protocol]


def tree_correction(protocol: str, nbytes: float) -> float:
    """NCCL's static tree correction for ``nbytes`` (1 outside 64 B .. 256 MB)."""
    chunks = int(nbytes) >> 6
    log_size = chunks.bit_length() - 1 if chunks > 0 else -1
    table = NCCL_TREE_CORRECTION[protocol]
    return table[log_size] if 0 <= log_size < len(table) - 1 else 1.0


def nccl_bus_gbps(ic: Interconnect, algorithm: str, protocol: str) -> float:
    """NCCL's bus bandwidth of one (algorithm, protocol) (tuning.cc model refinements)."""
    if algorithm == "nvls":
        if ic.nvls_bandwidth_gbps is None:
            raise ValueError(f"{ic.name} has no NVLS")
        return ic.nvls_bandwidth_gbps
    bus = ic.bus_bandwidth_gbps
    if algorithm == "tree":
        bus *= NCCL_TREE_EFFICIENCY
    bus *= ic.protocol_factor[algorithm][protocol]
    if protocol == "LL" and ic.ll_max_bus_gbps is not None:
        bus = min(bus, ic.ll_max_bus_gbps)
    return bus


def nccl_algbw_gbps(
    ic: Interconnect, algorithm: str, protocol: str, gpus: int, nbytes: float = 0.0
) -> float:
    """NCCL's algorithm bandwidth (GB/s) for a message of ``nbytes``.

    Bus to algorithm bandwidth: n / (2 (n - 1)) for ring and NVLS, 1/2 for tree
    (nccl-tests PERFORMANCE.md: busbw = algbw x 2(n-1)/n for all-reduce); trees also take
    NCCL's size-dependent correction.
    """
    bus = nccl_bus_gbps(ic, algorithm, protocol)
    if algorithm == "tree":
        return bus * 0.5 * tree_correction(protocol, nbytes)
    return bus * gpus / (2 * (gpus - 1))


def nccl_time_us(
    ic: Interconnect, algorithm: str, protocol: str, gpus: int, nbytes: float
) -> float:
    """``lat + bytes / (1000 x algbw)`` (tuning.cc ``ncclTopoGetAlgoTime``), graphed."""
    bw = nccl_algbw_gbps(ic, algorithm, protocol, gpus, nbytes)
    return nccl_latency_us(ic, algorithm, protocol, gpus) + nbytes / (1000.0 * bw)


#: Below this many bytes 3-4 GPUs take the one-shot kernel (vLLM csrc/custom_all_reduce.cuh
#: ``REDUCE_CASE``, copied by SGLang's sgl-kernel: ``world_size_ <= 4 && bytes < 512 * 1024``).
ONE_SHOT_MAX_BYTES_4_GPUS = 512 * 1024


def one_shot(car: CustomAllReduce, gpus: int, nbytes: float) -> bool:
    """Whether the custom all-reduce of ``nbytes`` over ``gpus`` GPUs takes the one-shot
    kernel, as vLLM's ``REDUCE_CASE`` chooses (csrc/custom_all_reduce.cuh; SGLang's
    sgl-kernel copies it): 2 GPUs always (a two-shot would move the same bytes through two
    barrier phases), 3-4 GPUs below 512 KiB, more GPUs up to ``one_shot_max_bytes`` (256
    KiB, inclusive as SGLang #2904's 8-GPU timings were fitted)."""
    if gpus <= 2:
        return True
    if gpus <= 4:
        return nbytes < ONE_SHOT_MAX_BYTES_4_GPUS
    return nbytes <= car.one_shot_max_bytes


def custom_allreduce_us(ic: Interconnect, gpus: int, nbytes: float) -> AllReduceTime | None:
    """vLLM/SGLang custom all-reduce time, or None where it does not apply.

    One-shot: each rank reads its ``n - 1`` peers' buffers, ``(n-1) S`` bytes; two-shot
    (reduce-scatter + all-gather) moves ``2 (n-1)/n x S``; each at its efficiency times the
    bus bandwidth (sim/hardware/interconnects.py ``CustomAllReduce``).
    """
    car = ic.custom_allreduce
    if car is None or gpus > car.max_gpus or nbytes > car.two_shot_max_bytes:
        return None
    if one_shot(car, gpus, nbytes):
        moved, lat, eff, protocol = (
            (gpus - 1) * nbytes,
            car.latency_us,
            car.one_shot_efficiency,
            "one-shot",
        )
    else:
        moved = 2.0 * (gpus - 1) / gpus * nbytes
        lat, eff, protocol = car.two_shot_latency_us, car.two_shot_efficiency, "two-shot"
    return AllReduceTime(lat + moved / (1000.0 * eff * ic.bus_bandwidth_gbps), "custom", protocol)


def nccl_candidates(
    ic: Interconnect, gpus: int, nbytes: float, *, graphed: bool
) -> list[AllReduceTime]:
    """Every (algorithm, protocol) NCCL offers on the interconnect, with its time (us)."""
    eager = 0.0 if graphed else ic.eager_extra_us
    algorithms = ALGORITHMS if ic.tree else ("ring",)
    out = [
        AllReduceTime(nccl_time_us(ic, a, p, gpus, nbytes) + eager, a, p)
        for a in algorithms
        for p in ic.protocols
    ]
    if ic.nvls_latency_us is not None and "Simple" in ic.protocols:
        out.append(
            AllReduceTime(
                nccl_time_us(ic, "nvls", "Simple", gpus, nbytes) + eager, "nvls", "Simple"
            )
        )
    return out


def _check(gpus: int, nbytes: float, library: str) -> None:
    if gpus < 1:
        raise ValueError(f"gpus must be >= 1, got {gpus}")
    if nbytes < 0:
        raise ValueError(f"bytes must be >= 0, got {nbytes}")
    if library not in LIBRARIES:
        raise ValueError(f"library must be one of {', '.join(LIBRARIES)}, got {library!r}")


def allreduce_candidates(
    ic: Interconnect, gpus: int, nbytes: float, *, graphed: bool, library: str = "auto"
) -> list[AllReduceTime]:
    """The all-reduces ``library`` may pick from (see the module docstring), with times."""
    _check(gpus, nbytes, library)
    if gpus == 1:
        return [AllReduceTime(0.0, "none", "none")]
    custom = custom_allreduce_us(ic, gpus, nbytes) if library != "nccl" else None
    if library == "custom" and custom is not None:
        return [custom]
    out = nccl_candidates(ic, gpus, nbytes, graphed=graphed)
    return [*out, custom] if custom is not None else out


def allreduce_time(
    ic: Interconnect, gpus: int, nbytes: float, *, graphed: bool, library: str = "auto"
) -> AllReduceTime:
    """The all-reduce ``library`` runs: the fastest of its candidates."""
    return min(
        allreduce_candidates(ic, gpus, nbytes, graphed=graphed, library=library),
        key=lambda c: c.us,
    )


def nccl_tests_time_us(
    ic: Interconnect,
    gpus: int,
    nbytes: float,
    *,
    gpus_per_process: int = 1,
    host_us_per_gpu: float = 5.0,
    graphed: bool = False,
) -> float:
    """What an nccl-tests style loop reports for one all-reduce (NCCL alone), us.

    The loop issues the collective back to back without a sync; each iteration then takes
    the longer of the GPU time (NCCL's graphed model) and the host's enqueue work, one
    launch per GPU the thread drives: ``gpus_per_process`` x ``host_us_per_gpu`` (``-g 8``
    runs one thread for 8 GPUs). ``host_us_per_gpu`` = 5 us: "CUDA kernel launch
    overhead: ~5 000 ns" and "each ~5 us of CPU-side overhead" (8x RTX PRO 6000,
    voipmonitor/rtx6kpro hardware/wrx90-cpayne-8gpu-root-topology-comparison.md). With
    ``graphed`` (``-G``) the host work is amortised away.
    """
    gpu_us = allreduce_time(ic, gpus, nbytes, graphed=True, library="nccl").us
    host_us = 0.0 if graphed else gpus_per_process * host_us_per_gpu
    return max(gpu_us, host_us)
