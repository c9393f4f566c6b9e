"""A scenario's passes on its hardware: the scenario read, once, into the hardware model.

``scenario_hardware(scenario)`` reads the scenario's hardware, the hardware its timings
were measured on (``timing.measured_on``), its model's dimensions and its measured times
into plain inputs and hands them to the hardware floor's ``PassModel``
(sim/hardware/pass_model.py), which computes every pass: measured, re-composed on other
hardware, or derived from the weights and the GPU preset. Nothing here computes a pass.

Changing ``hardware.interconnect``, ``hardware.gpus``, ``hardware.gpu`` or
``timing.verify_cuda_graph`` re-composes the pass from the calibrated compute
(``load_scenario`` records the file's own hardware in ``timing.measured_on`` before
``--set`` applies). What else this floor decides about the hardware model: the
derived-compute efficiency range a scenario without one assumes, and how a measured
ungraphed verify's per-kernel CPU cost relates to a stated one (stating it in the file
contradicts it; a later ``--set`` is a what-if).
"""

from __future__ import annotations

from dataclasses import fields

from sim.hardware.hardware_points import hardware_points
from sim.hardware.pass_inputs import MeasuredTimes, ModelDims, PassInputs, PointSpec
from sim.hardware.pass_model import PassModel, pass_model
from sim.hardware.passes import HardwarePoint, PassMemo
from sim.model.cycle import PassTimes
from sim.scenario.schema import Scenario
from sim.scenario.sections.timing import TimingSpec

#: A derived-compute efficiency range used when the scenario states none: the batch-1
#: roofline is about 2x optimistic (README, "How far to trust it"), so 0.5-1 of peak.
EFFICIENCY_RANGE: tuple[float, float] = (0.5, 1.0)
EFFICIENCY_REASON = (
    "derived compute (a missing pass, the verify slope or the experts growth) assumes this "
    "fraction of the GPU's peak bandwidth; the batch-1 roofline is about 2x optimistic, so "
    "0.5-1 of peak"
)


def _measured_times(timing: TimingSpec) -> MeasuredTimes:
    return MeasuredTimes(**{f.name: getattr(timing, f.name) for f in fields(MeasuredTimes)})


def pass_inputs(scenario: Scenario) -> PassInputs:
    """What the hardware model reads of ``scenario`` (after overrides)."""
    hw, timing = scenario.hardware, scenario.timing
    ref = timing.measured_on
    origins = scenario.origins
    return PassInputs(
        current=PointSpec(hw.interconnect, hw.gpus, hw.gpu, timing.verify_cuda_graph, hw.allreduce),
        reference=None
        if ref is None
        else PointSpec(
            ref.interconnect,
            ref.gpus,
            ref.gpu,
            ref.verify_cuda_graph,
            ref.allreduce,
            "timing.measured_on",
        ),
        model=ModelDims(**{f.name: getattr(scenario.model, f.name) for f in fields(ModelDims)}),
        times=_measured_times(timing),
        num_steps=scenario.num_steps,
        draft_tokens=scenario.speculation.draft_tokens,
        efficiency=hw.bandwidth_efficiency,
        launch_us=hw.launch_us,
        launch_stated="hardware.launch_us" in origins.given,
        launch_overridden="hardware.launch_us" in origins.overrides,
        interconnects=hw.interconnects,
        parallel_draft=scenario.speculation.parallel_draft,
        draft_ms_per_extra_token=timing.draft_ms_per_extra_token,
        stated_origins=_stated_origins(scenario),
        expert_efficiency=hw.expert_read_efficiency,
    )


#: The passes whose given time (``timing.<pass>_ms``) the hardware model rests on.
_PASSES = ("decode", "verify", "draft_step", "draft_extend")


def _stated_origins(scenario: Scenario) -> dict[str, str]:
    """Pass name -> the origin its ``[uncertainty.timing]`` entry states, where the time is
    given and that origin is not a measurement (``derived``, ``assumed``)."""
    entries = scenario.uncertainty.entries()
    found = {}
    for name in _PASSES:
        entry = entries.get(f"timing.{name}_ms")
        given = getattr(scenario.timing, f"{name}_ms") is not None
        if given and entry is not None and entry.resolved_origin in ("derived", "assumed"):
            found[name] = entry.resolved_origin
    return found


def scenario_hardware(scenario: Scenario, memo: PassMemo | None = None) -> PassModel:
    """Every pass of the scenario taken apart on its hardware (sim/hardware/pass_model.py);
    a SpecsimError names the scenario field behind a problem. ``memo``: the hardware
    answers a study keeps for every scenario it binds (sim/hardware/passes.py; None: the
    model's own)."""
    inputs = pass_inputs(scenario)
    return pass_model(inputs, memo)


def hardware_point(scenario: Scenario) -> HardwarePoint:
    """The hardware the scenario asks about (after overrides)."""
    return hardware_points(pass_inputs(scenario))[0]


def reference_point(scenario: Scenario) -> HardwarePoint:
    """The hardware the timings were measured on (``timing.measured_on``, else the same)."""
    return hardware_points(pass_inputs(scenario))[1]


def measured_pass_times(
    timing: TimingSpec,
    num_steps: int,
    draft_tokens: int | None = None,
    slope: float | None = None,
) -> PassTimes:
    """Pass times as measured; ``verify_tokens`` defaults to the tokens the scenario's own
    verify pass covers: ``draft_tokens`` (a tree's num_draft_tokens), else ``num_steps + 1``;
    the verify slope to ``slope`` (else the given one, else 0).

    Every pass time must be given (``scenario_pass_times`` derives missing ones).
    """
    return _measured_times(timing).as_pass_times(num_steps, draft_tokens, slope)


def scenario_pass_times(scenario: Scenario, memo: PassMemo | None = None) -> PassTimes:
    """Pass times of a scenario on its hardware (sim/hardware/pass_model.py
    ``PassModel.passes``; ``memo``: as ``scenario_hardware``'s)."""
    return scenario_hardware(scenario, memo).passes


def uses_derived_compute(scenario: Scenario) -> bool:
    """True when compute comes from the weights and the GPU preset: a missing pass, the
    derived verify slope or the experts growth (``hardware.bandwidth_efficiency`` matters)."""
    return scenario_hardware(scenario).uses_derived_compute()
