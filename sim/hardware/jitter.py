"""Per-rank compute jitter and its order statistics (theory for the layer-level pass).

One rank's compute in one layer segment is its nominal time times a multiplier
W ~ Gamma(shape 1/cv^2, scale cv^2): mean 1, coefficient of variation ``cv``. A
tensor-parallel all-reduce is a barrier, so a segment lasts max over the n ranks of W;
E[max of n] = integral_0^inf (1 - F(w)^n) dw is the straggler factor the simulation should
show (tests compare; the layer engine never uses this formula).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from scipy import stats


def multiplier_distribution(cv: float) -> stats.rv_continuous:
    """Frozen Gamma with mean 1 and coefficient of variation ``cv`` (> 0)."""
    from scipy import stats  # lazy: scipy.stats is slow to import (start-up)

    if cv <= 0:
        raise ValueError(f"cv must be > 0, got {cv}")
    return stats.gamma(a=1.0 / cv**2, scale=cv**2)


def sample_multipliers(cv: float, size: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Multipliers of shape ``size``; all ones when ``cv == 0``."""
    if cv == 0:
        return np.ones(size)
    return rng.gamma(shape=1.0 / cv**2, scale=cv**2, size=size)


def expected_max_multiplier(cv: float, n: int) -> float:
    """E[max of n iid multipliers]; 1 when cv == 0 or n == 1."""
    if cv == 0 or n == 1:
        return 1.0
    from scipy import integrate  # lazy: start-up

    dist = multiplier_distribution(cv)
    value, _ = integrate.quad(lambda w: 1.0 - dist.cdf(w) ** n, 0.0, np.inf, limit=200)
    return float(value)


def max_multiplier_variance(cv: float, n: int) -> float:
    """Var[max of n iid multipliers] = E[M^2] - E[M]^2, E[M^2] = int 2w (1 - F^n) dw."""
    if cv == 0:
        return 0.0
    from scipy import integrate  # lazy: start-up

    dist = multiplier_distribution(cv)
    second, _ = integrate.quad(lambda w: 2.0 * w * (1.0 - dist.cdf(w) ** n), 0.0, np.inf, limit=200)
    return float(second - expected_max_multiplier(cv, n) ** 2)
