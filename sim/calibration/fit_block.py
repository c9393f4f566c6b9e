"""One fitted block of a calibration (timing or acceptance): its values, residuals,
scenario overrides and covariance, built from a least-squares fit."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sim.calibration.lsq import Fit, Param
from sim.calibration.result import FittedValue, Residual
from sim.errors import SpecsimError


def six_digits(x: float) -> float:
    """Round to 6 significant digits for the written scenario."""
    return float(f"{x:.6g}")


@dataclass(frozen=True, slots=True)
class FitBlock:
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


def fitted_values(params: Sequence[Param], fit: Fit) -> tuple[FittedValue, ...]:
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


def block_from_fit(
    params: Sequence[Param], fit: Fit, residuals: list[Residual], overrides: dict[str, Any]
) -> FitBlock:
    free = list(fit.stderr)  # the fit's own order (priority order)
    perm = [free.index(p.name) for p in params if p.name in fit.stderr]
    return FitBlock(
        fitted_values(params, fit),
        tuple(residuals),
        overrides,
        fit.chi2,
        fit.n_obs,
        len(fit.stderr),
        fit.notes,
        fit.covariance[np.ix_(perm, perm)],
    )
