"""The serving model's error under load, estimated on the public concurrency curves and
scored leave one curve out (sim/model/model_error.py).

Every scored figure of a load curve (a ``Row`` with a ``load``: the EAGLE-3 paper's SGLang
and vLLM tables, Kimi-K2.5 on 8x RTX PRO 6000, vLLM #22752's chain and tree, llm-d's
Qwen3-32B, the AngelSlim and SpecForge MoE curves) gives a residual ln(measured /
predicted) at its log distance to the nearest load its curve was calibrated on, with its
Monte Carlo variance ((sd / predicted)^2) as the known part. Levels (a policy's tok/s or
TPOT) and gains (a published speed-up or tree / chain ratio, and the ratio of a curve's two
published levels at one load) are fitted apart, each in the form the pre-registered rule
selected (levels s sqrt(d), gains a (1 - exp(-d / d0)); sim/validation/error_forms.py holds
the scores that selected them). Each curve is scored with the term fitted on the other
curves only; the term specsim ships is the fit on all of them (``DEFAULT_LEVEL``,
``DEFAULT_GAIN_CEILING``, ``DEFAULT_GAIN_SCALE``), and the report says whether the shipped
values still agree with the fit at the digits shown.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from sim.model.model_error import (
    DEFAULT_GAIN_CEILING,
    DEFAULT_GAIN_CEILING_STDERR,
    DEFAULT_GAIN_CORRELATION,
    DEFAULT_GAIN_SCALE,
    DEFAULT_GAIN_SCALE_STDERR,
    DEFAULT_LEVEL,
    Z90,
    GainErrorFit,
    LevelErrorFit,
    Residual,
    fit_gain_error,
    fit_level_error,
    jackknife_gain_error,
    leave_one_curve_out,
    load_distance,
    widen,
)
from sim.validation.cases import Case, Row

__all__ = ["ErrorFigure", "error_figures", "model_error_lines", "separates_ten_percent"]


def separates_ten_percent(relative_width: float) -> bool:
    """Whether an interval this wide, relative to its centre ((hi - lo) / nominal), around
    a 10% gain leaves out no gain: 1.1 (1 - width / 2) > 1, a width below 0.18 (a symmetric
    log interval nominal exp(+-h) has relative width 2 sinh(h))."""
    return 1.1 * (1.0 - relative_width / 2.0) > 1.0


@dataclass(frozen=True, slots=True)
class ErrorFigure:
    """One scored load-curve figure: its curve, label, whether a gain, measured and
    predicted values, Monte Carlo log standard deviation and log distance to the nearest
    calibrated load."""

    curve: str
    label: str
    gain: bool
    measured: float
    predicted: float
    mc_log_sd: float
    distance: float

    def residual(self) -> Residual:
        return Residual(
            self.curve, self.distance, math.log(self.measured / self.predicted), self.mc_log_sd**2
        )

    def interval(self, fit: LevelErrorFit | GainErrorFit | None) -> tuple[float, float]:
        """The Monte Carlo 90% interval widened by the model error ``fit`` at this
        distance (None: the Monte Carlo interval alone)."""
        mc = Z90 * self.mc_log_sd
        base = (self.predicted * math.exp(-mc), self.predicted * math.exp(mc))
        sigma = 0.0 if fit is None else fit.sigma(self.distance)
        return widen(self.predicted, base, sigma)


def _figure(
    case: Case, r: Row, gain: bool, measured: float, predicted: float, var: float
) -> ErrorFigure:
    assert r.load is not None
    return ErrorFigure(
        case.title,
        r.figure,
        gain,
        measured,
        predicted,
        math.sqrt(var),
        load_distance(r.load, r.calibrated_loads),
    )


def error_figures(cases: Sequence[Case]) -> list[ErrorFigure]:
    """The load-curve figures of the scored ``cases``: each level and published gain, and
    the ratio speculative / plain of two published levels at one load (a derived gain, its
    Monte Carlo variance the sum of the two levels')."""
    out: list[ErrorFigure] = []
    for case in cases:
        if not case.scored:
            continue
        rows = [r for r in case.rows if r.load is not None and r.calibrated_loads]
        for r in rows:
            var = (r.sd / r.predicted) ** 2
            out.append(_figure(case, r, r.side == "gain", r.measured, r.predicted, var))
        at: dict[float, dict[str, Row]] = {}
        for r in rows:
            if r.side in ("speculative", "plain"):
                assert r.load is not None
                at.setdefault(r.load, {})[r.side] = r
        for pair in at.values():
            if len(pair) == 2:
                s, p = pair["speculative"], pair["plain"]
                var = (s.sd / s.predicted) ** 2 + (p.sd / p.predicted) ** 2
                out.append(
                    _figure(case, s, True, s.measured / p.measured, s.predicted / p.predicted, var)
                )
    return out


def _coverage(
    figs: Sequence[ErrorFigure], fits: Mapping[str, LevelErrorFit | GainErrorFit | None]
) -> tuple[int, float, int]:
    """(inside, median relative width, how many separate a 10% gain from none) of the
    figures' intervals with the model error ``fits[curve]`` (None: Monte Carlo only)."""
    inside, widths = 0, []
    for f in figs:
        lo, hi = f.interval(fits[f.curve])
        inside += lo <= f.measured <= hi
        widths.append((hi - lo) / f.predicted)
    separates = sum(separates_ten_percent(w) for w in widths)
    return inside, float(np.median(widths)) if widths else float("nan"), separates


def _agree(fitted: float, shipped: float, digits: int) -> bool:
    """The fit and the shipped value are the same at the digits the report shows."""
    return f"{fitted:.{digits}f}" == f"{shipped:.{digits}f}"


def _flag(same: bool) -> str:
    return "the same" if same else "**differs: update the default**"


def _level_line(fit: LevelErrorFit) -> str:
    return (
        f"- levels, s sqrt(d): s = {fit.level:.3f} ± {fit.stderr:.3f} per unit sqrt(ln load) "
        f"({fit.figures} figures away from a calibrated load, {fit.groups} curves); shipped "
        f"{DEFAULT_LEVEL:.3f} ({_flag(_agree(fit.level, DEFAULT_LEVEL, 3))})"
    )


def _gain_line(fit: GainErrorFit, jackknife: GainErrorFit) -> str:
    """The gains' fit with its Fisher errors and those of the jackknife over curves
    (``jackknife``), against the shipped values of a, d0 and the jackknife's standard errors
    and correlation (the answers' parameter range is that law; the pre-registered rule of
    docs/studies/gain-clustered-errors.md chose it)."""
    same = all(
        _agree(x, y, k)
        for x, y, k in (
            (fit.ceiling, DEFAULT_GAIN_CEILING, 3),
            (jackknife.ceiling_stderr, DEFAULT_GAIN_CEILING_STDERR, 3),
            (fit.scale, DEFAULT_GAIN_SCALE, 2),
            (jackknife.scale_stderr, DEFAULT_GAIN_SCALE_STDERR, 2),
            (jackknife.correlation, DEFAULT_GAIN_CORRELATION, 2),
        )
    )
    return (
        f"- gains, a (1 - exp(-d / d0)): a = {fit.ceiling:.3f} ± {fit.ceiling_stderr:.3f}, "
        f"d0 = {fit.scale:.2f} ± {fit.scale_stderr:.2f} ln(load), correlation "
        f"{fit.correlation:.2f} (Fisher); jackknife over curves a ± "
        f"{jackknife.ceiling_stderr:.3f}, d0 ± {jackknife.scale_stderr:.2f}, correlation "
        f"{jackknife.correlation:.2f} ({fit.figures} figures away from a calibrated load, "
        f"{fit.groups} curves); shipped a {DEFAULT_GAIN_CEILING:.3f} ± "
        f"{DEFAULT_GAIN_CEILING_STDERR:.3f}, d0 {DEFAULT_GAIN_SCALE:.2f} ± "
        f"{DEFAULT_GAIN_SCALE_STDERR:.2f}, correlation {DEFAULT_GAIN_CORRELATION:.2f}, the "
        f"jackknife's ({_flag(same)})"
    )


def _params(fit: LevelErrorFit | GainErrorFit) -> str:
    if isinstance(fit, LevelErrorFit):
        return f"{fit.level:.3f}"
    return f"{fit.ceiling:.3f}, {fit.scale:.2f}"


def model_error_lines(cases: Sequence[Case]) -> list[str]:
    """The report's section: the fitted terms against the shipped defaults, and per curve
    and overall the coverage and median width of the Monte Carlo intervals before and after
    the model-error term fitted without the curve."""
    figs = error_figures(cases)
    levels = [f.residual() for f in figs if not f.gain]
    gains = [f.residual() for f in figs if f.gain]
    loo_fits: tuple[Mapping[str, LevelErrorFit | GainErrorFit], ...] = (
        leave_one_curve_out(levels, fit_level_error),
        leave_one_curve_out(gains, fit_gain_error),
    )
    gain_fit = fit_gain_error(gains)
    jackknife = jackknife_gain_error(
        gain_fit, [f for f in loo_fits[1].values() if isinstance(f, GainErrorFit)]
    )
    out = [
        "The model's error under load (sim/model/model_error.py): ln(measured / predicted) "
        "~ N(0, v + sigma(d)^2), d the log distance of the figure's load to the nearest load "
        "its curve was calibrated on, v its Monte Carlo variance; sigma(d) = s sqrt(d) for "
        "levels and a (1 - exp(-d / d0)) for gains (the forms the pre-registered rule "
        "selected, docs/serving-intervals.md), fitted by maximum likelihood, levels and "
        "gains apart. Each curve is scored with the term fitted on the other curves only "
        "(leave one curve out); the shipped default is the fit on all.",
        "",
        _level_line(fit_level_error(levels)),
        _gain_line(gain_fit, jackknife),
        "",
        "| curve | kind | figures | inside, Monte Carlo only | with the term | median width "
        "before | after | separate 10% before | after | s, or a and d0, without the curve |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for (gain, kind), loo in zip(((False, "levels"), (True, "gains")), loo_fits, strict=True):
        sel = [f for f in figs if f.gain == gain]
        none: dict[str, LevelErrorFit | GainErrorFit | None] = dict.fromkeys(loo)
        for curve in [*dict.fromkeys(f.curve for f in sel), "all"]:
            cf = [f for f in sel if curve in ("all", f.curve)]
            n0, w0, sep0 = _coverage(cf, none)
            n1, w1, sep1 = _coverage(cf, loo)
            p_txt = _params(loo[curve]) if curve != "all" else "-"
            seps = f" {sep0} | {sep1} |" if gain else " - | - |"
            out.append(
                f"| {curve} | {kind} | {len(cf)} | {n0} ({n0 / len(cf):.0%}) | "
                f"{n1} ({n1 / len(cf):.0%}) | {w0:.3f} | {w1:.3f} |{seps} {p_txt} |"
            )
    return out
