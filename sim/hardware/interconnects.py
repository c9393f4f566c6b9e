"""Interconnect presets: NCCL's latency/bandwidth model per link type, with sources.

The tuner constants are NCCL 2.30.7's (NVIDIA/nccl ``src/graph/tuning.cc`` at commit
5067397c2676d5aed50042fc39e5c8ee96eb0027): ``ncclTunerConstantsDefaults`` (base and per-hop
latencies, ``llMaxBws``), ``ncclTopoTuneModel`` ("model refinements", bus-to-algorithm
bandwidth) and ``ncclTopoGetAlgoTime`` (tree correction factors). Link bandwidths come from
NCCL's topology code or from measured nccl-tests bus bandwidths (each preset's ``source``).

Model, for ``n`` GPUs on one node and ``S`` bytes:

    time_us = base_latency_us[alg][proto] + 2 (n - 1) step_latency_us[alg][proto]
              + S / (1000 * algbw_gbps)
    algbw   = bus[alg][proto] * ratio[alg]
    ring:  LL min(llMaxBw, 0.5 B), LL128 0.92 B, Simple B
    tree:  T = 0.92 B; LL min(T / 3.8, llMaxBw), LL128 7/9 T, Simple T; times the tree
           correction factor of the message size (powers of two, 64 B to 256 MB)
    ratio  = n / (2 (n - 1)) for ring, 1/2 for tree (tuning.cc "Convert bus BW to algorithm BW")

with ``B`` the preset's bus bandwidth. NCCL also caps LL128 and tree bandwidth per channel
(``perChMax*Bws`` x channels); at the 16+ channels NCCL opens on NVLink those caps lie above
0.92 B and are left out. NVLS (NVSwitch SHARP) replaces the whole latency with one figure
and has its own (measured) bus bandwidth.

An ungraphed ("eager") NCCL call inside a pass costs CPU time (sim/hardware/eager.py) and,
on the GPU, ``eager_extra_us`` more than the graphed call (0 in every preset).
"""

# No ``from __future__ import annotations`` here: pydantic evaluates a string annotation
# by compiling it (one ``compile`` per field), which made building these models most
# of their import time (start-up); the annotations are evaluated once, as objects.
from collections.abc import Mapping
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from sim.errors import UnknownNameError

Algorithm = Literal["ring", "tree", "nvls"]
Protocol = Literal["LL", "LL128", "Simple"]
LinkKind = Literal["nvlink", "pcie", "xgmi"]
Library = Literal["nccl", "custom", "auto"]

ALGORITHMS: tuple[str, ...] = ("ring", "tree")
PROTOCOLS: tuple[str, ...] = ("LL", "LL128", "Simple")
LIBRARIES: tuple[str, ...] = ("nccl", "custom", "auto")

#: NCCL baseLat (us), tuning.cc ``baseLatencies`` (docs/reference.md §All-reduce table).
NCCL_BASE_LATENCY_US: Mapping[str, Mapping[str, float]] = {
    "ring": {"LL": 6.6, "LL128": 14.0, "Simple": 8.4},
    "tree": {"LL": 6.8, "LL128": 14.0, "Simple": 8.4},
}
#: NCCL hwLat per step (us) over NVLink, tuning.cc ``hwLatencies[NCCL_HW_NVLINK]``.
NCCL_NVLINK_STEP_LATENCY_US: Mapping[str, Mapping[str, float]] = {
    "ring": {"LL": 0.6, "LL128": 1.9, "Simple": 3.4},
    "tree": {"LL": 0.6, "LL128": 1.25, "Simple": 4.0},
}
#: NCCL hwLat per step (us) over PCIe, tuning.cc ``hwLatencies[NCCL_HW_PCI]``; NCCL uses
#: the same figures for paths through the host (SHM) and for AMD's xGMI in RCCL's fork.
NCCL_PCIE_STEP_LATENCY_US: Mapping[str, Mapping[str, float]] = {
    "ring": {"LL": 1.0, "LL128": 2.5, "Simple": 5.7},
    "tree": {"LL": 1.0, "LL128": 1.9, "Simple": 4.0},
}
#: Bus-bandwidth factor per algorithm and protocol (tuning.cc "Various model refinements").
NCCL_PROTOCOL_FACTOR: Mapping[str, Mapping[str, float]] = {
    "ring": {"LL": 0.5, "LL128": 0.92, "Simple": 1.0},
    "tree": {"LL": 1.0 / 3.8, "LL128": 7.0 / 9.0, "Simple": 1.0},
}
#: Tree all-reduce bus bandwidth = 0.92 x the bus bandwidth (tuning.cc).
NCCL_TREE_EFFICIENCY = 0.92
#: LL's bus-bandwidth cap on one node by GPU generation, tuning.cc ``llMaxBws[arch][0]``.
NCCL_LL_MAX_BUS_GBPS: Mapping[str, float] = {
    "volta": 39.0,
    "ampere": 87.7,
    "hopper": 141.0,
    "blackwell": 2 * 141.0,
}
#: ``treeCorrectionFactor[protocol][log2(bytes / 64)]`` for 64 B .. 256 MB (tuning.cc).
# fmt: off
NCCL_TREE_CORRECTION: Mapping[str, tuple[float, ...]] = {
    "LL": (1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.7, 0.7, 0.7, 0.7, 0.6, 0.5,
           0.4, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.0, 1.0, 1.0, 1.0),
    "LL128": (1.0, 1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.8, 0.8, 0.7, 0.6, 0.6,
              0.6, 0.6, 0.6, 0.6, 0.8, 0.9, 0.9, 0.9, 0.9, 1.0, 1.0, 1.0),
    "Simple": (0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.8, 0.7, 0.6, 0.6, 0.5,
               0.5, 0.5, 0.5, 0.6, 0.7, 0.8, 0.7, 0.7, 0.8, 0.9, 0.9, 0.9),
}
# fmt: on
#: GPU-side extra of an NCCL call inside an ungraphed pass, beyond its graphed time: 0.
#: The seed's profile shows ~40-55 us eager calls on 8 PCIe GPUs against ~21 us by NCCL's
#: model (docs/reference.md §All-reduce), but nccl-tests' eager loops on 8 PCIe Gen5 GPUs with P2P
#: take 17-24 us for small messages (voipmonitor/rtx6kpro
#: hardware/wrx90-cpayne-8gpu-root-topology-comparison.md), as NCCL's model says: the
#: longer calls in an ungraphed pass are ranks waiting for peers whose CPUs issued the call
#: later, i.e. host time, which the eager model carries as CPU work (sim/hardware/eager.py).
#: Counting it again on the GPU would double it; a scenario can still set one.
EAGER_EXTRA_US = 0.0


class Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


#: SGLang's custom all-reduce on 8x H100 without a CUDA graph, latency (us) by message size
#: (sgl-project/sglang PR #2904, "tp 8" column): 4096 B 5.7, 262144 B 16.7 (one-shot);
#: 524288 B 22.1, 1048576 B 33.8 (two-shot). Fitted below; 512 B 5.9 and 32768 B 7.8 are
#: left to check the fit (tests).
SGLANG_2904_CUSTOM_US: Mapping[int, float] = {
    512: 5.9,
    4096: 5.7,
    32768: 7.8,
    262144: 16.7,
    524288: 22.1,
    1048576: 33.8,
}
_H100_BUS_GBPS = 370.0
_ONE_SHOT_BW = 7 * (262144 - 4096) / (16.7 - 5.7) / 1000.0  # GB/s of peer reads
_TWO_SHOT_BW = 1.75 * (1048576 - 524288) / (33.8 - 22.1) / 1000.0  # GB/s moved


class CustomAllReduce(Frozen):
    """vLLM/SGLang custom all-reduce over NVLink P2P (vllm custom_all_reduce.py).

    One-shot (each rank reads every peer's buffer, ``(n - 1) S`` bytes) below
    ``one_shot_max_bytes``; two-shot (reduce-scatter + all-gather, ``2 (n-1)/n S`` bytes,
    two barrier phases) up to ``two_shot_max_bytes``; NCCL above. Each: latency + bytes /
    (efficiency x the interconnect's bus bandwidth). A plain kernel: no NCCL host path
    (its launch is counted by the eager model). Fitted to SGLang's custom all-reduce on 8x
    H100 without a graph (``SGLANG_2904_CUSTOM_US``): one-shot 5.53 us + 164 GB/s of peer
    reads (0.44 of 370 GB/s), two-shot 10.4 us + 78 GB/s (0.21); the two-shot latency is
    about twice the one-shot's, as its two phases say.
    """

    latency_us: Annotated[float, Field(ge=0.0)] = 5.7 - 7 * 4096 / (1000.0 * _ONE_SHOT_BW)
    two_shot_latency_us: Annotated[float, Field(ge=0.0)] = 22.1 - 1.75 * 524288 / (
        1000.0 * _TWO_SHOT_BW
    )
    one_shot_efficiency: Annotated[float, Field(gt=0.0, le=1.0)] = _ONE_SHOT_BW / _H100_BUS_GBPS
    two_shot_efficiency: Annotated[float, Field(gt=0.0, le=1.0)] = _TWO_SHOT_BW / _H100_BUS_GBPS
    one_shot_max_bytes: Annotated[int, Field(gt=0)] = 256 * 1024
    two_shot_max_bytes: Annotated[int, Field(gt=0)] = 8 * 1024 * 1024
    max_gpus: Annotated[int, Field(gt=1)] = 8


class Interconnect(Frozen):
    """One interconnect: NCCL latency tables, bus bandwidth, protocols, eager cost.

    ``bus_bandwidth_gbps`` is NCCL's ring bus bandwidth (nccl-tests ``busbw`` of large
    messages); ``ll_max_bus_gbps`` NCCL's LL cap for the GPU generation (None: no cap
    below 0.5 x the bus bandwidth matters); ``tree`` False where the library does not
    offer trees on one node (RCCL on gfx94 skips tree Simple; its tree LL correction
    factors are 0.1 at most sizes, so ring always wins there).
    """

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
    ll_max_bus_gbps: Annotated[float, Field(gt=0.0)] | None = None
    tree: bool = True
    nvls_latency_us: Annotated[float, Field(gt=0.0)] | None = None
    nvls_bandwidth_gbps: Annotated[float, Field(gt=0.0)] | None = None
    custom_allreduce: CustomAllReduce | None = None
    #: GPUs one server of this kind holds; the preset's figures are 8-GPU ones, so more
    #: GPUs are an extrapolation (``domain_note``).
    box_gpus: Annotated[int, Field(gt=0)] = 8
    #: The most GPUs one domain of this link holds (None: no fixed limit), and its source.
    max_gpus: Annotated[int, Field(gt=0)] | None = None
    max_gpus_source: str = ""

    def domain_error(self, gpus: int) -> str | None:
        """Why ``gpus`` GPUs cannot share one domain of this link (None: they can)."""
        if self.max_gpus is None or gpus <= self.max_gpus:
            return None
        return (
            f"{gpus} GPUs exceed one {self.name} domain: it holds at most {self.max_gpus} "
            f"({self.max_gpus_source})"
        )

    def domain_note(self, gpus: int) -> str | None:
        """What ``gpus`` GPUs beyond one server of this link rest on (None: within one)."""
        if gpus <= self.box_gpus:
            return None
        limit = (
            f"one domain holds up to {self.max_gpus} ({self.max_gpus_source})"
            if self.max_gpus is not None
            else "no fixed limit is known"
        )
        return (
            f"{gpus} GPUs on {self.name} span more than one {self.box_gpus}-GPU server; "
            f"{limit}; the preset's figures are {self.box_gpus}-GPU ones, so this is "
            "extrapolated"
        )


#: The NVLink and xGMI domain limits (``Interconnect.max_gpus``), with their sources.
NVLINK3_MAX_GPUS = 16
NVLINK3_MAX_SOURCE = (
    "HGX A100 comes in 4-, 8- and 16-GPU NVSwitch configurations: "
    "https://www.nvidia.com/en-us/data-center/hgx/"
)
NVLINK4_MAX_GPUS = 256
NVLINK4_MAX_SOURCE = (
    "8 in an HGX H100/H200 box, 256 through the NVLink Switch System of a DGX GH200: "
    "https://www.nvidia.com/en-us/data-center/nvlink/"
)
NVLINK5_MAX_GPUS = 576
NVLINK5_MAX_SOURCE = (
    "8 in an HGX B200 box, 72 in a GB200 NVL72 rack, 576 through NVLink Switch: "
    "https://www.nvidia.com/en-us/data-center/nvlink/"
)
XGMI_MI300X_MAX_GPUS = 8
XGMI_MI300X_MAX_SOURCE = (
    "8 fully connected MI300X with 7 xGMI links a GPU: "
    "https://www.amd.com/en/products/accelerators/instinct/mi300/platform.html"
)


#: NCCL tuner's NVLS latency (tuning.cc ``hwLatencies[NVLINK][NVLS]``: 25 us, the whole
#: latency of one node's NVLS all-reduce).
NCCL_NVLS_LATENCY_US = 25.0
#: RCCL 's base latencies (ROCm/rccl src/graph/tuning.cc ``baseLat`` at commit
#: 0cbce2a7571c907554199fad7e905f16ec0a565c): 12 us for LL and LL128, 17 us for Simple.
RCCL_BASE_LATENCY_US: Mapping[str, Mapping[str, float]] = {
    "ring": {"LL": 12.0, "LL128": 12.0, "Simple": 17.0},
    "tree": {"LL": 12.0, "LL128": 12.0, "Simple": 17.0},
}
#: RCCL's per-hop xGMI latencies for 8 fully connected MI300X (``tuning_model_5``, the
#: tuning the 8-GPU, 7-link platform models in rome_models.cc select): ring LL 0.8, Simple
#: 2.1; tree LL 0.9, Simple 2.3 us. LL128 is off on gfx94 (``ll128Enabled`` only gfx90a).
RCCL_MI300X_STEP_LATENCY_US: Mapping[str, Mapping[str, float]] = {
    "ring": {"LL": 0.8, "LL128": 0.0, "Simple": 2.1},
    "tree": {"LL": 0.9, "LL128": 0.0, "Simple": 2.3},
}

PRESETS: Mapping[str, Interconnect] = {
    ic.name: ic
    for ic in (
        Interconnect(
            name="pcie-gen4",
            description="PCIe Gen4 x16 with GPU P2P (no LL128, no custom all-reduce)",
            source="NCCL topology: Gen4 x16 = 24 GB/s (docs/reference.md §All-reduce); "
            "tuning.cc PCI latencies",
            kind="pcie",
            bus_bandwidth_gbps=24.0,
            eager_extra_us=EAGER_EXTRA_US,
            protocols=("LL", "Simple"),
            step_latency_us=NCCL_PCIE_STEP_LATENCY_US,
        ),
        Interconnect(
            name="pcie-gen4-host-bounce",
            description="PCIe Gen4 without P2P across CPU sockets: traffic bounces through "
            "host memory, bounded by the CPU link",
            source="CPU link ~22 GB/s (Intel SPR, docs/reference.md §All-reduce); tuning.cc PCI "
            "latencies (NCCL uses them for SHM paths too)",
            kind="pcie",
            bus_bandwidth_gbps=22.0,
            eager_extra_us=EAGER_EXTRA_US,
            protocols=("LL", "Simple"),
            step_latency_us=NCCL_PCIE_STEP_LATENCY_US,
        ),
        Interconnect(
            name="pcie-gen5",
            description="PCIe Gen5 x16 with GPU P2P through PCIe switches (no LL128, no "
            "custom all-reduce)",
            source="NCCL topology: Gen5 x16 = 48 GB/s (docs/reference.md §All-reduce); "
            "tuning.cc PCI latencies",
            kind="pcie",
            bus_bandwidth_gbps=48.0,
            eager_extra_us=EAGER_EXTRA_US,
            protocols=("LL", "Simple"),
            step_latency_us=NCCL_PCIE_STEP_LATENCY_US,
        ),
        Interconnect(
            name="pcie-gen5-host-bounce",
            description="PCIe Gen5 GPUs without P2P (consumer cards) on two CPU sockets: "
            "traffic bounces through host memory",
            source="busbw 28 GB/s measured, 8x RTX 5090 on 2x Xeon 8480+, 1-8 GB "
            "(NVIDIA/nccl #1639); tuning.cc PCI latencies",
            kind="pcie",
            bus_bandwidth_gbps=28.0,
            eager_extra_us=EAGER_EXTRA_US,
            protocols=("LL", "Simple"),
            step_latency_us=NCCL_PCIE_STEP_LATENCY_US,
        ),
        Interconnect(
            name="nvlink3",
            description="A100 SXM, NVLink3 through NVSwitch (LL128, custom all-reduce)",
            source="ring busbw 234.9 GB/s, 8x A100 nccl-tests at 16 GB (stas00/ml-engineering "
            "network/README.md); LL cap 87.7 GB/s (tuning.cc llMaxBws, Ampere); NVLink "
            "latencies; custom all-reduce latency as measured on H100 (no A100 figure)",
            kind="nvlink",
            bus_bandwidth_gbps=235.0,
            eager_extra_us=EAGER_EXTRA_US,
            protocols=("LL", "LL128", "Simple"),
            step_latency_us=NCCL_NVLINK_STEP_LATENCY_US,
            ll_max_bus_gbps=NCCL_LL_MAX_BUS_GBPS["ampere"],
            custom_allreduce=CustomAllReduce(),
            max_gpus=NVLINK3_MAX_GPUS,
            max_gpus_source=NVLINK3_MAX_SOURCE,
        ),
        Interconnect(
            name="nvlink4",
            description="H100/H200/H20 SXM, NVLink4 through NVSwitch (LL128, NVLS, custom "
            "all-reduce)",
            source="8x H100 ring busbw ~370 GB/s, NVLS peak ~480 GB/s (NVIDIA/nccl-tests #212); "
            "NVLS latency 25 us and LL cap 141 GB/s (tuning.cc, Hopper); custom all-reduce "
            "fitted to 8x H100 (sgl-project/sglang PR #2904)",
            kind="nvlink",
            bus_bandwidth_gbps=370.0,
            eager_extra_us=EAGER_EXTRA_US,
            protocols=("LL", "LL128", "Simple"),
            step_latency_us=NCCL_NVLINK_STEP_LATENCY_US,
            ll_max_bus_gbps=NCCL_LL_MAX_BUS_GBPS["hopper"],
            nvls_latency_us=NCCL_NVLS_LATENCY_US,
            nvls_bandwidth_gbps=480.0,
            custom_allreduce=CustomAllReduce(),
            max_gpus=NVLINK4_MAX_GPUS,
            max_gpus_source=NVLINK4_MAX_SOURCE,
        ),
        Interconnect(
            name="nvlink5",
            description="B200 (HGX/DGX B200) and GB200 (NVL72), NVLink5: 18 links, 900 GB/s "
            "a direction per GPU, through NVSwitch (LL128, NVLS, custom all-reduce)",
            source="8x B200 ring busbw 682.2 GB/s and NVLS 845.7 GB/s at 8-16 GiB "
            "(stas00/ml-engineering, p6-b200.48xlarge, nccl 2.27.7); '18x 5th Gen NVLink' "
            "(DGX B200 datasheet via ml-engineering); NVLS latency 25 us and LL cap 282 "
            "GB/s (tuning.cc, Blackwell); custom all-reduce latency as measured on H100 "
            "(no B200 figure); GB200 NVL72 has the same NVLink5 port per GPU (no TP-8 "
            "all-reduce measurement found for it)",
            kind="nvlink",
            bus_bandwidth_gbps=682.0,
            eager_extra_us=EAGER_EXTRA_US,
            protocols=("LL", "LL128", "Simple"),
            step_latency_us=NCCL_NVLINK_STEP_LATENCY_US,
            ll_max_bus_gbps=NCCL_LL_MAX_BUS_GBPS["blackwell"],
            nvls_latency_us=NCCL_NVLS_LATENCY_US,
            nvls_bandwidth_gbps=845.0,
            custom_allreduce=CustomAllReduce(),
            max_gpus=NVLINK5_MAX_GPUS,
            max_gpus_source=NVLINK5_MAX_SOURCE,
        ),
        Interconnect(
            name="xgmi-mi300x",
            description="8x AMD MI300X, fully connected Infinity Fabric (xGMI, 7 links a "
            "GPU), RCCL (no LL128, no tree for Simple, no custom all-reduce figure)",
            source="ring busbw 312.9 GB/s, 8x MI300X at 4 GiB (stas00/ml-engineering "
            "all_reduce_bench); RCCL base latencies 12/17 us and tuning_model_5 xGMI hop "
            "latencies (ROCm/rccl src/graph/tuning.cc, rome_models.cc); 48 GB/s per xGMI "
            "link a direction in RCCL's topology (ROCm/rccl #1210)",
            kind="xgmi",
            bus_bandwidth_gbps=312.9,
            eager_extra_us=EAGER_EXTRA_US,
            protocols=("LL", "Simple"),
            base_latency_us=RCCL_BASE_LATENCY_US,
            step_latency_us=RCCL_MI300X_STEP_LATENCY_US,
            ll_max_bus_gbps=NCCL_LL_MAX_BUS_GBPS["hopper"],
            tree=False,
            max_gpus=XGMI_MI300X_MAX_GPUS,
            max_gpus_source=XGMI_MI300X_MAX_SOURCE,
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
