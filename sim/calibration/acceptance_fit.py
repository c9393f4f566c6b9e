"""The acceptance block of a calibration: one equal rate, per-position rates or a shape by
position fitted to cumulative rates and accept lengths."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from sim.binding.closed_form import conditional_rates
from sim.binding.priors import decay_prior, shape_error
from sim.calibration.fit_block import FitBlock, block_from_fit, six_digits
from sim.calibration.lsq import Param, fit_identifiable
from sim.calibration.measurements import Measurements
from sim.calibration.result import FittedValue, Residual
from sim.calibration.settings import ACCEPTANCE_MODELS
from sim.errors import SpecsimError
from sim.model.profile_fit import ProfileData, choose_shape, fit_profile
from sim.model.rates import extend_rates, mean_accept_length
from sim.scenario.schema import Scenario


def _acceptance_residuals(data: Measurements, names: Sequence[str]):
    def fun(values: dict[str, float]) -> np.ndarray:
        rates = np.array([values[n] for n in names], dtype=float)
        out = []
        for c in data.cumulative:
            pred = float(np.prod(extend_rates(rates, c.position)))
            out.append((pred - c.rate) / c.sigma)
        for a in data.accept_lengths:
            out.append(
                (mean_accept_length(extend_rates(rates, a.num_steps)) - a.accept_length) / a.sigma
            )
        return np.array(out, dtype=float)

    return fun


def choose_acceptance_model(data: Measurements, requested: str) -> str | None:
    if requested not in ACCEPTANCE_MODELS:
        raise SpecsimError(
            f"unknown acceptance model {requested!r}; use one of {', '.join(ACCEPTANCE_MODELS)}",
            param="acceptance",
        )
    if not (data.cumulative or data.accept_lengths):
        return None
    if requested == "auto":
        if data.cumulative:
            return "per_position"
        return "shape" if len({a.num_steps for a in data.accept_lengths}) >= 2 else "alpha"
    if requested == "shape" and len(_profile_data(data).depths) < 2:
        raise SpecsimError(
            "the shape model needs accept lengths at two or more num_steps (or per-position "
            "rates at two or more positions)",
            param="acceptance",
        )
    return requested


def _profile_data(data: Measurements) -> ProfileData:
    return ProfileData(
        positions=tuple(c.position for c in data.cumulative),
        cumulative=tuple(c.rate for c in data.cumulative),
        cumulative_sigma=tuple(c.sigma for c in data.cumulative),
        num_steps=tuple(a.num_steps for a in data.accept_lengths),
        accept_length=tuple(a.accept_length for a in data.accept_lengths),
        accept_length_sigma=tuple(a.sigma for a in data.accept_lengths),
    )


def shape_block(base: Scenario, data: Measurements) -> FitBlock:
    """First-position rate and decay of the shape with the lowest forward held-out error
    (three or more depths), else of the base's draft-method prior family (two depths: both
    two-parameter shapes fit exactly, held-out error cannot tell them apart)."""
    pd = _profile_data(data)
    choice = choose_shape(pd)
    method = base.acceptance.method if base.acceptance is not None else "generic"
    if choice is not None:
        shape = choice.shape
        errors = ", ".join(f"{s} {100 * e:.2g}%" for s, e in choice.errors.items() if e is not None)
        why = f"acceptance shape {shape}: lowest forward held-out error ({errors})"
    else:
        shape = decay_prior(method).shape
        why = (
            f"acceptance shape {shape}: two depths fit every two-parameter shape exactly, so "
            f"the {method} prior's family is used (held-out error needs three)"
        )
    fit = fit_profile(shape, pd)
    k = max(pd.max_depth, 1)
    names = ["acceptance.first_rate"] + ([] if shape == "flat" else ["acceptance.decay"])
    spec = base.acceptance
    base_first = float(conditional_rates(spec, 1)[0]) if spec is not None else None
    base_values = {
        "acceptance.first_rate": base_first,
        "acceptance.decay": spec.decay if spec else None,
    }
    stderr = {"acceptance.first_rate": fit.first_rate_stderr, "acceptance.decay": fit.decay_stderr}
    fitted = {"acceptance.first_rate": fit.first_rate, "acceptance.decay": fit.decay}
    values = tuple(FittedValue(n, fitted[n], stderr[n], base_values[n], True, None) for n in names)
    overrides: dict[str, Any] = {
        "acceptance.first_rate": six_digits(fit.first_rate),
        "acceptance.shape": shape,
    }
    if shape != "flat":
        overrides["acceptance.decay"] = six_digits(fit.decay)
    # measured over these positions; past them the shape may stray as published profiles do
    overrides["acceptance.measured_num_steps"] = pd.max_depth
    error = shape_error(method)
    overrides["acceptance.tilt"] = six_digits(error.nominal)
    overrides["uncertainty.acceptance.tilt"] = {
        "stderr": six_digits(error.sd),
        "origin": "derived",
        "reason": error.reason,
    }
    residuals = _acceptance_rows(data, lambda depth: fit.rates(max(depth, k))[:depth])
    n_fit = len(names)
    return FitBlock(
        values,
        tuple(residuals),
        overrides,
        fit.chi2,
        pd.size,
        n_fit,
        (why,),
        fit.covariance[:n_fit, :n_fit],
    )


def _acceptance_params(base: Scenario, model: str, data: Measurements) -> list[Param]:
    spec = base.acceptance
    if model == "alpha":
        start = spec.alpha if spec and spec.alpha is not None else None
        if start is None and spec is not None:
            rates = conditional_rates(spec, max(base.num_steps, 1))
            start = float(np.mean(rates))
        return [
            Param(
                "acceptance.alpha", float(start) if start is not None else math.nan, 0.0, 1.0, 0.1
            )
        ]
    k = max([c.position for c in data.cumulative] + [base.num_steps, 1])
    rates = conditional_rates(spec, k) if spec is not None else np.full(k, math.nan)
    return [
        Param(f"acceptance.per_position[{i}]", float(rates[i]), 0.0, 1.0, 0.1) for i in range(k)
    ]


def acceptance_block(base: Scenario, data: Measurements, model: str) -> FitBlock:
    params = _acceptance_params(base, model, data)
    names = [p.name for p in params]
    start = [p if math.isfinite(p.base) else Param(p.name, 0.5, 0.0, 1.0, 0.1) for p in params]
    fit = fit_identifiable(
        _acceptance_residuals(data, names), start, names, "acceptance", probe=[0.5] * len(names)
    )
    if model == "alpha":
        overrides: dict[str, Any] = {"acceptance.alpha": six_digits(fit.values["acceptance.alpha"])}
        ks = {a.num_steps for a in data.accept_lengths}
        if len(ks) == 1 and not data.cumulative:
            # the equal rate of the accept length measured there: the anchor's num_steps
            overrides["acceptance.measured_num_steps"] = ks.pop()
        else:  # one equal rate fitted over several depths is a flat shape
            overrides["acceptance.shape"] = "flat"
    else:
        overrides = {"acceptance.per_position": [six_digits(fit.values[n]) for n in names]}
    rates = np.array([fit.values[n] for n in names])
    residuals = _acceptance_rows(data, lambda depth: extend_rates(rates, depth))
    return block_from_fit(params, fit, residuals, overrides)


def _acceptance_rows(data: Measurements, rates_to: Callable[[int], np.ndarray]) -> list[Residual]:
    """Residuals of the acceptance figures; ``rates_to(d)`` gives the fitted a_1..a_d."""
    rows = [
        Residual(
            f"cumulative rate c{c.position}",
            c.rate,
            float(np.prod(rates_to(c.position))),
            c.sigma,
            c.source,
        )
        for c in data.cumulative
    ]
    return rows + [
        Residual(
            f"accept length at num_steps {a.num_steps}",
            a.accept_length,
            mean_accept_length(rates_to(a.num_steps)),
            a.sigma,
            a.source,
        )
        for a in data.accept_lengths
    ]
