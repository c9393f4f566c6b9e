"""Step 1 of ``best_k`` (sim/studies/serving/best_k.py), the selection: at each
closed-loop concurrency C of a grid, every fixed k (0 = plain decoding) runs on common
random numbers; the best k maximises the objective's mean (per-user tok/s, aggregate
tok/s, or goodput: requests per second meeting the TTFT and TPOT limits). k whose paired
difference from the best has a 95% interval containing 0 are reported as tied
(``LoadChoice``); with draws of the inputs, also those whose 90% interval from inputs and
model reaches 0 (``input_ties``), the draws run in stages (``draw_stages``,
``inside_band``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from sim.model.model_error import Z90
from sim.model.policy import FixedK
from sim.simulation.serving.metrics import Ratio
from sim.studies.serving.draw_intervals import IntervalSources, interval90, near, sources90
from sim.studies.serving.draws import DrawnPoints
from sim.studies.serving.evaluator import PointEvaluator
from sim.studies.serving.paired_metrics import (
    METRICS,
    Load,
    PolicyPoint,
    difference,
    level,
    paired_difference,
    paired_values,
    ratio_doc,
)
from sim.studies.serving.scenario_plans import load_term
from sim.uncertainty.model_error import ModelErrorTerm

__all__ = [
    "CONTENDER_SHARE",
    "FIRST_DRAWS",
    "LoadChoice",
    "draw_stages",
    "first_draws_note",
    "input_ties",
    "inside_band",
    "select",
]


@dataclass(frozen=True, slots=True)
class LoadChoice:
    """The selection at one concurrency: every k's objective and the best."""

    users: int
    levels: dict[int, Ratio]
    best: int
    tied: tuple[int, ...]
    #: k tied with the best inside the 90% interval from inputs and model of their paired
    #: difference (``input_ties``), and that interval by k (objective's unit, k - best).
    tied_by_inputs: tuple[int, ...] = ()
    interval90: dict[int, list[float] | None] | None = None
    #: What each of those intervals holds where it is not the inputs' draws (fewer than
    #: two answered: sim/studies/serving/draw_intervals.py ``IntervalSources``).
    sources: dict[int, IntervalSources] = field(default_factory=dict)
    #: The model-error term those intervals include (``ModelErrorTerm.doc``; None: none).
    model_error: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {
            "users": self.users,
            "best_num_steps": self.best,
            "tied": list(self.tied),
            "objective": {str(k): ratio_doc(r) for k, r in self.levels.items()},
        }
        if self.interval90 is not None:
            out["tied_within_inputs"] = list(self.tied_by_inputs)
            out["advantage_over_best_interval90"] = {str(k): v for k, v in self.interval90.items()}
            if self.sources:
                out["advantage_over_best_sources"] = {
                    str(k): v.value for k, v in self.sources.items()
                }
        if self.model_error is not None:
            out["model_error"] = self.model_error
        return out


#: The k a best-k selection draws besides the best: the runner-up and every k whose
#: objective is within this share of the best's (a k further behind is not near a tie).
CONTENDER_SHARE = 0.05


def select(
    evaluator: PointEvaluator,
    users: Sequence[int],
    ks: Sequence[int],
    objective: str,
    draws: DrawnPoints | None = None,
) -> list[LoadChoice]:
    loads = [Load("concurrency", c) for c in users]
    evaluator.ensure([(load, FixedK(k)) for load in loads for k in ks])
    if draws is not None:
        # every load's first draw batch at once (what ``input_ties`` asks first at each:
        # the selection's points at one load change only where its draws read them), so
        # each draw's points run as one unit (``DrawnPoints.ensure``)
        first: list[tuple[Load, Any]] = []
        for load in loads:
            points = {k: evaluator(load, FixedK(k)) for k in ks}
            choice = _choice(load, points, objective)
            term = load_term(draws.evaluator.builder, points)
            first += [(load, FixedK(k)) for k in _drawn_ks(choice, term)]
        stages = draw_stages(draws)
        draws.ensure(first, stages[0])
        # then each next stage of draws, in one batch, where the draws run so far give an
        # interval reaching beyond the band (``input_ties`` decides again on the values
        # it reads)
        for stage in stages[1:]:
            rest = []
            for load in loads:
                points = {k: evaluator(load, FixedK(k)) for k in ks}
                choice = _choice(load, points, objective)
                term = load_term(draws.evaluator.builder, points)
                rest += _beyond_band(draws, load, choice, points, objective, term)
            if not rest:
                break
            draws.ensure(list(dict.fromkeys(rest)), stage)
    out = []
    for load in loads:
        while True:  # again when the draws ran a point's other replications
            points = {k: evaluator(load, FixedK(k)) for k in ks}
            choice = _choice(load, points, objective)
            if draws is not None:
                term = load_term(draws.evaluator.builder, points)
                choice = input_ties(draws, load, choice, points, objective, term)
            if all(evaluator(load, FixedK(k)) is p for k, p in points.items()):
                break
        out.append(choice)
    return out


def _choice(load: Load, points: dict[int, PolicyPoint], objective: str) -> LoadChoice:
    """The best k at ``load`` and the k tied with it (their difference's 95% interval
    reaches 0)."""
    ks = sorted(points)
    levels = {k: level(p, objective) for k, p in points.items()}
    best = max(ks, key=lambda k: (levels[k].mean, -k))
    tied = tuple(
        k
        for k in ks
        if k != best
        and (r := difference(points[k], points[best], objective)).ci95 is not None
        and r.ci95[1] >= 0.0
    )
    return LoadChoice(int(load.value), levels, best, tied)


def _drawn_ks(choice: LoadChoice, term: ModelErrorTerm | None) -> list[int]:
    """The k whose draws ``input_ties`` reads at a load: the best, then its contenders
    (the runner-up and every k within ``CONTENDER_SHARE`` of the best, widened by the
    model-error band of ``term``), in increasing k."""
    best, levels = choice.best, choice.levels
    ranked = sorted((k for k in levels if k != best), key=lambda k: -levels[k].mean)
    top = abs(levels[best].mean)
    band = 0.0 if term is None else Z90 * term.gain_sigma
    share = 1.0 - (1.0 - CONTENDER_SHARE) * math.exp(-band)
    close = [k for k in ranked if levels[best].mean - levels[k].mean <= share * top]
    return [best, *sorted(set(ranked[:1]) | set(close))]


#: Draws the first stage of ``draw_stages`` runs (a scrambled Sobol sequence's first two
#: points: a balanced net of the inputs of their own, one in each half of every input).
FIRST_DRAWS = 2


def draw_stages(draws: DrawnPoints) -> list[range]:
    """The draws ``input_ties`` runs in turn at its contenders: with sequential draws the
    first ``FIRST_DRAWS``, then doubling (2, 4, 8 of 8: each stage's end a scrambled Sobol
    sequence's first 2^m points, a balanced net of their own), the next stage only where
    the draws run so far give an interval reaching beyond the model-error band
    (``inside_band``); otherwise every draw at once."""
    n = len(draws.draws)
    if not draws.sequential or n <= FIRST_DRAWS:
        return [range(n)]
    ends = [FIRST_DRAWS]
    while ends[-1] * 2 < n:
        ends.append(ends[-1] * 2)
    ends.append(n)
    return [range(lo, hi) for lo, hi in zip([0, *ends[:-1]], ends, strict=True)]


def _next_stage(draws: DrawnPoints, keys: Sequence[tuple[Load, Any]]) -> range | None:
    """The first stage of ``draw_stages`` with a draw (one the scenario has not rejected)
    that has not run one of ``keys``; None: every draw has run them."""
    for stage in draw_stages(draws):
        got = [draws.points[i] for i in stage]
        if any(g is not None and any(k not in g for k in keys) for g in got):
            return stage
    return None


def inside_band(
    values: Sequence[float],
    ends: list[float] | None,
    nominal: float,
    term: ModelErrorTerm | None,
    top: float,
) -> bool:
    """Whether a difference's 90% interval from the draws run, ``ends`` (``interval90`` of
    their answers ``values`` and the nominal's Monte Carlo 95%), lies inside the
    difference's model-error band around ``nominal`` (``ModelErrorTerm.difference`` of
    the best's level ``top``): the answer's interval is then the band whatever more draws
    give, since the band is the least it holds, and it holds the interval of the draws
    run, itself a 90% interval (their normal prediction interval takes Student's t on
    their own count: 2 draws, t(0.95, 1) = 6.31 standard deviations x sqrt(1 + 1/2); 4,
    2.35 x sqrt(1 + 1/4); against 1.89 x sqrt(1 + 1/8) on 8). False without a band, an
    interval, or two finite answers (no standard deviation)."""
    if term is None or not term.gain_sigma > 0 or ends is None or len(values) < 2:
        return False
    band = term.difference(nominal, [nominal, nominal], top)
    return band is not None and band[0] <= ends[0] and ends[1] <= band[1]


def _beyond_band(
    draws: DrawnPoints,
    load: Load,
    choice: LoadChoice,
    points: dict[int, PolicyPoint],
    objective: str,
    term: ModelErrorTerm | None,
) -> list[tuple[Load, Any]]:
    """The keys at ``load`` (each contender's and the best's) whose draws run so far
    give an interval reaching beyond the band (``inside_band``): those whose next stage
    ``input_ties`` runs, asked before it in one batch for every load (``select``)."""
    best, levels = choice.best, choice.levels
    top = abs(levels[best].mean)
    higher = METRICS[objective].higher_is_better

    def pair(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return paired_difference(a, b, higher)

    out: list[tuple[Load, Any]] = []
    for k in _drawn_ks(choice, term)[1:]:
        keys = [(load, FixedK(k)), (load, FixedK(best))]
        if _next_stage(draws, keys) is None:
            continue  # every draw has run both
        nominal = difference(points[k], points[best], objective)
        own = paired_difference(*paired_values(points[k], points[best], objective), higher)
        drawn = draws.shifts(keys, objective, pair, nominal.mean, own)
        values = [float(v) for v in drawn if not np.isnan(v)]
        if not inside_band(values, interval90(values, nominal.ci95), nominal.mean, term, top):
            out += keys
    return out


def input_ties(
    draws: DrawnPoints,
    load: Load,
    choice: LoadChoice,
    points: dict[int, PolicyPoint],
    objective: str,
    term: ModelErrorTerm | None = None,
) -> LoadChoice:
    """``choice`` with the k tied with the best inside the 90% interval from inputs and
    model (sim/studies/serving/draws.py) of their paired difference k - best: the
    contenders (``CONTENDER_SHARE``) and the best in every draw, each draw's difference
    the nominal one moved by the paired shift, 5-95% over the draws joined with the
    difference's 95% interval; a k whose interval reaches 0 is a tie. ``term``: the
    intervals also hold the model's error of the ratio k / best at the load's decode
    batch (sim/uncertainty/model_error.py, the gains' term: two policies on one
    server), and a k within that band of the best is a contender too. Sequential draws
    run in stages (``draw_stages``): the first 2, then 4, then all 8, each next stage
    only for a difference whose interval from the draws run reaches beyond that band
    (``inside_band``)."""
    best, levels = choice.best, choice.levels
    top = abs(levels[best].mean)
    contenders = _drawn_ks(choice, term)[1:]
    draws.ensure([(load, FixedK(k)) for k in [best, *contenders]], draw_stages(draws)[0])
    higher = METRICS[objective].higher_is_better

    def pair(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return paired_difference(a, b, higher)

    intervals: dict[int, list[float] | None] = {}
    held: dict[int, IntervalSources] = {}
    for k in contenders:
        keys = [(load, FixedK(k)), (load, FixedK(best))]
        a_pt, b_pt = points[k], points[best]
        while True:  # the nominal points in full where a draw or an end is near 0
            nominal = difference(a_pt, b_pt, objective)
            own = paired_difference(*paired_values(a_pt, b_pt, objective), higher)
            drawn = draws.shifts(keys, objective, pair, nominal.mean, own)

            def joined(ends: list[float] | None, mean: float = nominal.mean) -> list[float] | None:
                return ends if term is None else term.difference(mean, ends, top)

            if draws.settle(keys, None, drawn, own, nominal.ci95, objective, pair, joined):
                continue  # sequential draws: their other replications ran
            values = [float(v) for v in drawn if not np.isnan(v)]
            ends = interval90(values, nominal.ci95)
            stage = _next_stage(draws, keys)
            if stage is not None and not inside_band(values, ends, nominal.mean, term, top):
                draws.ensure(keys, stage)  # the next draws: those run so far are not enough
                continue
            reached = np.array([*values, *(ends or ())])  # the draws and the interval's ends
            sigma = 0.0 if term is None else term.gain_sigma * top  # the band, in the units
            if not (near(reached, own, 0.0, sigma) and draws.evaluator.complete(keys)):
                break
            a_pt, b_pt = (draws.evaluator(*key) for key in keys)
        intervals[k] = ends if term is None else term.difference(nominal.mean, ends, top)
        sources = sources90(len(values), nominal.ci95, draws.uncertain)
        if sources is not IntervalSources.INPUTS:
            held[k] = sources
    tied_inputs = tuple(k for k, iv in intervals.items() if iv is not None and iv[1] >= 0.0)
    return replace(
        choice,
        tied_by_inputs=tied_inputs,
        interval90=intervals,
        sources=held,
        model_error=None if term is None else term.doc(),
    )


def first_draws_note(draws: DrawnPoints | None, choices: Sequence[LoadChoice]) -> tuple[str, ...]:
    """The assumption for the selection's differences whose interval stopped at an early
    stage of the draws (``draw_stages``, ``inside_band``); none: nothing."""
    stages = None if draws is None else draw_stages(draws)
    if draws is None or stages is None or len(stages) < 2:
        return ()
    accepted = sum(1 for got in draws.points if got is not None)
    stopped: dict[int, list[str]] = {}
    for c in choices:
        for k in c.interval90 or {}:
            key = (Load("concurrency", c.users), FixedK(k))
            ran = sum(1 for got in draws.points if got is not None and key in got)
            if 0 < ran < accepted:
                stopped.setdefault(ran, []).append(
                    f"k = {k} at {c.users} user{'' if c.users == 1 else 's'}"
                )
    if not stopped:
        return ()
    ends = ", ".join(str(stage.stop) for stage in stages)
    return (
        f"draws: each difference's interval from inputs and model runs the draws in "
        f"stages ({ends} of the {len(draws.draws)}: each a balanced net of the inputs of "
        f"its own) and the next stage only where the draws run so far give a 90% interval "
        f"(their 5-95% and normal prediction interval, Student's t on their count, joined "
        f"with the nominal's Monte Carlo 95%) reaching beyond the difference's model-error "
        f"band; elsewhere the interval is the band, which holds theirs, and more draws "
        f"cannot narrow it: "
        + "; ".join(f"on {n} draws: {', '.join(names)}" for n, names in sorted(stopped.items())),
    )
