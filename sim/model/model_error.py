"""The serving model's own error under load: how far a prediction strays from the
measurement as the load moves away from the loads the scenario was calibrated on.

A scenario calibrated at a load reproduces its figures there; away from it the costs that
grow with the batch are the model's (per-iteration host work, the kernels' growth, the
expert union, the verify over B(k + 1) tokens). The log error of a prediction is modelled
as a normal whose standard deviation sigma(d) grows with d = min_c |ln(load / load_c)|,
the log distance to the nearest calibrated load (users of a closed loop, requests per
second of an open one, a decode batch):

    ln(measured / predicted) ~ N(0, v + sigma(d)^2),

v the variance the prediction already carries from elsewhere (its Monte Carlo, or the
drawn inputs). The form of sigma was selected on the public concurrency curves by a rule
fixed before scoring (docs/serving-intervals.md, "The form of the error": leave-one-curve-
out predictive log score, a form replaces s d only if it leads by >= 2 nats, also with any
one curve left out; sim/validation/error_forms.py):

- levels (a policy's tok/s, TPOT, latency): sigma(d) = s sqrt(d) (``level_sigma``;
  +24.42 nats over s d, +14.12 with any one curve left out);
- gains (the paired ratio of speculative and plain decoding on the same server):
  sigma(d) = a (1 - exp(-d / d0)) (``gain_sigma``; +9.02, +5.87), which levels off at the
  ceiling a far from the calibrated loads.

Their parameters are estimated by maximum likelihood (``fit_level_error``,
``fit_gain_error``); ``leave_one_curve_out`` gives each curve the term estimated from the
other curves only, so no figure scores its own error term. What moves both policies alike
cancels in a gain, which is what crossover and best-k decide on.

An interval is joined with the term's (``widen``): each end the farther of the drawn
inputs' and the model error's. The term is fitted on the nominal predictions' whole
error, which already holds what wrong inputs moved on the curves it was fitted on.

The gains' parameters carry their fit's uncertainty as a law (``GainParameterLaw``: (ln a,
ln d0) normal, the covariance of the jackknife over curves, ``jackknife_gain_error``): the
range of sigma(d) an answer states, and the predictive band sqrt(E[sigma^2]) a
pre-registered rule scored and did not keep (docs/serving-intervals.md, "The gains'
parameters as a range"; sim/validation/gain_range.py).

The linear form s d the rule rejected is in sim/validation/linear_error.py, for the evidence
that compares with it (sim/validation/interval_width.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

__all__ = [
    "DEFAULT_CURVES",
    "DEFAULT_GAIN_CEILING",
    "DEFAULT_GAIN_CEILING_STDERR",
    "DEFAULT_GAIN_CORRELATION",
    "DEFAULT_GAIN_LAW",
    "DEFAULT_GAIN_SCALE",
    "DEFAULT_GAIN_SCALE_STDERR",
    "DEFAULT_LEVEL",
    "GAIN_BOUNDS",
    "GAIN_QUADRATURE_NODES",
    "GAIN_STARTS",
    "S_MAX",
    "Z90",
    "GainErrorFit",
    "GainParameterLaw",
    "LevelErrorFit",
    "Residual",
    "fit_gain_error",
    "fit_level_error",
    "gain_sigma",
    "jackknife_gain_error",
    "leave_one_curve_out",
    "level_sigma",
    "load_distance",
    "widen",
]

#: The standard normal's 95% quantile: a central 90% interval is +- Z90 standard deviations.
Z90 = 1.6448536269514722

F = TypeVar("F")

#: Largest s searched (a log error of 5 per unit log load: a factor 150 at e times the load).
S_MAX = 5.0


@dataclass(frozen=True, slots=True)
class Residual:
    """One scored figure: its curve (``group``), the log distance of its load to the
    nearest calibrated load (``distance`` >= 0), ln(measured / predicted)
    (``log_error``) and the variance of that log error from other sources (``variance``:
    the prediction's Monte Carlo or drawn inputs; 0 when none)."""

    group: str
    distance: float
    log_error: float
    variance: float = 0.0

    def __post_init__(self) -> None:
        if not (self.distance >= 0.0 and self.variance >= 0.0 and math.isfinite(self.log_error)):
            raise ValueError(f"residual {self}: distance and variance >= 0, a finite log error")


def load_distance(load: float, calibrated: Iterable[float]) -> float:
    """min over the calibrated loads c of |ln(load / c)| (0 at a calibrated load)."""
    cs = [float(c) for c in calibrated]
    if load <= 0 or not cs or min(cs) <= 0:
        raise ValueError(f"loads must be > 0 (load {load}, calibrated {cs})")
    return min(abs(math.log(load / c)) for c in cs)


def level_sigma(level: float, distance: float) -> float:
    """The levels' standard deviation of the log error at log distance ``distance``:
    s sqrt(d), ``level`` = s per unit sqrt(ln load) (the form the pre-registered rule
    selected for levels)."""
    return level * math.sqrt(distance)


def gain_sigma(ceiling: float, scale: float, distance: float) -> float:
    """The gains' standard deviation of the log error at log distance ``distance``:
    a (1 - exp(-d / d0)), ``ceiling`` = a (its limit far from a calibrated load), ``scale``
    = d0 > 0 in ln load (the form the pre-registered rule selected for gains)."""
    return ceiling * -math.expm1(-distance / scale)


@dataclass(frozen=True, slots=True)
class LevelErrorFit:
    """The fitted s of the levels' s sqrt(d) (``level``), its standard error (Fisher
    information; NaN when the fit is at 0), and what it was fitted on."""

    level: float
    stderr: float
    figures: int
    groups: int

    def sigma(self, distance: float) -> float:
        """``level_sigma`` at this fit."""
        return level_sigma(self.level, distance)


@dataclass(frozen=True, slots=True)
class GainErrorFit:
    """The fitted a (``ceiling``) and d0 (``scale``) of the gains' a (1 - exp(-d / d0)),
    their standard errors and correlation (the inverse Fisher information's; NaN where it
    is singular), and what they were fitted on."""

    ceiling: float
    scale: float
    ceiling_stderr: float
    scale_stderr: float
    figures: int
    groups: int
    correlation: float = float("nan")

    def sigma(self, distance: float) -> float:
        """``gain_sigma`` at this fit."""
        return gain_sigma(self.ceiling, self.scale, distance)

    def law(self) -> GainParameterLaw:
        """The fit's asymptotic normal law of (ln a, ln d0) (``GainParameterLaw.of``);
        a singular information gives the point (zero covariance)."""
        errs = (self.ceiling_stderr, self.scale_stderr, self.correlation)
        if not all(math.isfinite(x) for x in errs):
            return GainParameterLaw(self.ceiling, self.scale, 0.0, 0.0, 0.0)
        return GainParameterLaw.of(self.ceiling, self.scale, *errs)


#: Nodes per parameter of the product Gauss-Hermite rule ``GainParameterLaw`` integrates
#: over: fixed, so a predictive band is deterministic (no draws at answer time).
GAIN_QUADRATURE_NODES = 16


@dataclass(frozen=True, slots=True)
class GainParameterLaw:
    """The gains' parameters with their uncertainty: (ln a, ln d0) bivariate normal
    around (ln ``ceiling``, ln ``scale``) with standard deviations ``log_ceiling_sd``,
    ``log_scale_sd`` and correlation ``correlation`` (the fit's asymptotic normal law,
    carried in logs: a and d0 are positive and d0's likelihood is skewed to the right,
    docs/serving-intervals.md "The gains' parameters as a range"). Zero standard
    deviations: the point fit."""

    ceiling: float
    scale: float
    log_ceiling_sd: float
    log_scale_sd: float
    correlation: float

    def __post_init__(self) -> None:
        if not (self.ceiling >= 0 and self.scale > 0 and self.log_ceiling_sd >= 0
                and self.log_scale_sd >= 0 and -1.0 <= self.correlation <= 1.0):  # fmt: skip
            raise ValueError(f"{self}: a >= 0, d0 > 0, sds >= 0, correlation in [-1, 1]")

    @staticmethod
    def of(
        ceiling: float, scale: float, ceiling_stderr: float, scale_stderr: float,
        correlation: float,
    ) -> GainParameterLaw:  # fmt: skip
        """From the standard errors of a and d0 and their correlation (the Fisher
        information's, or the jackknife's over curves): by the delta method sd(ln a) =
        se(a) / a, sd(ln d0) = se(d0) / d0, the correlation kept."""
        return GainParameterLaw(ceiling, scale, ceiling_stderr / ceiling if ceiling > 0 else 0.0,
                                scale_stderr / scale, correlation)  # fmt: skip

    def sigma(self, distance: float) -> float:
        """The point fit's ``gain_sigma``."""
        return gain_sigma(self.ceiling, self.scale, distance)

    def _log_sigma_sd(self, distance: float) -> float:
        """sd of ln sigma(d) by the delta method: ln sigma = ln a + ln(1 - exp(-d / d0)),
        d ln sigma / d ln a = 1, d ln sigma / d ln d0 = -(d / d0) exp(-d / d0) /
        (1 - exp(-d / d0)) (0 at d = 0, where sigma is 0 whatever the parameters)."""
        if distance <= 0:
            return 0.0
        x = distance / self.scale
        g = -x * math.exp(-x) / -math.expm1(-x)
        var = (self.log_ceiling_sd**2 + g**2 * self.log_scale_sd**2
               + 2.0 * g * self.correlation * self.log_ceiling_sd * self.log_scale_sd)  # fmt: skip
        return math.sqrt(max(var, 0.0))

    def sigma_range(self, distance: float, z: float = Z90) -> tuple[float, float]:
        """The central 90% range of sigma(d) over the parameters' law (``z`` = Z90),
        sigma(d) exp(-+ z sd(ln sigma(d))), sd by the delta method (``_log_sigma_sd``):
        the band at the range's two ends (what an answer's JSON states)."""
        point = self.sigma(distance)
        m = z * self._log_sigma_sd(distance)
        return (point * math.exp(-m), point * math.exp(m))

    def predictive_sigma(self, distance: float) -> float:
        """sqrt(E[sigma_theta(d)^2]) over the law: the standard deviation of a normal
        whose variance is mixed over the parameters (the predictive law's variance, given
        theta's). A product Gauss-Hermite rule of ``GAIN_QUADRATURE_NODES`` nodes per
        parameter on (ln a, ln d0) (Cholesky of the covariance). The point sigma when both
        sds are 0; above it when a and d0 are uncorrelated; with the shipped correlation
        (+0.71) below it from about 3x to 64x the calibrated load. Scored, not used by the
        answers (docs/serving-intervals.md: it failed its keep rule)."""
        if self.log_ceiling_sd == 0 and self.log_scale_sd == 0:
            return self.sigma(distance)
        x, w = np.polynomial.hermite_e.hermegauss(GAIN_QUADRATURE_NODES)
        w = w / w.sum()
        u, v = np.meshgrid(x, x, indexing="ij")  # (n, n) standard normal nodes
        wt = np.outer(w, w)
        rho = self.correlation
        ln_a = math.log(self.ceiling) + self.log_ceiling_sd * u if self.ceiling > 0 else None
        ln_d0 = math.log(self.scale) + self.log_scale_sd * (
            rho * u + math.sqrt(max(1.0 - rho**2, 0.0)) * v)  # fmt: skip
        if ln_a is None:
            return 0.0
        sig = np.exp(ln_a) * -np.expm1(-distance / np.exp(ln_d0))
        return float(np.sqrt(np.sum(wt * sig**2)))


def _away(residuals: Sequence[Residual]) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(r, d, v) of the residuals away from a calibrated load (d > 0; those at d = 0 say
    nothing of the term) and how many groups they span."""
    use = [x for x in residuals if x.distance > 0]
    if not use:
        raise ValueError(
            "no residual away from a calibrated load: the model error is not identified"
        )
    return (
        np.array([x.log_error for x in use]),
        np.array([x.distance for x in use]),
        np.array([x.variance for x in use]),
        len({x.group for x in use}),
    )


def fit_level_error(residuals: Sequence[Residual]) -> LevelErrorFit:
    """Maximum-likelihood s of ln(measured / predicted) ~ N(0, v + s^2 d) over the
    residuals away from a calibrated load. Without a known variance it is closed:
    s^2 = mean(r^2 / d), standard error s / sqrt(2 n); with one, a bounded one-dimensional
    search and the standard error 1 / sqrt(I(s)), I(s) = 2 sum s^2 d^2 / (v + s^2 d)^2."""
    r, d, v, groups = _away(residuals)
    if not np.any(v > 0):
        s = float(np.sqrt(np.mean(r**2 / d)))
    else:
        from scipy.optimize import minimize_scalar  # lazy: only fits need it

        def nll(x: float) -> float:
            var = v + x**2 * d
            return 0.5 * float(np.sum(np.log(var) + r**2 / var))

        s = float(minimize_scalar(nll, bounds=(0.0, S_MAX), method="bounded",
                                  options={"xatol": 1e-7}).x)  # fmt: skip
    var = v + s**2 * d
    info = 2.0 * float(np.sum(s**2 * d**2 / var**2))
    stderr = 1.0 / math.sqrt(info) if info > 0 else float("nan")
    return LevelErrorFit(s, stderr, r.size, groups)


#: The gains' search: starting points (a, d0) and bounds (also those the form was scored
#: with, sim/validation/error_forms.py).
GAIN_STARTS = ((0.2, 2.0), (0.1, 0.5), (0.5, 10.0), (1.0, 30.0))
GAIN_BOUNDS = ((1e-6, S_MAX), (0.01, 200.0))


def fit_gain_error(residuals: Sequence[Residual]) -> GainErrorFit:
    """Maximum-likelihood (a, d0) of ln(measured / predicted) ~ N(0, v + g^2),
    g = a (1 - exp(-d / d0)), over the residuals away from a calibrated load (bounded
    L-BFGS-B from each of ``GAIN_STARTS``, the best kept). Standard errors from the Fisher
    information I_jk = 1/2 sum (dV/dj)(dV/dk) / V^2, V = v + g^2, dV/dj = 2 g dg/dj,
    dg/da = 1 - exp(-d / d0), dg/dd0 = -a exp(-d / d0) d / d0^2; the correlation of a and
    d0 from the same inverse."""
    from scipy.optimize import minimize  # lazy: only fits need it

    r, d, v, groups = _away(residuals)

    def nll(t: np.ndarray) -> float:
        var = np.maximum(v + (t[0] * -np.expm1(-d / t[1])) ** 2, 1e-12)
        return 0.5 * float(np.sum(np.log(var) + r**2 / var))

    best = min((minimize(nll, np.array(x0), method="L-BFGS-B", bounds=GAIN_BOUNDS)
                for x0 in GAIN_STARTS), key=lambda res: float(res.fun))  # fmt: skip
    a, d0 = (float(x) for x in best.x)
    e = np.exp(-d / d0)
    g = a * (1.0 - e)
    var = np.maximum(v + g**2, 1e-12)
    grads = np.stack([2 * g * (1.0 - e), 2 * g * (-a * e * d / d0**2)])  # (2, n)
    info = 0.5 * (grads / var) @ (grads / var).T  # (2, 2)
    try:
        cov = np.linalg.inv(info)
        se = [math.sqrt(x) if x > 0 else float("nan") for x in np.diag(cov)]
        rho = float(cov[0, 1]) / (se[0] * se[1])
    except np.linalg.LinAlgError:
        se, rho = [float("nan"), float("nan")], float("nan")
    return GainErrorFit(a, d0, se[0], se[1], r.size, groups, rho)


def leave_one_curve_out(
    residuals: Sequence[Residual], fit: Callable[[Sequence[Residual]], F]
) -> Mapping[str, F]:
    """For each group (curve), ``fit`` (``fit_level_error``, ``fit_gain_error``) on the
    other groups' residuals only."""
    groups = list(dict.fromkeys(x.group for x in residuals))
    return {g: fit([x for x in residuals if x.group != g]) for g in groups}


def jackknife_gain_error(fit: GainErrorFit, held_out: Iterable[GainErrorFit]) -> GainErrorFit:
    """``fit`` with the standard errors and correlation of the jackknife over groups in
    place of the Fisher ones: cov = (n - 1) / n sum_c (theta_-c - mean)(theta_-c - mean)^T
    over the fits ``held_out`` each leaving one group (curve) out (``leave_one_curve_out``),
    theta = (a, d0). The curves, not the figures, are then the independent units
    (docs/studies/gain-clustered-errors.md)."""
    t = np.array([[f.ceiling, f.scale] for f in held_out])  # (n, 2)
    n = t.shape[0]
    if n < 2:
        raise ValueError(f"the jackknife needs >= 2 groups (got {n})")
    dev = t - t.mean(axis=0)
    cov = (n - 1) / n * dev.T @ dev  # (2, 2)
    se = np.sqrt(np.diag(cov))
    rho = float(cov[0, 1] / (se[0] * se[1])) if se[0] > 0 and se[1] > 0 else float("nan")
    return GainErrorFit(fit.ceiling, fit.scale, float(se[0]), float(se[1]), fit.figures,
                        fit.groups, rho)  # fmt: skip


def widen(
    nominal: float, interval: Sequence[float] | None, sigma: float, z: float = Z90
) -> tuple[float, float]:
    """A positive answer's 90% interval joined with the model error's: [nominal
    exp(-z sigma), nominal exp(z sigma)] and ``interval`` (None: the term alone), each end
    the farther of the two. The term is fitted on the nominal predictions' whole error, so
    it already holds what the inputs moved on the curves it was fitted on: adding the two
    in quadrature would count that twice (on the public curves, leave one curve out, with
    the linear form s d, it covered 96% of the levels and 90% of the gains at widths 0.70
    and 0.60 against 0.62 and 0.53 joined; docs/serving-intervals.md)."""
    if nominal <= 0:
        raise ValueError(f"widen needs a positive answer (got {nominal})")
    lo, hi = (nominal, nominal) if interval is None else (float(interval[0]), float(interval[1]))
    m = z * sigma
    return (min(lo, nominal * math.exp(-m)), max(hi, nominal * math.exp(m)))


#: Shipped default of s in sigma(d) = s sqrt(d) for a policy's level (tok/s, TPOT,
#: end-to-end latency), per unit sqrt(ln load): the maximum-likelihood fit
#: (``fit_level_error``) on all the public concurrency curves' levels of
#: sim/validation/model_error_cases.py (Kimi-K2.5 on 8x RTX PRO 6000, vLLM #22752's chain,
#: llm-d's Qwen3-32B TPOT, the AngelSlim #163 and SpecForge #339 MoE curves, DeepSeek-V3 +
#: MTP on 8x MI300X, the Qwen3.8-27B, Qwen3.6-27B, GLM-4.7-Flash, Kimi-K2.5 and MiniMax-M2.5
#: curves on B200, H100 NVL, H100 PCIe, MI355X and GB10, the H100 SXM tree and Qwen3.5-9B
#: curves), each figure's distance counted from the loads that calibrate its own arm and
#: its Monte Carlo variance the known part: 152 figures, 20 curves, 0.073 +- 0.004;
#: docs/validation.md "Model error under load" reports the fit and whether this value
#: still agrees. A factor exp(1.645 x 0.073
#: sqrt(ln 8)) = 1.19 at 8x the calibrated load.
DEFAULT_LEVEL = 0.073
#: Shipped defaults of the gains' sigma(d) = a (1 - exp(-d / d0)): the ceiling a and the
#: scale d0 (in ln load), the maximum-likelihood fit (``fit_gain_error``) on all the same
#: report's paired gains (the EAGLE-3 paper's SGLang and vLLM tables, the published
#: speed-ups and tree / chain ratios, and each curve's speculative over plain levels at one
#: load), each at its distance from the loads that calibrate the speculative arm: 98
#: figures, 19 curves, a 0.130 +- 0.024, d0 1.20 +- 0.56 (standard errors of the jackknife
#: over curves; Fisher's 0.020 and 0.44).
DEFAULT_GAIN_CEILING = 0.130
#: See ``DEFAULT_GAIN_CEILING``.
DEFAULT_GAIN_SCALE = 1.20
#: The same fit's standard errors of a and d0 and their correlation, clustered by curve:
#: the jackknife over the 19 curves (``jackknife_gain_error``), not the Fisher information
#: (a 0.020, d0 0.44, correlation 0.88), which counts the 98 figures as independent; a
#: parametric bootstrap of the Fisher model rejected independent curves (p = 0.035, the
#: rule pre-registered in docs/studies/gain-clustered-errors.md). A larger ceiling goes with
#: a larger scale: the slope a / d0 near a calibrated load is what the figures pin best.
#: docs/validation.md reports both beside the fit and checks these against the jackknife's.
DEFAULT_GAIN_CEILING_STDERR = 0.024
#: See ``DEFAULT_GAIN_CEILING_STDERR``.
DEFAULT_GAIN_SCALE_STDERR = 0.56
#: See ``DEFAULT_GAIN_CEILING_STDERR``.
DEFAULT_GAIN_CORRELATION = 0.72
#: The shipped gains' parameters as a law (``GainParameterLaw.of`` the values above):
#: the range every answer's gains' term states.
DEFAULT_GAIN_LAW = GainParameterLaw.of(
    DEFAULT_GAIN_CEILING, DEFAULT_GAIN_SCALE, DEFAULT_GAIN_CEILING_STDERR,
    DEFAULT_GAIN_SCALE_STDERR, DEFAULT_GAIN_CORRELATION,
)  # fmt: skip
#: Public curves the defaults were fitted on (levels and gains together).
DEFAULT_CURVES = 24
