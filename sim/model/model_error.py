"""The serving model's own error under load: how far a prediction strays from the
measurement as the load moves away from the loads the scenario was calibrated on.

A scenario calibrated at a load reproduces its figures there; away from it the costs that
grow with the batch are the model's (per-iteration host work, the kernels' growth, the
expert union, the verify over B(k + 1) tokens). A cost that really grows as B^(1 + e),
where the model has it grow as B, is wrong by the factor (B / B_c)^e at B: its log error
is e ln(B / B_c), linear in the log distance to the calibrated load. Across servers e is
a random effect, so the log error of a prediction is modelled as a normal of standard
deviation growing in proportion to that distance (one parameter, ``sigma_per_log_load``):

    ln(measured / predicted) ~ N(0, v + (s d)^2),   d = min_c |ln(load / load_c)|,

where ``load_c`` are the calibrated loads (users of a closed loop, requests per second of
an open one, a decode batch), v is the variance the prediction already carries from
elsewhere (its Monte Carlo, or the drawn inputs) and s is estimated by maximum likelihood
from public concurrency curves (``fit_model_error``). Levels (a policy's tok/s or TPOT)
and gains (the paired ratio of speculative and plain decoding on the same server) are
fitted apart: what moves both policies alike cancels in a gain, which is what crossover and
best-k decide on. ``leave_one_group_out`` gives each curve the term estimated from the
other curves only, so no figure scores its own error term.

An interval is joined with the term's (``widen``): each end the farther of the drawn
inputs' and the model error's. The term is fitted on the nominal predictions' whole
error, which already holds what wrong inputs moved on the curves it was fitted on.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "DEFAULT_CURVES",
    "DEFAULT_GAIN_SIGMA",
    "DEFAULT_LEVEL_SIGMA",
    "Z90",
    "ModelErrorFit",
    "Residual",
    "fit_model_error",
    "leave_one_group_out",
    "load_distance",
    "model_error_sigma",
    "widen",
]

#: The standard normal's 95% quantile: a central 90% interval is +- Z90 standard deviations.
Z90 = 1.6448536269514722

#: Largest s searched (a log error of 5 per unit log load: a factor 150 at e times the load).
_S_MAX = 5.0


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


@dataclass(frozen=True, slots=True)
class ModelErrorFit:
    """The fitted standard deviation of the log error per unit log distance, its standard
    error (from the Fisher information; NaN when the fit is at 0), and what it was fitted
    on: ``figures`` away from a calibrated load, over ``groups`` curves."""

    sigma_per_log_load: float
    stderr: float
    figures: int
    groups: int


def load_distance(load: float, calibrated: Iterable[float]) -> float:
    """min over the calibrated loads c of |ln(load / c)| (0 at a calibrated load)."""
    cs = [float(c) for c in calibrated]
    if load <= 0 or not cs or min(cs) <= 0:
        raise ValueError(f"loads must be > 0 (load {load}, calibrated {cs})")
    return min(abs(math.log(load / c)) for c in cs)


def model_error_sigma(sigma_per_log_load: float, distance: float) -> float:
    """The standard deviation of the log error at a log distance ``distance``: s d."""
    return sigma_per_log_load * distance


def _neg_log_lik(s: float, r: np.ndarray, d: np.ndarray, v: np.ndarray) -> float:
    var = v + (s * d) ** 2
    return 0.5 * float(np.sum(np.log(var) + r**2 / var))


def fit_model_error(residuals: Sequence[Residual]) -> ModelErrorFit:
    """Maximum-likelihood s of ln(measured / predicted) ~ N(0, v + (s d)^2) over the
    residuals away from a calibrated load (d > 0; those at d = 0 say nothing of s).
    Without a known variance the estimate is closed: s^2 = mean((r / d)^2), standard error
    s / sqrt(2 n); with one it is a bounded one-dimensional search, and the standard error
    1 / sqrt(I(s)), I(s) = 2 sum s^2 d^4 / (v + s^2 d^2)^2."""
    use = [x for x in residuals if x.distance > 0]
    groups = len({x.group for x in use})
    if not use:
        raise ValueError(
            "no residual away from a calibrated load: the model error is not identified"
        )
    r = np.array([x.log_error for x in use])
    d = np.array([x.distance for x in use])
    v = np.array([x.variance for x in use])
    if not np.any(v > 0):
        s = float(np.sqrt(np.mean((r / d) ** 2)))
    else:
        from scipy.optimize import minimize_scalar  # lazy: only fits need it

        res = minimize_scalar(
            _neg_log_lik, bounds=(0.0, _S_MAX), args=(r, d, v), method="bounded",
            options={"xatol": 1e-6},
        )  # fmt: skip
        s = float(res.x)
    var = v + (s * d) ** 2
    info = 2.0 * float(np.sum((s**2) * d**4 / var**2))
    stderr = 1.0 / math.sqrt(info) if info > 0 else float("nan")
    return ModelErrorFit(s, stderr, len(use), groups)


def leave_one_group_out(residuals: Sequence[Residual]) -> Mapping[str, ModelErrorFit]:
    """For each group (curve), the fit on the other groups' residuals only."""
    groups = list(dict.fromkeys(x.group for x in residuals))
    return {g: fit_model_error([x for x in residuals if x.group != g]) for g in groups}


def widen(
    nominal: float, interval: Sequence[float] | None, sigma: float, z: float = Z90
) -> tuple[float, float]:
    """A positive answer's 90% interval joined with the model error's: [nominal
    exp(-z sigma), nominal exp(z sigma)] and ``interval`` (None: the term alone), each end
    the farther of the two. The term is fitted on the nominal predictions' whole error, so
    it already holds what the inputs moved on the curves it was fitted on: adding the two
    in quadrature would count that twice (on the public curves, leave one curve out, it
    covered 96% of the levels and 90% of the gains at widths 0.70 and 0.60 against 0.62
    and 0.53 joined; docs/serving-intervals.md)."""
    if nominal <= 0:
        raise ValueError(f"widen needs a positive answer (got {nominal})")
    lo, hi = (nominal, nominal) if interval is None else (float(interval[0]), float(interval[1]))
    m = z * sigma
    return (min(lo, nominal * math.exp(-m)), max(hi, nominal * math.exp(m)))


#: Shipped default of s for a policy's level (tok/s, TPOT, end-to-end latency), per unit
#: ln(load): the maximum-likelihood fit on the public concurrency curves' levels (Kimi-K2.5
#: on 8x RTX PRO 6000, vLLM #22752's chain, llm-d's Qwen3-32B TPOT, the AngelSlim #163 and
#: SpecForge #339 MoE curves, DeepSeek-V3 + MTP on 8x MI300X, Qwen3.8-27B + MTP and + DSpark
#: on one B200 on two workloads each, its recurrent and conv state priced and held in vLLM's
#: block layout, Qwen3.8-27B + MTP and + DFlash 2 on one H100 NVL, GLM-4.7-Flash + MTP and
#: + EAGLE-3 on one H100 PCIe, Qwen3.6-27B + MTP on one H100 NVL, Kimi-K2.5 and MiniMax-M2.5
#: + EAGLE-3 on 4x MI355X, Qwen3.8-27B (NVFP4) + MTP on one GB10, Qwen3-8B-FP8 + an EAGLE-3
#: tree and chain on one H100 SXM (SGLang), Qwen3.5-9B + MTP on one H100 SXM (vLLM), the
#: hybrids' state at their servers' measured efficiency and the figures' Monte Carlo errors
#: from their t intervals: 152 figures away from a calibrated load, 20 curves; 0.060 +-
#: 0.003; each
#: figure's distance counted from the loads that calibrate its own arm;
#: sim/validation/model_error_cases.py, docs/validation.md reports the fit and whether this
#: value still agrees). A factor exp(1.645 x 0.060 ln 8) = 1.23 at 8x the calibrated load.
DEFAULT_LEVEL_SIGMA = 0.060
#: Shipped default of s for a paired gain (speculative over plain decoding, tree over
#: chain): the fit on the curves' published speed-ups and ratios (the EAGLE-3 paper's
#: SGLang and vLLM tables, Kimi-K2.5, vLLM #22752's tree / chain, llm-d, AngelSlim #163,
#: DeepSeek-V3 + MTP on MI300X, Qwen3.8-27B + MTP and + DSpark on B200 on two workloads,
#: Qwen3.8-27B + MTP on one H100 NVL, GLM-4.7-Flash + MTP on one H100 PCIe, Qwen3.6-27B + MTP
#: on one H100 NVL, Kimi-K2.5 and MiniMax-M2.5 + EAGLE-3 on 4x MI355X, Qwen3.8-27B (NVFP4)
#: + MTP on one GB10, the H100 SXM tree / chain ratios, Qwen3.5-9B + MTP on one H100 SXM:
#: 98 figures, 19 curves; 0.054 +- 0.004), each at its distance from the
#: loads that calibrate both arms (a plain-decoding point does not calibrate the speculative
#: arm). What moves both policies
#: alike cancels in a gain, so it is below the levels' term.
DEFAULT_GAIN_SIGMA = 0.054
#: Public curves the defaults were fitted on (levels and gains together).
DEFAULT_CURVES = 24
