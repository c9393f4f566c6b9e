"""What the stated server's physics says about calibration figures.

- ``implied_efficiency``: the fraction of the GPU's peak memory bandwidth a measured
  plain decode reaches on this server, e = roofline_ms(weights, 1 token, eff 1) /
  decode compute, where the decode's compute is the measured decode minus its modelled
  all-reduces and launches (sim/hardware/passes.py ``calibrate_pass``). Passes the
  hardware model derives (the drafter's, the verify's growth over more tokens) are then
  priced at this efficiency rather than at an assumed 0.5-1 of peak.
- ``units_error``: a figure whose decode is faster than the GPU's peak bandwidth allows,
  or more than ``SLOW_FACTOR`` slower than it, contradicts the server by an order of
  magnitude; one line naming the likely unit mix-up (a TPOT in ms typed for tok/s, a
  throughput over a batch typed for one request).
"""

from __future__ import annotations

from sim.errors import SpecsimError
from sim.hardware.passes import calibrate_pass
from sim.hardware.roofline import roofline_ms
from sim.scenario.decompose import ScenarioHardware, target_weights
from sim.scenario.schema import Scenario

#: A decode more than this many times slower than the batch-1 roofline at peak bandwidth
#: is an order of magnitude off the server's physics (measured decodes run at 0.2-0.9 of
#: peak: docs/validation.md's public batch-1 cases).
SLOW_FACTOR = 10.0
#: Measured decodes a little above the roofline (rounding of the weights, the GPU preset's
#: nominal bandwidth) are not flagged; 1.5x faster than peak is impossible.
FAST_FACTOR = 1.5


def derivable(scenario: Scenario) -> bool:
    """True when the scenario knows its weights and GPU (a roofline can be computed)."""
    model = scenario.model
    return (
        scenario.hardware.gpu is not None
        and model.layers is not None
        and model.hidden_size is not None
        and model.layer_params is not None
    )


def decode_roofline_ms(scenario: Scenario) -> float:
    """Batch-1 decode at peak bandwidth on the scenario's GPUs, ms (weights only)."""
    hw = ScenarioHardware(scenario)
    gpu = hw.reference.gpu
    assert gpu is not None
    return roofline_ms(target_weights(scenario), 1, gpu, hw.reference.gpus, 1.0)


def implied_efficiency(scenario: Scenario, decode_ms: float) -> float:
    """Fraction of peak bandwidth the measured ``decode_ms`` reaches on ``scenario``'s
    server (its compute share, over the roofline at peak); not clipped."""
    hw = ScenarioHardware(scenario)
    shape = hw.shape("decode", 1, hw.reference)
    compute_ms = calibrate_pass(shape, hw.reference, hw.geom, decode_ms, "timing.decode_ms")
    return decode_roofline_ms(scenario) / compute_ms


def units_error(scenario: Scenario, tok_s: float, what: str, source: str) -> None:
    """SpecsimError when a baseline ``tok_s`` is an order of magnitude off the server's
    roofline; the line names the likely mix-up. No-op without weights or a GPU."""
    if not derivable(scenario):
        return
    roof_ms = decode_roofline_ms(scenario)
    decode_ms = 1000.0 / tok_s
    hw = scenario.hardware
    server = f"{hw.gpus}x {hw.gpu} and {scenario.model.name}"
    if decode_ms * FAST_FACTOR < roof_ms:
        raise SpecsimError(
            f"{what} {tok_s:g} means {decode_ms:.3g} ms a token, faster than {server} can "
            f"read the weights ({roof_ms:.3g} ms at peak bandwidth): is it a throughput over "
            "many requests (give the batch-1 figure), or a scenario of another model or GPU?",
            source=source,
        )
    if decode_ms > SLOW_FACTOR * roof_ms:
        # read as a TPOT in ms, the figure is a decode of tok_s ms: plausible here?
        as_tpot = roof_ms / FAST_FACTOR <= tok_s <= SLOW_FACTOR * roof_ms
        hint = (
            f"if {tok_s:g} is a TPOT in ms, give {1000.0 / tok_s:.4g} tok/s (1000 / TPOT)"
            if as_tpot
            else "check its unit (tok/s of one request)"
        )
        raise SpecsimError(
            f"{what} {tok_s:g} means {decode_ms:.3g} ms a token, over {SLOW_FACTOR:g}x the "
            f"{roof_ms:.3g} ms {server} take at peak bandwidth: {hint}; or check the "
            "scenario's model and GPU",
            source=source,
        )
