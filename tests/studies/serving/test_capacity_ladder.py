"""The draws' rate ladder of ``capacity`` (sim/studies/serving/capacity_ladder.py
``completed_draws``): each draw's capacity is its crossing of the share between two
neighbouring ladder rates, read on its own attainment there (the nominal mean moved by
its paired shift), whatever rates the nominal search tried."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

from sim.model.policy import FixedK
from sim.simulation.serving.metrics import SloSpec
from sim.studies.serving.capacity_ladder import completed_draws
from sim.studies.serving.capacity_result import PolicyCapacity
from sim.studies.serving.capacity_search import (
    LADDER_STEP,
    CapacitySearch,
    ladder_index,
    policy_capacity,
)
from sim.studies.serving.evaluator import PointEvaluator
from sim.studies.serving.paired_metrics import Load, PolicyPoint, level
from sim.studies.serving.point_tasks import PointTask, run_point
from sim.studies.serving.sequential import FIRST, Share
from tests.studies.serving.helpers import CodePlans

SLO = SloSpec(tpot_ms=14.0)  # CodePlans: k = 3's capacity near 89 requests/s
SHARE = 0.9


class _CurveDraws:
    """Draws of 2 replications whose attainment at log rate x, shifted against the
    nominal's (``nominal``, the evaluator ``completed_draws`` runs it on), is
    ``curves[d](x)`` exactly (plus ``moved(x, nominal mean)`` when given): nothing is
    simulated for them. Records the rates each ran, and (``order``) every (draw, log
    rate) in the order run."""

    replications = 2

    def __init__(self, evaluator, nominal, curves):
        self.evaluator, self.nominal, self.curves = evaluator, nominal, curves
        self.draws = ((),) * len(curves)
        self.points = [{} for _ in self.draws]
        self.ran = [set() for _ in self.draws]
        self.order = []

    def ensure_pairs(self, pairs):
        for d, keys in pairs:
            self.ensure(keys, [d])

    def ensure(self, keys, which=None):
        for d in range(len(self.draws)) if which is None else which:
            for load, policy in keys:
                ran = self.nominal.memo.get((load, policy))
                own = None if ran is None else ran.values["slo_attainment"]
                x = math.log(float(load.value))
                # the shifted value nominal mean + mean(draw - own[:2]) is curves[d](x)
                # where the nominal ran, else the draw's own mean (or the draw's
                # replications themselves, when it gives them, or a function of the
                # nominal's replications there giving them)
                got = self.curves[d](x)
                if callable(got):
                    got = got(own)
                if isinstance(got, np.ndarray):
                    values = got
                elif own is None:
                    values = np.full(2, float(got))
                else:
                    values = own[:2] + (got - np.mean(own))
                point = PolicyPoint({"slo_attainment": values}, np.ones(2), {})
                self.points[d].setdefault((load, policy), point)
                self.ran[d].add(x)
                self.order.append((d, x))


@functools.cache
def _search(replications: int, sequential: bool) -> PolicyCapacity:
    """k = 3's search (sequential: with capacity's rule), run once per module."""
    rule = Share("slo_attainment", SHARE) if sequential else None
    ev = PointEvaluator(CodePlans(), replications=replications, seed=7, slo=SLO, rule=rule)
    return policy_capacity(ev, 3, SHARE, hint_per_s=30.0, rtol=0.02)


def _searched(replications: int, sequential: bool = False):
    """(an evaluator for the draws, k = 3's search, a fresh nominal evaluator)."""
    ev = PointEvaluator(CodePlans(), replications=replications, seed=7, slo=SLO)
    rule = Share("slo_attainment", SHARE) if sequential else None
    nominal = PointEvaluator(CodePlans(), replications=replications, seed=7, slo=SLO, rule=rule)
    return ev, _search(replications, sequential), nominal


def _draws(draws, p, nominal, sequential: bool = False):
    """``completed_draws`` with the search taken up again on ``nominal``."""
    search = CapacitySearch.of(p, nominal, SHARE)
    return completed_draws(draws, p, SHARE, sequential, search=search)


def _stopped(p: PolicyCapacity, replications: int, above: int = 1):
    """(j, its log rate, its point): the first ladder place at least ``above`` over the
    one at or below ``p``'s capacity where the nominal search (with capacity's rule)
    ran and stopped at its first replications (the draws read the nominal only at the
    rates it ran)."""
    start = math.floor(ladder_index(math.log(p.rate_per_s), p.origin_log_rate))
    for x, pt in zip(p.log_rates.tolist(), p.points, strict=True):
        j = ladder_index(x, p.origin_log_rate)
        if abs(j - round(j)) > 1e-6 or round(j) < start + above or pt is None:
            continue
        if pt.replications == FIRST:
            return round(j), x, pt
    raise AssertionError("no ladder rate above the capacity stops at its first replications")


def _stopped_whole(replications: int):
    """(an evaluator for the draws, k = 3's sequential search, the log rate of the first
    ladder place above its capacity where the nominal stops at its first replications,
    every replication's attainment there run whole)."""
    ev, p, _ = _searched(replications, sequential=True)
    _, x_far, _ = _stopped(p, replications)
    load = Load("rate", math.exp(x_far))
    whole = run_point(PointTask(CodePlans(), load, FixedK(3), replications, 7, SLO))
    return ev, p, x_far, whole.values["slo_attainment"]


def test_a_straight_curve_is_interpolated_exactly_between_two_neighbouring_ladder_rates():
    """Attainment linear in log rate: the interpolated crossing is the exact one, its
    bracket two neighbouring ladder rates, for draws crossing well below and above the
    nominal capacity (-30% to +50%)."""
    ev, p, nominal = _searched(2)
    origin = p.origin_log_rate
    crossings = math.log(p.rate_per_s) + np.linspace(-0.35, 0.4, 6)

    def straight(c: float):
        return lambda x: SHARE - 2.0 * (x - c)

    draws = _CurveDraws(ev, nominal, [straight(c) for c in crossings])
    caps, done, extra = _draws(draws, p, nominal)
    np.testing.assert_allclose(np.log(caps), crossings, rtol=0, atol=1e-12)
    for d, c in enumerate(crossings):
        j = math.floor(ladder_index(c, origin))
        steps = {round(ladder_index(x, origin), 6) for x in draws.ran[d]}
        assert {j, j + 1} <= steps  # the two neighbouring ladder rates around it
        assert all(s == round(s) for s in steps)  # every rate it ran is a ladder rate
    # the nominal ran nowhere new: the draws read their own attainment at the ladder
    # rates the search had not tried; the policy's capacity and 95% interval are the
    # search's
    assert extra == 0 and np.array_equal(done.log_rates, p.log_rates)
    assert done.rate_per_s == p.rate_per_s and done.ci95 == p.ci95
    assert list(done.log_rates) == sorted(done.log_rates)


def test_a_draws_capacity_lies_within_one_ladder_step_of_a_fine_grid_reference():
    """A smooth falling curve (logistic in log rate) per draw: its crossing found on a
    grid 8 times finer than the ladder (which holds the ladder's rates) and the
    ladder's both lie in the same bracket of neighbouring ladder rates, since the curve
    falls between them: they differ by at most one ladder step in log rate (and so does
    the true crossing)."""
    ev, p, nominal = _searched(2)
    origin = p.origin_log_rate
    centres = math.log(p.rate_per_s) + np.linspace(-0.3, 0.45, 7)
    widths = np.linspace(0.05, 0.25, 7)

    def logistic(c: float, w: float):
        return lambda x: 1.0 / (1.0 + math.exp((x - c) / w))

    curves = [logistic(c, w) for c, w in zip(centres, widths, strict=True)]
    draws = _CurveDraws(ev, nominal, curves)
    caps, _, _ = _draws(draws, p, nominal)
    fine = LADDER_STEP / 8
    for d, (c, w) in enumerate(zip(centres, widths, strict=True)):
        grid = origin + fine * np.arange(
            math.floor((c - 1.0 - origin) / fine), math.ceil((c + 1.0 - origin) / fine)
        )
        a = np.array([curves[d](x) for x in grid])
        j = int(np.flatnonzero(a < SHARE)[0])
        t = (a[j - 1] - SHARE) / (a[j - 1] - a[j])
        reference = grid[j - 1] + t * fine
        truth = c + w * math.log(1.0 / SHARE - 1.0)
        assert abs(math.log(caps[d]) - reference) <= LADDER_STEP
        assert abs(math.log(caps[d]) - truth) <= LADDER_STEP
        assert abs(reference - truth) <= fine


def test_a_draw_near_the_share_at_a_stopped_ladder_rate_runs_its_other_replications():
    """Sequential replications: a nominal ladder rate settled on its first 4 (far from
    the share) that a draw lands on within 4 of its standard errors of the share runs its
    other replications (the rate run whole) and the draws read its full mean; draws far
    from the share there complete nothing."""
    ev, p, nominal = _searched(6, sequential=True)
    origin = p.origin_log_rate
    far, x_far, stopped = _stopped(p, 6)
    own = stopped.values["slo_attainment"]
    assert abs(0.8 - SHARE) <= 4 * own.std(ddof=1) / math.sqrt(own.size)  # near, at 0.8

    def step_down(x: float) -> float:  # passes below the far rate, 0.8 from it on
        return 0.95 if x < x_far - 1e-9 else 0.8

    draws = _CurveDraws(ev, nominal, [step_down] * 4)
    caps, done, extra = _draws(draws, p, nominal, sequential=True)
    assert np.all(np.isfinite(caps))
    at = {round(ladder_index(x, origin), 6): i for i, x in enumerate(done.log_rates)}
    whole = run_point(PointTask(CodePlans(), Load("rate", math.exp(x_far)), FixedK(3), 6, 7, SLO))
    np.testing.assert_array_equal(done.attainment[at[far]], whole.values["slo_attainment"])
    assert done.curve[at[far]][1] == level(whole, "slo_attainment")
    assert extra >= 6 - FIRST
    # draws that pass or fail by far complete nothing: every rate keeps what the rule ran
    _, _, calm_nominal = _searched(6, sequential=True)
    calm = _CurveDraws(ev, calm_nominal, [lambda x: 1.0 if x < x_far - 1e-9 else 0.0] * 4)
    _draws(calm, p, calm_nominal, sequential=True)
    key = (Load("rate", math.exp(x_far)), FixedK(3))
    assert calm_nominal.memo[key].replications == FIRST


def test_a_draw_side_is_open_within_the_move_the_other_replications_can_make():
    """``side_open``: open while |estimate - share| <= 4 beta s sqrt(1/n - 1/R) (the
    nominal mean's move from n replications to all R, scaled by the capped shift's
    beta); closed at n = R, for a draw the scenario rejects, and for a draw whose
    replications do not vary (beta 0) unless it sits on the share."""
    from sim.studies.serving.capacity_completion import side_open

    nominal = np.array([0.72, 0.64, 0.5, 0.45])
    drawn = nominal[:2] + 0.2  # varies as the nominal's first two: beta = 0.057 / 0.12
    s = float(nominal.std(ddof=1))
    beta = min(1.0, float(drawn.std(ddof=1)) / s)
    margin = 4 * beta * s * math.sqrt(1 / 4 - 1 / 10)
    assert side_open(SHARE + 0.99 * margin, nominal, drawn, SHARE, 10)
    assert side_open(SHARE - 0.99 * margin, nominal, drawn, SHARE, 10)
    assert not side_open(SHARE + 1.01 * margin, nominal, drawn, SHARE, 10)
    assert not side_open(SHARE - 1.01 * margin, nominal, drawn, SHARE, 10)
    assert not side_open(SHARE, nominal, drawn, SHARE, 4)  # every replication ran
    assert not side_open(math.nan, nominal, drawn, SHARE, 10)
    flat = np.array([1.0, 1.0])  # beta 0: the nominal's replications cannot move it
    assert not side_open(SHARE + 1e-9, nominal, flat, SHARE, 10)


def test_a_stopped_ladder_rate_grows_until_no_draw_side_is_open():
    """The nominal at a ladder rate stopped at its first 4 replications grows two at a
    time while a draw read there could still cross the share with the rest
    (``side_open``), and stops at the first count where none can: the count is the one
    the whole run's replications give, for draws placed at several distances from the
    share."""
    from sim.studies.serving.capacity_completion import capped_shift, side_open

    R = 10
    ev, p, x_far, full = _stopped_whole(R)
    counts = set()
    for below in np.linspace(0.01, 0.3, 12):
        level_far = SHARE - below

        def step_down(x: float, level_far: float = level_far) -> float | np.ndarray:
            if abs(x - x_far) < 1e-9:
                return level_far
            return np.ones(2) if x < x_far else np.zeros(2)  # beta 0: exactly 1 or 0

        # the draw's replications at x_far, as _CurveDraws makes them on the first 4
        drawn = full[:2] + (level_far - float(np.mean(full[:FIRST])))
        if capped_shift(full[:FIRST], drawn) >= SHARE:
            continue  # passes at x_far: its bracket ends above it
        want = next(
            n
            for n in range(FIRST, R + 1, 2)
            if not side_open(capped_shift(full[:n], drawn), full[:n], drawn, SHARE, R)
        )
        _, _, nominal = _searched(R, sequential=True)
        draws = _CurveDraws(ev, nominal, [step_down] * 2)
        _draws(draws, p, nominal, sequential=True)
        (ran,) = (
            pt.replications
            for (load, _), pt in nominal.memo.items()
            if math.isclose(float(load.value), math.exp(x_far), rel_tol=1e-9)
        )
        assert ran == want
        counts.add(want)
    assert FIRST in counts and R in counts and len(counts) >= 3  # stops early and grows


def test_a_draw_read_before_a_rate_grows_is_read_again_on_the_grown_nominal():
    """A draw that ran a ladder rate when the nominal there had stopped at its first 4
    replications keeps no value from those 4 once a later round's draw, near the share
    there, grows the rate: its attainment there is ``capped_shift`` on the nominal's
    replications at the end, and so is its capacity interpolated from it.

    Draw A passes (1.0) below the rate ``far`` and fails there (beta 1: it moves with
    the nominal mean); its bracket steps out by ``OUTWARD`` and halves (both ends 1.0 or
    0.0: no prediction) onto ``far`` within a few rounds. Draw B creeps up one ladder
    rate a round (just above the share: the prediction is its lower end) and reaches
    ``far`` rounds later, exactly on the share on 4 replications: its side is open and
    the nominal there grows."""
    from sim.studies.serving.capacity_completion import capped_shift

    R = 10
    ev, p, nominal = _searched(R, sequential=True)
    origin = p.origin_log_rate
    start = math.floor(ladder_index(math.log(p.rate_per_s), origin))
    far = _stopped(p, R, above=4)[0] - start  # well above the capacity
    spread = np.array([0.5, -0.5])  # s_drawn 0.71, above the nominal's: beta 1

    def place(x: float) -> int:
        return round(ladder_index(x, origin)) - start

    def a_curve(x: float):
        i = place(x)
        if i == far:
            return lambda own: 0.5 + spread
        return np.ones(2) if i < far else np.zeros(2)

    def b_curve(x: float):
        i = place(x)
        if i == far:  # capped_shift on the first 4: the share exactly
            return lambda own: SHARE - (np.mean(own) - np.mean(own[:2])) + spread
        return np.full(2, SHARE + 0.005) if i < far else np.zeros(2)

    draws = _CurveDraws(ev, nominal, [a_curve, b_curve])
    caps, done, _ = _draws(draws, p, nominal, sequential=True)
    ran = [(d, place(x)) for d, x in draws.order]
    assert ran.index((0, far)) < ran.index((1, far - 1))  # A ran far rounds before B
    places = {place(x): x for x in done.log_rates}
    key = (Load("rate", math.exp(places[far])), FixedK(3))
    full = nominal.memo[key].values["slo_attainment"]
    assert full.size > FIRST  # B grew the rate
    drawn = draws.points[0][key].values["slo_attainment"]
    below, above = origin + (start + far - 1) * LADDER_STEP, places[far]  # below: a new rate

    def interpolated(a_far: float) -> float:
        t = (1.0 - SHARE) / (1.0 - a_far)
        return math.exp(below + t * (above - below))

    now, then = capped_shift(full, drawn), capped_shift(full[:FIRST], drawn)
    assert caps[0] == pytest.approx(interpolated(now), rel=1e-12)
    assert abs(math.log(interpolated(then) / interpolated(now))) > 1e-4  # the test can fail


def test_a_draw_bracket_is_the_lowest_failing_rate_and_the_highest_passing_below():
    """``_bracket``: read afresh from a draw's values, the bracket the round-by-round
    narrowing gives (each round's rates inside the bracket before, ``_narrowed``), on
    random draws with non-monotone values; where a value changes side after the nominal
    grows, the bracket moves with it."""
    from sim.studies.serving.capacity_ladder import _bracket, _narrowed

    rng = np.random.default_rng(3)
    j_lo, j_hi = -20, 20
    for _ in range(300):
        values = {j: float(rng.uniform()) for j in range(j_lo, j_hi + 1)}
        seen: dict[int, float] = {}
        lo, hi = j_lo - 1, j_hi + 1
        while hi - lo > 1:
            inside = range(lo + 1, hi)
            got = rng.choice(inside, size=min(len(inside), int(rng.integers(1, 3))), replace=False)
            seen.update({int(j): values[int(j)] for j in got})
            lo, hi = _narrowed(lo, hi, [(int(j), values[int(j)] >= SHARE) for j in got])
            assert _bracket(seen, SHARE, j_lo, j_hi) == (lo, hi)
    seen = {0: 0.95, 4: 0.5, 2: 0.89, 3: 0.95}  # fails at 2: (0, 2)
    assert _bracket(seen, SHARE, j_lo, j_hi) == (0, 2)
    assert _bracket({**seen, 2: 0.91}, SHARE, j_lo, j_hi) == (3, 4)  # 2 now passes
    assert _bracket({**seen, 0: 0.89}, SHARE, j_lo, j_hi) == (j_lo - 1, 0)  # 0 now fails


def test_a_search_started_at_another_rate_finds_the_same_crossing_on_the_lattice():
    """``CapacitySearch.find(start_per_s)`` (a k's search started at plain decoding's
    capacity): it brackets from the ladder rate nearest the start in steps of log 2 / 8,
    every rate it tries on the lattice, and ends at the same crossing of the share to
    rtol as the search from the hint, from below and from above."""
    from sim.studies.serving.capacity_search import LATTICE

    _, p, _ = _searched(4, sequential=True)
    assert p.crossing
    for factor in (0.7, 1.0, 1.4):
        ev = PointEvaluator(
            CodePlans(), replications=4, seed=7, slo=SLO, rule=Share("slo_attainment", SHARE)
        )
        search = CapacitySearch(ev, 3, SHARE, 30.0, 0.02)
        search.find(factor * p.rate_per_s)
        j = round(ladder_index(math.log(factor * p.rate_per_s), search.origin))
        first = next(iter(search.rates.values()))  # the first rate it tried
        assert first == pytest.approx(search.origin + j * LADDER_STEP, abs=1e-12)
        assert search.value is not None
        assert abs(math.log(search.value / p.rate_per_s)) <= math.log1p(0.02) + 1e-12
        for x in search.rates.values():
            k = (x - search.origin) / LATTICE
            assert k == pytest.approx(round(k), abs=1e-6)


def test_the_ladder_is_the_searches_own_lattice():
    """Every rate the nominal search tried lies on the ladder's lattice refined to the
    bisection's last step (the hint plus dyadic fractions of log 2), so ladder rates it
    tried are read, not run again."""
    _, p, _ = _searched(2)
    finest = LADDER_STEP / 2 ** (6 - 4)
    for x in p.log_rates:
        k = (x - p.origin_log_rate) / finest
        assert k == pytest.approx(round(k), abs=1e-6)


@pytest.mark.slow  # about 30 s on the shared 2-core machine
def test_one_and_two_workers_give_the_same_document_with_draws():
    """The whole study with draws (the searches, the draws' ladders, the ends'
    bisections stopping inside the 90% interval) on one worker and on two: the same
    document, byte for byte."""
    import json
    from dataclasses import replace

    from sim.binding.bound import bind
    from sim.parallel import LocalExecutor
    from sim.studies.serving.capacity import capacity
    from sim.studies.serving.draws import DrawnPoints
    from sim.studies.serving.scenario_plans import ScenarioPlans
    from sim.uncertainty.perturb import input_draws
    from tests.studies.serving.helpers import small_scenario

    sc = small_scenario("workload.requests=6", "simulation.replications=5")
    builder = replace(ScenarioPlans.of(sc), sampled=input_draws(bind(sc), seed=5, draws=2))
    slo = SloSpec(tpot_ms=8.0)

    def run(executor: LocalExecutor) -> str:
        ev = PointEvaluator(builder, replications=5, seed=5, slo=slo, executor=executor)
        result = capacity(ev, [2], draws=DrawnPoints(ev, builder.draws))
        return json.dumps(result.to_dict(), sort_keys=True)

    with LocalExecutor(2, keep_pool=True) as two:
        doc = run(two)
    assert doc == run(LocalExecutor(1))
    assert "ladder" in doc and "stopped once its bracket lay inside" in doc


def test_a_draw_that_does_not_vary_with_the_nominal_keeps_its_own_attainment():
    """``capped_shift``: the paired shift (beta = 1) where the draw's replications vary
    at least as much as the nominal's; a draw whose replications all meet the SLO (1.0,
    1.0) reads 1.0 whatever the nominal's first replications (the full shift read 0.89
    there); between, beta = s_drawn / s_nominal, its value between the two."""
    from sim.studies.serving.capacity_completion import capped_shift
    from sim.studies.serving.draw_intervals import shifted

    nominal = np.array([0.72, 0.64, 0.5, 0.45, 0.55, 0.6, 0.5, 0.58, 0.52, 0.64])
    saturated = np.array([1.0, 1.0])
    assert capped_shift(nominal, saturated) == 1.0
    assert shifted(float(nominal.mean()), saturated, nominal[:2]) < SHARE
    varying = nominal[:2] + 0.1  # s_drawn 0.057 < s_nominal 0.082: beta 0.69
    wide = np.array([0.9, 0.6])
    assert capped_shift(nominal, wide) == pytest.approx(
        shifted(float(nominal.mean()), wide, nominal[:2]), abs=1e-12
    )
    got = capped_shift(nominal, varying)
    lo, hi = sorted((float(varying.mean()), shifted(float(nominal.mean()), varying, nominal[:2])))
    assert lo < got < hi


@pytest.mark.parametrize("start", [None, "plain"])
def test_the_default_tolerance_bisects_to_neighbouring_ladder_rates(start):
    """At ``DEFAULT_RTOL`` a search, from the hint or from another policy's capacity,
    stops once its bracket is two neighbouring ladder rates (every rate it tried on the
    ladder: nothing off it for the draws to skip), and its capacity is interpolated
    between them."""
    from sim.studies.serving.capacity_search import DEFAULT_RTOL

    ev = PointEvaluator(CodePlans(), replications=2, seed=7, slo=SLO)
    hint = 30.0
    search = CapacitySearch(ev, 3, SHARE, hint, DEFAULT_RTOL)
    search.find(None if start is None else hint * 2.7)
    p = search.result()
    places = [ladder_index(x, p.origin_log_rate) for x in p.log_rates.tolist()]
    assert all(abs(j - round(j)) < 1e-6 for j in places)
    j = math.floor(ladder_index(math.log(p.rate_per_s), p.origin_log_rate) + 1e-9)
    means = {round(i): float(np.mean(a)) for i, a in zip(places, p.attainment, strict=True)}
    assert means[j] >= SHARE > means[j + 1]


def test_a_stopped_ladder_rate_grows_only_while_the_move_exceeds_the_tolerance():
    """With a tolerance (``completion_tolerances``) the nominal at a stopped ladder rate
    stops growing at the first count where no open draw's capacity could move by more
    than it (``capacity_move``: beta s sqrt(1/n - 1/R) over the nominal's fall across its
    capacity), before the count ``side_open`` alone gives; a tolerance of 0 is that
    rule."""
    from sim.studies.serving.capacity_completion import (
        capacity_move,
        capped_shift,
        nominal_fall,
        side_open,
    )

    R = 10
    ev, p, x_far, full = _stopped_whole(R)
    level_far = SHARE - 0.01
    drawn = full[:2] + (level_far - float(np.mean(full[:FIRST])))

    def step_down(x: float) -> float | np.ndarray:
        if abs(x - x_far) < 1e-9:
            return level_far
        return np.ones(2) if x < x_far else np.zeros(2)

    _, _, probe = _searched(R, sequential=True)
    fall = nominal_fall(CapacitySearch.of(p, probe, SHARE), math.log(p.rate_per_s))
    assert fall > 0

    def open_at(n: int, tol: float) -> bool:
        got = full[:n]
        if not side_open(capped_shift(got, drawn), got, drawn, SHARE, R):
            return False
        return not (tol > 0 and capacity_move(got, drawn, R, fall) <= tol)

    counts = range(FIRST, R + 1, 2)
    moves = [capacity_move(full[:n], drawn, R, fall) for n in counts]
    assert moves == sorted(moves, reverse=True) and moves[-1] == 0.0
    tol = (moves[0] + moves[1]) / 2  # met at FIRST + 2, not at FIRST
    ran = {}
    for t in (0.0, tol):
        want = next(n for n in counts if not open_at(n, t))
        _, _, nominal = _searched(R, sequential=True)
        draws = _CurveDraws(ev, nominal, [step_down] * 2)
        completed_draws(
            draws, p, SHARE, True, search=CapacitySearch.of(p, nominal, SHARE), tolerance=t
        )
        (ran[t],) = (
            pt.replications
            for (load, _), pt in nominal.memo.items()
            if math.isclose(float(load.value), math.exp(x_far), rel_tol=1e-9)
        )
        assert ran[t] == want
    assert ran[tol] == FIRST + 2 < ran[0.0]


def test_completion_tolerances_are_a_quarter_of_the_tightest_model_error_sigma():
    """Each policy's tolerance is a quarter of the smaller of its capacity's sigma and
    its gain's (the wider of its term and plain decoding's) over sqrt(2); plain
    decoding's takes the tightest of the gains; without a term, 0 everywhere."""
    from types import SimpleNamespace

    from sim.studies.serving.capacity_completion import completion_tolerances

    def term(level: float, gain: float) -> SimpleNamespace:
        return SimpleNamespace(level_sigma=level, gain_sigma=gain)

    got = completion_tolerances([term(0.2, 0.1), term(0.3, 0.16), term(0.04, 0.05)])
    r2 = math.sqrt(2.0)
    assert got == pytest.approx([0.1 / r2 / 4, 0.16 / r2 / 4, 0.04 / 4], rel=1e-12)
    assert completion_tolerances([term(0.2, 0.1), None]) == [0.0, 0.0]


def test_a_draw_started_at_its_predicted_move_runs_the_rate_nearest_it_first():
    """``moves``: a draw starts at the one ladder rate nearest the nominal capacity moved
    by its predicted move, then runs one rate a round until its bracket is the two
    neighbouring ladder rates around its crossing; its capacity is the one found from
    anywhere (a straight curve: the exact crossing); a NaN move starts at the nominal
    capacity's rate. A prediction three steps high fails at its first rate, and no rate
    above it runs (a pair would have run the one above too)."""
    ev, p, nominal = _searched(2)
    origin, cap = p.origin_log_rate, math.log(p.rate_per_s)
    crossings = cap + np.linspace(-0.3, 0.35, 5)

    def straight(c: float):
        return lambda x: SHARE - 2.0 * (x - c)

    high = crossings[1] + 3 * LADDER_STEP  # its draw's predicted crossing, 3 steps high
    draws = _CurveDraws(ev, nominal, [straight(c) for c in [*crossings, crossings[1]]])
    moves = np.array([*(crossings[:-1] - cap), math.nan, high - cap])
    search = CapacitySearch.of(p, nominal, SHARE)
    caps, _, _ = completed_draws(draws, p, SHARE, search=search, moves=moves)
    np.testing.assert_allclose(np.log(caps), [*crossings, crossings[1]], rtol=0, atol=1e-12)
    ran = {
        d: [round(ladder_index(x, origin), 6) for dd, x in draws.order if dd == d]
        for d in range(len(draws.draws))
    }
    for d, c in [*enumerate(crossings[:-1]), (5, high)]:
        assert ran[d][0] == round(ladder_index(c, origin))
    assert all(len(set(r)) == len(r) for r in ran.values())  # no rate run twice
    for d, c in enumerate(crossings):  # the bracket's two rates
        j = math.floor(ladder_index(c, origin))
        assert {j, j + 1} <= set(ran[d])
    j = math.floor(ladder_index(crossings[1], origin))
    assert {j, j + 1} <= set(ran[5]) and max(ran[5]) == ran[5][0]
    assert ran[4][0] == math.floor(ladder_index(cap, origin) + 1e-9)


def test_plain_decoding_draws_start_at_the_move_of_their_service_bound():
    """``bound_moves``: each draw's ln(bound_d / bound) of the policy's service bound, the
    evaluator's ``bound`` on the draw's own plans (nothing simulated); None for plans
    without a scenario, whose draws then start at the nominal capacity's rate."""
    from dataclasses import replace

    from sim.binding.bound import bind
    from sim.studies.serving.capacity_draw_starts import bound_moves
    from sim.studies.serving.draws import DrawnPoints
    from sim.studies.serving.scenario_plans import BASELINE, ScenarioPlans
    from sim.uncertainty.perturb import InputDraws, input_draws
    from tests.studies.serving.helpers import small_scenario

    sc = small_scenario("workload.requests=6", "simulation.replications=2")
    builder = replace(ScenarioPlans.of(sc), sampled=input_draws(bind(sc), seed=5, draws=3))
    ev = PointEvaluator(builder, replications=2, seed=5, slo=SLO)
    search = CapacitySearch(ev, 0, SHARE, 30.0, 0.02)
    got = bound_moves(DrawnPoints(ev, builder.draws), search)
    assert got is not None and got.shape == (3,)
    load = Load("rate", 30.0)
    for d, drawn in enumerate(builder.draws):
        own = PointEvaluator(
            replace(builder, drawn=drawn, sampled=InputDraws()), replications=2, seed=5
        )
        bound = own.bound(load, BASELINE)
        assert bound is not None
        assert got[d] == pytest.approx(math.log(bound.rate_per_s / search.bound), rel=1e-12)
    assert np.ptp(got) > 0  # the draws move the server's costs
    plain = PointEvaluator(CodePlans(), replications=2, seed=7, slo=SLO)
    assert (
        bound_moves(
            _CurveDraws(plain, plain, [lambda x: 1.0]), CapacitySearch(plain, 0, SHARE, 30.0, 0.02)
        )
        is None
    )


def test_a_ladder_rate_the_search_did_not_try_reads_the_draws_own_attainment():
    """A draw at a ladder rate the nominal search did not try reads its own
    replications' mean there (no nominal runs, no control variate); at a rate the search
    ran, the nominal mean moved by its paired shift (``capped_shift``). The draw's
    capacity is interpolated on those values."""
    from sim.studies.serving.capacity_completion import capped_shift

    R = 10
    ev, p, _ = _searched(R, sequential=True)
    _, _, nominal = _searched(R, sequential=True)
    origin, cap = p.origin_log_rate, math.log(p.rate_per_s)
    tried = {round(x, 9) for x in p.log_rates.tolist()}
    noisy = np.array([0.97, 0.81])  # its own mean 0.89: fails, where the nominal ran or not
    edge = cap + 0.3  # where the draw starts failing: above the rates the search tried

    def own(x: float) -> np.ndarray:
        return np.array([1.0, 1.0]) if x < edge - 1e-9 else noisy

    draws = _CurveDraws(ev, nominal, [own] * 2)
    caps, _, extra = _draws(draws, p, nominal, sequential=True)
    assert extra == 0
    assert all(round(math.log(float(load.value)), 9) in tried for load, _ in nominal.memo)
    ran = sorted(draws.ran[0])
    assert any(round(x, 9) not in tried for x in ran)  # it ran a rate the search did not
    j = math.floor(ladder_index(edge, origin) - 1e-9)
    lo, hi = (origin + i * LADDER_STEP for i in (j, j + 1))
    key = (Load("rate", math.exp(p.log_rates[np.argmin(abs(p.log_rates - hi))])), FixedK(3))
    if round(hi, 9) in tried:  # the nominal ran there: the shifted value
        a_hi = capped_shift(nominal.memo[key].values["slo_attainment"], noisy)
    else:
        a_hi = float(noisy.mean())
    t = (1.0 - SHARE) / (1.0 - a_hi)
    want = math.exp(lo + t * (hi - lo))
    assert caps[0] == pytest.approx(want, rel=1e-9)


def test_a_k_draws_start_at_the_move_of_the_policy_drawn_before_it():
    """``capacity_moves``: each draw's ln(cap_d / nominal) of the last policy drawn so far with a
    crossing (the next smaller k), skipping one without (no capacity, or a lower bound);
    None where no policy drawn so far has one."""
    from types import SimpleNamespace

    from sim.studies.serving.capacity_draw_starts import capacity_moves

    plain = SimpleNamespace(value=0.5, at_least=False)
    k1 = SimpleNamespace(value=0.8, at_least=False)
    capped = SimpleNamespace(value=2.0, at_least=True)
    caps = [np.array([0.4, 0.6, np.nan]), np.array([1.0, 0.64, np.inf])]
    got = capacity_moves(caps, [plain, k1, capped])
    np.testing.assert_allclose(got[:2], np.log([1.0 / 0.8, 0.64 / 0.8]), rtol=1e-12)
    assert got[2] == np.inf
    # the policy before has no crossing: the one before it
    got = capacity_moves([*caps, np.full(3, np.nan)], [plain, k1, capped, k1])
    np.testing.assert_allclose(got[:2], np.log([1.0 / 0.8, 0.64 / 0.8]), rtol=1e-12)
    none = SimpleNamespace(value=None, at_least=False)
    assert capacity_moves([caps[0]], [none]) is None
