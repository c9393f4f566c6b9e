"""The tok/s figures against a trial scenario's pass times: the timing parameters, each
figure's prediction and error, and the weighted residuals the timing fit minimises."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from sim.binding.decompose import scenario_hardware
from sim.binding.tree_cost import tree_cost
from sim.calibration.lsq import Param
from sim.calibration.measurements import Measurements, SpecPoint
from sim.calibration.physics import derivable, implied_efficiency
from sim.calibration.result import Residual
from sim.calibration.settings import TIMING_FIELDS
from sim.errors import SpecsimError
from sim.hardware.pass_model import PassModel
from sim.model.cycle import PassTimes, cycle_cost
from sim.scenario.overrides import with_overrides
from sim.scenario.schema import Scenario

#: Timing fields that may be 0 (the others must be positive).
NONNEGATIVE_TIMING = (
    "verify_ms_per_extra_token",
    "cycle_overhead_ms",
    "draft_extend_ms_per_token",
    "draft_step_overhead_ms",
)


def timing_params(passes: PassTimes) -> list[Param]:
    """Timing parameters with the base's pass times (as measured, or as the hardware model
    derives them) as base values."""
    out = []
    for name in TIMING_FIELDS:
        value = float(getattr(passes, name))
        if not math.isfinite(value):
            continue  # a pass the base has none of (plain decoding's drafter): not a parameter
        lower = 0.0 if name in NONNEGATIVE_TIMING else 1e-6
        out.append(Param(f"timing.{name}", value, lower, math.inf, max(abs(value), 0.1)))
    return out


def point_sigma(p: SpecPoint) -> float:
    """tok/s error with the accept length's error propagated (prediction is proportional to AL)."""
    return p.tok_s * math.hypot(p.tok_s_sigma / p.tok_s, p.accept_length_sigma / p.accept_length)


def point_tok_s(
    passes: PassTimes,
    point: SpecPoint,
    scenario: Scenario | None = None,
    hw: PassModel | None = None,
) -> float:
    """1000 AL / T_cycle(k) for a speculative point on ``passes``; a tree point's cycle is
    the tree's (sim/model/tree/cost.py), its drafter passes over topk beams priced as the
    ``scenario`` prices them (needed for a tree point; ``hw``: its hardware model when the
    caller holds it)."""
    if point.is_tree:
        assert scenario is not None and point.num_draft_tokens is not None
        hw = scenario_hardware(scenario) if hw is None else hw  # the drafter over the beams
        cost = tree_cost(scenario, point.num_steps, point.topk, point.num_draft_tokens, passes, hw)
    else:
        cost = cycle_cost(passes, point.num_steps)
    return 1000.0 * point.accept_length / cost.at_accept_length(point.accept_length).total_ms


def point_residual(
    passes: PassTimes,
    point: SpecPoint,
    scenario: Scenario,
    label: str = "tok/s",
    hw: PassModel | None = None,
) -> Residual:
    """A speculative point's tok/s against its prediction on ``passes`` (``point_tok_s``;
    ``hw``: the scenario's hardware model when the caller holds it), weighted by
    ``point_sigma``; ``label`` starts its name ("held out: tok/s" for a check)."""
    return Residual(
        f"{label} at {point.label()}, accept length {point.accept_length:g}",
        point.tok_s,
        point_tok_s(passes, point, scenario, hw),
        point_sigma(point),
        point.source,
    )


def written_trial(
    base: Scenario,
    base_hw: PassModel,
    values: Mapping[str, float],
    written: Sequence[str],
    extra: Mapping[str, Any] | None = None,
) -> tuple[Scenario, PassModel]:
    """(``base`` with the timing ``values`` of the fields ``written`` set, as the calibrated
    scenario will hold them, and (when the base prices passes from the weights) the
    bandwidth efficiency the written decode implies on this server
    (sim/calibration/physics.py); its hardware model). The fit predicts each figure from
    this scenario's own pass times, so a calibrated scenario reproduces its figures when
    run. ``base_hw``: the base's hardware model, whose memo (sim/hardware/passes.py
    ``PassMemo``) every trial of the fit shares."""
    # a trial step of the fit may cross a field's bound (0): the scenario holds it there
    overrides: dict[str, Any] = {n: max(float(values[n]), _FLOOR[n]) for n in written}
    overrides.update(extra or {})
    if "timing.decode_ms" in overrides and prices_from_weights(base, base_hw):
        try:
            eff = implied_efficiency(base, overrides["timing.decode_ms"], base_hw)
        except SpecsimError:  # a trial decode under its communication floor
            eff = 1.0
        overrides.setdefault("hardware.bandwidth_efficiency", min(max(eff, 1e-3), 1.0))
    try:
        scenario = with_overrides(base, overrides, source="calibrate")
        # the hardware model checks it: its errors surface here
        hw = scenario_hardware(scenario, base_hw.memo)
    except SpecsimError as exc:
        shown = ", ".join(f"{n} {overrides[n]:.4g}" for n in written)
        raise SpecsimError(
            f"the figures ask for {shown}, which make no valid scenario of this server: "
            f"{exc.field + ': ' if exc.field else ''}{exc.message}",
            source="calibrate",
        ) from None
    return scenario, hw


#: The least value the scenario takes of each timing field (its schema's bound).
_FLOOR = {f"timing.{n}": 0.0 if n in NONNEGATIVE_TIMING else 1e-9 for n in TIMING_FIELDS}


def prices_from_weights(base: Scenario, base_hw: PassModel) -> bool:
    """True when the base derives some compute from its weights and GPU (``base_hw``: its
    hardware model)."""
    return derivable(base) and base_hw.uses_derived_compute()


def timing_residuals(
    base: Scenario,
    base_hw: PassModel,
    data: Measurements,
    written: Sequence[str],
    extra: Mapping[str, Any],
):
    """Weighted residuals of the tok/s figures on the pass times the written scenario has.
    A base whose passes are all measured on a line (no table, no derived slope) has them
    back unchanged with the written values substituted: the same pass times, without
    re-validating a scenario at every trial. ``base_hw``: the base's hardware model (its
    memo is shared by every trial's: ``written_trial``)."""
    as_given = None
    trees = any(p.is_tree for p in data.points)  # priced by the written scenario's drafter
    if not extra and not trees and _passes_as_written(base_hw):
        as_given = base_hw.passes

    def fun(values: dict[str, float]) -> np.ndarray:
        scenario = hw = None
        if as_given is not None:
            changes: dict[str, Any] = {n.split(".")[1]: values[n] for n in written}
            passes = replace(as_given, **changes)
        else:
            # once a trial: its passes and a tree's drafter
            scenario, hw = written_trial(base, base_hw, values, written, extra)
            passes = hw.passes
        out = [(1000.0 / passes.decode_ms - b.tok_s) / b.sigma for b in data.baselines]
        out += [
            (point_tok_s(passes, p, scenario, hw) - p.tok_s) / point_sigma(p) for p in data.points
        ]
        return np.array(out, dtype=float)

    return fun


def passes_from_decode(base_hw: PassModel) -> bool:
    """True when a written decode would re-derive other passes (the verify from the
    decode's compute, or passes priced at the efficiency the decode implies): the base's
    passes (``base_hw``: its hardware model) are not its timing fields as given."""
    return not _passes_as_written(base_hw)


def _passes_as_written(base_hw: PassModel) -> bool:
    """True when the base's pass times (``base_hw``: its hardware model) are its timing
    fields as given (every pass measured on a line, slope given or none to derive)."""
    return base_hw.passes.verify_table_ms is None and base_hw.verify_slope[1] != "derived"
