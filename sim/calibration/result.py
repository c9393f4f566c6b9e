"""What a calibration returns: every fitted or kept value, the residuals, the calibrated
scenario and the fitted values' covariance (``Calibration``)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from sim.scenario.overrides import with_overrides
from sim.scenario.schema import Scenario


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
    #: Each figure's source once, in the order read (a file and line, or a flag).
    sources: tuple[str, ...] = field(default=())

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
                "sources": list(self.sources),
            },
        }
