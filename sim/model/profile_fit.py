"""Fitting acceptance shapes to measurements, and choosing a shape by held-out error.

Measurements (each with a standard error) are cumulative rates c_j = a_1 ... a_j at draft
positions j (vLLM's per-position counters) and accept lengths AL(k) = 1 + c_1 + ... + c_k
at draft lengths k (SGLang and vLLM logs). A shape of sim/model/shapes.py has two
parameters, the first-position rate a_1 and ``decay`` (``flat`` only a_1); weighted least
squares (scipy.optimize.least_squares) fits them, and their covariance is (J^T J)^-1,
scaled by the reduced chi-square when that exceeds 1.

A shape is chosen by **forward held-out error**, not by fit: for every depth d (a position
or a draft length) beyond the first ones the shape needs, fit on the shallower depths and
predict depth d; the shape with the lowest mean relative error wins (ties go to the
simpler shape). Extrapolating to longer drafts is exactly what the answer does with it.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import accumulate

import numpy as np

from sim.model.shapes import SHAPES, accept_length_of, numpy_sum, rates_for_positions, shape_factors

#: Parameters each shape fits (a_1, and decay unless flat).
SHAPE_PARAMS: dict[str, int] = {"flat": 1, "geometric": 2, "step": 2}
#: Bounds of a fitted decay (rising profiles, decay > 1, are allowed).
DECAY_BOUNDS: tuple[float, float] = (0.05, 2.0)


@dataclass(frozen=True, slots=True)
class ProfileData:
    """Acceptance measurements: cumulative rates at positions, accept lengths at k.

    Tuples of equal length per kind; sigmas are standard errors (> 0).
    """

    positions: tuple[int, ...] = ()
    cumulative: tuple[float, ...] = ()
    cumulative_sigma: tuple[float, ...] = ()
    num_steps: tuple[int, ...] = ()
    accept_length: tuple[float, ...] = ()
    accept_length_sigma: tuple[float, ...] = ()

    @property
    def depths(self) -> tuple[int, ...]:
        """Distinct depths (positions and draft lengths), ascending."""
        return tuple(sorted(set(self.positions) | set(self.num_steps)))

    @property
    def max_depth(self) -> int:
        return max(self.depths) if self.depths else 0

    def _where(self, keep: Callable[[int], bool]) -> ProfileData:
        cum = [i for i, p in enumerate(self.positions) if keep(p)]
        al = [i for i, k in enumerate(self.num_steps) if keep(k)]
        return ProfileData(
            tuple(self.positions[i] for i in cum),
            tuple(self.cumulative[i] for i in cum),
            tuple(self.cumulative_sigma[i] for i in cum),
            tuple(self.num_steps[i] for i in al),
            tuple(self.accept_length[i] for i in al),
            tuple(self.accept_length_sigma[i] for i in al),
        )

    def upto(self, depth: int) -> ProfileData:
        """The measurements at depths < ``depth``."""
        return self._where(lambda d: d < depth)

    def at(self, depth: int) -> ProfileData:
        """The measurements at exactly ``depth``."""
        return self._where(lambda d: d == depth)

    @property
    def size(self) -> int:
        return len(self.positions) + len(self.num_steps)


def predict(data: ProfileData, rates: np.ndarray) -> np.ndarray:
    """Model values of every measurement (cumulative first, then accept lengths) from
    conditional rates of shape (..., K), K >= the deepest measurement: shape (..., n)."""
    c = np.cumprod(rates, axis=-1)
    cum = [c[..., p - 1] for p in data.positions]
    als = [1.0 + c[..., :k].sum(axis=-1) for k in data.num_steps]
    return np.stack(cum + als, axis=-1) if cum or als else np.zeros((*rates.shape[:-1], 0))


def predict_shape(
    data: ProfileData, shape: str, first_rate: float, decay: float, depth: int
) -> np.ndarray:
    """``predict(data, rates_for_positions(shape, first_rate, decay, depth))`` (n,) for one
    profile, with the same bits, in floats: a fit evaluates it dozens of times on a few
    positions, where each array operation's overhead is most of its cost. Every rate is
    the product NumPy forms, clipped as ``np.clip`` clips (NaN and -0 kept), the running
    product is cumprod's and each accept length's sum ``numpy_sum``'s."""
    if shape == "flat":  # shape_factors' values, without its arrays
        factors = [1.0] * depth
    elif shape == "step":
        factors = [1.0] + [decay * 1.0] * (depth - 1)
    else:
        factors = shape_factors(shape, decay, depth).tolist()
    rates = []
    for g in factors:
        v = first_rate * g
        v = v if v != v or v >= 0.0 else 0.0
        rates.append(v if v != v or v <= 1.0 else 1.0)
    c = list(accumulate(rates, operator.mul))
    values = [c[p - 1] for p in data.positions]
    values += [1.0 + numpy_sum(c[:k]) for k in data.num_steps]
    return np.array(values, dtype=float)


def observed(data: ProfileData) -> tuple[np.ndarray, np.ndarray]:
    """(values, sigmas) of every measurement in ``predict``'s order."""
    values = np.array([*data.cumulative, *data.accept_length], dtype=float)
    sigmas = np.array([*data.cumulative_sigma, *data.accept_length_sigma], dtype=float)
    return values, sigmas


@dataclass(frozen=True, slots=True)
class ProfileFit:
    """A fitted shape: a_1, decay (1 for flat), their covariance (2, 2), chi-square, dof."""

    shape: str
    first_rate: float
    decay: float
    covariance: np.ndarray = field(repr=False)
    chi2: float
    dof: int

    @property
    def first_rate_stderr(self) -> float:
        return float(math.sqrt(max(self.covariance[0, 0], 0.0)))

    @property
    def decay_stderr(self) -> float:
        return float(math.sqrt(max(self.covariance[1, 1], 0.0)))

    def rates(self, num_steps: int) -> np.ndarray:
        """The fitted conditional rates a_1..a_k, shape (k,)."""
        return rates_for_positions(self.shape, self.first_rate, self.decay, num_steps)

    def accept_length(self, num_steps: int) -> float:
        return float(accept_length_of(self.rates(num_steps)))


def _jacobian(resid, x: np.ndarray) -> np.ndarray:
    """Central-difference Jacobian of ``resid`` at ``x``: shape (m, p)."""
    cols = []
    for j in range(x.size):
        h = 1e-7 * max(1.0, abs(x[j]))
        up, down = x.copy(), x.copy()
        up[j] += h
        down[j] -= h
        cols.append((resid(up) - resid(down)) / (2 * h))
    return np.column_stack(cols)


def least_squares_bounded(
    resid, x0: list[float], lower: list[float], upper: list[float], iterations: int = 100
) -> tuple[np.ndarray, np.ndarray]:
    """(x, Jacobian at x) minimising ||resid(x)||^2 inside the box [lower, upper].

    Levenberg-Marquardt with projection onto the box: cheap for the one or two parameters
    of a shape (scipy.optimize.least_squares carries a fixed overhead a call that
    dominates such small fits, and the decay priors fit hundreds of profiles).
    """
    lo, hi = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
    x = np.clip(np.asarray(x0, dtype=float), lo, hi)
    r = resid(x)
    cost = float(r @ r)
    damping = 1e-3
    for _ in range(iterations):
        jac = _jacobian(resid, x)
        grad = jac.T @ r
        hess = jac.T @ jac
        improved = False
        for _ in range(30):
            step = np.linalg.solve(hess + damping * np.diag(np.diag(hess) + 1e-12), -grad)
            trial = np.clip(x + step, lo, hi)
            r_trial = resid(trial)
            c_trial = float(r_trial @ r_trial)
            if c_trial <= cost:
                improved = cost - c_trial > 1e-10 * max(cost, 1e-300)
                x, r, cost = trial, r_trial, c_trial
                damping = max(damping / 10, 1e-12)
                break
            damping *= 10
        if not improved:
            break
    return x, _jacobian(resid, x)


def fit_profile(shape: str, data: ProfileData, decay: float | None = None) -> ProfileFit:
    """Weighted least squares of ``shape`` to ``data``; ``decay`` given fixes it.

    Needs at least as many measurements as free parameters (ValueError otherwise).
    """
    if shape not in SHAPES:
        raise ValueError(f"unknown shape {shape!r}")
    free_decay = shape != "flat" and decay is None
    # the decay when it is not fitted (never read when it is)
    fixed = 1.0 if shape == "flat" or decay is None else decay
    n_free = 2 if free_decay else 1
    if data.size < n_free:
        raise ValueError(f"{shape}: {data.size} measurements cannot fit {n_free} parameters")
    y, s = observed(data)
    k = data.max_depth

    def model(x: np.ndarray) -> np.ndarray:
        d = x[1] if free_decay else fixed
        return predict_shape(data, shape, float(x[0]), float(d), k)

    def resid(x: np.ndarray) -> np.ndarray:
        return (model(x) - y) / s

    first = float(np.clip(data.cumulative[0] if data.cumulative else 0.7, 0.01, 0.99))
    x0 = [first, 0.95] if free_decay else [first]
    lower = [0.0, DECAY_BOUNDS[0]] if free_decay else [0.0]
    upper = [1.0, DECAY_BOUNDS[1]] if free_decay else [1.0]
    x, jac = least_squares_bounded(resid, x0, lower, upper)
    cov = np.linalg.pinv(jac.T @ jac)
    r = resid(x)
    chi2 = float(r @ r)
    dof = data.size - n_free
    if dof > 0 and chi2 / dof > 1.0:
        cov = cov * (chi2 / dof)
    full = np.zeros((2, 2))
    full[:n_free, :n_free] = cov
    return ProfileFit(
        shape, float(x[0]), float(x[1]) if free_decay else float(fixed), full, chi2, dof
    )


def _al_cumulative(data: ProfileData, depth: int) -> float | None:
    """1 + c_1 + ... + c_depth when every position up to ``depth`` is measured, else None."""
    values = dict(zip(data.positions, data.cumulative, strict=True))
    if not all(j in values for j in range(1, depth + 1)):
        return None
    return 1.0 + sum(values[j] for j in range(1, depth + 1))


def holdout_error(shape: str, data: ProfileData, decay: float | None = None) -> float | None:
    """Mean relative error of forward held-out accept-length predictions (None: too few
    depths).

    For each split after the first ``n`` depths (n = parameters to fit) and before the
    last, fit on the depths up to the split and predict every deeper one: its measured
    accept length AL(d), or 1 + c_1 + ... + c_d when per-position rates are measured up
    to d (else the cumulative rate c_d itself). Long extrapolations count as much as short
    ones, which is what an answer at another ``num_steps`` needs.
    """
    n_free = SHAPE_PARAMS[shape] if decay is None else 1
    depths = data.depths
    errors: list[float] = []
    for split in range(n_free, len(depths)):
        fit = fit_profile(shape, data.upto(depths[split]), decay)
        for depth in depths[split:]:
            rates = fit.rates(depth)
            test = data.at(depth)
            if test.cumulative:
                measured = _al_cumulative(data, depth)
                if measured is not None:
                    errors.append(abs(1.0 + np.cumprod(rates).sum() - measured) / measured)
                else:
                    pred = float(np.prod(rates))
                    errors.extend(abs(pred - c) / c for c in test.cumulative)
            errors.extend(
                abs(fit.accept_length(k) - al) / al
                for k, al in zip(test.num_steps, test.accept_length, strict=True)
            )
    return float(np.mean(errors)) if errors else None


@dataclass(frozen=True, slots=True)
class ShapeChoice:
    """The shape with the lowest forward held-out error and every candidate's error."""

    shape: str
    errors: dict[str, float | None]


def choose_shape(data: ProfileData, candidates: tuple[str, ...] = SHAPES) -> ShapeChoice | None:
    """The candidate with the lowest held-out error (ties: the earlier, simpler one);
    None when no two-parameter candidate can be held out (fewer than three depths)."""
    errors = {s: holdout_error(s, data) for s in candidates}
    scored = {s: e for s, e in errors.items() if e is not None}
    if not scored or all(errors[s] is None for s in candidates if SHAPE_PARAMS[s] > 1):
        return None
    best = min(scored, key=lambda s: (round(scored[s], 12), candidates.index(s)))
    return ShapeChoice(best, errors)
