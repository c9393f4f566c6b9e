"""The hardware points a pass model works on (sim/hardware/pass_model.py), each name
resolved once (the interconnect, then the GPU preset), and the factor compute takes from
one point to another (TP degree and memory bandwidth)."""

from __future__ import annotations

from sim.errors import SpecsimError, UnknownNameError
from sim.hardware.eager import EAGER_KERNEL_US
from sim.hardware.gpus import gpu_preset
from sim.hardware.interconnects import resolve_interconnect
from sim.hardware.pass_inputs import PassInputs
from sim.hardware.passes import HardwarePoint


def hardware_points(inputs: PassInputs) -> tuple[HardwarePoint, HardwarePoint]:
    """(the hardware asked about, the hardware the timings were measured on), resolved
    (each interconnect, then its GPU preset); the reference takes the current per-kernel
    CPU cost. A name that resolves to nothing is a SpecsimError naming its section."""
    specs = [inputs.current] if inputs.reference is None else [inputs.current, inputs.reference]
    launch_us = EAGER_KERNEL_US if inputs.launch_us is None else inputs.launch_us
    points = []
    for spec in specs:
        try:
            interconnect = resolve_interconnect(spec.interconnect, inputs.interconnects)
        except (UnknownNameError, ValueError) as exc:
            raise SpecsimError(str(exc), field=f"{spec.section}.interconnect") from None
        try:
            gpu = None if spec.gpu is None else gpu_preset(spec.gpu)
        except UnknownNameError as exc:
            raise SpecsimError(str(exc), field=f"{spec.section}.gpu") from None
        points.append(
            HardwarePoint(
                interconnect=interconnect,
                gpus=spec.gpus,
                gpu=gpu,
                verify_cuda_graph=spec.verify_cuda_graph,
                launch_us=launch_us,
                allreduce=spec.allreduce,
            )
        )
    return points[0], points[-1]


def compute_scale(ref: HardwarePoint, cur: HardwarePoint) -> float:
    """Factor from calibrated compute on ``ref`` to compute on ``cur``.

    TP degree: compute per rank ~ 1 / gpus. GPU: compute ~ 1 / memory bandwidth.
    """
    scale = ref.gpus / cur.gpus
    if (ref.gpu and ref.gpu.name) != (cur.gpu and cur.gpu.name):
        if ref.gpu is None or cur.gpu is None:
            raise SpecsimError(
                "the GPU changed but the GPU the timings were measured on is not known; "
                "set it in [timing.measured_on] (or [hardware] of the file)",
                field="timing.measured_on.gpu",
            )
        scale *= ref.gpu.memory_bandwidth_gbps / cur.gpu.memory_bandwidth_gbps
    return scale
