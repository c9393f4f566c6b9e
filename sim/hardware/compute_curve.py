"""Compute time against work through the measured passes (``ComputeCurve``): piecewise
linear between the points, the end segments' slopes beyond them (at most
``max_tail_slope`` past the last), ``DEFAULT_SLOPE`` around a single point (its evidence:
sim/hardware/batched.py ``SLOPE_RANGE``)."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

#: Compute ms per work ms beyond the measured points when one point is all there is
#: (sim/hardware/batched.py ``SLOPE_RANGE``: what public measurements say of it).
DEFAULT_SLOPE = 1.0


@dataclass(frozen=True)
class ComputeCurve:
    """Compute time against work, through measured points.

    ``work_ms`` (n,) strictly increasing, ``compute_ms`` (n,); ``slope``: used beyond
    the points when n = 1 (with n > 1 the end segments' slopes extend the curve, never
    below 0).
    """

    work_ms: np.ndarray
    compute_ms: np.ndarray
    slope: float = DEFAULT_SLOPE
    max_tail_slope: float | None = None

    def __post_init__(self) -> None:
        if self.work_ms.shape != self.compute_ms.shape or self.work_ms.size == 0:
            raise ValueError("work_ms and compute_ms need the same non-empty shape")
        if np.any(np.diff(self.work_ms) <= 0):
            raise ValueError("calibration points need distinct work times")
        if self.max_tail_slope is not None and self.max_tail_slope < 0:
            raise ValueError("max_tail_slope must be >= 0")

    @property
    def end_slopes(self) -> tuple[float, float]:
        """Slopes below the first and beyond the last point (the latter at most
        ``max_tail_slope`` when given and there are several points)."""
        r, c = self.work_ms, self.compute_ms
        if r.size == 1:
            return self.slope, self.slope
        high = max(0.0, float((c[-1] - c[-2]) / (r[-1] - r[-2])))
        if self.max_tail_slope is not None:
            high = min(high, self.max_tail_slope)
        return max(0.0, float((c[1] - c[0]) / (r[1] - r[0]))), high

    def through(self, work_ms: float, compute_ms: float) -> ComputeCurve:
        """This curve shifted in compute so that it passes through (work, compute): the
        same marginal cost per unit of work, anchored on another pass's point."""
        offset = compute_ms - float(self.at(np.array([work_ms]))[0])
        return ComputeCurve(self.work_ms, self.compute_ms + offset, self.slope, self.max_tail_slope)

    @functools.cached_property
    def _ends(self) -> tuple[float, float, float, float, float, float]:
        """(first work, last work, first compute, last compute, slope below, slope beyond)."""
        low, high = self.end_slopes
        r, c = self.work_ms, self.compute_ms
        return float(r[0]), float(r[-1]), float(c[0]), float(c[-1]), low, high

    def at_scalar(self, work_ms: float) -> float:
        """``at`` of one work time, in Python floats outside the points (the same
        operations, so the same bits) and by ``np.interp`` between them."""
        r0, rl, c0, cl, low, high = self._ends
        if work_ms < r0:
            return c0 + low * (work_ms - r0)
        if work_ms > rl:
            return cl + high * (work_ms - rl)
        return float(np.interp(work_ms, self.work_ms, self.compute_ms))

    def at(self, work_ms: np.ndarray) -> np.ndarray:
        """Compute ms at work times (any shape, same shape out)."""
        x = np.asarray(work_ms, dtype=float)
        r0, rl, c0, cl, low, high = self._ends
        r, c = self.work_ms, self.compute_ms
        if x.ndim and x.size:
            least = np.minimum.reduce(x, axis=None)
            if least > rl:  # all beyond the last point (a large batch)
                return cl + high * (x - rl)
            most = np.maximum.reduce(x, axis=None)
            if most < r0:  # all below the first point (a small batch's drafter)
                return c0 + low * (x - r0)
            # all between the points: what ``where`` keeps
            if least >= r0 and most <= rl:
                return np.interp(x, r, c)
        inside = np.interp(x, r, c)
        out = np.where(x < r0, c0 + low * (x - r0), inside)
        return np.where(x > rl, cl + high * (x - rl), out)
