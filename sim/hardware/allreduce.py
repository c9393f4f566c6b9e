"""All-reduce time: NCCL's tuner (fastest algorithm and protocol) plus the custom all-reduce.

Formulas: see sim/hardware/interconnects.py (NVIDIA/nccl src/graph/tuning.cc, reference
section 4). Times are microseconds, sizes bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

from sim.hardware.interconnects import (
    ALGORITHMS,
    NCCL_TREE_EFFICIENCY,
    NCCL_TREE_MAX_BUS_BANDWIDTH_GBPS,
    Interconnect,
)


@dataclass(frozen=True)
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


def nccl_algbw_gbps(ic: Interconnect, algorithm: str, protocol: str, gpus: int) -> float:
    """NCCL's algorithm bandwidth (GB/s): bus bandwidth x protocol factor x bus-to-alg ratio."""
    if algorithm == "nvls":
        if ic.nvls_bandwidth_gbps is None:
            raise ValueError(f"{ic.name} has no NVLS")
        # nccl-tests PERFORMANCE.md: busbw = algbw x 2(n-1)/n for all-reduce.
        return ic.nvls_bandwidth_gbps * gpus / (2 * (gpus - 1))
    bus = ic.bus_bandwidth_gbps
    if algorithm == "tree":
        bus = min(bus * NCCL_TREE_EFFICIENCY, NCCL_TREE_MAX_BUS_BANDWIDTH_GBPS)
    ratio = gpus / (2 * (gpus - 1)) if algorithm == "ring" else 0.5
    return bus * ic.protocol_factor[algorithm][protocol] * ratio


def nccl_time_us(
    ic: Interconnect, algorithm: str, protocol: str, gpus: int, nbytes: float
) -> float:
    """``lat + bytes / (1000 x algbw)`` (tuning.cc ``ncclTopoGetAlgoTime``), graphed."""
    bw = nccl_algbw_gbps(ic, algorithm, protocol, gpus)
    return nccl_latency_us(ic, algorithm, protocol, gpus) + nbytes / (1000.0 * bw)


def custom_allreduce_us(ic: Interconnect, gpus: int, nbytes: float) -> AllReduceTime | None:
    """vLLM/SGLang custom all-reduce time, or None where it does not apply.

    One-shot: each rank reads its ``n - 1`` peers' buffers, ``(n-1) S`` bytes at the link
    bandwidth; two-shot (reduce-scatter + all-gather) moves ``2 (n-1)/n x S``.
    """
    car = ic.custom_allreduce
    if car is None or gpus > car.max_gpus or nbytes > car.two_shot_max_bytes:
        return None
    if nbytes <= car.one_shot_max_bytes:
        moved, protocol = (gpus - 1) * nbytes, "one-shot"
    else:
        moved, protocol = 2.0 * (gpus - 1) / gpus * nbytes, "two-shot"
    return AllReduceTime(
        car.latency_us + moved / (1000.0 * ic.bus_bandwidth_gbps), "custom", protocol
    )


def allreduce_candidates(
    ic: Interconnect, gpus: int, nbytes: float, *, graphed: bool
) -> list[AllReduceTime]:
    """Every (algorithm, protocol) the interconnect offers, with its time (us)."""
    if gpus < 1:
        raise ValueError(f"gpus must be >= 1, got {gpus}")
    if nbytes < 0:
        raise ValueError(f"bytes must be >= 0, got {nbytes}")
    if gpus == 1:
        return [AllReduceTime(0.0, "none", "none")]
    eager = 0.0 if graphed else ic.eager_extra_us
    out = [
        AllReduceTime(nccl_time_us(ic, a, p, gpus, nbytes) + eager, a, p)
        for a in ALGORITHMS
        for p in ic.protocols
    ]
    if ic.nvls_latency_us is not None and "Simple" in ic.protocols:
        out.append(
            AllReduceTime(
                nccl_time_us(ic, "nvls", "Simple", gpus, nbytes) + eager, "nvls", "Simple"
            )
        )
    custom = custom_allreduce_us(ic, gpus, nbytes)
    if custom is not None:
        out.append(custom)
    return out


def allreduce_time(ic: Interconnect, gpus: int, nbytes: float, *, graphed: bool) -> AllReduceTime:
    """The fastest candidate, as NCCL's tuner picks (custom all-reduce when it is faster)."""
    return min(allreduce_candidates(ic, gpus, nbytes, graphed=graphed), key=lambda c: c.us)
