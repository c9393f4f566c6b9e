"""``[hardware]``: GPUs, interconnect, launch cost and jitter."""

# No ``from __future__ import annotations`` here: pydantic evaluates a string annotation
# by compiling it (one ``compile`` per field), which made building these models most
# of their import time (start-up); the annotations are evaluated once, as objects.
from typing import Annotated

from pydantic import Field, ValidationInfo, field_validator

from sim.errors import UnknownNameError
from sim.hardware.expert_reads import EXPERT_READ_EFFICIENCY
from sim.hardware.gpus import GPU_PRESETS
from sim.hardware.interconnects import InlineInterconnect, Library, preset_names
from sim.scenario.sections.bounds import MAX_GPUS, MAX_LIST
from sim.scenario.sections.section import Section


class HardwareSpec(Section):
    """Tensor-parallel degree, interconnect and GPU presets, launch cost, jitter.

    ``interconnect`` names a preset (``specsim hardware --list``) or an inline
    ``[hardware.interconnects.NAME]`` table; ``launch_us`` is the CPU time one kernel costs
    without a CUDA graph, all-in (framework Python, PyTorch dispatch, launch). Left out
    (None) it is derived where a measured ungraphed verify fixes it
    (``timing.verify_compute = "decode"``, sim/hardware/pass_model.py; stating it there too
    is an error), else the public 18.9 us, calibrated on a graphed-vs-eager pair
    (sim/hardware/eager.py);
    ``allreduce`` picks ``nccl`` alone, the engine's ``custom`` all-reduce where it applies,
    or ``auto`` (the faster; sim/hardware/allreduce.py); ``rank_jitter_cv`` the coefficient
    of variation of one rank's compute per layer segment (layer-level pass only; 0 =
    deterministic).
    """

    interconnects: Annotated[dict[str, InlineInterconnect], Field(max_length=MAX_LIST)] = Field(
        default_factory=dict
    )
    gpus: Annotated[int, Field(gt=0, le=MAX_GPUS)] = 1
    interconnect: str = "pcie-gen4"
    gpu: str | None = None
    launch_us: Annotated[float, Field(ge=0.0, le=1_000_000.0)] | None = None
    allreduce: Library = "auto"
    rank_jitter_cv: Annotated[float, Field(ge=0.0, le=10.0)] = 0.0
    #: Fraction of the GPU's peak memory bandwidth and FLOPs that derived compute achieves
    #: (the batch-1 roofline of a missing pass, and the extra weight reads and FLOPs of a
    #: longer verify); 1 is the roofline, which the README calls about 2x optimistic.
    bandwidth_efficiency: Annotated[float, Field(gt=0.0, le=1.0)] = 1.0
    #: Fraction of the GPU's peak memory bandwidth at which a longer MoE verify's extra
    #: routed experts are read, through the fused-MoE kernel, and the batched passes'
    #: experts (sim/hardware/expert_reads.py; 0.934 fitted on public kernel curves, 0.5-1
    #: plausible, drawn with the answer at the default). None (library only): at
    #: ``bandwidth_efficiency``, the whole pass's.
    expert_read_efficiency: Annotated[float, Field(gt=0.0, le=1.0)] | None = EXPERT_READ_EFFICIENCY

    @field_validator("interconnect")
    @classmethod
    def _known_interconnect(cls, value: str, info: ValidationInfo) -> str:
        known = preset_names(info.data.get("interconnects"))
        if value not in known:
            raise ValueError(str(UnknownNameError("interconnect", value, known)))
        return value

    @field_validator("gpu")
    @classmethod
    def _known_gpu(cls, value: str | None) -> str | None:
        if value is not None and value not in GPU_PRESETS:
            raise ValueError(str(UnknownNameError("gpu", value, tuple(GPU_PRESETS))))
        return value
