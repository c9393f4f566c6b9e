"""The linear form of the serving model error, sigma(d) = s d, which specsim shipped until
the pre-registered selection of the forms (docs/serving-intervals.md, "The form of the
error"; the shipped forms are in sim/model/model_error.py). Kept for the evidence that
compares with it (sim/validation/interval_width.py); leave one curve out with
``leave_one_curve_out(residuals, fit_model_error)`` (sim/model/model_error.py):

    ln(measured / predicted) ~ N(0, v + (s d)^2).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sim.model.model_error import S_MAX, Residual

__all__ = ["ModelErrorFit", "fit_model_error", "model_error_sigma"]


@dataclass(frozen=True, slots=True)
class ModelErrorFit:
    """The fitted standard deviation of the log error per unit log distance, its standard
    error (from the Fisher information; NaN when the fit is at 0), and what it was fitted
    on: ``figures`` away from a calibrated load, over ``groups`` curves."""

    sigma_per_log_load: float
    stderr: float
    figures: int
    groups: int

    def sigma(self, distance: float) -> float:
        """``model_error_sigma`` at this fit."""
        return model_error_sigma(self.sigma_per_log_load, distance)


def model_error_sigma(sigma_per_log_load: float, distance: float) -> float:
    """The standard deviation of the log error at a log distance ``distance``: s d."""
    return sigma_per_log_load * distance


def _neg_log_lik(s: float, r: np.ndarray, d: np.ndarray, v: np.ndarray) -> float:
    var = v + (s * d) ** 2
    return 0.5 * float(np.sum(np.log(var) + r**2 / var))


def fit_model_error(residuals: Sequence[Residual]) -> ModelErrorFit:
    """Maximum-likelihood s of ln(measured / predicted) ~ N(0, v + (s d)^2) over the
    residuals away from a calibrated load (d > 0; those at d = 0 say nothing of s).
    Without a known variance the estimate is closed: s^2 = mean((r / d)^2), standard error
    s / sqrt(2 n); with one it is a bounded one-dimensional search, and the standard error
    1 / sqrt(I(s)), I(s) = 2 sum s^2 d^4 / (v + s^2 d^2)^2."""
    use = [x for x in residuals if x.distance > 0]
    groups = len({x.group for x in use})
    if not use:
        raise ValueError(
            "no residual away from a calibrated load: the model error is not identified"
        )
    r = np.array([x.log_error for x in use])
    d = np.array([x.distance for x in use])
    v = np.array([x.variance for x in use])
    if not np.any(v > 0):
        s = float(np.sqrt(np.mean((r / d) ** 2)))
    else:
        from scipy.optimize import minimize_scalar  # lazy: only fits need it

        res = minimize_scalar(
            _neg_log_lik, bounds=(0.0, S_MAX), args=(r, d, v), method="bounded",
            options={"xatol": 1e-6},
        )  # fmt: skip
        s = float(res.x)
    var = v + (s * d) ** 2
    info = 2.0 * float(np.sum((s**2) * d**4 / var**2))
    stderr = 1.0 / math.sqrt(info) if info > 0 else float("nan")
    return ModelErrorFit(s, stderr, len(use), groups)
