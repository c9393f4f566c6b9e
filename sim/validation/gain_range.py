"""The gains' model-error parameters as a range (sim/model/model_error.py
``GainParameterLaw``): how well the fit's Fisher law describes them, and what integrating
it into the band does to the leave-one-curve-out scores (docs/serving-intervals.md,
"The gains' parameters as a range").

- ``profile_scale``: the profile likelihood of d0 (a maximised at each d0), its 90%
  interval {d0: 2 (nll(d0) - nll_min) <= 2.706} against the normal law's d0 +- 1.645 se
  and the log-normal law's d0 exp(+-1.645 se / d0);
- ``curve_jackknife``: the jackknife standard errors over curves, sqrt((n - 1) / n
  sum (theta_-c - mean)^2), a check of the Fisher errors, which treat every figure as
  independent where figures of one curve share its errors;
- ``score_bands``: each curve scored with the parameters fitted without it, by the point
  band sigma(d; theta_hat) and by the predictive band sqrt(E[sigma_theta(d)^2]) over the
  fit's law: the leave-one-curve-out log score, coverage of the Monte Carlo interval
  joined with the band, median relative width, and how many separate a 10% gain.

``python -m sim.validation.gain_range --load FIGURES`` reads the figures
``python -m sim.validation.error_forms --save FIGURES`` wrote and prints all three.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from sim.model.model_error import (
    GAIN_BOUNDS,
    Z90,
    GainErrorFit,
    GainParameterLaw,
    Residual,
    fit_gain_error,
    jackknife_gain_error,
    leave_one_curve_out,
)
from sim.validation.error_forms import load_figures
from sim.validation.model_error_cases import separates_ten_percent

__all__ = [
    "BandScore",
    "curve_jackknife",
    "load_gains",
    "profile_scale",
    "range_lines",
    "score_bands",
]

#: chi^2 with one degree of freedom, its 90% quantile: the profile likelihood's interval.
CHI2_1_90 = 2.705543454095404


def _nll(r: np.ndarray, d: np.ndarray, v: np.ndarray, a: float, d0: float) -> float:
    var = np.maximum(v + (a * -np.expm1(-d / d0)) ** 2, 1e-12)
    return 0.5 * float(np.sum(np.log(var) + r**2 / var))


def profile_scale(
    residuals: Sequence[Residual], grid: Sequence[float]
) -> tuple[list[float], tuple[float | None, float | None]]:
    """The profile negative log likelihood of d0 at each of ``grid`` (a maximised, bounded
    as the fit's; the residuals away from a calibrated load), relative to its minimum over
    the grid, and the 90% interval where 2 x it <= ``CHI2_1_90`` (an end None where it
    reaches the grid's edge)."""
    from scipy.optimize import minimize_scalar  # lazy: only the study needs it

    use = [x for x in residuals if x.distance > 0]
    r = np.array([x.log_error for x in use])
    d = np.array([x.distance for x in use])
    v = np.array([x.variance for x in use])
    prof = [float(minimize_scalar(lambda a, d0=d0: _nll(r, d, v, a, d0), bounds=GAIN_BOUNDS[0],
                                  method="bounded", options={"xatol": 1e-8}).fun)
            for d0 in grid]  # fmt: skip
    low = min(prof)
    rel = [p - low for p in prof]
    inside = [i for i, p in enumerate(rel) if 2.0 * p <= CHI2_1_90]
    lo = None if inside[0] == 0 else float(grid[inside[0]])
    hi = None if inside[-1] == len(grid) - 1 else float(grid[inside[-1]])
    return rel, (lo, hi)


def curve_jackknife(residuals: Sequence[Residual]) -> tuple[float, float, float]:
    """The jackknife over curves of (a, d0): their standard errors and correlation
    (``jackknife_gain_error`` over the leave-one-curve-out fits)."""
    loo = leave_one_curve_out(residuals, fit_gain_error).values()
    j = jackknife_gain_error(fit_gain_error(residuals), loo)
    return j.ceiling_stderr, j.scale_stderr, j.correlation


@dataclass(frozen=True, slots=True)
class BandScore:
    """A band scored leave one curve out: log score (nats, higher is better), figures
    inside the joined 90% interval, their count, median relative width and how many
    separate a 10% gain."""

    name: str
    log_score: float
    inside: int
    figures: int
    median_width: float
    separate: int


def _score(
    name: str, residuals: Sequence[Residual], laws: dict[str, GainParameterLaw],
    band: Callable[[GainParameterLaw, float], float],
) -> BandScore:  # fmt: skip
    score, inside, widths = 0.0, 0, []
    for x in residuals:
        sigma = band(laws[x.group], x.distance) if x.distance > 0 else 0.0
        if x.distance > 0:
            var = max(x.variance + sigma**2, 1e-12)
            score -= 0.5 * (math.log(2 * math.pi * var) + x.log_error**2 / var)
        half = Z90 * max(math.sqrt(x.variance), sigma)
        inside += abs(x.log_error) <= half
        widths.append(2.0 * math.sinh(half))
    sep = sum(separates_ten_percent(w) for w in widths)
    return BandScore(name, score, inside, len(residuals), float(np.median(widths)), sep)


def score_bands(residuals: Sequence[Residual]) -> tuple[BandScore, BandScore]:
    """The point band and the predictive band, each curve's law fitted without it (the
    curve's Fisher law, ``GainErrorFit.law``): (point, predictive)."""
    loo: dict[str, GainErrorFit] = dict(leave_one_curve_out(residuals, fit_gain_error))
    laws = {c: f.law() for c, f in loo.items()}
    return (
        _score("point sigma(d; theta_hat)", residuals, laws, GainParameterLaw.sigma),
        _score("predictive sqrt(E[sigma^2])", residuals, laws, GainParameterLaw.predictive_sigma),
    )


def range_lines(residuals: Sequence[Residual], scores: bool = True) -> list[str]:
    """The study's text: the fit with its Fisher law, the profile interval of d0 against
    the normal and log-normal laws', the curve jackknife, the band's range at 2x-64x the
    calibrated load, and (``scores``) the two bands' leave-one-curve-out scores."""
    fit = fit_gain_error(residuals)
    law = fit.law()
    grid = list(np.exp(np.linspace(math.log(0.2), math.log(20.0), 801)))
    _, (lo, hi) = profile_scale(residuals, grid)
    se_a, se_d0, rho_j = curve_jackknife(residuals)
    m = Z90 * fit.scale_stderr
    out = [
        f"fit: a {fit.ceiling:.4f} +- {fit.ceiling_stderr:.4f}, d0 {fit.scale:.3f} +- "
        f"{fit.scale_stderr:.3f}, correlation {fit.correlation:.3f} (Fisher; {fit.figures} "
        f"figures, {fit.groups} curves)",
        f"d0 90%: profile likelihood [{lo if lo is None else f'{lo:.3f}'}, "
        f"{hi if hi is None else f'{hi:.3f}'}]; normal [{fit.scale - m:.3f}, "
        f"{fit.scale + m:.3f}]; log-normal [{fit.scale * math.exp(-m / fit.scale):.3f}, "
        f"{fit.scale * math.exp(m / fit.scale):.3f}]",
        f"curve jackknife: a +- {se_a:.4f}, d0 +- {se_d0:.3f}, correlation {rho_j:.3f}",
        "",
        "| load factor | d | point sigma | 90% range of sigma | predictive sigma |",
        "|---|---:|---:|---|---:|",
    ]
    for factor in (2, 4, 8, 16, 64):
        d = math.log(factor)
        r_lo, r_hi = law.sigma_range(d)
        out.append(f"| {factor}x | {d:.2f} | {law.sigma(d):.4f} | [{r_lo:.4f}, {r_hi:.4f}] | "
                   f"{law.predictive_sigma(d):.4f} |")  # fmt: skip
    if not scores:
        return out
    out += ["", "| band (leave one curve out) | log score | inside | median width | separate 10% |",
            "|---|---:|---:|---:|---:|"]  # fmt: skip
    for sc in score_bands(residuals):
        share = f"{sc.inside} of {sc.figures} ({sc.inside / sc.figures:.0%})"
        out.append(f"| {sc.name} | {sc.log_score:.2f} | {share} | {sc.median_width:.3f} | "
                   f"{sc.separate} |")  # fmt: skip
    return out


def load_gains(path: str) -> list[Residual]:
    """The gains of the figures ``python -m sim.validation.error_forms --save`` wrote, as
    the report fits them (each at the speculative arm's distance)."""
    return [Residual(f.curve, f.distance, f.log_error, f.variance)
            for f in load_figures(path) if f.gain]  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--load", required=True, help="figures error_forms --save wrote")
    parser.add_argument("--fit-only", action="store_true",
                        help="the fit, profile and jackknife only (no scores)")  # fmt: skip
    args = parser.parse_args(argv)
    print("\n".join(range_lines(load_gains(args.load), scores=not args.fit_only)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
