"""The per-request spread of acceptance from the per-request spread of TPOT at batch 1.

Without per-request accept counts (sim/calibration/spread_fit.py), a batch-1 bench run
still reports how much its requests' TPOT differ (``vllm bench serve``'s and SGLang
``bench_serving``'s ``std_tpot_ms`` beside ``mean_tpot_ms``). At batch 1 a request's TPOT
is T x cycles / n (T the batch-1 cycle, n its answer's tokens after the first), so its
spread over requests is the spread of 1 / (tokens a cycle) over their rates, plus each
request's own sampling noise.

The law (the model's, sim/model/acceptance.py): each request draws one rate
a ~ Beta(m kappa, (1 - m) kappa), the same at every position of a chain of k; a cycle
emits L tokens, P(L >= j + 1) = a^j (j = 0..k), so mu(a) = E[L] = sum_j a^j and
s2(a) = E[L^2] - mu^2, E[L^2] = sum_j (2 j + 1) a^j. The cycles that emit n tokens number
n / mu(a) on average with variance n s2(a) / mu(a)^3 (the renewal limit), so over requests

    CV^2(kappa) = (Var_a[1 / mu] + E_a[s2 / mu^3] E[1 / n]) / E_a[1 / mu]^2,

the expectations over the Beta by the model's quadrature (``RateClass.expect``). The mean
m at each kappa is the one whose pooled accept length 1 / E_a[1 / mu] (what a server's
counters report, ``AcceptanceModel.cycle_mean_accept_length``) is the measured one.

What is not acceptance (step noise, context growth, client timing) is taken from the plain
arm of the same run and removed in squares: the target is CV_spec^2 - CV_plain^2. kappa
solves CV^2(kappa) = target by brentq within ``KAPPA_BOUNDS``; a target at or below the
sampling noise alone (kappa at the upper bound) is no spread.

The measured CV's standard error over N requests is the normal-theory
CV sqrt((1 + 2 CV^2) / (2 N)); ``kappa_range`` maps CV -+ z SE to kappa.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize

from sim.calibration.spread_fit import KAPPA_BOUNDS
from sim.model.acceptance import RateClass, Spread

__all__ = [
    "TpotSpread",
    "cv_standard_error",
    "kappa_range",
    "mean_for_pooled_accept_length",
    "median_request_accept_length",
    "tpot_cv",
    "tpot_spread",
]

#: Mean rates searched for a pooled accept length (open interval of the Beta's mean).
_MEAN_BOUNDS = (1e-6, 1.0 - 1e-9)


@dataclass(frozen=True, slots=True)
class TpotSpread:
    """A per-request Beta calibrated from a batch-1 TPOT spread.

    ``concentration`` kappa (``KAPPA_BOUNDS[1]`` when ``identified`` is False: the target
    is within the sampling noise), ``mean`` m (the flat rate whose pooled accept length
    with that spread is the measured one), the rate's sd sqrt(m (1 - m) / (kappa + 1)),
    the target CV^2 (speculative minus plain) and the sampling noise's share of it (the
    CV^2 with no spread).
    """

    concentration: float
    mean: float
    rate_sd: float
    target_cv2: float
    noise_cv2: float
    identified: bool


def _cycle_moments(a: np.ndarray, num_steps: int) -> tuple[np.ndarray, np.ndarray]:
    """mu(a) and s2(a) of the tokens a cycle emits at one rate ``a`` (n,) per position."""
    powers = a[:, None] ** np.arange(num_steps + 1)[None, :]
    mu = powers.sum(axis=1)
    second = powers @ (2.0 * np.arange(num_steps + 1) + 1.0)
    return mu, second - mu**2


def _rate_class(mean: float, kappa: float | None, num_steps: int) -> RateClass:
    spread = Spread() if kappa is None else Spread(concentration=kappa)
    return RateClass("requests", 1.0, np.full(num_steps, mean), spread)


def _moments(mean: float, kappa: float | None, num_steps: int) -> np.ndarray:
    """E_a of (1 / mu, 1 / mu^2, s2 / mu^3) over the Beta."""

    def fn(rates: np.ndarray) -> np.ndarray:
        mu, s2 = _cycle_moments(rates[:, 0], num_steps)
        return np.stack([1.0 / mu, 1.0 / mu**2, s2 / mu**3], axis=1)

    return _rate_class(mean, kappa, num_steps).expect(fn)


def mean_for_pooled_accept_length(
    pooled_accept_length: float, kappa: float | None, num_steps: int
) -> float:
    """The flat mean rate m whose requests, Beta(m kappa, (1 - m) kappa) (kappa None: one
    rate), pool to ``pooled_accept_length`` = 1 / E_a[1 / mu(a)] (brentq; the pooled accept
    length rises with m)."""
    if not 1.0 < pooled_accept_length < num_steps + 1.0:
        raise ValueError(
            f"a pooled accept length {pooled_accept_length} is outside (1, {num_steps + 1})"
        )

    def gap(m: float) -> float:
        return 1.0 / float(_moments(m, kappa, num_steps)[0]) - pooled_accept_length

    lo, hi = _MEAN_BOUNDS
    if gap(hi) < 0:
        raise ValueError(f"no mean rate pools to {pooled_accept_length} with concentration {kappa}")
    return float(optimize.brentq(gap, lo, hi, xtol=1e-12, rtol=1e-12))


def tpot_cv(
    pooled_accept_length: float, kappa: float | None, num_steps: int, inverse_tokens: float
) -> float:
    """The model's batch-1 CV of TPOT over requests at concentration ``kappa`` (None: one
    rate), the mean held at ``pooled_accept_length``; ``inverse_tokens`` = E[1 / n] over
    the answers (n their tokens after the first). Module docstring."""
    m = mean_for_pooled_accept_length(pooled_accept_length, kappa, num_steps)
    e_inv, e_inv2, e_noise = _moments(m, kappa, num_steps)
    var = max(0.0, e_inv2 - e_inv**2) + e_noise * inverse_tokens
    return math.sqrt(var) / e_inv


def tpot_spread(
    pooled_accept_length: float,
    num_steps: int,
    speculative_cv: float,
    plain_cv: float,
    inverse_tokens: float,
) -> TpotSpread:
    """The concentration kappa whose ``tpot_cv`` is sqrt(speculative_cv^2 - plain_cv^2),
    and the mean rate m that keeps ``pooled_accept_length`` with it (module docstring)."""
    if speculative_cv < 0 or plain_cv < 0 or inverse_tokens < 0:
        raise ValueError("coefficients of variation and E[1 / n] must be >= 0")
    target = speculative_cv**2 - plain_cv**2
    noise = tpot_cv(pooled_accept_length, None, num_steps, inverse_tokens) ** 2
    lo_k, hi_k = (math.log(b) for b in KAPPA_BOUNDS)

    def gap(log_kappa: float) -> float:
        cv = tpot_cv(pooled_accept_length, math.exp(log_kappa), num_steps, inverse_tokens)
        return cv**2 - target

    identified = bool(target > noise and gap(hi_k) < 0)
    if not identified:
        kappa = KAPPA_BOUNDS[1]
    elif gap(lo_k) <= 0:
        kappa = KAPPA_BOUNDS[0]
    else:  # CV^2 falls as kappa grows: one root between the bounds
        kappa = math.exp(optimize.brentq(gap, lo_k, hi_k, xtol=1e-10))
    m = mean_for_pooled_accept_length(pooled_accept_length, kappa, num_steps)
    return TpotSpread(
        kappa, m, math.sqrt(m * (1.0 - m) / (kappa + 1.0)), target, float(noise), bool(identified)
    )


def cv_standard_error(cv: float, requests: int) -> float:
    """Normal-theory standard error of a sample coefficient of variation over ``requests``:
    CV sqrt((1 + 2 CV^2) / (2 N))."""
    return cv * math.sqrt((1.0 + 2.0 * cv**2) / (2.0 * requests))


def kappa_range(
    pooled_accept_length: float,
    num_steps: int,
    speculative_cv: tuple[float, float],
    plain_cv: float,
    inverse_tokens: float,
) -> tuple[float, float]:
    """(kappa at the widest speculative CV, kappa at the narrowest): the concentrations
    the CV's range ``speculative_cv`` = (low, high) leaves; the upper end is
    ``KAPPA_BOUNDS[1]`` (no spread) when the low CV is within the sampling noise."""
    low, high = speculative_cv
    wide = tpot_spread(pooled_accept_length, num_steps, high, plain_cv, inverse_tokens)
    narrow = tpot_spread(pooled_accept_length, num_steps, max(low, 0.0), plain_cv, inverse_tokens)
    return wide.concentration, narrow.concentration


def median_request_accept_length(mean: float, kappa: float | None, num_steps: int) -> float:
    """mu(a_0.5), the tokens a cycle of the median request emits: a_0.5 the Beta's median
    rate (one rate ``mean`` when kappa is None). A batch-1 TPOT percentile calibrates the
    cycle through it (mu is increasing in a, so the median request is the median rate's)."""
    spread = _rate_class(mean, kappa, num_steps)
    a = spread.rates_from_uniform(np.array([0.5]))[0, 0]
    return float(_cycle_moments(np.array([a]), num_steps)[0][0])
