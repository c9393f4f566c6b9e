"""Request lengths (input or output tokens): fixed, lognormal, or empirical.

Each distribution draws from the generator it is given and returns integer token counts;
``max_tokens`` bounds what it can return (the KV-capacity check uses it).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from scipy.special import ndtr

__all__ = ["Empirical", "Fixed", "LengthDistribution", "LogNormal"]


class LengthDistribution(Protocol):
    """Token counts: ``sample(rng, n)`` -> int64 (n,) within [min_tokens, max_tokens];
    ``sample_one(rng)`` -> ``int(sample(rng, 1)[0])`` (the same draws and value, without
    the array)."""

    @property
    def mean(self) -> float: ...

    @property
    def min_tokens(self) -> int: ...

    @property
    def max_tokens(self) -> int: ...

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray: ...

    def sample_one(self, rng: np.random.Generator) -> int: ...


def _lognormal_cdf(x: np.ndarray, sigma: float, scale: float) -> np.ndarray:
    """P(X <= x) for log X ~ N(log scale, sigma^2): Phi(log(x / scale) / sigma), 0 at
    x <= 0 (what scipy.stats.lognorm(s=sigma, scale=scale).cdf computes, without
    importing scipy.stats on a serving path)."""
    x = np.asarray(x, dtype=float)
    positive = x > 0
    z = np.log(np.where(positive, x, 1.0) / scale) / sigma
    return np.where(positive, ndtr(z), 0.0)


@dataclass(frozen=True, slots=True)
class Fixed:
    """Every request has ``tokens`` tokens (draws nothing)."""

    tokens: int

    def __post_init__(self) -> None:
        if self.tokens < 0:
            raise ValueError(f"tokens must be >= 0, got {self.tokens}")

    @property
    def mean(self) -> float:
        return float(self.tokens)

    @property
    def min_tokens(self) -> int:
        return self.tokens

    @property
    def max_tokens(self) -> int:
        return self.tokens

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return np.full(n, self.tokens, dtype=np.int64)

    def sample_one(self, rng: np.random.Generator) -> int:
        return self.tokens


@dataclass(frozen=True)
class LogNormal:
    """round(X) clipped to [min_tokens, max_tokens], X lognormal with mean ``mean_tokens``
    and log-space standard deviation ``sigma`` (mu = ln(mean) - sigma^2 / 2).

    ``mean`` is the mean after rounding and clipping: the sum over token counts of each
    count's probability under the lognormal cdf (rounding moves it by under half a token).
    """

    mean_tokens: float
    sigma: float
    max_tokens: int
    min_tokens: int = 1

    def __post_init__(self) -> None:
        if self.mean_tokens <= 0 or self.sigma < 0:
            raise ValueError("mean_tokens must be > 0 and sigma >= 0")
        if not 0 <= self.min_tokens <= self.max_tokens:
            raise ValueError("need 0 <= min_tokens <= max_tokens")

    @functools.cached_property
    def mu(self) -> float:
        return math.log(self.mean_tokens) - self.sigma**2 / 2

    @property
    def mean(self) -> float:
        lo, hi = self.min_tokens, self.max_tokens
        if self.sigma == 0:
            return float(min(max(round(self.mean_tokens), lo), hi))
        values = np.arange(lo, hi + 1)
        # P(round(X) clipped = v): the cdf between v - 1/2 and v + 1/2, ends absorbing tails
        upper = _lognormal_cdf(values + 0.5, self.sigma, math.exp(self.mu))
        lower = _lognormal_cdf(values - 0.5, self.sigma, math.exp(self.mu))
        lower[0], upper[-1] = 0.0, 1.0
        return float(values @ (upper - lower))

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        x = np.rint(rng.lognormal(self.mu, self.sigma, size=n))
        np.maximum(x, self.min_tokens, out=x)  # np.clip's values without its wrapper
        np.minimum(x, self.max_tokens, out=x)
        return x.astype(np.int64)

    def sample_one(self, rng: np.random.Generator) -> int:
        # clipping to integer bounds before rounding (half to even, as np.rint) is the same
        x = rng.lognormal(self.mu, self.sigma)
        return round(min(max(x, self.min_tokens), self.max_tokens))


@dataclass(frozen=True, slots=True)
class Empirical:
    """Lengths drawn uniformly (with replacement) from ``values`` (e.g. a trace's column)."""

    values: tuple[int, ...]

    def __post_init__(self) -> None:
        if not self.values or min(self.values) < 0:
            raise ValueError("an empirical distribution needs non-negative values")

    @property
    def mean(self) -> float:
        return float(np.mean(self.values))

    @property
    def min_tokens(self) -> int:
        return int(min(self.values))

    @property
    def max_tokens(self) -> int:
        return int(max(self.values))

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        pool = np.asarray(self.values, dtype=np.int64)
        return pool[rng.integers(0, pool.size, size=n)]

    def sample_one(self, rng: np.random.Generator) -> int:
        return int(self.sample(rng, 1)[0])
