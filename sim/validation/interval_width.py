"""Where the width of the public curves' gain intervals comes from, and how narrow an
interval of the model-error form could be at the coverage the goal asks. Measured with the
linear form s d (sim/validation/linear_error.py), the term shipped before the pre-registered
selection of the forms (docs/serving-intervals.md); the shipped forms' coverage is
sim/validation/interval_public.py's.

Input: the figures of sim/validation/interval_public.py with their intervals from the
drawn inputs, before the model-error term (``--save`` writes them). For each gain (a
paired speed-up) the log width ln(hi / lo) of

* the inputs' interval (the draws: sim/validation/interval_drivers.py splits it input by
  input);
* the model-error band 2 Z90 s d, s fitted leave one curve out on the other curves'
  nominal log errors (``_linear_terms``);
* the two joined (``_joined``: ``interval_public.with_model_error`` with the linear fit, each
  end the farther of the two).

Two variants are measured beside it:

* **in quadrature** (``in_quadrature``): the linear model as it is stated,
  ln(measured / predicted) ~ N(0, v + (s d)^2), with v each figure's variance from the
  drawn inputs, v = (ln(hi / lo) / (2 Z90))^2 (their interval read as a normal's), s
  fitted leave one curve out with that v as the known part, and the interval
  nominal exp(+-Z90 sqrt(v + (s d)^2));
* **the narrowest of the form** (``narrowest``): nominal exp(+-c d) with c the
  ``coverage`` quantile of |ln(measured / nominal)| / d over the scored gains themselves.
  c is chosen on the very figures it scores, so it is no interval: it bounds how narrow
  any interval whose log half-width grows in proportion to d can be and still hold that
  share of the figures; if it does not separate a 10% gain from none, no honest interval
  of that form does.

``python -m sim.validation.interval_width --load FIGURES.json`` prints the tables
docs/serving-intervals.md quotes.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from sim.model.model_error import Z90, Residual, leave_one_curve_out
from sim.validation import interval_public
from sim.validation.interval_public import Figure, _load
from sim.validation.linear_error import fit_model_error

__all__ = [
    "GainWidth",
    "band_alone",
    "bias_terms",
    "gain_widths",
    "in_quadrature",
    "narrowest",
    "width_lines",
    "with_bias",
]

#: The share of the figures the serving goal asks 90% intervals to hold.
GOAL_COVERAGE = 0.8


@dataclass(frozen=True, slots=True)
class GainWidth:
    """One gain's log widths ln(hi / lo): the inputs' interval, the model-error band (2 Z90
    s d) and the two joined; its log distance d and log error ln(measured / nominal)."""

    curve: str
    label: str
    distance: float
    log_error: float
    inputs: float
    model: float
    joined: float


def _log_width(interval: tuple[float, float]) -> float:
    return math.log(interval[1] / interval[0])


def _linear_terms(gains: Sequence[Figure]) -> Mapping[str, interval_public.Term]:
    """Each curve's linear term s d fitted without it on ``gains``."""
    return interval_public.loo_terms(gains, fit_model_error)


def _joined(gains: Sequence[Figure]) -> list[Figure]:
    """The gains' intervals joined with the linear term fitted leave one curve out."""
    return interval_public.with_model_error(gains, fit_model_error)


def gain_widths(figures: Sequence[Figure]) -> list[GainWidth]:
    """Each gain of ``figures`` (intervals from the inputs alone) with its widths."""
    gains = [f for f in figures if f.gain]
    terms = _linear_terms(gains)
    joined = _joined(gains)
    return [
        GainWidth(
            f.curve,
            f.label,
            f.distance,
            math.log(f.measured / f.nominal),
            _log_width(f.interval),
            2.0 * Z90 * terms[f.curve].sigma(f.distance),
            _log_width(j.interval),
        )
        for f, j in zip(gains, joined, strict=True)
    ]


def _inputs_variance(f: Figure) -> float:
    """The inputs' interval read as a normal's 90% interval in log: its variance."""
    return (_log_width(f.interval) / (2.0 * Z90)) ** 2


def in_quadrature(figures: Sequence[Figure]) -> list[Figure]:
    """The gains with nominal exp(+-Z90 sqrt(v + (s d)^2)): v the inputs' variance, s
    fitted leave one curve out with v as the known variance (``fit_model_error``)."""
    gains = [f for f in figures if f.gain]
    res = [
        Residual(f.curve, f.distance, math.log(f.measured / f.nominal), _inputs_variance(f))
        for f in gains
    ]
    fits = leave_one_curve_out(res, fit_model_error)
    out = []
    for f, r in zip(gains, res, strict=True):
        sd = math.sqrt(r.variance + fits[f.curve].sigma(f.distance) ** 2)
        out.append(
            replace(f, interval=(f.nominal * math.exp(-Z90 * sd), f.nominal * math.exp(Z90 * sd)))
        )
    return out


def band_alone(figures: Sequence[Figure]) -> list[Figure]:
    """The gains with the model-error band alone, nominal exp(+-Z90 s d), s fitted leave
    one curve out (``_linear_terms``): the inputs' interval dropped (the term is fitted on
    the nominal predictions' whole error, which holds what the inputs moved)."""
    gains = [f for f in figures if f.gain]
    terms = _linear_terms(gains)
    return [replace(f, interval=_around(f.nominal, Z90 * terms[f.curve].sigma(f.distance)))
            for f in gains]  # fmt: skip


def _around(centre: float, half: float) -> tuple[float, float]:
    return (centre * math.exp(-half), centre * math.exp(half))


def bias_terms(figures: Sequence[Figure]) -> dict[str, tuple[float, float]]:
    """Each curve's one-sided term (b, s) fitted on the other curves' gains away from a
    calibrated load: ln(measured / nominal) ~ N(b d, (s d)^2), b = sum(r d) / sum(d^2)
    (least squares through 0), s^2 = mean(((r - b d) / d)^2)."""
    gains = [f for f in figures if f.gain]
    out = {}
    for curve in dict.fromkeys(f.curve for f in gains):
        other = [f for f in gains if f.curve != curve and f.distance > 0]
        d = np.array([f.distance for f in other])
        r = np.array([math.log(f.measured / f.nominal) for f in other])
        b = float(np.sum(r * d) / np.sum(d * d))
        out[curve] = (b, float(np.sqrt(np.mean(((r - b * d) / d) ** 2))))
    return out


def with_bias(figures: Sequence[Figure]) -> list[Figure]:
    """The gains joined with a one-sided term fitted leave one curve out
    (``bias_terms``): the inputs' interval and the band nominal exp(b d +- Z90 s d), both
    moved by exp(b d)."""
    gains = [f for f in figures if f.gain]
    terms = bias_terms(gains)
    out = []
    for f in gains:
        b, s = terms[f.curve]
        shift = math.exp(b * f.distance)
        lo, hi = _around(f.nominal * shift, Z90 * s * f.distance)
        iv = (min(lo, f.interval[0] * shift), max(hi, f.interval[1] * shift))
        out.append(replace(f, interval=iv))
    return out


def narrowest(
    figures: Sequence[Figure], coverage: float = GOAL_COVERAGE, linear: bool = True
) -> tuple[float, list[Figure]]:
    """c, the ``coverage`` quantile (``inverted_cdf``: a figure's own value) of |ln(measured
    / nominal)| / d over the gains away from a calibrated load, and the gains with
    nominal exp(+-c d) (``linear`` False: the quantile of |ln(measured / nominal)|, a
    half-width c whatever the distance)."""
    gains = [f for f in figures if f.gain and f.distance > 0]
    scale = [f.distance if linear else 1.0 for f in gains]
    ratios = [abs(math.log(f.measured / f.nominal)) / x for f, x in zip(gains, scale, strict=True)]
    c = float(np.quantile(ratios, coverage, method="inverted_cdf"))
    out = [
        replace(f, interval=(f.nominal * math.exp(-c * x), f.nominal * math.exp(c * x)))
        for f, x in zip(gains, scale, strict=True)
    ]
    return c, out


def _row(name: str, sel: Sequence[Figure]) -> str:
    inside = sum(f.inside for f in sel)
    width = float(np.median([f.width for f in sel]))
    return (
        f"| {name} | {inside}/{len(sel)} ({inside / len(sel):.0%}) | {width:.3f} | "
        f"{sum(f.separates for f in sel)} |"
    )


def width_lines(figures: Sequence[Figure]) -> list[str]:
    """The gains' widths by part (median over each curve's gains and over all), then
    coverage, median relative width and intervals separating a 10% gain from none: the
    inputs alone, joined with the term (today's), in quadrature, and the narrowest of the
    model-error form at ``GOAL_COVERAGE``."""
    parts = gain_widths(figures)
    lines = [
        "| gains of | figures | median d | median abs. log error | inputs | model error | joined |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for curve in [*dict.fromkeys(p.curve for p in parts), "all"]:
        sel = [p for p in parts if curve in ("all", p.curve)]
        lines.append(
            f"| {curve} | {len(sel)} | {np.median([p.distance for p in sel]):.2f} | "
            f"{np.median([abs(p.log_error) for p in sel]):.3f} | "
            f"{np.median([p.inputs for p in sel]):.3f} | {np.median([p.model for p in sel]):.3f} | "
            f"{np.median([p.joined for p in sel]):.3f} |"
        )
    gains = [f for f in figures if f.gain]
    c, tight = narrowest(figures)
    c0, flat = narrowest(figures, linear=False)
    lines += [
        "",
        "| gain intervals | inside | median width (rel.) | separate 10% |",
        "| --- | --- | --- | --- |",
        _row("inputs alone", gains),
        _row("joined with the term (the command line)", _joined(gains)),
        _row("in quadrature, s fitted with the inputs' variance", in_quadrature(figures)),
        _row("the model-error band alone (inputs dropped)", band_alone(figures)),
        _row(
            "joined around a one-sided term exp(b d), b fitted leave one curve out ("
            + " to ".join(
                f"{f(b for b, _ in bias_terms(figures).values()):+.3f}" for f in (min, max)
            )
            + ")",
            with_bias(figures),
        ),
        _row(
            f"narrowest x/exp(c d) holding {GOAL_COVERAGE:.0%} (c = {c:.3f}, chosen on them)", tight
        ),
        _row(
            f"narrowest x/exp(c) holding {GOAL_COVERAGE:.0%} (c = {c0:.3f}, chosen on them)", flat
        ),
    ]
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--load", required=True, help="figures interval_public --save wrote")
    args = parser.parse_args(argv)
    print("\n".join(width_lines(_load(args.load))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
