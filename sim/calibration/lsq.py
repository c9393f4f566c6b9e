"""Weighted least squares over the parameters the data can determine (scipy.optimize).

``fit_identifiable`` first ranks the parameters: in a given priority order, one is kept
free only if it raises the rank of the scaled Jacobian of the residuals (i.e. adds a
direction the data can see); the others stay at their base values with a reason. It then
solves ``least_squares`` (trust-region reflective, with bounds) over the free ones and
returns their covariance (J^T J)^-1 at the solution, scaled by the reduced chi-square when
that exceeds 1. Residuals must already be divided by their standard errors.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import least_squares

from sim.errors import SpecsimError

#: Relative tolerance on singular values of the scaled Jacobian: a direction weaker than
#: this, relative to the strongest, is treated as invisible to the data.
RANK_RTOL = 1e-7


@dataclass(frozen=True, slots=True)
class Param:
    """One parameter: its base value (kept when not determined), bounds and typical scale."""

    name: str
    base: float
    lower: float
    upper: float
    scale: float


@dataclass(frozen=True, slots=True)
class Fit:
    """Every parameter's value (fitted or base), standard errors of the fitted ones, reasons
    for the kept ones, chi-square over ``n_obs`` residuals, and notes."""

    values: dict[str, float]
    stderr: dict[str, float]
    kept: dict[str, str]
    chi2: float
    n_obs: int
    notes: tuple[str, ...]
    covariance: np.ndarray  # shape (len(stderr), len(stderr)), in stderr's key order


def _jacobian(
    fun: Callable[[np.ndarray], np.ndarray], x: np.ndarray, scale: np.ndarray
) -> np.ndarray:
    """Central-difference Jacobian, shape (m, p), of ``fun`` at ``x`` (steps ~1e-6 x scale)."""
    cols = []
    for j in range(x.size):
        h = 1e-6 * scale[j]
        up, down = x.copy(), x.copy()
        up[j] += h
        down[j] -= h
        cols.append((fun(up) - fun(down)) / (2 * h))
    return np.column_stack(cols) if cols else np.zeros((fun(x).size, 0))


def _rank(matrix: np.ndarray, reference: float) -> int:
    if matrix.shape[1] == 0:
        return 0
    s = np.linalg.svd(matrix, compute_uv=False)
    return int(np.sum(s > RANK_RTOL * reference))


def _select(
    jac: np.ndarray, params: Sequence[Param], order: Sequence[str]
) -> tuple[list[str], dict[str, str]]:
    """Greedy: keep each parameter (in ``order``) that raises the scaled Jacobian's rank."""
    index = {p.name: i for i, p in enumerate(params)}
    scaled = jac * np.array([p.scale for p in params])
    reference = float(np.linalg.svd(scaled, compute_uv=False).max()) if scaled.size else 0.0
    chosen: list[str] = []
    kept: dict[str, str] = {}
    for name in order:
        col = scaled[:, index[name]]
        if reference == 0.0 or np.linalg.norm(col) <= RANK_RTOL * reference:
            kept[name] = "no measurement depends on it"
            continue
        trial = [*chosen, name]
        if _rank(scaled[:, [index[n] for n in trial]], reference) > len(chosen):
            chosen.append(name)
        else:
            cols = scaled[:, [index[n] for n in chosen]]
            weights = np.linalg.lstsq(cols, col, rcond=None)[0]
            big = np.abs(weights) > 1e-6 * np.abs(weights).max()
            alike = [n for n, b in zip(chosen, big, strict=True) if b]
            how = (
                "it changes every figure the same way"
                if len(alike) == 1
                else "a combination of theirs changes every figure the same way"
            )
            kept[name] = f"the measurements cannot separate it from {' and '.join(alike)}: {how}"
    return chosen, kept


def fit_identifiable(
    residuals: Callable[[dict[str, float]], np.ndarray],
    params: Sequence[Param],
    order: Sequence[str],
    label: str,
    probe: Sequence[float] | None = None,
    excluded: Mapping[str, str] | None = None,
) -> Fit:
    """Least squares over the identifiable subset of ``params``; the rest stay at base.

    ``order`` lists the parameters to try, in priority order; ``excluded`` maps parameters
    the caller will not fit to the reason it gives (the others get "not asked to fit it").
    Identifiability is judged from the Jacobian at ``probe`` (default: the base values); a
    nonlinear model passes an interior point so that a base value on a boundary (a rate of
    0 hides every later position) cannot make a parameter look invisible.
    """
    excluded = excluded or {}
    order = [n for n in order if n not in excluded]
    names = [p.name for p in params]
    base = np.array([p.base for p in params], dtype=float)

    def full(x: np.ndarray) -> np.ndarray:
        return residuals(dict(zip(names, x, strict=True)))

    n_obs = full(base).size
    at = base if probe is None else np.asarray(probe, dtype=float)
    jac0 = _jacobian(full, at, np.array([p.scale for p in params]))
    chosen, kept = _select(jac0, params, order)
    for p in params:
        if p.name not in order:
            kept.setdefault(p.name, excluded.get(p.name, "not asked to fit it"))
    if not chosen:
        return Fit(
            {p.name: p.base for p in params},
            {},
            kept,
            float(full(base) @ full(base)),
            n_obs,
            (),
            np.zeros((0, 0)),
        )
    idx = [names.index(n) for n in chosen]
    free = [params[i] for i in idx]

    def sub(x_free: np.ndarray) -> np.ndarray:
        x = base.copy()
        x[idx] = x_free
        return full(x)

    x0 = np.clip(base[idx], [p.lower for p in free], [p.upper for p in free])
    result = least_squares(
        sub,
        x0,
        bounds=([p.lower for p in free], [p.upper for p in free]),
        x_scale=np.array([p.scale for p in free]),
        method="trf",
        xtol=1e-12,
        ftol=1e-12,
        gtol=1e-12,
    )
    x_free = result.x
    r = sub(x_free)
    chi2 = float(r @ r)
    jac = _jacobian(sub, x_free, np.array([p.scale for p in free]))
    cov = np.linalg.pinv(jac.T @ jac)
    dof = n_obs - len(free)
    notes: list[str] = []
    if dof > 0 and chi2 / dof > 1.0:
        cov = cov * (chi2 / dof)
        notes.append(
            f"{label} fit: reduced chi-square {chi2 / dof:.3g} > 1: the figures scatter more "
            "than their stated errors; standard errors scaled by its square root"
        )
    stderr = {p.name: float(math.sqrt(max(cov[i, i], 0.0))) for i, p in enumerate(free)}
    for i, p in enumerate(free):
        at_lower = np.isclose(x_free[i], p.lower, atol=1e-9 * p.scale)
        if at_lower and p.lower > 0:
            kept_text = ", ".join(f"{q.name} = {q.base:g}" for q in params if q not in free)
            raise SpecsimError(
                f"the figures cannot be reproduced: {p.name} would have to be <= 0"
                + (f" with the kept values ({kept_text})" if kept_text else "")
                + "; check the figures, or fit other fields with --fit",
                source="calibrate",
            )
        if at_lower or np.isclose(x_free[i], p.upper, atol=1e-9 * p.scale):
            notes.append(
                f"{label} fit: {p.name} ended at its bound {x_free[i]:g}: its standard error "
                "is unreliable"
            )
    values = {p.name: p.base for p in params}
    values.update({p.name: float(v) for p, v in zip(free, x_free, strict=True)})
    return Fit(values, stderr, kept, chi2, n_obs, tuple(notes), cov)
