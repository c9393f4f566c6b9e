"""Where every input of an answer comes from: measured, assumed, default, derived,
calibrated or override, with its standard error or plausible range and the reason.

An answer (the acceptance a target needs, the tok/s at a draft length) rests on the pass
times, the verify slope, the acceptance anchor and its shape by position, and, when the
hardware model derives or re-composes a pass, on the model's weights and the hardware.
``assumptions`` lists each of those values once:

* ``override``: set by ``--set``/``--grid`` or a study (``Scenario.origins``);
* ``calibrated`` / ``measured`` / ``assumed``: as its ``[uncertainty]`` entry says;
* ``measured``: given in the file without an entry (taken as exact);
* ``default``: not given, the schema's default;
* ``derived``: computed: pass times and the verify slope by the hardware model
  (sim/binding/decompose.py), the acceptance decay by held-out choice or the draft
  method's prior (sim/binding/priors.py), ranges where the derivation has one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic_core import to_jsonable_python

from sim.binding.acceptance_shape import AcceptanceShape
from sim.binding.bound import Bound
from sim.binding.decompose import (
    EFFICIENCY_RANGE,
    EFFICIENCY_REASON,
)
from sim.binding.inputs import clipping_notes
from sim.hardware.expert_reads import (
    EXPERT_READ_EFFICIENCY,
    EXPERT_READ_EFFICIENCY_RANGE,
    EXPERT_READ_REASON,
)
from sim.hardware.pass_model import PassModel
from sim.hardware.passes import PASS_NAMES
from sim.scenario.origins import FieldOrigins
from sim.scenario.schema import Scenario

#: Model fields the hardware model reads when it derives or re-composes a pass.
MODEL_FIELDS: tuple[str, ...] = (
    "layers",
    "hidden_size",
    "experts",
    "experts_per_token",
    "kernels_per_layer",
    "allreduces_per_layer",
    "activation_bytes",
    "draft_layers",
    "dense_layers",
    "layer_params",
    "dense_layer_params",
    "expert_params",
    "lm_head_params",
    "draft_params",
    "weight_bytes_per_param",
    "expert_bytes_per_param",
    "draft_bytes_per_param",
)

#: Why a drafter with no ``model.draft_bytes_per_param`` is read at the target's width.
DRAFT_BYTES_DEFAULT_REASON = (
    "not given: the target's model.weight_bytes_per_param; a drafter stored in another "
    "dtype (a bf16 EAGLE-3 drafter on an FP8 target) sets its own (specsim init "
    "--draft-config reads it)"
)


@dataclass(frozen=True, slots=True)
class Assumption:
    """One input of the answer: its value and where it comes from."""

    field: str
    value: Any
    origin: str  # measured | assumed | default | derived | calibrated | override
    stderr: float | list[float] | None = None
    range: tuple[float, float] | None = None
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "field": self.field,
            "value": self.value,
            "origin": self.origin,
            "stderr": self.stderr,
            "range": list(self.range) if self.range is not None else None,
            "reason": self.reason,
        }


def _get(scenario: Scenario, dotted: str) -> Any:
    node: Any = scenario
    for part in dotted.split("."):
        node = getattr(node, part)
    return node


def _entry(origins: FieldOrigins, dotted: str, value: Any) -> Assumption:
    found = origins[dotted]
    return Assumption(dotted, value, found.origin, found.stderr, found.range, found.reason)


def uses_hardware_model(hw: PassModel) -> bool:
    """True when a pass time, the verify slope or its growth comes from the hardware model."""
    return hw.uses_derived_compute() or not hw.at_reference


def derived_slope_range(scenario: Scenario, hw: PassModel) -> tuple[float, float] | None:
    """The derived verify slope at the ends of the efficiency range (None: not derived;
    ``hw``: the scenario's pass model)."""
    if hw.verify_slope[1] != "derived":
        return None
    ends = [hw.with_efficiency(eff).verify_slope[0] for eff in efficiency_range(scenario)]
    return (min(ends), max(ends))


def efficiency_range(scenario: Scenario) -> tuple[float, float]:
    entry = scenario.uncertainty.entries().get("hardware.bandwidth_efficiency")
    if entry is not None and entry.range is not None:
        return (entry.range[0], entry.range[1])
    return EFFICIENCY_RANGE


def assumptions(bound: Bound) -> tuple[Assumption, ...]:
    """Every value a bound scenario's answers depend on, with its provenance (its pass
    times and ``PassModel`` read from the ``Bound``)."""
    scenario, passes, hw = bound.scenario, bound.passes, bound.hardware
    timing = scenario.timing
    origins = scenario.field_origins()
    out: list[Assumption] = []
    if scenario.num_steps >= 0:
        out.append(_entry(origins, "speculation.num_steps", scenario.num_steps))
    names = PASS_NAMES if scenario.num_steps > 0 or scenario.acceptance else ("decode",)
    for name in names:
        dotted = f"timing.{name}_ms"
        value = getattr(timing, f"{name}_ms")
        if value is None:
            derived = passes.verify_ms if name == "verify" else getattr(passes, f"{name}_ms")
            out.append(
                Assumption(
                    dotted,
                    derived,
                    "derived",
                    reason="not measured: the hardware model derives it (roofline of the "
                    "weights over the GPU's bandwidth, or the measured decode for verify)",
                )
            )
        else:
            out.append(_entry(origins, dotted, value))
    out.append(_entry(origins, "timing.verify_tokens", hw.measured_verify_tokens))
    slope, slope_origin, slope_reason = hw.verify_slope
    if timing.verify_ms_per_extra_token is None:
        out.append(
            Assumption(
                "timing.verify_ms_per_extra_token",
                slope,
                slope_origin,
                range=derived_slope_range(scenario, hw),
                reason=slope_reason,
            )
        )
    else:
        out.append(_entry(origins, "timing.verify_ms_per_extra_token", slope))
    for key in ("cycle_overhead_ms", "verify_growth", "verify_cuda_graph"):
        out.append(_entry(origins, f"timing.{key}", getattr(timing, key)))
    out += _acceptance_assumptions(scenario, bound.shape, origins)
    if uses_hardware_model(hw):
        for key in ("gpus", "interconnect", "gpu"):
            out.append(_entry(origins, f"hardware.{key}", getattr(scenario.hardware, key)))
        out.append(launch_assumption(scenario, hw, origins))
        eff = _entry(
            origins, "hardware.bandwidth_efficiency", scenario.hardware.bandwidth_efficiency
        )
        if eff.origin == "default":
            eff = Assumption(
                eff.field, eff.value, "assumed", range=EFFICIENCY_RANGE, reason=EFFICIENCY_REASON
            )
        out.append(eff)
        expert_eff = scenario.hardware.expert_read_efficiency
        if hw.grows_experts() and expert_eff is not None:
            reads = _entry(origins, "hardware.expert_read_efficiency", expert_eff)
            if reads.origin in ("default", "measured") and expert_eff == EXPERT_READ_EFFICIENCY:
                low, high = EXPERT_READ_EFFICIENCY_RANGE
                reads = Assumption(
                    reads.field, expert_eff, "assumed", range=(low, high), reason=EXPERT_READ_REASON
                )
            out.append(reads)
        for key in MODEL_FIELDS:
            value = getattr(scenario.model, key)
            if value is not None:
                out.append(_entry(origins, f"model.{key}", value))
        if scenario.model.draft_params is not None and scenario.model.draft_bytes_per_param is None:
            out.append(
                Assumption(
                    "model.draft_bytes_per_param",
                    scenario.model.weight_bytes_per_param,
                    "default",
                    reason=DRAFT_BYTES_DEFAULT_REASON,
                )
            )
    elif eager_verify(hw) and scenario.model.kernels_per_layer is not None:
        out.append(launch_assumption(scenario, hw, origins))
        out.append(_entry(origins, "model.kernels_per_layer", scenario.model.kernels_per_layer))
    return tuple(with_clipping_notes(bound, out, origins))


def with_clipping_notes(
    bound: Bound, rows: list[Assumption], origins: FieldOrigins
) -> list[Assumption]:
    """``rows`` with a note on every field whose stated error or range reaches past its
    valid values (its draws are clipped there, sim/uncertainty/sampled_draws.py), appended to
    the row's reason, or as a row of its own when the field has none (its origin from
    ``origins``, the scenario's ``field_origins``)."""
    scenario = bound.scenario
    notes = clipping_notes(bound.inputs)
    if not notes:
        return rows
    out = []
    for row in rows:
        note = notes.pop(row.field, None)
        if note is not None:
            reason = f"{row.reason}; {note}" if row.reason else note
            row = Assumption(row.field, row.value, row.origin, row.stderr, row.range, reason)
        out.append(row)
    for field, note in notes.items():
        row = _entry(origins, field, _get(scenario, field))
        out.append(Assumption(row.field, row.value, row.origin, row.stderr, row.range, note))
    return out


def eager_verify(hw: PassModel) -> bool:
    """True when the verify runs ungraphed where the timings were measured or where the
    answer is asked (the eager model's per-kernel cost and kernel count then matter)."""
    return not (hw.current.verify_cuda_graph and hw.reference.verify_cuda_graph)


def kernel_count_range(scenario: Scenario) -> tuple[int, int] | None:
    """The ``[uncertainty]`` range of ``model.kernels_per_layer`` (None: none stated)."""
    entry = scenario.uncertainty.entries().get("model.kernels_per_layer")
    if entry is None or entry.range is None:
        return None
    return (int(entry.range[0]), int(entry.range[1]))


def launch_origin(scenario: Scenario, hw: PassModel, origins: FieldOrigins) -> tuple[str, str]:
    """(origin, reason) of the per-kernel CPU cost on the hardware asked about (``origins``:
    the scenario's ``field_origins``)."""
    given = origins["hardware.launch_us"]
    origin, reason = given.origin, given.reason
    if origin == "override":
        return origin, reason
    if hw.derived_launch_us is not None:
        return "derived", (
            f"fixed by the measured ungraphed verify ({scenario.timing.verify_ms:g} "
            "ms) with its GPU work from the graphed decode (timing.verify_compute = "
            f"'decode') at {hw.geom.kernels_per_layer} kernels a layer"
        )
    if origin == "default":
        return origin, (
            "not given: the public per-kernel cost, calibrated on pie-project/pie PR #348 "
            "(sim/hardware/eager.py)"
        )
    return origin, reason


def launch_assumption(scenario: Scenario, hw: PassModel, origins: FieldOrigins) -> Assumption:
    """``hardware.launch_us`` as the answer uses it: stated, the public default, or derived
    from the measured ungraphed verify, then with its range over the kernel count's."""
    origin, reason = launch_origin(scenario, hw, origins)
    counts = kernel_count_range(scenario)
    span = None
    if origin == "derived" and counts is not None:
        ends = [hw.launch_us_at_kernels(k) for k in counts]
        span = (min(ends), max(ends))
        reason += f"; {span[1]:.4g}-{span[0]:.4g} us at {counts[0]}-{counts[1]} kernels"
    return Assumption(
        "hardware.launch_us", round(hw.current.launch_us, 4), origin, range=span, reason=reason
    )


def _acceptance_assumptions(
    scenario: Scenario, shape: AcceptanceShape | None, origins: FieldOrigins
) -> list[Assumption]:
    spec = scenario.acceptance
    if spec is None or shape is None:
        return []
    out = [_entry(origins, f"acceptance.{spec.anchor}", _anchor_value(spec))]
    if spec.measured_num_steps is not None and spec.anchor in ("alpha", "accept_length", "mix"):
        out.append(_entry(origins, "acceptance.measured_num_steps", spec.measured_num_steps))
    shape_origin = origins["acceptance.shape"].origin
    out.append(
        Assumption(
            "acceptance.shape",
            shape.shape,
            shape_origin if spec.shape != "auto" else "derived",
            reason=shape.reason,
        )
    )
    if shape.shape in ("geometric", "step"):
        if spec.decay is not None:
            out.append(_entry(origins, "acceptance.decay", spec.decay))
        else:
            prior = shape.prior
            out.append(
                Assumption(
                    "acceptance.decay",
                    shape.decay,
                    "derived",
                    range=(prior.low, prior.high) if prior is not None else None,
                    reason=shape.reason,
                )
            )
    if spec.tilt is not None:
        out.append(_entry(origins, "acceptance.tilt", spec.tilt))
    elif shape.tilt_error is not None:  # the tilt left to the method's shape error
        error = shape.tilt_error
        out.append(
            Assumption(
                "acceptance.tilt",
                error.nominal,
                "derived",
                stderr=error.sd,
                reason=error.reason,
            )
        )
    out.append(_entry(origins, "acceptance.method", spec.method))
    for key in ("concentration", "std"):
        if getattr(spec, key) is not None:
            out.append(_entry(origins, f"acceptance.{key}", getattr(spec, key)))
    return out


def _anchor_value(spec: Any) -> Any:
    value = getattr(spec, spec.anchor)
    if spec.anchor == "mix":
        return [c.name for c in value]
    return value


def override_entries(scenario: Scenario) -> list[dict[str, Any]]:
    """``[{field, value, via}]`` of the overridden fields (``--set``, ``--grid``, studies)."""
    out = []
    for dotted, via in scenario.origins.overrides.items():
        try:
            value = _get(scenario, dotted)
        except AttributeError:
            value = None
        # a table or an array of tables (--set acceptance.mix=[{...}]) as plain JSON data
        value = to_jsonable_python(value)
        out.append({"field": dotted, "value": value, "via": via})
    return out


def effective_hardware(scenario: Scenario) -> dict[str, Any]:
    """The hardware the answer is for (after overrides) and the hardware the timings were
    measured on; ``recomposed`` when they differ (pass times moved by the hardware model)."""
    hw = scenario.hardware
    here = {
        "gpus": hw.gpus,
        "gpu": hw.gpu,
        "interconnect": hw.interconnect,
        "verify_cuda_graph": scenario.timing.verify_cuda_graph,
    }
    ref = scenario.timing.measured_on
    measured = (
        {
            "gpus": ref.gpus,
            "gpu": ref.gpu,
            "interconnect": ref.interconnect,
            "verify_cuda_graph": ref.verify_cuda_graph,
        }
        if ref is not None
        else dict(here)
    )
    return {**here, "measured_on": measured, "recomposed": measured != here}
