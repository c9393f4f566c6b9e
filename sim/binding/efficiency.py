"""The share of the GPU's peak memory bandwidth a scenario's measured batch-1 decode reaches
on its server: e = the weights' roofline at peak / the decode's compute, where the compute
is the measured decode less its modelled all-reduces and launches (sim/hardware/passes.py
``calibrate_pass``). ``calibrate`` prices the passes it derives at e
(sim/calibration/physics.py), and a hybrid target's states move at it when the scenario
gives no share of its own (sim/binding/state_shape.py)."""

from __future__ import annotations

from sim.binding.decompose import scenario_hardware
from sim.hardware.pass_model import PassModel
from sim.hardware.passes import calibrate_pass
from sim.hardware.roofline import roofline_ms
from sim.scenario.schema import Scenario

__all__ = ["decode_roofline_ms", "derivable", "implied_efficiency"]


def derivable(scenario: Scenario) -> bool:
    """True when the scenario knows its weights and GPU (a roofline can be computed)."""
    model = scenario.model
    return (
        scenario.hardware.gpu is not None
        and model.layers is not None
        and model.hidden_size is not None
        and model.layer_params is not None
    )


def decode_roofline_ms(scenario: Scenario, hw: PassModel | None = None) -> float:
    """Batch-1 decode at peak bandwidth on the scenario's GPUs, ms (weights only); ``hw``:
    the scenario's hardware model when the caller holds it (``Bound.hardware``)."""
    hw = scenario_hardware(scenario) if hw is None else hw
    gpu = hw.reference.gpu
    assert gpu is not None
    return roofline_ms(hw.target_weights(), 1, gpu, hw.reference.gpus, 1.0)


def implied_efficiency(scenario: Scenario, decode_ms: float, hw: PassModel | None = None) -> float:
    """Fraction of peak bandwidth the measured ``decode_ms`` reaches on ``scenario``'s
    server (its compute share, over the roofline at peak); not clipped. ``hw``: the
    scenario's hardware model when the caller holds it (else it is taken apart here)."""
    hw = scenario_hardware(scenario) if hw is None else hw
    shape = hw.shape("decode", 1, hw.reference)
    field = "timing.decode_ms"
    compute_ms = calibrate_pass(shape, hw.reference, hw.geom, decode_ms, field, memo=hw.memo)
    return decode_roofline_ms(scenario, hw) / compute_ms
