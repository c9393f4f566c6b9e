"""The levers across the kernel count's stated range (``KernelSweep``, ``kernel_sweep``):
where the scenario states a range for the kernels an eager layer issues
(``model.kernels_per_layer`` under ``[uncertainty]``) and its verify runs ungraphed, each
lever at the range's ends; with a measured ungraphed verify the per-kernel CPU cost
follows from it at each count, and the "verify time as GPU work" reading (the public
per-kernel cost) is shown where it fits the measured verify at all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sim.binding.bound import Bound
from sim.binding.provenance import (
    eager_verify,
    kernel_count_range,
    launch_origin,
)
from sim.errors import SpecsimError
from sim.hardware.eager import EAGER_KERNEL_US
from sim.hardware.passes import PassMemo
from sim.scenario.overrides import with_overrides
from sim.scenario.schema import Scenario
from sim.studies.lever_choices import Lever, scenario_tok_s

__all__ = ["KernelSweep", "kernel_sweep"]


@dataclass(frozen=True, slots=True)
class KernelSweep:
    """The levers across the kernel count's range (``counts``, the ends of
    ``model.kernels_per_layer``'s range): the per-kernel CPU cost at each (``launch_us``,
    with its origin), each lever's tok/s as specified (None where the count makes the
    scenario invalid), and graphing under the "verify time as GPU work" reading at each
    count (``gpu_work``; None: the public per-kernel cost's launches alone exceed the
    measured verify) with the largest count at which that reading fits
    (``gpu_work_fits_up_to``; None: it fits the whole range, or none at all)."""

    counts: tuple[int, ...]
    reason: str
    launch_us: tuple[float, ...]
    launch_origin: str
    tok_s: Mapping[str, tuple[float | None, ...]]
    gpu_work: tuple[float | None, ...]
    gpu_work_note: str
    gpu_work_fits_up_to: int | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "counts": list(self.counts),
            "reason": self.reason,
            "launch_us": list(self.launch_us),
            "launch_origin": self.launch_origin,
            "tok_s": {k: list(v) for k, v in self.tok_s.items()},
            "gpu_work": list(self.gpu_work),
            "gpu_work_note": self.gpu_work_note,
            "gpu_work_fits_up_to": self.gpu_work_fits_up_to,
        }


#: The "verify time as GPU work" reading of graphing (``VARIANTS``' last, with the graph).
_GPU_WORK_GRAPHED = {"timing.verify_compute": "measured", "timing.verify_cuda_graph": True}


def _try_tok_s(
    scenario: Scenario, overrides: Mapping[str, Any], memo: PassMemo
) -> tuple[float | None, str]:
    """(tok/s, "") of the scenario with ``overrides``, or (None, why not); ``memo``: the
    reference model's hardware answers (``PassModel.memo``), which its what-ifs meet again."""
    try:
        return scenario_tok_s(with_overrides(scenario, dict(overrides), source="lever"), memo), ""
    except SpecsimError as exc:
        return None, exc.message


def kernel_sweep(bound: Bound, levers: Sequence[Lever]) -> KernelSweep | None:
    """The levers at the ends of the kernel count's stated range (None: no range, or the
    verify is graphed wherever it matters), on the bound scenario's own hardware model."""
    scenario, hw = bound.scenario, bound.hardware
    counts = kernel_count_range(scenario)
    if counts is None:
        return None
    if not eager_verify(hw):
        return None
    entry = scenario.uncertainty.entries()["model.kernels_per_layer"]
    field = "model.kernels_per_layer"
    launch = tuple(hw.launch_us_at_kernels(k) for k in counts)
    # the count moves the cost, not how it is got
    origin = launch_origin(scenario, hw, scenario.field_origins())[0]
    tok_s = {
        lever.name: tuple(
            _try_tok_s(scenario, {**lever.overrides, field: k}, hw.memo)[0] for k in counts
        )
        for lever in levers
    }
    gpu_work = tuple(
        _try_tok_s(scenario, {**_GPU_WORK_GRAPHED, field: k}, hw.memo)[0] for k in counts
    )
    fits_up_to = None
    if scenario.timing.verify_compute == "decode" and gpu_work[0] is None:
        low = 2 * max(scenario.model.allreduces_per_layer, 1)  # the schema's least count
        for k in range(counts[0] - 1, low - 1, -1):
            if _try_tok_s(scenario, {**_GPU_WORK_GRAPHED, field: k}, hw.memo)[0] is not None:
                fits_up_to = k
                break
    note = _gpu_work_note(scenario, counts) if all(x is None for x in gpu_work) else ""
    return KernelSweep(counts, entry.reason, launch, origin, tok_s, gpu_work, note, fits_up_to)


def _gpu_work_note(scenario: Scenario, counts: tuple[int, ...]) -> str:
    """Why the "verify time as GPU work" reading fits no count of the range: the public
    per-kernel cost's launches (every kernel and eager all-reduce call one framework op,
    sim/hardware/eager.py) against the measured verify."""
    layers = scenario.model.layers or 0
    launch = [layers * k * EAGER_KERNEL_US / 1000.0 for k in counts]
    return (
        f"at the public {EAGER_KERNEL_US:.3g} us a kernel the launches of {layers} layers x "
        f"{counts[0]}-{counts[-1]} kernels alone take {launch[0]:.1f}-{launch[-1]:.1f} ms, "
        f"more than the measured {scenario.timing.verify_ms:g} ms verify"
    )
