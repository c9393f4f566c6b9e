"""A hybrid target's per-request states as the scenario gives them (its ``[model]``), and
the share of the GPU's peak bandwidth they move at on its server."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sim.binding.efficiency import derivable, implied_efficiency
from sim.errors import SpecsimError
from sim.model.recurrent_state import STATE_BANDWIDTH_FRACTION_RANGE, StateShape
from sim.scenario.schema import Scenario

if TYPE_CHECKING:
    from sim.hardware.pass_model import PassModel

__all__ = ["state_bandwidth_fraction", "state_shape"]


def state_shape(scenario: Scenario) -> StateShape:
    """A request's states per rank as the scenario gives them (sim/model/recurrent_state.py):
    ``model.state_bytes_per_request`` and the conv window's
    ``model.conv_state_bytes_per_position`` over ``model.conv_state_positions``; empty
    when it gives neither."""
    m = scenario.model
    return StateShape(
        m.state_bytes_per_request or 0.0,
        m.conv_state_bytes_per_position or 0.0,
        (m.conv_state_positions or 0) if m.conv_state_bytes_per_position else 0,
    )


def state_bandwidth_fraction(scenario: Scenario, hw: PassModel | None = None) -> float:
    """The share f of the GPU's peak memory bandwidth a request's states move at.

    ``serving.state_bandwidth_fraction`` when the scenario gives it. Otherwise the server's
    own memory efficiency, the one ``calibrate`` prices the passes it derives at: with a
    measured batch-1 decode (``timing.decode_ms``) and the weights and GPU to price it,
    e = the weights' roofline at peak / the decode's compute (``implied_efficiency``,
    sim/binding/efficiency.py), clipped to ``STATE_BANDWIDTH_FRACTION_RANGE`` (the public
    Gated DeltaNet decode readings' lowest, 0.40, up to peak); without one,
    ``hardware.bandwidth_efficiency`` (the derived decode's; 1 by default). ``hw``: the
    scenario's hardware model when the caller holds it (``Bound.hardware``).
    docs/studies/signed-error-by-step.md.
    """
    given = scenario.serving.state_bandwidth_fraction if scenario.serving is not None else None
    if given is not None:
        return float(given)
    decode_ms = scenario.timing.decode_ms
    if decode_ms is None or not derivable(scenario):
        return float(scenario.hardware.bandwidth_efficiency)
    try:
        efficiency = implied_efficiency(scenario, decode_ms, hw)
    except SpecsimError:  # a decode under its modelled communication floor: no share to read
        return float(scenario.hardware.bandwidth_efficiency)
    low, high = STATE_BANDWIDTH_FRACTION_RANGE
    return min(max(efficiency, low), high)
