"""Interconnect presets: NCCL's latency/bandwidth model per link type, with sources.

Every number below comes from docs/reference.md §All-reduce, which
cites NVIDIA/nccl ``src/graph/tuning.cc`` (latency tables, protocol bandwidth factors),
NCCL's topology code (link speeds) and measured all-reduce points from NCCL issues.

Model (NCCL ``ncclTopoTuneModel`` / ``ncclTopoGetAlgoTime``), for ``n`` GPUs and ``S`` bytes:

    time_us = base_latency_us[alg][proto] + 2 (n - 1) step_latency_us[alg][proto]
              + S / (1000 * algbw_gbps)
    algbw   = bus[alg] * protocol_factor[alg][proto] * ratio[alg]
    bus     = bus_bandwidth_gbps for ring, min(0.9 bus_bandwidth_gbps, 110) for tree
    ratio   = n / (2 (n - 1)) for ring, 1/2 for tree (tuning.cc "Convert bus BW to algorithm BW")

NVLS (NVSwitch SHARP, Hopper) replaces the whole latency with one figure and has its own
bandwidth. An ungraphed ("eager") NCCL call adds ``eager_extra_us`` of host-side cost.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from sim.errors import UnknownNameError

Algorithm = Literal["ring", "tree", "nvls"]
Protocol = Literal["LL", "LL128", "Simple"]
LinkKind = Literal["nvlink", "pcie"]

ALGORITHMS: tuple[str, ...] = ("ring", "tree")
PROTOCOLS: tuple[str, ...] = ("LL", "LL128", "Simple")

#: NCCL baseLat (us), docs/reference.md §All-reduce table (NVIDIA/nccl src/graph/tuning.cc).
NCCL_BASE_LATENCY_US: Mapping[str, Mapping[str, float]] = {
    "ring": {"LL": 6.6, "LL128": 14.0, "Simple": 8.4},
    "tree": {"LL": 6.8, "LL128": 14.0, "Simple": 8.4},
}
#: NCCL hwLat per step (us) over NVLink, docs/reference.md §All-reduce (tuning.cc NCCL_HW_NVLINK).
NCCL_NVLINK_STEP_LATENCY_US: Mapping[str, Mapping[str, float]] = {
    "ring": {"LL": 0.6, "LL128": 1.9, "Simple": 3.4},
    "tree": {"LL": 0.6, "LL128": 1.25, "Simple": 4.0},
}
#: NCCL hwLat per step (us) over PCIe, docs/reference.md §All-reduce (tuning.cc NCCL_HW_PCI).
NCCL_PCIE_STEP_LATENCY_US: Mapping[str, Mapping[str, float]] = {
    "ring": {"LL": 1.0, "LL128": 2.5, "Simple": 5.7},
    "tree": {"LL": 1.0, "LL128": 1.9, "Simple": 4.0},
}
#: Bus-bandwidth factor per algorithm and protocol (tuning.cc "model refinements"): ring LL
#: runs at 1/4 of the bus bandwidth for all-reduce, LL128 at 0.92 (120/128 payload); tree
#: LL at 1/3.8 and tree LL128 at 7/9 (one node) of the tree bus bandwidth below. (The
#: reference's "LL at most half the bus bandwidth" is the upper bound these refine.)
NCCL_PROTOCOL_FACTOR: Mapping[str, Mapping[str, float]] = {
    "ring": {"LL": 1.0 / 4.0, "LL128": 0.92, "Simple": 1.0},
    "tree": {"LL": 1.0 / 3.8, "LL128": 7.0 / 9.0, "Simple": 1.0},
}
#: Tree bus bandwidth = min(0.9 x bus bandwidth, 110 GB/s) within one or two nodes
#: (tuning.cc ``busBw = std::min(busBw*.9, maxTreeBw)``).
NCCL_TREE_EFFICIENCY = 0.9
NCCL_TREE_MAX_BUS_BANDWIDTH_GBPS = 110.0
#: NCCL's eager-vs-graphed gap on 8 PCIe GPUs: ~40-55 us per eager call against ~21 us by
#: NCCL's model (docs/reference.md §All-reduce, seed measurements); midpoint 47.5 - 20.6 = 26.9 us.
#: The 8x RTX 4090 no-P2P point (42 us for 8 B, NVIDIA/nccl #1530) lies inside that range.
PCIE_EAGER_EXTRA_US = 47.5 - 20.6
#: No measurement of an eager NCCL call on NVLink is in the reference; the host-side cost
#: of an ungraphed call (kernel launch, proxy hand-off) does not depend on the link, so the
#: PCIe figure is reused. It only matters above the custom all-reduce's size limit.
NVLINK_EAGER_EXTRA_US = PCIE_EAGER_EXTRA_US


class Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


class CustomAllReduce(Frozen):
    """vLLM/SGLang custom all-reduce over NVLink P2P (vllm custom_all_reduce.py).

    One-shot (each rank reads every peer's buffer) below ``one_shot_max_bytes``, two-shot
    (reduce-scatter + all-gather) up to ``two_shot_max_bytes``; NCCL above. A plain kernel:
    no NCCL host path, so no eager extra cost (its launch is counted by the launch model).
    ``latency_us`` is fitted to 8x H100, 32 KB, no graph: 7.8 us (sgl-project/sglang PR
    #2904, lower end of 7.8-11.8 us) minus the one-shot transfer 7 x 32 KiB / 370 GB/s.
    """

    latency_us: Annotated[float, Field(ge=0.0)] = 7.8 - 7 * 32768 / (1000 * 370.0)
    one_shot_max_bytes: Annotated[int, Field(gt=0)] = 256 * 1024
    two_shot_max_bytes: Annotated[int, Field(gt=0)] = 8 * 1024 * 1024
    max_gpus: Annotated[int, Field(gt=1)] = 8


class Interconnect(Frozen):
    """One interconnect: NCCL latency tables, bus bandwidth, protocols, eager cost."""

    name: str
    description: str
    source: str
    kind: LinkKind
    bus_bandwidth_gbps: Annotated[float, Field(gt=0.0)]
    eager_extra_us: Annotated[float, Field(ge=0.0)]
    protocols: tuple[Protocol, ...]
    base_latency_us: Mapping[str, Mapping[str, float]] = NCCL_BASE_LATENCY_US
    step_latency_us: Mapping[str, Mapping[str, float]]
    protocol_factor: Mapping[str, Mapping[str, float]] = NCCL_PROTOCOL_FACTOR
    nvls_latency_us: Annotated[float, Field(gt=0.0)] | None = None
    nvls_bandwidth_gbps: Annotated[float, Field(gt=0.0)] | None = None
    custom_allreduce: CustomAllReduce | None = None


PRESETS: Mapping[str, Interconnect] = {
    ic.name: ic
    for ic in (
        Interconnect(
            name="pcie-gen4",
            description="PCIe Gen4 x16 with GPU P2P (no LL128, no custom all-reduce)",
            source="NCCL topology: Gen4 x16 = 24 GB/s; tuning.cc PCI latencies; eager cost "
            "from 40-55 us measured vs 21 us modelled on 8 PCIe GPUs "
            "(docs/reference.md §All-reduce)",
            kind="pcie",
            bus_bandwidth_gbps=24.0,
            eager_extra_us=PCIE_EAGER_EXTRA_US,
            protocols=("LL", "Simple"),
            step_latency_us=NCCL_PCIE_STEP_LATENCY_US,
        ),
        Interconnect(
            name="pcie-gen5",
            description="PCIe Gen5 x16 with GPU P2P (no LL128, no custom all-reduce)",
            source="busbw 28 GB/s measured, 8x RTX 5090 1-8 GB (NVIDIA/nccl #1639; topology "
            "nominal 48 GB/s); tuning.cc PCI latencies",
            kind="pcie",
            bus_bandwidth_gbps=28.0,
            eager_extra_us=PCIE_EAGER_EXTRA_US,
            protocols=("LL", "Simple"),
            step_latency_us=NCCL_PCIE_STEP_LATENCY_US,
        ),
        Interconnect(
            name="pcie-gen4-host-bounce",
            description="PCIe Gen4 without P2P across CPU sockets: traffic bounces through "
            "host memory, bounded by the CPU link",
            source="CPU link ~22 GB/s (Intel SPR, docs/reference.md §All-reduce); "
            "8x RTX 4090 no-P2P 8 B all-reduce 42 us eager (NVIDIA/nccl #1530)",
            kind="pcie",
            bus_bandwidth_gbps=22.0,
            eager_extra_us=PCIE_EAGER_EXTRA_US,
            protocols=("LL", "Simple"),
            step_latency_us=NCCL_PCIE_STEP_LATENCY_US,
        ),
        Interconnect(
            name="nvlink3",
            description="A100 SXM, NVLink3 through NVSwitch (LL128, custom all-reduce)",
            source="tuning.cc caps compute capability 8.0 bus bandwidth at 235 GB/s; NVLink "
            "latencies; custom all-reduce latency as measured on H100 (no A100 figure)",
            kind="nvlink",
            bus_bandwidth_gbps=235.0,
            eager_extra_us=NVLINK_EAGER_EXTRA_US,
            protocols=("LL", "LL128", "Simple"),
            step_latency_us=NCCL_NVLINK_STEP_LATENCY_US,
            custom_allreduce=CustomAllReduce(),
        ),
        Interconnect(
            name="nvlink4",
            description="H100/H200 SXM, NVLink4 through NVSwitch (LL128, NVLS, custom all-reduce)",
            source="8x H100 ring busbw 365-370 GB/s, NVLS up to 480 GB/s (NVIDIA/nccl #1455); "
            "NVLS latency 25 us (tuning.cc); custom all-reduce 7.8 us at 32 KB "
            "(sgl-project/sglang PR #2904)",
            kind="nvlink",
            bus_bandwidth_gbps=370.0,
            eager_extra_us=NVLINK_EAGER_EXTRA_US,
            protocols=("LL", "LL128", "Simple"),
            step_latency_us=NCCL_NVLINK_STEP_LATENCY_US,
            nvls_latency_us=25.0,
            nvls_bandwidth_gbps=480.0,
            custom_allreduce=CustomAllReduce(),
        ),
    )
}


class InlineInterconnect(Frozen):
    """A custom interconnect written in a scenario: a preset with some fields replaced.

    ``[hardware.interconnects.my-link]`` with ``based_on = "pcie-gen5"`` and, say,
    ``bus_bandwidth_gbps = 40``; then ``hardware.interconnect = "my-link"``.
    """

    based_on: str
    description: str = "custom interconnect (scenario)"
    source: str = "scenario file"
    bus_bandwidth_gbps: Annotated[float, Field(gt=0.0)] | None = None
    eager_extra_us: Annotated[float, Field(ge=0.0)] | None = None
    protocols: Annotated[list[Protocol], Field(min_length=1)] | None = None
    custom_allreduce: bool | None = None
    custom_allreduce_latency_us: Annotated[float, Field(ge=0.0)] | None = None
    nvls: bool | None = None

    @field_validator("based_on")
    @classmethod
    def _a_preset(cls, value: str) -> str:
        if value not in PRESETS:
            raise ValueError(f"{value!r} is not a preset (presets: {', '.join(PRESETS)})")
        return value


def preset_names(custom: Mapping[str, InlineInterconnect] | None = None) -> tuple[str, ...]:
    """Names a scenario may use: the presets, then its own inline interconnects."""
    return (*PRESETS, *(custom or {}))


def resolve_interconnect(
    name: str, custom: Mapping[str, InlineInterconnect] | None = None
) -> Interconnect:
    """The interconnect called ``name``.

    Raises ``UnknownNameError`` (with the known names) when there is none, ValueError when
    an inline interconnect asks for what its base preset cannot give.
    """
    custom = custom or {}
    if name in custom:
        spec = custom[name]
        if spec.based_on not in PRESETS:
            raise UnknownNameError("interconnect preset (based_on)", spec.based_on, tuple(PRESETS))
        base = PRESETS[spec.based_on]
        changes: dict[str, object] = {
            "name": name,
            "description": spec.description,
            "source": f"{spec.source} (based on {base.name})",
        }
        if spec.bus_bandwidth_gbps is not None:
            changes["bus_bandwidth_gbps"] = spec.bus_bandwidth_gbps
        if spec.eager_extra_us is not None:
            changes["eager_extra_us"] = spec.eager_extra_us
        if spec.protocols is not None:
            changes["protocols"] = tuple(spec.protocols)
        if spec.nvls is False:
            changes["nvls_latency_us"] = None
            changes["nvls_bandwidth_gbps"] = None
        elif spec.nvls and base.nvls_latency_us is None:
            raise ValueError(f"nvls = true but {base.name} has no NVLS figures")
        car = base.custom_allreduce
        if spec.custom_allreduce is False:
            car = None
        elif spec.custom_allreduce and car is None:
            car = CustomAllReduce()
        if car is not None and spec.custom_allreduce_latency_us is not None:
            car = car.model_copy(update={"latency_us": spec.custom_allreduce_latency_us})
        changes["custom_allreduce"] = car
        return base.model_copy(update=changes)
    if name in PRESETS:
        return PRESETS[name]
    raise UnknownNameError("interconnect", name, preset_names(custom))
