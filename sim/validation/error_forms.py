"""Which form of the serving model's error under load the public curves support, chosen by
a criterion fixed before scoring (docs/serving-intervals.md, "The form of the error").

Every scored load-curve figure (sim/validation/model_error_cases.py) gives r =
ln(measured / predicted), its Monte Carlo variance v and its log distance d to the nearest
load its arm was calibrated on (a gain: the speculative arm's, as ``error_figures``; and
each arm's apart). A candidate form sigma(d; theta) says r ~ N(0, v + sigma^2). Its
score is the leave-one-curve-out predictive log density: for each curve, theta fitted by
maximum likelihood on the other curves' figures away from a calibrated load (d > 0), then
sum over that curve's figures with d > 0 of ln N(r; 0, v + sigma(d; theta)^2); summed
over the curves. Levels and gains are scored apart.

The candidates (``FORMS``):

1. s d (the form shipped until this rule selected s sqrt(d) for levels and
   a (1 - exp(-d / d0)) for gains, now sim/model/model_error.py's);
2. sqrt(c^2 + (s d)^2): a constant beside the growing term;
3. s sqrt(d);
4. a (1 - exp(-d / d0)): saturating;
5. s d with s by engine (SGLang, vLLM: the engine named in the curve's title);
6. gains: s d with s by whether the curve's arms share their calibrated loads (or it
   scores gains only, calibrated on a gain) or not;
7. gains: the difference of two arms' correlated level errors, sigma^2 =
   s_L^2 (d_s^2 + d_p^2 - 2 rho d_s d_p), s_L the levels' s d fit on the other curves,
   rho in [-1, 1] fitted on the other curves' gains.

The keep rule: the best form wins (to replace s d) only if it leads s d by >= 2 nats
(``MARGIN_NATS``), also with any one curve left out of the sum.

``python -m sim.validation.error_forms`` builds the serving cases (the length of
``make validate``) and prints the table; ``--save`` writes the figures, ``--load`` scores
saved ones.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from sim.files import atomic_write_text
from sim.model.model_error import GAIN_BOUNDS, GAIN_STARTS, S_MAX, Z90
from sim.validation.cases import Case, Row
from sim.validation.model_error_cases import separates_ten_percent

__all__ = [
    "FORMS",
    "MARGIN_NATS",
    "Form",
    "FormFigure",
    "FormScore",
    "form_figures",
    "form_lines",
    "leads_by_distance",
    "load_figures",
    "score_form",
]

#: The edges of the distance bands ``leads_by_distance`` splits a lead into.
DISTANCE_EDGES = (0.7, 2.0, 3.0)

#: How far (nats of leave-one-curve-out log score) a form must lead s d to replace it.
MARGIN_NATS = 2.0


@dataclass(frozen=True, slots=True)
class FormFigure:
    """One scored load-curve figure: its curve, the curve's engine (``sglang``, ``vllm``
    or ``other``), whether the curve's arms share their calibrated loads, whether a gain,
    r = ln(measured / predicted), its Monte Carlo variance, and the log distances: the
    figure's (``distance``, a gain's the speculative arm's) and each arm's."""

    curve: str
    engine: str
    both_arms: bool
    gain: bool
    log_error: float
    variance: float
    distance: float
    distance_speculative: float
    distance_plain: float


def _engine(title: str) -> str:
    if "SGLang" in title:
        return "sglang"
    return "vllm" if "vLLM" in title else "other"


def _distance(r: Row) -> float:
    assert r.load is not None
    return min(abs(math.log(r.load / c)) for c in r.calibrated_loads)


def form_figures(cases: Sequence[Case]) -> list[FormFigure]:
    """The load-curve figures of the scored ``cases``, as ``error_figures`` takes them
    (each level and published gain; the speculative / plain ratio of two published levels
    at one load, its variance the sum of theirs), with each arm's distance apart."""
    out: list[FormFigure] = []
    for case in cases:
        rows = [r for r in case.rows if r.load is not None and r.calibrated_loads]
        if not case.scored or not rows:
            continue
        engine = _engine(case.title)
        spec = {r.load: r for r in rows if r.side == "speculative"}
        plain = {r.load: r for r in rows if r.side == "plain"}
        shared = spec.keys() & plain.keys()
        both = all(r.side == "gain" for r in rows) or (
            bool(shared)
            and all(spec[x].calibrated_loads == plain[x].calibrated_loads for x in shared)
        )
        for r in rows:
            d = _distance(r)
            out.append(FormFigure(case.title, engine, both, r.side == "gain",
                                  math.log(r.measured / r.predicted), (r.sd / r.predicted) ** 2,
                                  d, d, d))  # fmt: skip
        for load in spec.keys() & plain.keys():
            s, p = spec[load], plain[load]
            var = (s.sd / s.predicted) ** 2 + (p.sd / p.predicted) ** 2
            ratio = (s.measured / p.measured) / (s.predicted / p.predicted)
            out.append(FormFigure(case.title, engine, both, True, math.log(ratio), var,
                                  _distance(s), _distance(s), _distance(p)))  # fmt: skip
    return out


@dataclass(frozen=True, slots=True)
class _Arrays:
    r: np.ndarray
    v: np.ndarray
    d: np.ndarray
    ds: np.ndarray
    dp: np.ndarray
    sglang: np.ndarray
    both: np.ndarray

    @staticmethod
    def of(figs: Sequence[FormFigure]) -> _Arrays:
        def col(f: Callable[[FormFigure], float]) -> np.ndarray:
            return np.array([f(x) for x in figs], dtype=float)

        return _Arrays(
            col(lambda x: x.log_error), col(lambda x: x.variance), col(lambda x: x.distance),
            col(lambda x: x.distance_speculative), col(lambda x: x.distance_plain),
            col(lambda x: x.engine == "sglang") > 0, col(lambda x: x.both_arms) > 0,
        )  # fmt: skip


#: sigma(d; theta)^2 over a block of figures; ``s_levels`` is the levels' s d fit (form 7).
Variance = Callable[[np.ndarray, _Arrays, float], np.ndarray]


@dataclass(frozen=True, slots=True)
class Form:
    """A candidate: its name, sigma^2 as a function of (theta, figures, s_levels), the
    starting points of the likelihood search, theta's bounds, and which kinds it is
    scored on."""

    name: str
    variance: Variance
    starts: tuple[tuple[float, ...], ...]
    bounds: tuple[tuple[float, float], ...]
    kinds: tuple[bool, ...] = (False, True)  # (levels, gains)


_S = (1e-6, S_MAX)
FORMS: tuple[Form, ...] = (
    Form("s d", lambda t, a, _: (t[0] * a.d) ** 2, ((0.05,),), (_S,)),
    Form("sqrt(c^2 + (s d)^2)", lambda t, a, _: t[0] ** 2 + (t[1] * a.d) ** 2,
         ((0.02, 0.04), (0.05, 0.01), (0.001, 0.05)), ((0.0, 2.0), _S)),
    Form("s sqrt(d)", lambda t, a, _: t[0] ** 2 * a.d, ((0.1,),), (_S,)),
    Form("a (1 - exp(-d / d0))", lambda t, a, _: (t[0] * -np.expm1(-a.d / t[1])) ** 2,
         GAIN_STARTS, GAIN_BOUNDS),
    Form("s d, s by engine", lambda t, a, _: (np.where(a.sglang, t[0], t[1]) * a.d) ** 2,
         ((0.05, 0.05),), (_S, _S)),
    Form("s d, s by arms calibrated", lambda t, a, _: (np.where(a.both, t[0], t[1]) * a.d) ** 2,
         ((0.05, 0.05),), (_S, _S), (True,)),
    Form("arms' correlated level errors",
         lambda t, a, s: np.maximum(s**2 * (a.ds**2 + a.dp**2 - 2 * t[0] * a.ds * a.dp), 0.0),
         ((0.5,), (0.9,), (0.0,)), ((-1.0, 1.0),), (True,)),
)  # fmt: skip


def _neg_log_lik(theta: np.ndarray, a: _Arrays, form: Form, s_levels: float) -> float:
    var = np.maximum(a.v + form.variance(theta, a, s_levels), 1e-12)
    return 0.5 * float(np.sum(np.log(2 * math.pi * var) + a.r**2 / var))


def _fit(figs: Sequence[FormFigure], form: Form, s_levels: float) -> np.ndarray:
    """theta maximising the likelihood of ``figs`` (bounded L-BFGS-B from each start)."""
    from scipy.optimize import minimize  # lazy: only the fits need it

    a = _Arrays.of(figs)
    best = min(
        (minimize(_neg_log_lik, np.array(x0), args=(a, form, s_levels), method="L-BFGS-B",
                  bounds=form.bounds) for x0 in form.starts),
        key=lambda res: float(res.fun),
    )  # fmt: skip
    return np.asarray(best.x, dtype=float)


def _levels_s(figs: Sequence[FormFigure]) -> float:
    """The levels' s of s d (form 7's s_L), closed form sqrt(mean((r / d)^2)) when no
    figure has a Monte Carlo variance, else the likelihood's."""
    lv = [f for f in figs if not f.gain and f.distance > 0]
    return float(_fit(lv, FORMS[0], 0.0)[0]) if lv else 0.0


@dataclass(frozen=True, slots=True)
class FormScore:
    """A form's leave-one-curve-out log score per curve, theta fitted on all, and the
    coverage of the Monte Carlo interval joined with its band (each curve's theta without
    it): figures inside, their count, median log width ln(hi / lo), and how many
    intervals separate a 10% gain from none."""

    name: str
    per_curve: Mapping[str, float]
    theta_all: tuple[float, ...]
    inside: int
    figures: int
    median_log_width: float
    separate: int

    @property
    def total(self) -> float:
        return float(sum(self.per_curve.values()))


def _sigma_at(form: Form, theta: np.ndarray, s_levels: float) -> Callable[[FormFigure], float]:
    def sigma(f: FormFigure) -> float:
        return math.sqrt(float(form.variance(theta, _Arrays.of([f]), s_levels)[0]))

    return sigma


def score_form(figs: Sequence[FormFigure], form: Form, gain: bool) -> FormScore:
    """``form`` scored on the levels (``gain`` False) or gains of ``figs`` (all kinds:
    form 7 reads the levels' fit on the other curves)."""
    kind = [f for f in figs if f.gain == gain]
    away = [f for f in kind if f.distance > 0]
    per: dict[str, float] = {}
    sigma_of: dict[str, Callable[[FormFigure], float]] = {}
    for c in dict.fromkeys(f.curve for f in away):
        s_l = _levels_s([f for f in figs if f.curve != c])
        theta = _fit([f for f in away if f.curve != c], form, s_l)
        per[c] = -_neg_log_lik(theta, _Arrays.of([f for f in away if f.curve == c]), form, s_l)
        sigma_of[c] = _sigma_at(form, theta, s_l)
    inside, widths = 0, []
    for f in kind:
        sigma = sigma_of[f.curve](f) if f.distance > 0 else 0.0
        half = Z90 * max(math.sqrt(f.variance), sigma)
        inside += abs(f.log_error) <= half
        widths.append(2 * half)
    separate = sum(separates_ten_percent(2.0 * math.sinh(w / 2)) for w in widths)
    theta_all = tuple(float(x) for x in _fit(away, form, _levels_s(figs)))
    return FormScore(form.name, per, theta_all, inside, len(kind),
                     float(np.median(widths)), separate)  # fmt: skip


def leads_by_distance(
    figs: Sequence[FormFigure], form: Form, gain: bool, edges: Sequence[float] = DISTANCE_EDGES
) -> list[tuple[str, int, float]]:
    """``form``'s leave-one-curve-out lead over s d split by the figures' distance: per
    band (d <= edges[0], edges[0] < d <= edges[1], ..., d > edges[-1]) its label, the
    figures in it and the sum of their log-density differences; the bands add up to the
    difference of the two forms' ``score_form`` totals."""
    away = [f for f in figs if f.gain == gain and f.distance > 0]
    labels = [f"d <= {edges[0]:g}"] + [
        f"{lo:g} < d <= {hi:g}" for lo, hi in itertools.pairwise(edges)
    ] + [f"d > {edges[-1]:g}"]  # fmt: skip
    count, lead = [0] * len(labels), [0.0] * len(labels)
    for c in dict.fromkeys(f.curve for f in away):
        others = [f for f in figs if f.curve != c]
        s_l = _levels_s(others)
        train = [f for f in away if f.curve != c]
        base, theta = _fit(train, FORMS[0], s_l), _fit(train, form, s_l)
        for f in (f for f in away if f.curve == c):
            a = _Arrays.of([f])
            j = int(np.searchsorted(np.asarray(edges), f.distance, side="left"))
            count[j] += 1
            lead[j] += _neg_log_lik(base, a, FORMS[0], s_l) - _neg_log_lik(theta, a, form, s_l)
    return list(zip(labels, count, lead, strict=True))


def form_lines(figs: Sequence[FormFigure]) -> list[str]:
    """The table: each form's score, its lead over s d (total, and the smallest with one
    curve left out of the sum), theta fitted on all, and coverage; then the verdict of
    the keep rule for each kind."""
    out: list[str] = []
    for gain, kind in ((False, "levels"), (True, "gains")):
        scores = [score_form(figs, f, gain) for f in FORMS if gain in f.kinds]
        base = scores[0]
        out += [
            f"{kind} ({scores[0].figures} figures)", "",
            "| form | log score | lead over s d | smallest lead, one curve left out | "
            "theta (all curves) | inside | median log width | separate 10% |",
            "|---|---:|---:|---:|---|---:|---:|---:|",
        ]  # fmt: skip
        leads = {}
        for sc in scores:
            diff = {c: sc.per_curve[c] - base.per_curve[c] for c in base.per_curve}
            lead = sum(diff.values())
            worst = min(lead - x for x in diff.values())
            leads[sc.name] = (lead, worst)
            out.append(
                f"| {sc.name} | {sc.total:.2f} | {lead:+.2f} | {worst:+.2f} | "
                f"{', '.join(f'{x:.3g}' for x in sc.theta_all)} | {sc.inside} "
                f"({sc.inside / sc.figures:.0%}) | {sc.median_log_width:.3f} | {sc.separate} |"
            )
        best = max(scores, key=lambda s: s.total)
        lead, worst = leads[best.name]
        kept = best is not base and lead >= MARGIN_NATS and worst >= MARGIN_NATS
        verdict = "wins by the keep rule" if kept else "s d stays"
        by_d = leads_by_distance(figs, next(f for f in FORMS if f.name == best.name), gain)
        out += ["", f"{best.name}'s lead by distance: " + "; ".join(
            f"{label} ({n} figures) {x:+.2f}" for label, n, x in by_d)]  # fmt: skip
        out += ["", f"{kind}: best {best.name} ({lead:+.2f} nats over s d, {worst:+.2f} with "
                    f"one curve left out): {verdict}", ""]  # fmt: skip
    return out


def _save(path: str, figs: Sequence[FormFigure]) -> None:
    atomic_write_text(path, json.dumps([asdict(f) for f in figs], indent=1) + "\n")


def load_figures(path: str) -> list[FormFigure]:
    """The figures ``--save`` wrote."""
    with open(path, encoding="utf-8") as fh:
        return [FormFigure(**r) for r in json.load(fh)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--save", help="write the figures (JSON)")
    parser.add_argument("--load", help="score figures a --save wrote instead of simulating")
    args = parser.parse_args(argv)
    if args.load:
        figs = load_figures(args.load)
    else:
        from sim.validation.report import build_report  # lazy: the whole validation

        figs = form_figures(build_report().cases)
    if args.save:
        _save(args.save, figs)
    print("\n".join(form_lines(figs)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
