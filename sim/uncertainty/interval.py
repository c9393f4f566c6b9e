"""A 90% interval from inputs and model of a batch-1 answer (``Interval``: the 5% and 95%
quantiles of the answer over the draws, an end out of reach coded None) and how one is
read from the draws' values (``interval90_of``); ``SAMPLES``, the draws such an answer
takes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["INTERVAL_LABEL", "SAMPLES", "UNREACHABLE", "Interval", "interval90_of", "nan_none"]


#: Draws of the inputs (a power of 2, as scrambled Sobol points want).
SAMPLES = 256


INTERVAL_LABEL = "90% interval from inputs and model"


UNREACHABLE = 2.0  # a rate above 1 codes "out of reach" inside quantiles


@dataclass(frozen=True, slots=True)
class Interval:
    """A 90% interval (5% and 95% quantiles); an end None is out of reach (no k reaches
    the target in that share of draws); ``unreachable`` the share of such draws."""

    low: float | None
    high: float | None
    unreachable: float = 0.0

    def to_list(self) -> list[float | None]:
        return [self.low, self.high]

    @property
    def width(self) -> float:
        lo = 1.0 if self.low is None else self.low
        hi = 1.0 + (1.0 - lo) if self.high is None else self.high
        return hi - lo


def interval90_of(values: np.ndarray, cap: float | None = 1.0) -> Interval:
    """5-95% of ``values`` (n,); NaN values are out of reach (above every rate)."""
    v = np.where(np.isnan(values), UNREACHABLE if cap is not None else np.inf, values)
    share = float(np.mean(np.isnan(values)))
    if cap is None:
        lo, hi = (
            np.quantile(v[np.isfinite(v)], [0.05, 0.95]) if np.isfinite(v).any() else (None, None)
        )
        return Interval(_f(lo), _f(hi), share)
    lo, hi = np.quantile(v, [0.05, 0.95])
    return Interval(_rate(lo, cap), _rate(hi, cap), share)


def _f(x: Any) -> float | None:
    return None if x is None else float(x)


def _rate(x: float, cap: float) -> float | None:
    return None if x > cap + 1e-9 else float(min(x, cap))


def nan_none(x: float) -> float | None:
    return None if np.isnan(x) else float(x)
