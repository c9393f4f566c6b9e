"""How long each phase of a cycle takes: the seam between the cost model and the engines.

An engine asks a cycle-time model for ``sample(rng, n)``: a mapping from each phase in
``PHASES`` to an array of shape (n,) with the durations (ms) of that phase in ``n``
cycles. The default, ``CostCycleTimes``, takes the phase means from the cycle cost model
(sim/model/cycle.py) and, with ``timing.jitter_cv > 0``, draws each phase from a mean-preserving
gamma distribution,

    T ~ Gamma(shape = 1 / cv^2, scale = mean * cv^2),  E[T] = mean,  sd[T] = cv * mean,

independently per phase and cycle (gamma: positive, right-skewed like measured GPU pass
times, and exact in mean and variance). Another model (e.g. a layer-level pass-time model
of the hardware) plugs in by offering the same members.

Optional capability (``SummableCycleTimes``): ``sum_quantiles(u, cycles)`` gives, per phase,
the ``u``-quantile of the total of ``cycles`` i.i.d. durations (``multiplier_sum_quantiles``
the same for unit-mean multipliers). The fast engine then draws
one uniform per request and phase instead of one duration per cycle (exact in law, and
monotone in the cycle count for a fixed ``u``, so common random numbers still order
requests). For the gamma model the total of n durations is Gamma(n / cv^2, mean cv^2).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np
from scipy import special

from sim.model.cycle import PHASES, CycleCost


@runtime_checkable
class CycleTimeModel(Protocol):
    """Durations of cycle phases.

    ``deterministic``: every cycle takes exactly ``mean_ms()`` (engines may skip sampling).
    ``mean_ms()``/``var_ms()``: per-phase mean and variance (ms, ms^2) of one cycle.
    ``sample(rng, n)``: {phase: durations of shape (n,)} for every phase in ``PHASES``.
    """

    @property
    def deterministic(self) -> bool: ...

    def mean_ms(self) -> dict[str, float]: ...

    def var_ms(self) -> dict[str, float]: ...

    def sample(self, rng: np.random.Generator, n: int) -> dict[str, np.ndarray]: ...


@runtime_checkable
class SummableCycleTimes(CycleTimeModel, Protocol):
    """A cycle-time model that can also draw the total of n cycles' durations at once.

    ``sum_quantiles(u, cycles)``: ``u`` of shape (m, 4) (uniforms, one per row and phase in
    ``PHASES`` order), ``cycles`` of shape (m,) (non-negative ints); returns ms of shape
    (m, 4), entry (i, p) the ``u[i, p]``-quantile of the sum of ``cycles[i]`` durations of
    phase p, non-decreasing in ``cycles[i]`` for a fixed ``u``.
    ``multiplier_sum_quantiles(u, counts)``: the ``u``-quantiles of the sum of ``counts``
    unit-mean multipliers of a phase (its duration over its mean), same shapes in and out
    (an extend that grows with L scales each cycle's multiplier).
    """

    def sum_quantiles(self, u: np.ndarray, cycles: np.ndarray) -> np.ndarray: ...

    def multiplier_sum_quantiles(self, u: np.ndarray, counts: np.ndarray) -> np.ndarray: ...


@dataclass(frozen=True, slots=True)
class CostCycleTimes:
    """Phase means from a ``CycleCost``, with mean-preserving gamma jitter of CV ``jitter_cv``."""

    cost: CycleCost
    jitter_cv: float = 0.0

    def __post_init__(self) -> None:
        if self.jitter_cv < 0:
            raise ValueError(f"jitter_cv must be >= 0, got {self.jitter_cv}")

    @property
    def deterministic(self) -> bool:
        return self.jitter_cv == 0.0

    def mean_ms(self) -> dict[str, float]:
        return self.cost.as_dict()

    def var_ms(self) -> dict[str, float]:
        return {p: (self.jitter_cv * m) ** 2 for p, m in self.mean_ms().items()}

    def sample(self, rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
        """Durations (ms) per phase, each of shape (n,). Draws nothing when deterministic;
        otherwise one gamma array per phase with a positive mean, in ``PHASES`` order."""
        means = self.mean_ms()
        if self.deterministic:
            return {p: np.full(n, means[p]) for p in PHASES}
        shape = 1.0 / self.jitter_cv**2
        out = {}
        for p in PHASES:
            m = means[p]
            out[p] = rng.gamma(shape, m / shape, size=n) if m > 0 else np.zeros(n)
        return out

    def multiplier_sum_quantiles(self, u: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """``u``-quantiles of the sum of ``counts`` i.i.d. unit-mean multipliers (a phase's
        duration over its mean): Gamma(n / cv^2, scale cv^2); n when deterministic. Same
        shapes in and out; 0 where ``counts`` is 0."""
        n = np.asarray(counts, dtype=float)
        if self.deterministic:
            return n
        with np.errstate(invalid="ignore"):
            q = special.gammaincinv(n / self.jitter_cv**2, u)
        return np.where(n > 0, q * self.jitter_cv**2, 0.0)

    def sum_quantiles(self, u: np.ndarray, cycles: np.ndarray) -> np.ndarray:
        """Quantiles of n-cycle totals (see ``SummableCycleTimes``): n mean when
        deterministic, else mean cv^2 * (inverse regularized lower gamma of shape n / cv^2)."""
        means = np.array([self.mean_ms()[p] for p in PHASES])
        n = np.asarray(cycles, dtype=float)[:, None]
        if self.deterministic:
            return n * means[None, :]
        scale = means * self.jitter_cv**2
        with np.errstate(invalid="ignore"):
            q = special.gammaincinv(n / self.jitter_cv**2, u)
        return np.where((n > 0) & (means[None, :] > 0), q * scale[None, :], 0.0)
