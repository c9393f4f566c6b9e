"""What a fitted decode implies of the server's bandwidth efficiency, its range, and the
drafter passes priced over that range when the figures cannot fix them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from sim.binding.decompose import scenario_pass_times
from sim.calibration.fit_block import six_digits
from sim.calibration.lsq import Fit, fit_identifiable
from sim.calibration.measurements import Measurements
from sim.calibration.physics import implied_efficiency
from sim.calibration.result import FittedValue
from sim.calibration.timing_residuals import timing_params, timing_residuals
from sim.errors import SpecsimError
from sim.hardware.pass_model import PassModel
from sim.scenario.overrides import with_overrides
from sim.scenario.schema import Scenario

#: The drafter's efficiency relative to the target's, over which its passes are taken:
#: one small decoder layer reads far fewer bytes a kernel than the target's layers, so it
#: may reach less of the peak; or as much as twice the target's share (at most the peak).
DRAFTER_EFFICIENCY_FACTORS = (0.5, 2.0)
#: A normal whose 90% interval spans the range: half-width / 1.645.
Z90 = 1.6448536269514722


def efficiency_entry(
    base: Scenario, decode_ms: float, decode_se: float, eff: float, base_hw: PassModel
) -> dict:
    """The implied efficiency's range: the decode's 90% interval mapped through
    ``implied_efficiency`` (``base_hw``: the base's hardware model), clipped at the peak."""
    ends = []
    for d in (decode_ms + Z90 * decode_se, max(decode_ms - Z90 * decode_se, 1e-6)):
        try:
            ends.append(min(implied_efficiency(base, d, base_hw), 1.0))
        except SpecsimError:
            ends.append(1.0)
    low, high = min([*ends, eff]), max([*ends, eff])
    return {
        "range": [six_digits(low), six_digits(high)],
        "origin": "derived",
        "reason": (
            f"what the measured decode ({decode_ms:.4g} ms, 90% interval from its error) "
            "implies over the roofline at peak bandwidth on this server"
        ),
    }


def unidentified_drafter(
    base: Scenario,
    base_hw: PassModel,
    data: Measurements,
    fit: Fit,
    free: Sequence[str],
    scenario: Scenario,
):
    """The drafter passes the base derives and the data cannot fix (draft step and extend
    trade against the fitted intercept): written at the middle of the hardware model's
    range (the pass at DRAFTER_EFFICIENCY_FACTORS times the implied efficiency), with a
    normal whose 90% interval is that range, correlated with the fitted values as the fit
    moves when the drafter does (refitted at the middle, and one standard error up: exact
    for this linear model). Returns (the fit at the middle, values, covariance over the
    fitted values then these, overrides, notes) or None. ``base_hw``: the base's hardware
    model, whose memo its fits and the drafter's ends share."""
    names = [
        f"timing.{n}_ms"
        for n in ("draft_step", "draft_extend")
        if getattr(base.timing, f"{n}_ms") is None and f"timing.{n}_ms" not in free
    ]
    if base.num_steps == 0 or not names or not fit.stderr:
        return None
    eff = scenario.hardware.bandwidth_efficiency
    nominal = scenario_pass_times(scenario, base_hw.memo)
    ends = []
    for factor in DRAFTER_EFFICIENCY_FACTORS:
        other = with_overrides(
            scenario,
            {"hardware.bandwidth_efficiency": min(eff * factor, 1.0)},
            source="calibrate",
        )
        ends.append(scenario_pass_times(other, base_hw.memo))
    out_values, sigmas, notes = [], [], []
    overrides: dict[str, Any] = {}
    for name in names:
        attr = name.split(".")[1]
        low, high = sorted(getattr(p, attr) for p in ends)
        mid = six_digits(0.5 * (low + high))
        sigma = (high - low) / (2 * Z90)
        sigmas.append(sigma)
        reason = (
            f"not fixed by the figures (it trades against the fitted intercept): the hardware "
            f"model's drafter pass, plausible range [{low:.4g}, {high:.4g}] ms at "
            f"{DRAFTER_EFFICIENCY_FACTORS[0]:g}-{DRAFTER_EFFICIENCY_FACTORS[1]:g}x the "
            f"measured decode's efficiency {eff:.3g} of peak (at most the peak; "
            f"{getattr(nominal, attr):.4g} ms at it): its middle, as a normal with that 90% "
            "interval, correlated with the fitted values so the measured figures hold"
        )
        out_values.append(FittedValue(name, mid, sigma, None, False, reason))
        overrides[name] = mid
        overrides[f"uncertainty.{name}"] = {"origin": "derived", "reason": reason}
        notes.append(f"{name} {mid:.4g} ms written with range [{low:.4g}, {high:.4g}]: {reason}")
    params = timing_params(nominal)
    at_mid = {v.field: v.value for v in out_values}
    at_mid_fun = timing_residuals(base, base_hw, data, free, at_mid)
    fit_mid = fit_identifiable(at_mid_fun, params, free, "timing")
    fit_mid = replace(fit_mid, kept=fit.kept, notes=fit.notes)
    up = {v.field: v.value + s for v, s in zip(out_values, sigmas, strict=True)}
    up_fun = timing_residuals(base, base_hw, data, free, up)
    moved = fit_identifiable(up_fun, params, free, "timing")
    order = list(fit_mid.stderr)
    g = np.array([moved.values[n] - fit_mid.values[n] for n in order])
    n = len(order)
    m = n + len(names)
    cov = np.zeros((m, m))
    cov[:n, :n] = np.asarray(fit_mid.covariance) + np.outer(g, g)
    s = np.array(sigmas)
    cov[:n, n:] = np.outer(g, s)
    cov[n:, :n] = cov[:n, n:].T
    cov[n:, n:] = np.outer(s, s)
    return fit_mid, out_values, cov, overrides, notes
