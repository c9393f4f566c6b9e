"""Perturbing a bound scenario: which inputs a serving answer draws, their draws as
overrides of the scenario, and each draw's scenario re-validated and bound. A serving
interval perturbs the scenario, binds each draw and answers.

``serving_inputs``: what a serving answer draws, the ``Bound``'s own uncertain inputs
(``Bound.inputs``, found by ``bind``) and every batched cost term of
``SERVING_DEFAULT_RANGES`` the scenario takes by default, over its published range;
``input_draws``: their scrambled Sobol draws (sim/binding/inputs.py ``draw_inputs``), each
a set of overrides of the scenario (``draw_overrides``, which the batch-1 sampled model
takes too), conditioned on the calibration figures the scenario records (sim/calibration/
load_record.py), made once and carried with the inputs they were made of and what they
were conditioned on (``InputDraws``, which also writes what a document says of them);
``perturbed``: one draw's scenario re-validated and bound, the one step that binds below
a serving answer.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sim.binding.bound import Bound, bind
from sim.binding.inputs import UncertainInput, draw_inputs, field_bounds
from sim.errors import SpecsimError
from sim.scenario.overrides import with_overrides
from sim.scenario.schema import Scenario
from sim.uncertainty.interval import INTERVAL_LABEL

__all__ = [
    "DRAWS",
    "SERVING_DEFAULT_RANGES",
    "InputDraws",
    "Overrides",
    "Refit",
    "acceptance_override",
    "describe_inputs",
    "draw_overrides",
    "input_draws",
    "is_acceptance_input",
    "perturbed",
    "serving_inputs",
]

#: Sobol draws of the uncertain inputs a serving answer takes (a power of 2).
DRAWS = 8

#: One draw of the uncertain inputs: (dotted field, value) overrides of the scenario.
Overrides = tuple[tuple[str, Any], ...]

#: Re-solves a calibrated scenario's fitted terms in one draw: from the draw's overrides
#: of the scenario, the values of the fitted fields that reproduce the calibration figures
#: under them (as re-running the calibration with the drawn inputs would).
Refit = Callable[[Mapping[str, Any]], Mapping[str, Any]]

DefaultRange = tuple[float, float, float, str]


def _host_work_range(scenario: Scenario) -> DefaultRange | None:
    from sim.model.host_work import DEFAULT_US_PER_REQUEST, US_PER_REQUEST_RANGE  # lazy

    low, high = US_PER_REQUEST_RANGE
    why = f"the default host work per running request: public measurements put it at {low:g}-"
    return DEFAULT_US_PER_REQUEST, low, high, why + f"{high:g} us (sim/model/host_work.py)"


def _kernel_slope_range(scenario: Scenario) -> DefaultRange | None:
    from sim.hardware.batched import SLOPE_RANGE  # lazy: serving only
    from sim.hardware.compute_curve import DEFAULT_SLOPE  # lazy: serving only

    low, high = SLOPE_RANGE
    why = (
        "the default growth of a pass measured at batch 1 only (and beyond its last measured "
        f"point): public kernel profiles put it at {low:g}-{high:g} ms per ms of work at peak "
        "(sim/hardware/batched.py); a batch-1 calibration cannot identify it"
    )
    return DEFAULT_SLOPE, low, high, why


def _expert_skew_range(scenario: Scenario) -> DefaultRange | None:
    if not scenario.model.experts:
        return None  # a dense target routes no experts
    from sim.hardware.experts import SERVING_STEP_SKEW, SKEW_RANGE  # lazy: serving only

    low, high = SKEW_RANGE
    why = (
        "the default skew of expert popularity in a batched step: uniform routing to the one "
        f"public serving trace, {low:g}-{high:g} (sim/hardware/experts.py); a batch-1 "
        "calibration cannot identify it"
    )
    return SERVING_STEP_SKEW, low, high, why


def _logit_bytes_range(scenario: Scenario) -> DefaultRange | None:
    from sim.binding.per_request_costs import target_vocab  # lazy: serving only
    from sim.model.logit_rows import BYTES_PER_LOGIT_RANGE, DEFAULT_BYTES_PER_LOGIT  # lazy

    if target_vocab(scenario) is None:
        return None  # no vocabulary: the logit rows are not priced

    low, high = BYTES_PER_LOGIT_RANGE
    why = (
        "the default bytes a rank moves per vocabulary entry of a row of target logits "
        f"(greedy decoding): {low:g} for an arg-max over the bf16 row to {high:g} for "
        "sampling with top-k and top-p (sim/model/logit_rows.py); a batch-1 calibration "
        "cannot identify it"
    )
    return DEFAULT_BYTES_PER_LOGIT, low, high, why


def _state_bandwidth_range(scenario: Scenario) -> DefaultRange | None:
    from sim.binding.state_shape import state_bandwidth_fraction, state_shape  # lazy
    from sim.model.recurrent_state import (  # lazy
        STATE_BANDWIDTH_FRACTION_RANGE,
        STATE_BANDWIDTH_READINGS,
    )

    if not state_shape(scenario):
        return None  # no state priced: nothing moves at this bandwidth
    low, high = STATE_BANDWIDTH_FRACTION_RANGE
    lowest, highest = STATE_BANDWIDTH_READINGS
    why = (
        "the default share of the GPU's peak bandwidth at which the state kernels move a "
        "request's recurrent and conv states (the server's measured batch-1 memory "
        "efficiency, else peak): public readings of other Gated DeltaNet decode kernels "
        f"span {lowest:g}-{highest:g} of peak, none of this server's kernels with its state "
        "dtype (sim/model/recurrent_state.py, docs/accuracy-under-load.md); a batch-1 "
        "calibration cannot identify it"
    )
    return state_bandwidth_fraction(scenario), low, high, why


def _kv_reserve_range(scenario: Scenario) -> DefaultRange | None:
    from sim.binding.kv_capacity import derived_engine  # lazy: serving only

    engine = derived_engine(scenario)
    if engine is None:
        return None  # a given capacity, or none derived
    from sim.binding.kv_capacity import memory_gib
    from sim.hardware.memory import RESERVE_SHARE_RANGE, reserve_range_gib

    default, low, high = reserve_range_gib(engine, memory_gib(scenario))
    shares = RESERVE_SHARE_RANGE[engine]
    why = (
        f"the memory {engine} keeps per GPU beyond the weights and the KV cache (activations, "
        f"CUDA graphs, communicators), which sizes the derived KV capacity: {low:g}-{high:g} "
        f"GiB ({100 * shares[0]:g}-{100 * shares[1]:g}% of the GPU's memory in its startup "
        "logs, sim/hardware/memory.py); a batch-1 calibration cannot identify it"
    )
    return default, low, high, why


#: Batched cost terms a serving answer draws over their published range when the scenario
#: neither gives the field nor states its uncertainty: field -> f(scenario) -> (the model's
#: default, low, high, reason), None where the term does not apply. A batched term that a
#: calibration leaves unidentified enters the same way when the scenario carries it as an
#: ``[uncertainty]`` range (``uncertain_inputs``); a default term with a published range is
#: added here. Every one of them is a term a batch-1 calibration cannot identify.
SERVING_DEFAULT_RANGES: dict[str, Callable[[Scenario], DefaultRange | None]] = {
    "serving.host_us_per_request": _host_work_range,
    "serving.kernel_slope": _kernel_slope_range,
    "serving.expert_skew": _expert_skew_range,
    "serving.kv_reserve_gib": _kv_reserve_range,
    "serving.bytes_per_logit": _logit_bytes_range,
    "serving.state_bandwidth_fraction": _state_bandwidth_range,
}


def serving_inputs(bound: Bound) -> tuple[UncertainInput, ...]:
    """The uncertain inputs of a serving answer: the bound scenario's own
    (``Bound.inputs``), then every batched cost term of ``SERVING_DEFAULT_RANGES`` the
    scenario takes by default (not given in the file, no ``[uncertainty]`` entry), uniform
    over its published range (assumed)."""
    scenario = bound.scenario
    out = list(bound.inputs)
    stated = {u.field for u in out} | set(scenario.uncertainty.entries())
    for field, make in SERVING_DEFAULT_RANGES.items():
        if field in stated or scenario.given_origin(field)[0] != "default":
            continue
        found = make(scenario)
        if found is None:
            continue
        default, low, high, reason = found
        section, key = field.split(".", 1)
        part = getattr(scenario, section)
        if part is None:  # no such section: every field its default
            nominal, bounds = default, (-math.inf, math.inf)
        else:
            value = getattr(part, key)
            nominal = default if value is None else float(value)
            bounds = field_bounds(scenario, field)
        out.append(
            UncertainInput(
                field, nominal, "uniform", "assumed", reason, low=low, high=high, bounds=bounds
            )
        )
    return tuple(out)


def describe_inputs(inputs: Sequence[UncertainInput]) -> list[dict[str, Any]]:
    """The drawn inputs for a document: field, origin, reason, and range or stderr."""
    out = []
    for inp in inputs:
        row: dict[str, Any] = {"field": inp.field, "origin": inp.origin, "reason": inp.reason}
        spread = inp.spread  # the range, or a prior's 5-95%; None for a stderr
        if spread is None:
            row["stderr"] = inp.stderr
        else:
            row["range"] = list(spread)
        out.append(row)
    return out


@dataclass(frozen=True, slots=True)
class InputDraws:
    """A serving answer's uncertain ``inputs`` (``serving_inputs``) and their draws, made
    once from the bound scenario (``input_draws``): ``overrides``, one set of (dotted
    field, value) overrides of the scenario per draw kept (empty: none), and
    ``conditioning``, what the draws were conditioned on (sim/calibration/load_record.py
    ``conditioning``; None: no draws, or a scenario that records no calibration)."""

    inputs: tuple[UncertainInput, ...] = ()
    overrides: tuple[Overrides, ...] = ()
    conditioning: dict[str, Any] | None = None

    def doc(self, replications: int) -> dict[str, Any]:
        """What a document says about its intervals: the label, draws, replications per
        draw (``replications``) and the inputs drawn; ``conditioned_on`` with draws of a
        scenario that records its calibration figures."""
        return {
            "label": INTERVAL_LABEL,
            "draws": len(self.overrides),
            "replications_per_draw": replications if self.overrides else 0,
            "inputs": describe_inputs(self.inputs),
            **({"conditioned_on": self.conditioning} if self.conditioning else {}),
        }


def is_acceptance_input(field: str) -> bool:
    """Whether a dotted field is one of the ``[acceptance]`` inputs."""
    return field.startswith("acceptance.")


def acceptance_override(scenario: Scenario, field: str, value: float) -> dict[str, object]:
    """The overrides that set one acceptance input (a list entry replaces the list)."""
    spec = scenario.acceptance
    assert spec is not None
    if field.startswith("acceptance.per_position["):
        listed = list(spec.per_position or [])
        listed[int(field.split("[")[1].rstrip("]"))] = value
        return {"acceptance.per_position": listed}
    return {field: value}


def draw_overrides(
    scenario: Scenario, inputs: Sequence[UncertainInput], row: Sequence[float] | np.ndarray
) -> dict[str, object]:
    """The overrides that set ``inputs`` to one draw ``row`` (F,): each with the fields it
    sets with it (``UncertainInput.set_with``: a decay's resolved shape), an acceptance
    input by ``acceptance_override``, entries of one list field set together, an integer
    field rounded, any other field (a timing, a hardware or a batched cost term with a
    range) set as it is."""
    over: dict[str, Any] = {}
    for inp, v in zip(inputs, [float(x) for x in row], strict=True):
        over.update(inp.set_with)
        if not is_acceptance_input(inp.field):
            if "[" in inp.field:
                name, index = inp.field[:-1].split("[")
                section, key = name.split(".", 1)
                listed = list(over.get(name, getattr(getattr(scenario, section), key)))
                listed[int(index)] = round(v) if inp.integer else v
                over[name] = listed
            else:
                over[inp.field] = round(v) if inp.integer else v
            continue
        for key, value in acceptance_override(scenario, inp.field, v).items():
            if key in over and isinstance(value, list):  # another entry of the same list
                i = int(inp.field.split("[")[1].rstrip("]"))
                value = [*over[key]]
                value[i] = v
            over[key] = value
    return over


def input_draws(
    bound: Bound, seed: int, draws: int = DRAWS, refit: Refit | None = None
) -> InputDraws:
    """``draws`` scrambled Sobol draws (a power of 2; 0: none) of a bound scenario's
    serving inputs (``serving_inputs``), the scramble from ``seed``, each a set of
    overrides of the scenario (``draw_overrides``). A scenario that records the figures a
    load sweep fitted (``serving.calibrated_on``, ``serving.calibrated_terms``) has its
    draws conditioned on them, read from it once (sim/calibration/load_record.py
    ``recorded_calibration``): ``refit`` (None: the scenario's own refit) re-solves each
    draw's fitted fields so that the drawn scenario reproduces the figures; a draw under
    which no value does (the fit finds no root, or the scenario rejects the value) is left
    out, as the data rule it out."""
    scenario = bound.scenario
    inputs = serving_inputs(bound)
    if not inputs or draws < 1:
        return InputDraws(inputs)
    values = draw_inputs(scenario, inputs, draws, seed)
    conditioning = None
    if scenario.serving is not None and scenario.serving.calibrated_terms:
        # lazy: the load fit only for a scenario that records one (start-up)
        from sim.calibration.load_record import recorded_calibration

        recorded, conditioning = recorded_calibration(scenario)
        refit = recorded if refit is None else refit
    overrides = []
    for row in values:
        over = draw_overrides(scenario, inputs, row)
        if refit is not None:
            try:
                over = {**over, **refit(over)}
            except (SpecsimError, ValueError):
                continue  # no value of the fitted terms reproduces the calibration here
        overrides.append(tuple(over.items()))
    return InputDraws(inputs, tuple(overrides), conditioning if overrides else None)


def perturbed(bound: Bound, overrides: Overrides, source: str = "uncertainty") -> Bound:
    """The bound scenario with one draw's ``overrides`` set, re-validated and bound
    (SpecsimError where the scenario or its hardware model rejects the draw), with the
    hardware answers of ``bound``'s model (``PassModel.memo``), which its draws meet again."""
    scenario = with_overrides(bound.scenario, dict(overrides), source=source)
    return bind(scenario, bound.hardware.memo)
