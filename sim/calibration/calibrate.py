"""Calibration: fit a scenario's unknown timings and acceptance profile to measurements.

Two independent least-squares problems (scipy.optimize.least_squares), each on residuals
divided by the measurement's standard error:

- **timing** — the cycle cost model of sim/model/cycle.py (SGLang chain cycle,
  docs/reference.md §Cycle). A baseline figure gives ``decode_ms = 1000 / tok_s``;
  a speculative figure at
  num_steps k with measured accept length AL gives ``tok_s = 1000 AL / T_cycle(k)``
  (renewal-reward, sim/model/closed_forms.py), where
  ``T_cycle(k) = (k - 1) draft_step_ms + verify_ms + (k + 1 - verify_tokens)
  verify_ms_per_extra_token + draft_extend_ms + cycle_overhead_ms``.
  T_cycle is linear in k, so tok/s figures determine at most an intercept and a slope:
  ``draft_step_ms`` and ``verify_ms_per_extra_token`` can never be told apart from tok/s
  alone, and one num_steps determines only the intercept.
- **acceptance** — conditional per-position rates a_1..a_K (``per_position``) or one
  equal rate (``alpha``), fitted to vLLM cumulative rates c_i = a_1...a_i and to accept
  lengths AL(k) = 1 + sum_(i<=k) c_i (docs/reference.md §Acceptance; rates beyond the
  list repeat the last one, as in scenario files).

Which values the data determine is decided before fitting, from the rank of the weighted
Jacobian (at the base scenario's timings; at rates of 0.5 for acceptance, so that a base
rate of 0 cannot hide later positions): parameters are taken in priority order and one is
fitted only if it adds a direction the data can see; the others keep the base scenario's
values and the result says why. Standard errors come from the covariance (J^T J)^-1 at the
solution, scaled by the reduced chi-square when that exceeds 1 (more scatter than the
stated errors explain).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
from scipy.linalg import block_diag

from sim.binding.bind import conditional_rates, pass_times, tree_cost
from sim.binding.bound import bind
from sim.binding.decompose import (
    hardware_point,
    reference_point,
    scenario_hardware,
    uses_derived_compute,
)
from sim.binding.inputs import clipping_notes
from sim.binding.priors import decay_prior, shape_error
from sim.calibration.lsq import Fit, Param, fit_identifiable
from sim.calibration.measurements import Measurements, SpecPoint
from sim.calibration.physics import check_units, derivable, implied_efficiency
from sim.calibration.server_match import check_server, kept_from_base
from sim.calibration.settings import (
    ACCEPTANCE_MODELS,
    DEFAULT_TIMING_FIT,
    TABLE_TIMING_FIT,
    TIMING_FIELDS,
)
from sim.errors import SpecsimError
from sim.hardware.pass_model import PassModel
from sim.model.cycle import PassTimes, cycle_cost
from sim.model.profile_fit import DECAY_BOUNDS, ProfileData, choose_shape, fit_profile
from sim.model.rates import extend_rates, mean_accept_length
from sim.scenario.overrides import apply_overrides, with_overrides
from sim.scenario.schema import Scenario
from sim.scenario.validate import scenario_from_dict

# --------------------------------------------------------------------------- results


@dataclass(frozen=True, slots=True)
class FittedValue:
    """One scenario field after calibration: fitted (with a standard error) or kept."""

    field: str
    value: float
    stderr: float | None
    base: float | None
    fitted: bool
    reason: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Residual:
    """One measurement against the calibrated model."""

    what: str
    measured: float
    fitted: float
    sigma: float
    source: str

    @property
    def relative(self) -> float:
        return (self.fitted - self.measured) / self.measured if self.measured else math.nan

    @property
    def normalized(self) -> float:
        return (self.fitted - self.measured) / self.sigma

    def as_dict(self) -> dict[str, Any]:
        rel = self.relative
        return {**asdict(self), "relative": rel if math.isfinite(rel) else None}


@dataclass(frozen=True, slots=True)
class Calibration:
    """The calibrated scenario, every fitted or kept value, residuals and goodness of fit."""

    scenario: Scenario
    values: tuple[FittedValue, ...]
    acceptance_model: str | None
    residuals: tuple[Residual, ...]
    chi2: float
    dof: int
    notes: tuple[str, ...] = field(default=())
    #: Covariance of the fitted values, in the order of ``fitted``, shape (n, n) as nested
    #: tuples; block-diagonal (timing and acceptance are fitted separately).
    covariance: tuple[tuple[float, ...], ...] = field(default=())
    #: What each imported file held, as read.
    imported: tuple[dict[str, Any], ...] = field(default=())
    #: Held-out figures (not fitted) against the calibrated model: a score, not a fit.
    checks: tuple[Residual, ...] = field(default=())
    #: Fields set from the figures as they state them, not fitted: (dotted key, origin).
    written: tuple[tuple[str, str], ...] = field(default=())

    @property
    def fitted(self) -> tuple[FittedValue, ...]:
        return tuple(v for v in self.values if v.fitted)

    @property
    def kept(self) -> tuple[FittedValue, ...]:
        return tuple(v for v in self.values if not v.fitted)

    def value(self, name: str) -> FittedValue:
        for v in self.values:
            if v.field == name:
                return v
        raise KeyError(name)

    def with_values(self, values: Mapping[str, float]) -> Scenario:
        """The calibrated scenario with some fitted fields set to other values."""
        overrides: dict[str, Any] = {}
        rates = None
        for name, v in values.items():
            if name.startswith("acceptance.per_position["):
                if rates is None:
                    assert self.scenario.acceptance is not None
                    rates = list(self.scenario.acceptance.per_position or [])
                rates[int(name.split("[")[1].rstrip("]"))] = v
            else:
                overrides[name] = v
        if rates is not None:
            overrides["acceptance.per_position"] = rates
        return with_overrides(self.scenario, overrides, source="calibration")

    def prediction_stderr(self, predict: Callable[[Scenario], float]) -> float:
        """Standard error of ``predict(scenario)`` from the fitted values' covariance.

        Linear propagation, g C g^T, with the gradient g by central differences (one-sided
        at a rate's bound [0, 1]).
        """
        fitted = self.fitted
        if not fitted:
            return 0.0
        grad = np.zeros(len(fitted))
        for i, v in enumerate(fitted):
            h = 1e-5 * max(abs(v.value), 1.0)
            lo, hi = v.value - h, v.value + h
            if v.field.startswith("acceptance.") and v.field != "acceptance.concentration":
                lo, hi = max(lo, 0.0), min(hi, 1.0)  # a rate
            up = predict(self.with_values({v.field: hi}))
            down = predict(self.with_values({v.field: lo}))
            grad[i] = (up - down) / (hi - lo)
        cov = np.array(self.covariance, dtype=float)
        return float(np.sqrt(max(grad @ cov @ grad, 0.0)))

    def as_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario.name,
            "acceptance_model": self.acceptance_model,
            "values": [v.as_dict() for v in self.values],
            "residuals": [r.as_dict() for r in self.residuals],
            "chi2": self.chi2,
            "dof": self.dof,
            "covariance": {
                "fields": [v.field for v in self.fitted],
                "matrix": [list(row) for row in self.covariance],
            },
            "notes": list(self.notes),
            "imported": list(self.imported),
            "checks": [r.as_dict() for r in self.checks],
            "written": [{"field": f, "origin": origin} for f, origin in self.written],
            "calibrated_scenario": {
                "name": self.scenario.name,
                "description": self.scenario.description,
            },
        }


# --------------------------------------------------------------------------- timing block


#: Timing fields that may be 0 (the others must be positive).
NONNEGATIVE_TIMING = (
    "verify_ms_per_extra_token",
    "cycle_overhead_ms",
    "draft_extend_ms_per_token",
    "draft_step_overhead_ms",
)


def _timing_params(passes: PassTimes) -> list[Param]:
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


def _passes(base: PassTimes, values: dict[str, float]) -> PassTimes:
    """``base`` with the timing ``values`` substituted (a verify table, if any, is kept)."""
    changes: dict[str, Any] = {name: values[f"timing.{name}"] for name in TIMING_FIELDS}
    return replace(base, **changes)


def _point_sigma(p: SpecPoint) -> float:
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


def written_scenario(
    base: Scenario,
    values: Mapping[str, float],
    written: Sequence[str],
    extra: Mapping[str, Any] | None = None,
) -> Scenario:
    """``base`` with the timing ``values`` of the fields ``written`` set, as the calibrated
    scenario will hold them, and (when the base prices passes from the weights) the
    bandwidth efficiency the written decode implies on this server
    (sim/calibration/physics.py): the fit predicts each figure from this scenario's own
    pass times, so a calibrated scenario reproduces its figures when run."""
    # a trial step of the fit may cross a field's bound (0): the scenario holds it there
    overrides: dict[str, Any] = {n: max(float(values[n]), _FLOOR[n]) for n in written}
    overrides.update(extra or {})
    if "timing.decode_ms" in overrides and prices_from_weights(base):
        try:
            eff = implied_efficiency(base, overrides["timing.decode_ms"])
        except SpecsimError:  # a trial decode under its communication floor
            eff = 1.0
        overrides.setdefault("hardware.bandwidth_efficiency", min(max(eff, 1e-3), 1.0))
    try:
        scenario = with_overrides(base, overrides, source="calibrate")
        pass_times(scenario)  # the hardware model checks it: its errors surface here
    except SpecsimError as exc:
        shown = ", ".join(f"{n} {overrides[n]:.4g}" for n in written)
        raise SpecsimError(
            f"the figures ask for {shown}, which make no valid scenario of this server: "
            f"{exc.field + ': ' if exc.field else ''}{exc.message}",
            source="calibrate",
        ) from None
    return scenario


#: The least value the scenario takes of each timing field (its schema's bound).
_FLOOR = {f"timing.{n}": 0.0 if n in NONNEGATIVE_TIMING else 1e-9 for n in TIMING_FIELDS}


def prices_from_weights(base: Scenario) -> bool:
    """True when the base derives some compute from its weights and GPU."""
    return derivable(base) and uses_derived_compute(base)


def _timing_residuals(
    base: Scenario, data: Measurements, written: Sequence[str], extra: Mapping[str, Any]
):
    """Weighted residuals of the tok/s figures on the pass times the written scenario has.
    A base whose passes are all measured on a line (no table, no derived slope) has them
    back unchanged with the written values substituted: the same pass times, without
    re-validating a scenario at every trial."""
    as_given = None
    trees = any(p.is_tree for p in data.points)  # priced by the written scenario's drafter
    if not extra and not trees and _passes_as_written(base):
        as_given = pass_times(base)

    def fun(values: dict[str, float]) -> np.ndarray:
        scenario = hw = None
        if as_given is not None:
            changes: dict[str, Any] = {n.split(".")[1]: values[n] for n in written}
            passes = replace(as_given, **changes)
        else:
            scenario = written_scenario(base, values, written, extra)
            hw = scenario_hardware(scenario)  # once a trial: its passes and a tree's drafter
            passes = hw.passes
        out = [(1000.0 / passes.decode_ms - b.tok_s) / b.sigma for b in data.baselines]
        out += [
            (point_tok_s(passes, p, scenario, hw) - p.tok_s) / _point_sigma(p) for p in data.points
        ]
        return np.array(out, dtype=float)

    return fun


def _passes_from_decode(base: Scenario) -> bool:
    """True when a written decode would re-derive other passes (the verify from the
    decode's compute, or passes priced at the efficiency the decode implies): the base's
    passes are not its timing fields as given."""
    return not _passes_as_written(base)


def _passes_as_written(base: Scenario) -> bool:
    """True when the base's pass times are its timing fields as given (every pass
    measured on a line, slope given or none to derive)."""
    passes = pass_times(base)
    return passes.verify_table_ms is None and scenario_hardware(base).verify_slope[1] != "derived"


# --------------------------------------------------------------------------- acceptance block


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


def _acceptance_model(data: Measurements, requested: str) -> str | None:
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


def _fit_acceptance_shape(base: Scenario, data: Measurements) -> _Block:
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
        "acceptance.first_rate": _sig(fit.first_rate),
        "acceptance.shape": shape,
    }
    if shape != "flat":
        overrides["acceptance.decay"] = _sig(fit.decay)
    # measured over these positions; past them the shape may stray as published profiles do
    overrides["acceptance.measured_num_steps"] = pd.max_depth
    error = shape_error(method)
    overrides["acceptance.tilt"] = _sig(error.nominal)
    overrides["uncertainty.acceptance.tilt"] = {
        "stderr": _sig(error.sd),
        "origin": "derived",
        "reason": error.reason,
    }
    residuals = _acceptance_rows(data, lambda depth: fit.rates(max(depth, k))[:depth])
    n_fit = len(names)
    return _Block(
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


# --------------------------------------------------------------------------- calibrate


def _sig(x: float) -> float:
    """Round to 6 significant digits for the written scenario."""
    return float(f"{x:.6g}")


@dataclass(frozen=True, slots=True)
class _Block:
    """One fitted block (timing or acceptance): its values, residuals and scenario overrides."""

    values: tuple[FittedValue, ...]
    residuals: tuple[Residual, ...]
    overrides: dict[str, Any]
    chi2: float
    n_obs: int
    n_fit: int
    notes: tuple[str, ...]
    covariance: np.ndarray  # over the block's fitted values, in their order
    #: Values written with an error though not fitted (the drafter the data cannot fix),
    #: and the covariance over the fitted values then these (None: no such values).
    extra_values: tuple[FittedValue, ...] = ()
    full_covariance: np.ndarray | None = None


def _fitted_values(params: Sequence[Param], fit: Fit) -> tuple[FittedValue, ...]:
    out = []
    for p in params:
        fitted = p.name in fit.stderr
        if not fitted and not math.isfinite(p.base):
            raise SpecsimError(
                f"the data cannot determine {p.name} and the base scenario has no value",
                source="calibrate",
            )
        base = p.base if math.isfinite(p.base) else None
        out.append(
            FittedValue(
                p.name,
                fit.values[p.name],
                fit.stderr.get(p.name),
                base,
                fitted,
                fit.kept.get(p.name),
            )
        )
    return tuple(out)


def _block(
    params: Sequence[Param], fit: Fit, residuals: list[Residual], overrides: dict[str, Any]
) -> _Block:
    free = list(fit.stderr)  # the fit's own order (priority order)
    perm = [free.index(p.name) for p in params if p.name in fit.stderr]
    return _Block(
        _fitted_values(params, fit),
        tuple(residuals),
        overrides,
        fit.chi2,
        fit.n_obs,
        len(fit.stderr),
        fit.notes,
        fit.covariance[np.ix_(perm, perm)],
    )


#: Why the verify fields are not fitted when the base's verify pass comes from a table.
TABLE_REASON = (
    "the base's verify pass comes from the hardware model (a derived verify or "
    "verify_growth = experts): fit cycle_overhead_ms for the intercept, or give a measured "
    "timing.verify_ms with verify_growth = linear in the base"
)


def _fit_timing(
    base: Scenario, passes: PassTimes, data: Measurements, order: Sequence[str]
) -> _Block:
    """The timing block: fitted on the pass times of the scenario as it will be written.

    First pass: which of ``order`` the data determine (every field of ``order`` written).
    Second: those alone are written and fitted, the rest as the base gives or derives
    them. Drafter passes the base derives and the data cannot fix are then written as the
    hardware model's value with a range (``_unidentified_drafter``)."""
    params = _timing_params(passes)
    order = [n for n in order if n in {p.name for p in params}]
    excluded: dict[str, str] = (
        dict.fromkeys(("timing.verify_ms", "timing.verify_ms_per_extra_token"), TABLE_REASON)
        if passes.verify_table_ms is not None
        else {}
    )
    if not data.baselines and _passes_from_decode(base):
        excluded["timing.decode_ms"] = (
            "no plain-decoding figure: the passes derived from the decode would be fitted "
            "to speculative figures alone; give --baseline-tok-s"
        )
    names = [n for n in order if n not in excluded]
    first = fit_identifiable(
        _timing_residuals(base, data, names, {}), params, order, "timing", excluded=excluded
    )
    free = list(first.stderr)
    fit = fit_identifiable(_timing_residuals(base, data, free, {}), params, free, "timing")
    fit = replace(fit, kept={**fit.kept, **first.kept}, notes=first.notes + fit.notes)
    scenario = written_scenario(base, fit.values, free)
    final = pass_times(scenario)
    overrides: dict[str, Any] = {n: _sig(fit.values[n]) for n in free}
    notes: list[str] = []
    extra_values: list[FittedValue] = []
    extra_cov = None
    if "timing.decode_ms" in free and prices_from_weights(base):
        eff = scenario.hardware.bandwidth_efficiency
        overrides["hardware.bandwidth_efficiency"] = _sig(eff)
        overrides["uncertainty.hardware.bandwidth_efficiency"] = _efficiency_entry(
            base, fit.values["timing.decode_ms"], fit.stderr["timing.decode_ms"], eff
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
        drafter = _unidentified_drafter(base, data, fit, free, scenario)
        if drafter is not None:
            fit, extra_values, extra_cov, drafter_overrides, drafter_notes = drafter
            overrides.update({n: _sig(fit.values[n]) for n in free})
            overrides.update(drafter_overrides)
            notes.extend(drafter_notes)
            extra = {v.field: v.value for v in extra_values}
            scenario = written_scenario(base, fit.values, free, extra)
            final = pass_times(scenario)
    values = {**fit.values, **{p.name: getattr(final, p.name.split(".")[1]) for p in params
                               if p.name not in fit.stderr}}  # fmt: skip
    fit = replace(fit, values=values)
    residuals = [
        Residual("baseline tok/s", b.tok_s, 1000.0 / final.decode_ms, b.sigma, b.source)
        for b in data.baselines
    ]
    residuals += [
        Residual(
            f"tok/s at {pt.label()}, accept length {pt.accept_length:g}",
            pt.tok_s,
            point_tok_s(final, pt, scenario),
            _point_sigma(pt),
            pt.source,
        )
        for pt in data.points
    ]
    block = _block(params, fit, residuals, overrides)
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


#: The drafter's efficiency relative to the target's, over which its passes are taken:
#: one small decoder layer reads far fewer bytes a kernel than the target's layers, so it
#: may reach less of the peak; or as much as twice the target's share (at most the peak).
DRAFTER_EFFICIENCY_FACTORS = (0.5, 2.0)
#: A normal whose 90% interval spans the range: half-width / 1.645.
Z90 = 1.6448536269514722


def _efficiency_entry(base: Scenario, decode_ms: float, decode_se: float, eff: float) -> dict:
    """The implied efficiency's range: the decode's 90% interval mapped through
    ``implied_efficiency``, clipped at the peak."""
    ends = []
    for d in (decode_ms + Z90 * decode_se, max(decode_ms - Z90 * decode_se, 1e-6)):
        try:
            ends.append(min(implied_efficiency(base, d), 1.0))
        except SpecsimError:
            ends.append(1.0)
    low, high = min([*ends, eff]), max([*ends, eff])
    return {
        "range": [_sig(low), _sig(high)],
        "origin": "derived",
        "reason": (
            f"what the measured decode ({decode_ms:.4g} ms, 90% interval from its error) "
            "implies over the roofline at peak bandwidth on this server"
        ),
    }


def _unidentified_drafter(
    base: Scenario, data: Measurements, fit: Fit, free: Sequence[str], scenario: Scenario
):
    """The drafter passes the base derives and the data cannot fix (draft step and extend
    trade against the fitted intercept): written at the middle of the hardware model's
    range (the pass at DRAFTER_EFFICIENCY_FACTORS times the implied efficiency), with a
    normal whose 90% interval is that range, correlated with the fitted values as the fit
    moves when the drafter does (refitted at the middle, and one standard error up: exact
    for this linear model). Returns (the fit at the middle, values, covariance over the
    fitted values then these, overrides, notes) or None."""
    names = [
        f"timing.{n}_ms"
        for n in ("draft_step", "draft_extend")
        if getattr(base.timing, f"{n}_ms") is None and f"timing.{n}_ms" not in free
    ]
    if base.num_steps == 0 or not names or not fit.stderr:
        return None
    eff = scenario.hardware.bandwidth_efficiency
    nominal = pass_times(scenario)
    ends = []
    for factor in DRAFTER_EFFICIENCY_FACTORS:
        other = with_overrides(
            scenario,
            {"hardware.bandwidth_efficiency": min(eff * factor, 1.0)},
            source="calibrate",
        )
        ends.append(pass_times(other))
    out_values, sigmas, notes = [], [], []
    overrides: dict[str, Any] = {}
    for name in names:
        attr = name.split(".")[1]
        low, high = sorted(getattr(p, attr) for p in ends)
        mid = _sig(0.5 * (low + high))
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
    params = _timing_params(nominal)
    at_mid = {v.field: v.value for v in out_values}
    fit_mid = fit_identifiable(_timing_residuals(base, data, free, at_mid), params, free, "timing")
    fit_mid = replace(fit_mid, kept=fit.kept, notes=fit.notes)
    up = {v.field: v.value + s for v, s in zip(out_values, sigmas, strict=True)}
    moved = fit_identifiable(_timing_residuals(base, data, free, up), params, free, "timing")
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


def _fit_acceptance(base: Scenario, data: Measurements, model: str) -> _Block:
    params = _acceptance_params(base, model, data)
    names = [p.name for p in params]
    start = [p if math.isfinite(p.base) else Param(p.name, 0.5, 0.0, 1.0, 0.1) for p in params]
    fit = fit_identifiable(
        _acceptance_residuals(data, names), start, names, "acceptance", probe=[0.5] * len(names)
    )
    if model == "alpha":
        overrides: dict[str, Any] = {"acceptance.alpha": _sig(fit.values["acceptance.alpha"])}
        ks = {a.num_steps for a in data.accept_lengths}
        if len(ks) == 1 and not data.cumulative:
            # the equal rate of the accept length measured there: the anchor's num_steps
            overrides["acceptance.measured_num_steps"] = ks.pop()
        else:  # one equal rate fitted over several depths is a flat shape
            overrides["acceptance.shape"] = "flat"
    else:
        overrides = {"acceptance.per_position": [_sig(fit.values[n]) for n in names]}
    rates = np.array([fit.values[n] for n in names])
    residuals = _acceptance_rows(data, lambda depth: extend_rates(rates, depth))
    return _block(params, fit, residuals, overrides)


def _fit_tree_acceptance(base: Scenario, points: Sequence[SpecPoint]) -> _Block | None:
    """The top-1 rate (flat over depth) at which SGLang's tree of each tree row has the
    row's accept length, by the closed form (sim/model/tree/required.py ``accept_length``:
    the tree built at the rank rates, E[L] = 1 + the sum of its path products), the ranks
    below by the base's residual shares; the scenario drafts the first row's tree. None
    when the base gives no rank shape."""
    from sim.binding.bind import rank_shares  # lazy: tree rows only
    from sim.model.tree.required import RankShape, accept_length

    spec = base.acceptance
    widest = max(p.topk for p in points)
    if spec is None or spec.rank_shape() is None or spec.rank_rates_by_depth is not None:
        return None
    shares = rank_shares(spec, widest)
    flat = tuple(float(h) for h in shares if isinstance(h, float))
    if len(flat) + 1 < widest:
        return None
    shape = RankShape(flat)
    name = "acceptance.first_rate"

    def predicted(x: float, p: SpecPoint) -> float:
        assert p.num_draft_tokens is not None
        return accept_length(shape, x, (p.num_steps, p.topk, p.num_draft_tokens))

    def fun(values: dict[str, float]) -> np.ndarray:
        x = min(max(values[name], 0.0), 1.0)
        return np.array(
            [(predicted(x, p) - p.accept_length) / p.accept_length_sigma for p in points]
        )

    param = Param(name, 0.5, 0.0, 1.0, 0.1)
    fit = fit_identifiable(fun, [param], [name], "acceptance", probe=[0.5])
    x = min(max(fit.values[name], 0.0), 1.0)
    first = points[0]
    overrides: dict[str, Any] = {
        "speculation.num_steps": first.num_steps,
        "speculation.topk": first.topk,
        "speculation.num_draft_tokens": first.num_draft_tokens,
        "acceptance.shape": "flat",
    }
    if spec.rank_rates is not None:  # q_1 is the top-1 rate; the others keep their shares
        overrides["acceptance.rank_rates"] = [_sig(x)] + [_sig((1.0 - x) * h) for h in flat]
    else:
        overrides[name] = _sig(x)
    residuals = [
        Residual(
            f"accept length of {p.label()} (closed form)",
            p.accept_length,
            predicted(x, p),
            p.accept_length_sigma,
            p.source,
        )
        for p in points
    ]
    block = _block([param], fit, residuals, overrides)
    note = (
        f"acceptance from {len(points)} tree row{'s' * (len(points) != 1)}: top-1 rate "
        f"{x:.4f} at every depth, the ranks below by the base's residual shares, SGLang's "
        f"tree built by a drafter whose scores are the rank rates; the scenario drafts "
        f"{first.label()}"
    )
    return replace(block, notes=(*block.notes, note))


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


CALIBRATED_REASON = "fitted by specsim calibrate"


def uncertainty_overrides(
    base: Scenario,
    fitted: Sequence[FittedValue],
    covariance: np.ndarray,
    values: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``[uncertainty]`` entries for the fitted values (origin ``calibrated``, their
    standard errors) and their correlations, merged with the base's correlations of the
    values it keeps (block-diagonal: the blocks were fitted separately)."""
    out: dict[str, Any] = {}
    lists: dict[str, dict[int, float]] = {}
    for v in fitted:
        if v.stderr is None:
            continue
        if "[" in v.field:
            name, index = v.field[:-1].split("[")
            lists.setdefault(name, {})[int(index)] = v.stderr
        else:
            section, key = v.field.split(".", 1)
            out[f"uncertainty.{section}.{key}"] = {
                "stderr": _sig(v.stderr),
                "origin": "calibrated",
                "reason": CALIBRATED_REASON,
            }
    for name, per_entry in lists.items():
        written = (values or {}).get(name)
        length = len(written) if isinstance(written, list) else max(per_entry) + 1
        section, key = name.split(".", 1)
        out[f"uncertainty.{section}.{key}"] = {
            "stderr": [_sig(per_entry.get(i, 0.0)) for i in range(length)],
            "origin": "calibrated",
            "reason": CALIBRATED_REASON + " (0: kept from the base)",
        }
    se = np.array([v.stderr or 0.0 for v in fitted])
    ok = [i for i, s in enumerate(se) if s > 0]
    fields = [fitted[i].field for i in ok]
    corr = np.eye(len(ok))
    if len(ok) >= 2:
        cov = np.asarray(covariance, dtype=float)[np.ix_(ok, ok)]
        corr = np.clip(cov / np.outer(se[ok], se[ok]), -1.0, 1.0)
        np.fill_diagonal(corr, 1.0)
    old = base.uncertainty.correlation
    if old is not None:
        gone = {f.split("[")[0] for f in fields} | {v.field.split("[")[0] for v in fitted}
        keep = [i for i, f in enumerate(old.fields) if f.split("[")[0] not in gone]
        if len(keep) >= 2:
            fields += [old.fields[i] for i in keep]
            corr = block_diag(corr, np.array(old.matrix)[np.ix_(keep, keep)])
    if len(fields) >= 2 and np.any(np.abs(corr - np.eye(len(fields))) > 1e-12):
        out["uncertainty.correlation"] = {
            "fields": fields,
            "matrix": [[_sig(float(x)) for x in row] for row in corr],
        }
    return out


def _check_not_what_if(base: Scenario) -> None:
    if hardware_point(base).key() != reference_point(base).key():
        raise SpecsimError(
            "the base scenario asks about other hardware than its timings were measured on "
            "([hardware] or timing.verify_cuda_graph differ from timing.measured_on): "
            "calibrate the scenario of the server the figures come from",
            source="calibrate",
        )


def _calibrated_scenario(
    base: Scenario, overrides: dict[str, Any], drop: Sequence[str]
) -> Scenario:
    """``base`` with ``overrides`` set and the dotted keys ``drop`` removed, validated."""
    raw = base.model_dump(exclude_none=True)
    for dotted in drop:
        section, key = dotted.split(".")
        raw.get(section, {}).pop(key, None)
    merged = apply_overrides(raw, overrides)
    try:
        calibrated = scenario_from_dict(merged, source="calibrated scenario")
        bind(calibrated)  # the hardware model may refuse the calibrated values as well
        return calibrated
    except SpecsimError as exc:
        raise SpecsimError(
            f"the calibrated values make an invalid scenario: {exc}", source="calibrate"
        ) from None


def calibrate(
    base: Scenario,
    data: Measurements,
    *,
    fit_timing: Sequence[str] | None = None,
    acceptance: str = "auto",
    prefer: str | None = None,
) -> Calibration:
    """Fit ``base``'s timings and acceptance profile to ``data``; see the module docstring.

    ``fit_timing`` lists timing fields (without ``timing.``) in priority order (default
    ``DEFAULT_TIMING_FIT``, or ``TABLE_TIMING_FIT`` when the base derives its verify pass).
    The figures are taken as measured on the base's hardware: a base whose server the
    files contradict (engine, model, tensor-parallel size, num_steps;
    sim/calibration/server_match.py) is refused unless ``prefer`` says which wins. Raises
    SpecsimError on empty data, unknown fields, a what-if base, figures the server's
    physics rules out (sim/calibration/physics.py), or a fit that makes the scenario
    invalid.
    """
    if data.empty:
        raise SpecsimError(
            "nothing to calibrate from: give --baseline-tok-s, --point, --vllm-metrics or "
            "--sglang-log",
            source="calibrate",
        )
    _check_not_what_if(base)
    server_overrides, server_notes = check_server(base, data, prefer)
    if server_overrides:
        base = with_overrides(base, server_overrides, source="--prefer data")
    check_units(base, data)
    base_passes = pass_times(base)
    table = base_passes.verify_table_ms is not None
    if fit_timing is None:
        fit_timing = TABLE_TIMING_FIT if table else DEFAULT_TIMING_FIT
    unknown = [f for f in fit_timing if f not in TIMING_FIELDS]
    if unknown:
        raise SpecsimError(
            f"cannot fit {', '.join(unknown)}; timing fields are {', '.join(TIMING_FIELDS)}",
            param="fit_timing",
        )
    notes: list[str] = [*data.notes, *server_notes, kept_from_base(base, server_overrides)]
    blocks: list[_Block] = []
    if data.baselines or data.points:
        blocks.append(_fit_timing(base, base_passes, data, [f"timing.{f}" for f in fit_timing]))
    else:
        notes.append("no tok/s figure given: every timing is kept from the base scenario")
    model = _acceptance_model(data, acceptance)
    drop: list[str] = []
    tree_points = [p for p in data.points if p.is_tree]
    if model is None and tree_points:
        tree_block = _fit_tree_acceptance(base, tree_points)
        if tree_block is None:
            notes.append(
                "tree rows' accept lengths need the ranks below the top-1 (the base's "
                "acceptance.rank_profile or rank_rates): the acceptance profile is kept"
            )
        else:
            blocks.append(tree_block)
            model = "tree"
    elif model is None:
        notes.append("no acceptance data given: the acceptance profile is kept from the base")
    elif model != "tree":
        if model == "shape":
            blocks.append(_fit_acceptance_shape(base, data))
        else:
            blocks.append(_fit_acceptance(base, data, model))
        spec = base.acceptance
        if spec is not None and spec.heterogeneous:
            drop = ["acceptance.concentration", "acceptance.std"]
            notes.append(
                "the base's per-request spread (mix, concentration or std) is replaced: the "
                "fitted rates are the effective rates the figures show; add a spread back "
                "only with mean rates refitted to it"
            )
    overrides: dict[str, Any] = {} if table else {"timing.verify_tokens": base_passes.verify_tokens}
    if data.cuda_graph is not None:
        # SGLang's speculative "Decode batch" line prints the can_run_cuda_graph of the
        # target verify forward (python/sglang/srt/speculative/eagle_worker.py,
        # forward_batch_generation returns verify()'s flag), so it says whether verify ran
        # graphed; the figures were measured so, hence measured_on too.
        overrides["timing.verify_cuda_graph"] = data.cuda_graph
        if base.timing.measured_on is not None:
            overrides["timing.measured_on.verify_cuda_graph"] = data.cuda_graph
        if data.cuda_graph != base.timing.verify_cuda_graph:
            notes.append(
                f"timing.verify_cuda_graph set to {data.cuda_graph}: every speculative decode "
                f"line says cuda graph: {data.cuda_graph} (the verify pass's flag)"
            )
    for b in blocks:
        overrides.update(b.overrides)
        notes.extend(b.notes)
    written = measured_context(base, data) if data.baselines or data.points else None
    if written is not None:
        overrides["timing.context_tokens"] = written[0]
        notes.append(f"timing.context_tokens {written[0]:.6g}: {written[1]}")
    overrides.update(_calibrated_identity(base, data))
    checks: list[Residual] = []
    covariance = block_diag(*[b.covariance for b in blocks]) if blocks else np.zeros((0, 0))
    # the values written with an error though not fitted join the fitted ones in the
    # [uncertainty] entries and their correlations (origin and reason as the block says)
    with_extra = [v for b in blocks for v in (*(x for x in b.values if x.fitted), *b.extra_values)]
    full = block_diag(*[
        b.full_covariance if b.full_covariance is not None else b.covariance for b in blocks
    ]) if blocks else np.zeros((0, 0))  # fmt: skip
    entries = uncertainty_overrides(base, with_extra, full, overrides)
    for v in (x for b in blocks for x in b.extra_values):
        entries[f"uncertainty.{v.field}"] = {
            "stderr": _sig(v.stderr or 0.0),
            **overrides.pop(f"uncertainty.{v.field}"),
        }
    overrides.update(entries)
    scenario = _calibrated_scenario(base, overrides, drop)
    if data.checks:
        passes = pass_times(scenario)
        checks = [
            Residual(
                f"held out: tok/s at {pt.label()}, accept length {pt.accept_length:g}",
                pt.tok_s,
                point_tok_s(passes, pt, scenario),
                _point_sigma(pt),
                pt.source,
            )
            for pt in data.checks
        ]
    # a fitted value whose error reaches past its field's valid values: later answers
    # clip its draws there (and say so); say it here too
    notes.extend(
        f"written [uncertainty]: {n}" for n in clipping_notes(bind(scenario).inputs).values()
    )
    if model is not None:
        depth = _measured_depth(data)
        for note in (rising_note(scenario, depth), seam_note(scenario, depth)):
            if note is not None:
                notes.append(note)
    return Calibration(
        scenario,
        tuple(v for b in blocks for v in b.values if v.field not in _fields(b.extra_values))
        + tuple(v for b in blocks for v in b.extra_values),
        model,
        tuple(r for b in blocks for r in b.residuals),
        sum(b.chi2 for b in blocks),
        sum(b.n_obs - b.n_fit for b in blocks),
        tuple(notes),
        tuple(tuple(float(x) for x in row) for row in covariance),
        data.imported,
        tuple(checks),
        () if written is None else (("timing.context_tokens", written[1]),),
    )


def measured_context(base: Scenario, data: Measurements) -> tuple[float, str] | None:
    """(tokens, origin) of the context the tok/s figures' passes ran at, for
    ``timing.context_tokens`` (the context the calibrated batch-1 passes hold at under
    load, sim/binding/serving.py ``reference_context``): the mean over the figures whose
    files state it (a vLLM bench run's mean prompt + half its mean answer); None when none
    does, or when the base states its own (the base's is kept: it may hold for passes the
    figures do not refit)."""
    figures = [(b.context_tokens, b.source) for b in data.baselines]
    figures += [(p.context_tokens, p.source) for p in data.points]
    stated = [(c, src) for c, src in figures if c is not None]
    if not stated or base.timing.context_tokens is not None:
        return None
    mean = sum(c for c, _ in stated) / len(stated)
    each = "; ".join(f"{c:.6g} in {src}" for c, src in stated)
    unstated = len(figures) - len(stated)
    return mean, (
        "measured: the mean prompt + half the mean answer of the runs the pass times were "
        f"fitted to ({each}"
        + (f"; {unstated} figure{'s' * (unstated != 1)} without it" if unstated else "")
        + (", their mean)" if len(stated) > 1 else ")")
    )


def _fields(values: Sequence[FittedValue]) -> set[str]:
    return {v.field for v in values}


def _measured_depth(data: Measurements) -> int:
    """The deepest position the acceptance figures cover (at least 2)."""
    depths = [c.position for c in data.cumulative] + [a.num_steps for a in data.accept_lengths]
    return max([2, *depths])


def rising_note(scenario: Scenario, depth: int) -> str | None:
    """A note naming a fitted acceptance profile that rises with position over the
    measured ``depth`` positions (None: it does not rise). Drafters' conditional rates
    usually fall with position (the decay priors' published profiles,
    sim/binding/priors.py), so a rise is more often a sign of figures measured under
    different prompts or settings than of the drafter."""
    rates = conditional_rates(scenario.acceptance, depth)
    rises = [i for i in range(1, depth) if rates[i] > rates[i - 1] + 1e-9]
    if not rises:
        return None
    spec = scenario.acceptance
    assert spec is not None
    shown = ", ".join(f"{r:.3f}" for r in rates)
    decay = ""
    if spec.decay is not None and spec.decay > 1.0:
        at_bound = ", the upper end of the fit's range" if spec.decay >= DECAY_BOUNDS[1] else ""
        decay = f" (acceptance.decay {spec.decay:g} > 1{at_bound})"
    first = rises[0]
    return (
        f"the fitted acceptance rises with position: per-position rates {shown} at positions "
        f"1..{depth}{decay}, position {first + 1} above position {first}; drafters' rates "
        "usually fall with position, so check that every figure was measured on the same "
        "prompts and settings (a rising profile is kept as fitted)"
    )


def seam_note(scenario: Scenario, depth: int) -> str | None:
    """A note naming listed rates kept from the base past the ``depth`` measured positions
    when the first of them is above the fitted rate at the last measured position (None
    otherwise): the written profile then rises where the measurements stop, from rates
    that were not measured with these figures."""
    spec = scenario.acceptance
    listed = None if spec is None else spec.per_position
    if listed is None or len(listed) <= depth:
        return None
    last, kept = listed[depth - 1], listed[depth]
    if kept <= last + 1e-9:
        return None
    ends = f"{depth}" if len(listed) == depth + 1 else f"{depth}..{len(listed) - 1}"
    return (
        f"acceptance.per_position[{ends}] kept from the base scenario ({kept:.3f} at "
        f"position {depth + 1}) is above the fitted rate {last:.3f} at position {depth}, "
        f"the last measured: the written profile rises at position {depth + 1}; those "
        "rates were not measured with these figures, so measure them or set them"
    )


def _calibrated_identity(base: Scenario, data: Measurements) -> dict[str, str]:
    """``name`` and ``description`` of a calibrated scenario: say so, and from what."""
    sources = list(
        dict.fromkeys(
            m.source
            for group in (data.baselines, data.points, data.accept_lengths, data.cumulative)
            for m in group
        )
    )
    shown = "; ".join(sources[:6]) + (f"; and {len(sources) - 6} more" if len(sources) > 6 else "")
    return {
        "name": f"{base.name[:180]}-calibrated",
        "description": f"{base.name[:180]} calibrated by specsim calibrate from: {shown}"[:10_000],
    }
