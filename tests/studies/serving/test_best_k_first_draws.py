"""best-k's selection draws in stages (sim/studies/serving/best_k_selection.py ``draw_stages``,
``inside_band``): the first 2 draws at every contender, then 4, then all 8, each next
stage only where the draws run so far give a 90% interval reaching beyond the
difference's model-error band. Where it stops, the interval is the band, which holds the
draws' own 90% interval, and it is the one all the draws give; where it does not, every
draw runs."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from sim.binding.bound import bind
from sim.model.model_error import GainParameterLaw
from sim.model.policy import FixedK
from sim.parallel import LocalExecutor
from sim.scenario.load import load_scenario
from sim.scenario.overrides import with_overrides
from sim.studies.serving.best_k import best_k
from sim.studies.serving.best_k_selection import LoadChoice, draw_stages, input_ties, inside_band
from sim.studies.serving.draw_intervals import interval90
from sim.studies.serving.draws import DrawnPoints
from sim.studies.serving.evaluator import PointEvaluator
from sim.studies.serving.paired_metrics import Load, PolicyPoint, level
from sim.studies.serving.scenario_plans import ScenarioPlans
from sim.uncertainty.model_error import ModelErrorTerm, TermOrigin
from sim.uncertainty.perturb import input_draws
from tests.conftest import ROOT

SERVING = ROOT / "scenarios" / "kimi-k25-8xpcie-eagle3-serving.toml"

LOAD = Load("concurrency", 8)
#: Each draw's move of k = 1 against k = 2 (tok/s per unit spread), in a Sobol-like order:
#: the first four span the range as the eight do.
OFFSETS = (-1.0, 1.0, -0.43, 0.43, -0.71, 0.71, -0.14, 0.14)


def _point(values) -> PolicyPoint:
    v = np.array(values, dtype=float)
    return PolicyPoint({"per_user_tok_s": v}, np.ones(v.size), {})


class _StagedDraws:
    """Draws whose points are given, two replications each (none runs a second):
    ``ensure`` makes the draws it is asked for visible and records which."""

    replications = 2
    uncertain = True  # draws of uncertain inputs (DrawnPoints.uncertain)
    shifts = DrawnPoints.shifts
    settle = DrawnPoints.settle

    def __init__(self, spread: float, sequential: bool = True) -> None:
        self.sequential = sequential
        self.all = [
            {
                (LOAD, FixedK(1)): _point([10.0 + spread * o, 10.1 + spread * o]),
                (LOAD, FixedK(2)): _point([10.2, 10.3]),
            }
            for o in OFFSETS
        ]
        self.draws = tuple(() for _ in self.all)
        self.points: list[dict] = [{} for _ in self.all]
        self.asked: list[list[int]] = []

    def ensure(self, keys, which=None, upto=None) -> None:
        which = list(range(len(self.all)) if which is None else which)
        self.asked.append(which)
        for i in which:
            for key in keys:
                self.points[i][key] = self.all[i][key]


def _term(gain_sigma: float) -> ModelErrorTerm:
    """A term whose gains' sigma is ``gain_sigma`` one unit of ln batch away: a ceiling
    of ``gain_sigma`` reached well within it (d0 1e-3: 1 - exp(-1000) is 1 in floats)."""
    law = GainParameterLaw(gain_sigma, 1e-3, 0.0, 0.0, 0.0)
    return ModelErrorTerm(0.0, law, TermOrigin.caller("test"), math.e, (1.0,))


def _ties(spread: float, gain_sigma: float, sequential: bool = True):
    points = {1: _point([10.0, 10.1, 10.0, 10.1]), 2: _point([10.2, 10.3, 10.2, 10.3])}
    levels = {k: level(p, "per_user_tok_s") for k, p in points.items()}
    choice = LoadChoice(8, levels, best=2, tied=())
    draws = _StagedDraws(spread, sequential)
    got = input_ties(draws, LOAD, choice, points, "per_user_tok_s", _term(gain_sigma))  # type: ignore[arg-type]
    return got, draws


def test_the_first_draws_stop_where_their_interval_lies_inside_the_band() -> None:
    """Band x/exp(1.645 x 0.1) on the ratio k1 / k2 (about -1.7 .. +1.6 tok/s around the
    -0.2 difference), draws spread +-0.3: the first four's interval lies inside it, the
    others never run, and the answer is the band, the one all eight give."""
    got, draws = _ties(0.3, 0.1)
    # the first two (-1 and +1 x 0.3) give t(0.95, 1) = 6.31 sd: beyond the band; the
    # first four's interval lies inside it
    assert draws.asked == [[0, 1], [2, 3]]
    ran = [i for i, p in enumerate(draws.points) if p]
    assert ran == [0, 1, 2, 3]
    term = _term(0.1)
    mean, top = -0.2, 10.25
    band = term.difference(mean, [mean, mean], top)
    assert got.interval90 is not None and got.interval90[1] == band
    # the band holds the first draws' own 90% interval (t on 3 degrees of freedom)
    values = [-0.2 + 0.3 * o for o in OFFSETS[:4]]
    own = interval90(values, None)
    assert own is not None and band is not None
    assert band[0] <= own[0] and own[1] <= band[1]
    # all eight at once (not sequential): the same interval
    every, all_draws = _ties(0.3, 0.1, sequential=False)
    assert all_draws.asked == [list(range(8))]
    assert every.interval90 == got.interval90
    assert got.tied_by_inputs == every.tied_by_inputs == (1,)


def test_two_draws_stop_where_their_interval_lies_inside_the_band() -> None:
    """Draws spread +-0.05 against the same band: the first two's 90% interval (t on one
    degree of freedom, 6.31 sd x sqrt(1 + 1/2)) lies inside it, no other draw runs, and
    the answer is the band, the one all eight give."""
    got, draws = _ties(0.05, 0.1)
    assert draws.asked == [[0, 1]]
    assert [i for i, p in enumerate(draws.points) if p] == [0, 1]
    values = [-0.2 + 0.05 * o for o in OFFSETS[:2]]
    own = interval90(values, None)
    band = _term(0.1).difference(-0.2, [-0.2, -0.2], 10.25)
    assert own is not None and band is not None
    assert band[0] <= own[0] and own[1] <= band[1]
    every, _ = _ties(0.05, 0.1, sequential=False)
    assert got.interval90 == every.interval90
    assert got.interval90 is not None and got.interval90[1] == band


@pytest.mark.parametrize("spread, gain_sigma", [(0.3, 0.005), (3.0, 0.1)])
def test_every_draw_runs_where_the_first_ones_reach_beyond_the_band(spread, gain_sigma) -> None:
    """A band narrower than the first draws' interval (or draws spread wider than the
    band): the other draws run, and the interval is the one all eight give."""
    got, draws = _ties(spread, gain_sigma)
    assert draws.asked == [[0, 1], [2, 3], [4, 5, 6, 7]]
    assert all(p for p in draws.points)  # every draw ran
    every, _ = _ties(spread, gain_sigma, sequential=False)
    assert got.interval90 == every.interval90
    band = _term(gain_sigma).difference(-0.2, [-0.2, -0.2], 10.25)
    assert got.interval90 is not None and band is not None
    assert got.interval90[1][0] < band[0] or got.interval90[1][1] > band[1]


def test_no_band_or_too_few_draws_never_stop_early() -> None:
    ends = [-0.5, 0.1]
    assert inside_band([-0.4, 0.0], ends, -0.2, _term(0.1), 10.25)
    assert not inside_band([-0.4], ends, -0.2, _term(0.1), 10.25)  # no standard deviation
    assert not inside_band([-0.4, 0.0], ends, -0.2, None, 10.25)
    assert not inside_band([-0.4, 0.0], ends, -0.2, _term(0.0), 10.25)
    assert not inside_band([-0.4, 0.0], None, -0.2, _term(0.1), 10.25)
    assert draw_stages(_StagedDraws(0.3, sequential=False)) == [range(8)]  # type: ignore[arg-type]
    assert draw_stages(_StagedDraws(0.3)) == [range(2), range(2, 4), range(4, 8)]  # type: ignore[arg-type]


def _short_best_k(workers: int):
    """best-k with sequential draws on the shipped serving scenario, short runs (two
    replications: the draws' stages at 1 and 64 users are the ones four give, at half the
    cost)."""
    sc = with_overrides(
        load_scenario(SERVING), {"workload.requests": 16, "simulation.replications": 2}
    )
    builder = replace(ScenarioPlans.of(sc), sampled=input_draws(bind(sc), seed=5))
    ev = PointEvaluator(builder, replications=2, seed=5, executor=LocalExecutor(workers))
    draws = DrawnPoints(ev, builder.draws, sequential=True)
    return best_k(ev, [1, 64], [2, 3], draws=draws, refine=False), draws


def test_the_first_draws_stop_where_the_band_is_wide_and_every_draw_runs_where_none() -> None:
    """Where the band is wide (64 users) some difference stops at the first draws
    and the document names it; where there is none (1 user, a measured batch) every
    draw runs."""
    one, draws = _short_best_k(1)
    counts = {
        key: sum(1 for got in draws.points if got is not None and key in got)
        for got in draws.points
        if got
        for key in got
    }
    accepted = sum(1 for got in draws.points if got is not None)
    assert set(counts.values()) <= {2, 4, accepted} and min(counts.values()) < accepted
    assert all(n == accepted for (load, _), n in counts.items() if load.value == 1)
    assert any("runs the draws in stages (2, 4, 8 of the 8" in a for a in one.assumptions)


@pytest.mark.slow  # two best-k with draws, one on a pool (tests/studies/serving/
# test_sequential_draws.py's fast tests run subsets of draws on 2 workers)
def test_the_first_draws_give_the_same_document_at_one_and_two_workers() -> None:
    """The previous test's best-k gives the same document at 1 and 2 workers."""
    assert _short_best_k(1)[0].to_dict() == _short_best_k(2)[0].to_dict()


class _Probed:
    """Draws at one stage's end: the first two ran both points on two replications (their
    probes measured), the best alone ran the third on one (another contender's stage)."""

    replications = 2
    sequential = True
    settle = DrawnPoints.settle
    differences = DrawnPoints.differences

    def __init__(self) -> None:
        k1, k2 = (LOAD, FixedK(1)), (LOAD, FixedK(2))
        self.draws = tuple(() for _ in OFFSETS)
        self.points: list[dict] = [{} for _ in OFFSETS]
        for i in (0, 1):
            self.points[i] = {k1: _point([10.0, 10.1]), k2: _point([10.2, 10.3])}
        self.points[2] = {k2: _point([10.2])}
        self.asked: list[list[int]] = []

    def ensure(self, keys, which=None, upto=None) -> None:
        self.asked.append(list(which or []))


def test_a_comparison_settles_on_the_draws_that_ran_both_its_points() -> None:
    """A draw where only one point of the comparison ran (the best, for another contender's
    next stage) is not one of its draws: nothing runs there for it, and its probes are
    read on the draws that ran both."""
    draws = _Probed()
    keys = [(LOAD, FixedK(1)), (LOAD, FixedK(2))]
    drawn = np.array([-0.2, -0.2, *[np.nan] * 6])
    own = np.array([-0.2, -0.2, -0.2, -0.2])

    def pair(a, b):
        return a - b

    assert not draws.settle(keys, None, drawn, own, None, "per_user_tok_s", pair)  # type: ignore[arg-type]
    assert draws.asked == []
