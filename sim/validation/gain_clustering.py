"""Are the public curves independent draws of the gains' Fisher model? The pre-registered
test that decides which standard errors the gains' parameter law states
(docs/studies/gain-clustered-errors.md).

- ``variance_ratio``: T = tr(Sigma_F^-1 Sigma_J) / 2, Sigma_F the inverse Fisher
  information of (a, d0) at the fit, Sigma_J the jackknife covariance over curves
  (``jackknife_gain_error``): the mean variance ratio along the Fisher law's own axes, 1
  where the two agree;
- ``sandwich``: the cluster-robust (CR0) covariance I^-1 (sum_c U_c U_c^T) I^-1, U_c a
  curve's summed score of the negative log likelihood, I the Fisher information;
- ``bootstrap_null``: B data sets drawn from the Fisher model at the fit (each figure's log
  error N(0, v + sigma(d; a, d0)^2), the same curves, distances and variances), each
  re-fitted: its T, its ratios se_J / se_F, and whether each law's 90% range of ln a and
  ln d0 holds the parameters drawn from.

Run as ``python -m sim.validation.gain_clustering --load FIGURES`` on the figures of
``python -m sim.validation.error_forms --save FIGURES``; it prints the test.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace

import numpy as np

from sim.model.model_error import (
    Z90,
    GainErrorFit,
    Residual,
    fit_gain_error,
    jackknife_gain_error,
    leave_one_curve_out,
)
from sim.validation.gain_range import load_gains

__all__ = ["NullDraw", "bootstrap_null", "covariance", "sandwich", "variance_ratio"]

#: The pre-registered test's data sets and seed.
DRAWS = 400
SEED = 30


def covariance(fit: GainErrorFit) -> np.ndarray:
    """The (2, 2) covariance of (a, d0) that ``fit``'s standard errors and correlation state."""
    sa, sd, rho = fit.ceiling_stderr, fit.scale_stderr, fit.correlation
    return np.array([[sa**2, rho * sa * sd], [rho * sa * sd, sd**2]])


def _clustered(residuals: Sequence[Residual]) -> tuple[GainErrorFit, GainErrorFit]:
    """The fit with its Fisher errors, and with the jackknife's over curves."""
    fit = fit_gain_error(residuals)
    return fit, jackknife_gain_error(fit, leave_one_curve_out(residuals, fit_gain_error).values())


def variance_ratio(fisher: GainErrorFit, jackknife: GainErrorFit) -> float:
    """T = tr(Sigma_F^-1 Sigma_J) / 2 (NaN where the Fisher covariance is not finite or
    singular)."""
    f, j = covariance(fisher), covariance(jackknife)
    if not (np.all(np.isfinite(f)) and np.all(np.isfinite(j))):
        return float("nan")
    try:
        return float(np.trace(np.linalg.solve(f, j))) / 2.0
    except np.linalg.LinAlgError:
        return float("nan")


def sandwich(residuals: Sequence[Residual], fit: GainErrorFit) -> GainErrorFit:
    """``fit`` with the cluster-robust CR0 errors: I^-1 M I^-1, M = sum over curves of
    U_c U_c^T, U_c = sum over the curve's figures (d > 0) of dl/dtheta, l = (ln V + r^2 / V)
    / 2, dl/dtheta = (1 / V - r^2 / V^2) g dg/dtheta, V = v + g^2; I the Fisher
    information as ``fit_gain_error`` forms it."""
    use = [x for x in residuals if x.distance > 0]
    a, d0 = fit.ceiling, fit.scale
    r = np.array([x.log_error for x in use])
    d = np.array([x.distance for x in use])
    v = np.array([x.variance for x in use])
    e = np.exp(-d / d0)
    g = a * (1.0 - e)
    var = np.maximum(v + g**2, 1e-12)
    dv = np.stack([2 * g * (1.0 - e), 2 * g * (-a * e * d / d0**2)])  # (2, n) dV/dtheta
    info = 0.5 * (dv / var) @ (dv / var).T  # (2, 2)
    score = 0.5 * (1.0 / var - r**2 / var**2) * dv  # (2, n)
    groups = [x.group for x in use]
    meat = np.zeros((2, 2))
    for c in dict.fromkeys(groups):
        u = score[:, [i for i, x in enumerate(groups) if x == c]].sum(axis=1)
        meat += np.outer(u, u)
    bread = np.linalg.inv(info)
    cov = bread @ meat @ bread
    se = np.sqrt(np.diag(cov))
    return replace(fit, ceiling_stderr=float(se[0]), scale_stderr=float(se[1]),
                   correlation=float(cov[0, 1] / (se[0] * se[1])))  # fmt: skip


@dataclass(frozen=True, slots=True)
class NullDraw:
    """One data set drawn from the Fisher model: its T (NaN: the Fisher information was
    singular), its ratios se_J / se_F of a and d0, and whether the Fisher law's and the
    jackknife's 90% ranges of ln a and of ln d0 (delta method) hold the parameters drawn
    from: ((Fisher a, Fisher d0), (jackknife a, jackknife d0))."""

    ratio: float
    se_ratios: tuple[float, float]
    covered: tuple[tuple[bool, bool], tuple[bool, bool]]


def _holds(fit: GainErrorFit, truth: tuple[float, float]) -> tuple[bool, bool]:
    out = []
    for est, se, true in ((fit.ceiling, fit.ceiling_stderr, truth[0]),
                          (fit.scale, fit.scale_stderr, truth[1])):  # fmt: skip
        out.append(bool(abs(math.log(true / est)) <= Z90 * se / est))
    return (out[0], out[1])


def _null_draw(job: tuple[Sequence[Residual], tuple[float, float]]) -> NullDraw:
    residuals, truth = job
    fisher, jack = _clustered(residuals)
    return NullDraw(
        variance_ratio(fisher, jack),
        (jack.ceiling_stderr / fisher.ceiling_stderr, jack.scale_stderr / fisher.scale_stderr),
        (_holds(fisher, truth), _holds(jack, truth)),
    )


def bootstrap_null(
    residuals: Sequence[Residual], fit: GainErrorFit, draws: int, rng: np.random.Generator,
    workers: int = 1,
) -> list[NullDraw]:  # fmt: skip
    """``draws`` data sets from the Fisher model at ``fit`` (every data set drawn up front
    from ``rng``, so the result is the same for any ``workers``), each re-fitted."""
    sd = np.array([math.sqrt(x.variance + fit.sigma(x.distance) ** 2) for x in residuals])
    errors = rng.normal(size=(draws, len(residuals))) * sd  # (draws, figures)
    truth = (fit.ceiling, fit.scale)
    jobs = [([replace(x, log_error=float(e)) for x, e in zip(residuals, row, strict=True)], truth)
            for row in errors]  # fmt: skip
    if workers <= 1:
        return [_null_draw(j) for j in jobs]
    with ProcessPoolExecutor(workers) as pool:
        return list(pool.map(_null_draw, jobs, chunksize=8))


def clustering_lines(
    residuals: Sequence[Residual], draws: int = DRAWS, seed: int = SEED, workers: int = 1
) -> list[str]:
    """The test's text: the Fisher, jackknife and CR0 errors, T and its bootstrap p-value,
    the per-parameter ratios' p-values, the laws' coverage under the null, the verdict."""
    fisher, jack = _clustered(residuals)
    cr0 = sandwich(residuals, fisher)
    t_obs = variance_ratio(fisher, jack)
    ratios = (jack.ceiling_stderr / fisher.ceiling_stderr, jack.scale_stderr / fisher.scale_stderr)
    null = bootstrap_null(residuals, fisher, draws, np.random.default_rng(seed), workers)
    exceed = sum(not (x.ratio < t_obs) for x in null)  # NaN counts as exceeding
    p = (1 + exceed) / (draws + 1)
    p_each = [(1 + sum(x.se_ratios[i] >= ratios[i] for x in null)) / (draws + 1) for i in (0, 1)]
    finite = sorted(x.ratio for x in null if math.isfinite(x.ratio))

    def errs(name: str, f: GainErrorFit) -> str:
        return (f"{name}: a {f.ceiling:.4f} +- {f.ceiling_stderr:.4f}, d0 {f.scale:.3f} +- "
                f"{f.scale_stderr:.3f}, correlation {f.correlation:.3f}")  # fmt: skip

    cover = [[sum(x.covered[k][i] for x in null) for i in (0, 1)] for k in (0, 1)]
    keep = p <= 0.05
    return [
        f"{fisher.figures} gains away from a calibrated load, {fisher.groups} curves",
        errs("Fisher", fisher),
        errs("curve jackknife", jack),
        errs("cluster sandwich (CR0)", cr0),
        f"se ratios jackknife / Fisher: a {ratios[0]:.3f} (p {p_each[0]:.3f}), d0 "
        f"{ratios[1]:.3f} (p {p_each[1]:.3f})",
        f"T = tr(Sigma_F^-1 Sigma_J) / 2 = {t_obs:.3f}; under the Fisher model ({draws} data "
        f"sets, seed {seed}; {draws - len(finite)} singular): median "
        f"{finite[len(finite) // 2]:.3f}, 95% quantile {np.quantile(finite, 0.95):.3f}; "
        f"{exceed} at or above T, p = {p:.4f}",
        f"under the Fisher model, 90% ranges holding the true ln a, ln d0: Fisher "
        f"{cover[0][0]}, {cover[0][1]} of {draws}; jackknife {cover[1][0]}, {cover[1][1]} "
        f"of {draws}",
        "verdict (keep if p <= 0.05): "
        + ("kept: the law takes the jackknife's errors" if keep else "not kept: Fisher stays"),
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--load", required=True, help="figures error_forms --save wrote")
    parser.add_argument("--draws", type=int, default=DRAWS, help="data sets under the null")
    parser.add_argument("--workers", type=int, default=1, help="processes (same result)")
    args = parser.parse_args(argv)
    gains = load_gains(args.load)
    print("\n".join(clustering_lines(gains, args.draws, SEED, args.workers)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
