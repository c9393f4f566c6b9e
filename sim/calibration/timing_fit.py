"""The timing block of a calibration: the pass times the tok/s figures determine, fitted on
the scenario as it will be written."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from sim.calibration.efficiency_range import efficiency_entry, unidentified_drafter
from sim.calibration.fit_block import FitBlock, block_from_fit, six_digits
from sim.calibration.lsq import fit_identifiable
from sim.calibration.measurements import Measurements
from sim.calibration.result import FittedValue, Residual
from sim.calibration.timing_residuals import (
    passes_from_decode,
    point_residual,
    prices_from_weights,
    timing_params,
    timing_residuals,
    written_trial,
)
from sim.hardware.pass_model import PassModel
from sim.scenario.schema import Scenario

#: Why the verify fields are not fitted when the base's verify pass comes from a table.
TABLE_REASON = (
    "the base's verify pass comes from the hardware model (a derived verify or "
    "verify_growth = experts): fit cycle_overhead_ms for the intercept, or give a measured "
    "timing.verify_ms with verify_growth = linear in the base"
)
#: Why a verify pass the base gives is not fitted when its growth comes from a table.
GIVEN_VERIFY_REASON = (
    "the base's measured verify, held as given: its growth over tokens comes from the "
    'hardware model (verify_compute = "decode" or verify_growth = "experts"), not fitted'
)


def verify_given(base: Scenario) -> bool:
    """True when ``base``'s file or a ``--set`` gives ``timing.verify_ms`` (a measured pass)."""
    return "timing.verify_ms" in base.origins.given or "timing.verify_ms" in base.origins.overrides


def table_exclusions(base: Scenario) -> dict[str, str]:
    """Why each verify field is not fitted when ``base``'s verify pass comes from a table:
    a verify_ms the base gives is held as measured, the rest is the hardware model's."""
    return {
        "timing.verify_ms": GIVEN_VERIFY_REASON if verify_given(base) else TABLE_REASON,
        "timing.verify_ms_per_extra_token": TABLE_REASON,
    }


def timing_block(
    base: Scenario, base_hw: PassModel, data: Measurements, order: Sequence[str]
) -> FitBlock:
    """The timing block: fitted on the pass times of the scenario as it will be written.
    ``base_hw``: the base's hardware model; its memo (sim/hardware/passes.py ``PassMemo``)
    serves every trial scenario of the fits.

    First pass: which of ``order`` the data determine (every field of ``order`` written).
    Second: those alone are written and fitted, the rest as the base gives or derives
    them. Drafter passes the base derives and the data cannot fix are then written as the
    hardware model's value with a range (``unidentified_drafter``)."""
    passes = base_hw.passes
    params = timing_params(passes)
    order = [n for n in order if n in {p.name for p in params}]
    excluded = table_exclusions(base) if passes.verify_table_ms is not None else {}
    if not data.baselines and passes_from_decode(base_hw):
        excluded["timing.decode_ms"] = (
            "no plain-decoding figure: the passes derived from the decode would be fitted "
            "to speculative figures alone; give --baseline-tok-s"
        )
    names = [n for n in order if n not in excluded]
    first = fit_identifiable(
        timing_residuals(base, base_hw, data, names, {}), params, order, "timing", excluded=excluded
    )
    free = list(first.stderr)
    fit = fit_identifiable(timing_residuals(base, base_hw, data, free, {}), params, free, "timing")
    fit = replace(fit, kept={**fit.kept, **first.kept}, notes=first.notes + fit.notes)
    scenario, final_hw = written_trial(base, base_hw, fit.values, free)
    final = final_hw.passes
    overrides: dict[str, Any] = {n: six_digits(fit.values[n]) for n in free}
    notes: list[str] = []
    extra_values: list[FittedValue] = []
    extra_cov = None
    if "timing.decode_ms" in free and prices_from_weights(base, base_hw):
        eff = scenario.hardware.bandwidth_efficiency
        overrides["hardware.bandwidth_efficiency"] = six_digits(eff)
        overrides["uncertainty.hardware.bandwidth_efficiency"] = efficiency_entry(
            base, fit.values["timing.decode_ms"], fit.stderr["timing.decode_ms"], eff, base_hw
        )
        notes.append(
            f"hardware.bandwidth_efficiency {eff:.3g}: the measured decode "
            f"({fit.values['timing.decode_ms']:.4g} ms) reaches this fraction of "
            f"{base.hardware.gpus}x {base.hardware.gpu}'s peak bandwidth; passes derived "
            "from the weights are priced at it"
            + (
                f" (the base's {base.hardware.bandwidth_efficiency:g} and its range are replaced)"
                if "hardware.bandwidth_efficiency" in base.origins.given
                else ""
            )
        )
        drafter = unidentified_drafter(base, base_hw, data, fit, free, scenario)
        if drafter is not None:
            fit, extra_values, extra_cov, drafter_overrides, drafter_notes = drafter
            overrides.update({n: six_digits(fit.values[n]) for n in free})
            overrides.update(drafter_overrides)
            notes.extend(drafter_notes)
            extra = {v.field: v.value for v in extra_values}
            scenario, final_hw = written_trial(base, base_hw, fit.values, free, extra)
            final = final_hw.passes
    values = {**fit.values, **{p.name: getattr(final, p.name.split(".")[1]) for p in params
                               if p.name not in fit.stderr}}  # fmt: skip
    fit = replace(fit, values=values)
    residuals = [
        Residual("baseline tok/s", b.tok_s, 1000.0 / final.decode_ms, b.sigma, b.source)
        for b in data.baselines
    ]
    residuals += [point_residual(final, pt, scenario, hw=final_hw) for pt in data.points]
    block = block_from_fit(params, fit, residuals, overrides)
    block = replace(block, notes=block.notes + tuple(notes))
    if extra_cov is not None:
        # extra_cov is in the fit's order (fit.stderr's), then the drafter's; the block's
        # covariance is in the params' order
        fitted_order = list(fit.stderr)
        n = len(fitted_order)
        perm = [fitted_order.index(p.name) for p in params if p.name in fit.stderr]
        perm += list(range(n, extra_cov.shape[0]))
        full = extra_cov[np.ix_(perm, perm)]
        se = iter(np.sqrt(np.diag(full)[:n]))
        # the fitted values' errors include how they move with the drafter's
        errors = tuple(replace(v, stderr=float(next(se))) if v.fitted else v for v in block.values)
        block = replace(
            block,
            values=errors,
            covariance=full[:n, :n],
            extra_values=tuple(extra_values),
            full_covariance=full,
        )
    return block
