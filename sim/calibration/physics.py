"""What the stated server's physics says about calibration figures.

- ``implied_efficiency``: the fraction of the GPU's peak memory bandwidth a measured
  plain decode reaches on this server, e = roofline_ms(weights, 1 token, eff 1) /
  decode compute, where the decode's compute is the measured decode minus its modelled
  all-reduces and launches (sim/hardware/passes.py ``calibrate_pass``). Passes the
  hardware model derives (the drafter's, the verify's growth over more tokens) are then
  priced at this efficiency rather than at an assumed 0.5-1 of peak.
- ``check_units``: figures that contradict the server's physics by an order of
  magnitude, or each other, get one line naming the likely unit mix-up (a TPOT in ms
  typed for tok/s, a throughput over a batch typed for one request).
"""

from __future__ import annotations

import math

from sim.binding.efficiency import decode_roofline_ms, derivable, implied_efficiency
from sim.calibration.measurements import Measurements
from sim.errors import SpecsimError
from sim.hardware.pass_model import PassModel
from sim.scenario.schema import Scenario

__all__ = [
    "FAST_FACTOR",
    "LEAST_EFFICIENCY",
    "check_units",
    "decode_roofline_ms",
    "derivable",
    "implied_efficiency",
]

#: The least fraction of peak bandwidth a measured batch-1 decode is taken to reach: an
#: order of magnitude below the 0.1-0.9 of measured decodes (the slowest in the
#: repository, Kimi-K2.5 INT4 on 8x H200, reaches 0.096; a dense 8B on one H100 0.71).
LEAST_EFFICIENCY = 0.02
#: Measured decodes a little above the roofline (rounding of the weights, the GPU preset's
#: nominal bandwidth) are not flagged; 1.5x faster than peak is impossible.
FAST_FACTOR = 1.5


def check_units(scenario: Scenario, data: Measurements, hw: PassModel) -> None:
    """SpecsimError, one line naming the likely unit mix-up, when the figures contradict
    the scenario's server by an order of magnitude or each other:

    - a baseline whose decode is faster than ``FAST_FACTOR`` x the roofline at peak
      bandwidth (a throughput over a batch typed for one request, or another model), or
      reaches less than ``LEAST_EFFICIENCY`` of peak (a TPOT in ms typed for tok/s);
    - a speculative cycle (1000 AL / tok/s) shorter than the plain decode, or a decode
      longer than the scenario's measured verify: a verify reads every weight the decode
      reads, so one of the two figures is in another unit;
    - a speculative cycle faster than the roofline of one decode allows.

    ``hw``: the scenario's hardware model (sim/binding/decompose.py ``scenario_hardware``).
    """
    roof_ms = decode_roofline_ms(scenario, hw) if derivable(scenario) else None
    spec = scenario.hardware
    server = f"{spec.gpus}x {spec.gpu} with {scenario.model.name}"
    for b in data.baselines:
        decode_ms = 1000.0 / b.tok_s
        if roof_ms is None:
            continue
        tpot = f"if {b.tok_s:g} is a TPOT in ms, give {1000.0 / b.tok_s:.4g} tok/s (1000 / TPOT)"
        if decode_ms * FAST_FACTOR < roof_ms:
            raise SpecsimError(
                f"baseline {b.tok_s:g} tok/s is {decode_ms:.3g} ms a token, faster than "
                f"{server} can read the weights ({roof_ms:.3g} ms at peak bandwidth): a "
                "throughput over many requests (give one request's), or another model or GPU?",
                source=b.source,
            )
        try:
            eff = implied_efficiency(scenario, decode_ms, hw)
        except SpecsimError:
            eff = 1.0
        if eff < LEAST_EFFICIENCY:
            raise SpecsimError(
                f"baseline {b.tok_s:g} tok/s is {decode_ms:.3g} ms a token, {eff:.2%} of "
                f"the peak bandwidth of {server} ({roof_ms:.3g} ms at peak; measured decodes "
                f"reach 10-90%): {tpot}",
                source=b.source,
            )
    verify_ms = scenario.timing.verify_ms
    if verify_ms is not None:
        for b in data.baselines:
            decode_ms = 1000.0 / b.tok_s
            if decode_ms <= verify_ms * (1.0 + 4.0 * b.sigma / b.tok_s):
                continue
            raise SpecsimError(
                f"baseline {b.tok_s:g} tok/s is {decode_ms:.3g} ms a token, longer than the "
                f"scenario's measured verify ({verify_ms:g} ms over "
                f"{scenario.timing.verify_tokens or scenario.num_steps + 1} tokens), which reads "
                f"every weight a decode does: if {b.tok_s:g} is a TPOT in ms, give "
                f"{1000.0 / b.tok_s:.4g} tok/s (1000 / TPOT); or give the verify of this server",
                source=b.source,
            )
    for p in data.points:
        cycle_ms = 1000.0 * p.accept_length / p.tok_s
        for b in data.baselines:
            # 4 standard errors of the two figures, relative
            rel = math.hypot(b.sigma / b.tok_s, p.tok_s_sigma / p.tok_s)
            decode_ms = 1000.0 / b.tok_s
            if cycle_ms >= decode_ms * (1.0 - 4.0 * rel):
                continue
            raise SpecsimError(
                f"its cycle (1000 x {p.accept_length:g} / {p.tok_s:g} tok/s = "
                f"{cycle_ms:.3g} ms) is shorter than the plain decode ({decode_ms:.3g} ms "
                f"from {b.source} {b.tok_s:g}), but a verify reads every weight a decode "
                f"does: is {b.tok_s:g} a TPOT in ms (then give {1000.0 / b.tok_s:.4g} tok/s), "
                "or the point's tok/s a total over many requests?",
                source=p.source,
            )
        if roof_ms is not None and cycle_ms * FAST_FACTOR < roof_ms:
            raise SpecsimError(
                f"its cycle (1000 x {p.accept_length:g} / {p.tok_s:g} tok/s = "
                f"{cycle_ms:.3g} ms) is shorter than one read of the weights on {server} "
                f"({roof_ms:.3g} ms at peak bandwidth): a throughput over many requests, or "
                "another model or GPU?",
                source=p.source,
            )
