"""A per-request file in calibration: its pooled accept length as a figure, and its fitted
spread written into the calibrated scenario.

The acceptance fit (sim/calibration/calibrate.py) fits effective rates: the rates whose
chain, without spread, has the measured accept lengths. A server's accept length pools
all its verify steps (the per-request file's own pooled figure, a log's, vLLM's counters),
and the model pools the same way (``AcceptanceModel.cycle_mean_accept_length``: requests
with low rates run more steps). So once the per-request Beta's concentration kappa is
known, the mean rates are rescaled, by one factor f on the written anchor (``alpha`` or
every ``per_position`` entry, capped at 1), until the scenario with the spread pools to the
same accept length at the file's num_steps: the calibrated scenario keeps its figures and
gains the spread they did not show.

kappa is written with its origin (measured from the named file) and, under
``[uncertainty]``, its standard error, or, when the data cannot bound it above (no spread
any measurement can see), the range from the lower end of its 95% profile interval to the
largest kappa searched: every later answer's interval then runs over it.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np
from scipy import optimize

from sim.binding.acceptance_model import acceptance_model
from sim.calibration.importers.per_request import PerRequestFile
from sim.calibration.measurements import AcceptLengthObs, Measurements, ServerFact
from sim.calibration.result import Calibration, FittedValue
from sim.calibration.spread_fit import KAPPA_BOUNDS, MIN_REQUESTS, SpreadFit
from sim.errors import SpecsimError
from sim.scenario.overrides import apply_overrides
from sim.scenario.schema import Scenario
from sim.scenario.sections.acceptance import AcceptanceSpec
from sim.scenario.validate import scenario_from_dict

__all__ = ["per_request_measurement", "with_spread"]

#: Floor of the pooled accept length's standard error (the counts are integers).
MIN_AL_SIGMA = 1e-3
FIELD = "acceptance.concentration"


def per_request_measurement(file: PerRequestFile) -> Measurements:
    """The file's pooled accept length 1 + sum S / sum n at its num_steps, with the ratio
    estimator's standard error over requests (sum (S_i - R n_i)^2 / (N (N - 1)))^(1/2) /
    mean n, R = sum S / sum n; and the num_steps it ran at."""
    if len(file.requests) < MIN_REQUESTS:
        raise SpecsimError(
            f"{len(file.requests)} request with a verify step: a per-request spread needs at "
            f"least {MIN_REQUESTS}",
            source=file.source,
        )
    s = np.array([r.accepted for r in file.requests], dtype=float)
    n = np.array([r.verify_steps for r in file.requests], dtype=float)
    ratio = s.sum() / n.sum()
    count = len(s)
    sigma = math.sqrt(np.sum((s - ratio * n) ** 2) / (count * (count - 1))) / n.mean()
    src = f"per-request {file.source}"
    return Measurements(
        accept_lengths=(
            AcceptLengthObs(file.num_steps, 1.0 + ratio, max(sigma, MIN_AL_SIGMA), src),
        ),
        notes=(
            f"{file.format} {file.source}: {count} requests ({file.skipped} records "
            f"skipped), num_steps {file.num_steps}, pooled accept length {1 + ratio:.4f}",
            *file.notes,
        ),
        imported=(file.figures(),),
        server=(ServerFact("num_steps", file.num_steps, src),),
    )


def _anchor(spec: AcceptanceSpec, source: str) -> str:
    if spec.mix is not None or spec.anchor not in ("alpha", "per_position"):
        raise SpecsimError(
            f"a per-request spread is written beside an alpha or per_position acceptance, "
            f"not {spec.anchor} (calibrate with --acceptance alpha)",
            source=source,
        )
    return spec.anchor


def _scaled(
    spec: AcceptanceSpec, anchor: str, factor: float, kappa: float | None
) -> AcceptanceSpec:
    update: dict[str, Any] = {"concentration": kappa, "std": None}
    if anchor == "alpha":
        assert spec.alpha is not None
        update["alpha"] = min(1.0, spec.alpha * factor)
    else:
        update["per_position"] = [min(1.0, r * factor) for r in spec.per_position or []]
    return spec.model_copy(update=update)


def _pooled(spec: AcceptanceSpec, num_steps: int) -> float:
    return float(acceptance_model(spec, num_steps).cycle_mean_accept_length())


def rescale_factor(spec: AcceptanceSpec, anchor: str, kappa: float, num_steps: int) -> float:
    """f such that the spec's anchor times f, with concentration ``kappa``, pools to the
    accept length the spec has without spread at ``num_steps`` (brentq; f's largest value
    puts the highest rate at 1)."""
    target = _pooled(_scaled(spec, anchor, 1.0, None), num_steps)
    rates = [spec.alpha] if anchor == "alpha" else list(spec.per_position or [])
    top = max(r for r in rates if r is not None)
    if not 0.0 < top < 1.0:
        return 1.0  # rates of 0 or 1 do not spread

    def gap(f: float) -> float:
        return _pooled(_scaled(spec, anchor, f, kappa), num_steps) - target

    high = 1.0 / top
    if gap(high) < 0:
        raise SpecsimError(
            f"no mean rate keeps the measured accept length {target:.4f} at num_steps "
            f"{num_steps} with concentration {kappa:.4g}",
            source="--per-request",
        )
    return float(optimize.brentq(gap, 1e-6, high, xtol=1e-12, rtol=1e-12))


def _uncertainty_entry(fit: SpreadFit, source: str) -> dict[str, Any]:
    lo, hi = fit.kappa_interval
    reason = (
        f"per-request Beta fitted by maximum likelihood to {fit.requests} requests of "
        f"{source} (beta-binomial law, sim/calibration/spread_fit.py); 95% profile "
        f"interval [{lo:.4g}, {'open' if hi is None else f'{hi:.4g}'}]"
    )
    if fit.identified:
        assert fit.kappa_stderr is not None
        return {"stderr": float(f"{fit.kappa_stderr:.4g}"), "origin": "measured", "reason": reason}
    if hi is None:
        return {
            "range": [float(f"{lo:.4g}"), KAPPA_BOUNDS[1]],
            "origin": "measured",
            "reason": reason + ": the data do not bound it above (no spread they can see)",
        }
    return {  # bounded, but the fit sits at the searched range's edge: no standard error
        "range": [float(f"{lo:.4g}"), float(f"{hi:.4g}")],
        "origin": "measured",
        "reason": reason + ": the fit is at the edge of the searched concentrations",
    }


def with_spread(cal: Calibration, fit: SpreadFit, source: str) -> Calibration:
    """``cal`` with the fitted spread written in (module docstring)."""
    scenario = cal.scenario
    spec = scenario.acceptance
    if spec is None or scenario.speculation.is_tree:
        raise SpecsimError(
            "the per-request spread is fitted for a chain (speculation.topk = 1) with an "
            "[acceptance] section",
            source=source,
        )
    anchor = _anchor(spec, source)
    factor = rescale_factor(spec, anchor, fit.kappa, fit.num_steps)
    new = _scaled(spec, anchor, factor, fit.kappa)
    written: Any = new.alpha if anchor == "alpha" else new.per_position
    overrides: dict[str, Any] = {f"acceptance.{anchor}": written, FIELD: float(f"{fit.kappa:.6g}")}
    entries = scenario.uncertainty.entries()
    old = entries.get(f"acceptance.{anchor}")
    if old is not None and old.stderr is not None:
        se = old.stderr
        scaled_se = [s * factor for s in se] if isinstance(se, list) else se * factor
        overrides[f"uncertainty.acceptance.{anchor}"] = {
            **old.model_dump(exclude_none=True),
            "stderr": scaled_se,
        }
    overrides[f"uncertainty.{FIELD}"] = _uncertainty_entry(fit, source)
    raw = scenario.model_dump(exclude_none=True)
    raw.get("acceptance", {}).pop("std", None)
    try:
        calibrated = scenario_from_dict(
            apply_overrides(raw, overrides), source="calibrated scenario"
        )
    except SpecsimError as exc:
        raise SpecsimError(
            f"the fitted spread makes an invalid scenario: {exc}", source=source
        ) from None
    values = _rescaled_values(cal.values, anchor, factor)
    base_kappa = scenario.acceptance.concentration if scenario.acceptance else None
    values += (
        FittedValue(
            FIELD, fit.kappa, fit.kappa_stderr, base_kappa, True,
            f"measured from {source} (per-request spread)" if fit.identified else
            f"measured from {source} (per-request spread; a range: "
            f"{_uncertainty_entry(fit, source)['range']})",
        ),
    )  # fmt: skip
    cov = np.array(cal.covariance, dtype=float).reshape(len(cal.fitted), len(cal.fitted))
    grown = np.zeros((cov.shape[0] + 1, cov.shape[0] + 1))
    grown[:-1, :-1] = cov * _scale_matrix(cal.fitted, anchor, factor)
    grown[-1, -1] = (fit.kappa_stderr or 0.0) ** 2
    note = (
        f"per-request spread from {source}: concentration {fit.kappa:.4g} "
        + (f"± {fit.kappa_stderr:.2g}" if fit.kappa_stderr is not None else "(a range)")
        + f" (95% profile interval [{fit.kappa_interval[0]:.4g}, "
        + ("open" if fit.kappa_interval[1] is None else f"{fit.kappa_interval[1]:.4g}")
        + f"]), per-request mean rate {fit.mean:.4f}"
        + (f" ± {fit.mean_stderr:.2g}" if fit.mean_stderr is not None else "")
        + f", sd {fit.sd:.4f}; acceptance.{anchor} x {factor:.4f} so that the scenario with "
        f"the spread pools to the fitted accept length at num_steps {fit.num_steps}"
    )
    if fit.latent:
        note += (
            f"; {fit.latent} requests without their rejected steps (the steps that accepted "
            "every draft are summed out of the likelihood)"
        )
    return replace(
        cal,
        scenario=calibrated,
        values=values,
        covariance=tuple(tuple(float(x) for x in row) for row in grown),
        notes=(*cal.notes, note),
    )


def _rescaled_values(
    values: tuple[FittedValue, ...], anchor: str, factor: float
) -> tuple[FittedValue, ...]:
    out = []
    for v in values:
        if v.field == f"acceptance.{anchor}" or v.field.startswith(f"acceptance.{anchor}["):
            v = replace(
                v,
                value=min(1.0, v.value * factor),
                stderr=None if v.stderr is None else v.stderr * factor,
            )
        out.append(v)
    return tuple(out)


def _scale_matrix(fitted: tuple[FittedValue, ...], anchor: str, factor: float) -> np.ndarray:
    """Outer product of each fitted value's scale (f for the rescaled anchor, else 1)."""
    s = np.array(
        [
            factor
            if v.field == f"acceptance.{anchor}" or v.field.startswith(f"acceptance.{anchor}[")
            else 1.0
            for v in fitted
        ]
    )
    return np.outer(s, s)


def spread_summary(fit: SpreadFit, scenario: Scenario) -> dict[str, Any]:
    """What the JSON output says of the fit."""
    return {**fit.as_dict(), "written_concentration": scenario.acceptance.concentration
            if scenario.acceptance else None}  # fmt: skip
