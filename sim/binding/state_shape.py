"""A hybrid target's per-request states as the scenario gives them (its ``[model]``)."""

from __future__ import annotations

from sim.model.recurrent_state import StateShape
from sim.scenario.schema import Scenario

__all__ = ["state_shape"]


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
