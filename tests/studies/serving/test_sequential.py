"""Sequential replications: a point stops at its first replications only where the
comparisons it enters are settled, continues the same seed otherwise, and the answer
does not depend on the worker count."""

from __future__ import annotations

import numpy as np
import pytest

from sim.model.policy import FixedK
from sim.parallel import LocalExecutor
from sim.simulation.serving.metrics import SloSpec
from sim.studies.serving.capacity import capacity, completed_draws
from sim.studies.serving.capacity_ratio import _jackknife_crossings
from sim.studies.serving.crossover import crossover, load_grid
from sim.studies.serving.evaluator import BASELINE, PointEvaluator, PointTask, run_point
from sim.studies.serving.paired_metrics import Load, PolicyPoint, gain, level
from sim.studies.serving.sequential import FIRST, SETTLED_SE, GainsAgainst, Pairs, settled
from tests.studies.serving.helpers import CodePlans


def test_a_mean_is_settled_beyond_four_standard_errors_of_the_reference():
    v = np.array([1.10, 1.12, 1.08, 1.11])
    se = v.std(ddof=1) / 2.0
    assert settled(v, 1.0)  # 0.1 from 1, se ~0.009
    assert not settled(v, float(v.mean()) - 0.99 * SETTLED_SE * se)
    assert settled(v, float(v.mean()) - 1.01 * SETTLED_SE * se)
    assert not settled(np.array([1.1]), 1.0)  # one value: no standard error
    assert not settled(np.array([1.1, np.nan, 1.2]), 1.0)
    assert settled(np.ones(4), 0.9) and not settled(np.ones(4), 1.0)  # a plateau


def evaluator(replications: int, workers: int = 1, rule=None, first: int = 3) -> PointEvaluator:
    return PointEvaluator(
        CodePlans(),
        replications=replications,
        seed=7,
        executor=LocalExecutor(workers, keep_pool=True),
        rule=rule,
        first=first,
    )


def test_a_point_continued_is_the_point_run_at_once():
    never = Pairs("per_user_tok_s", ())  # pairs nothing: never settled, always continued
    load = Load("concurrency", 4)
    keys = [(load, FixedK(3)), (load, BASELINE)]
    seq, whole = evaluator(5, rule=never), evaluator(5)
    seq.ensure(keys)
    whole.ensure(keys)
    for key in keys:
        a, b = seq.memo[key], whole.memo[key]
        assert a.replications == b.replications == 5
        for m, v in a.values.items():
            np.testing.assert_array_equal(v, b.values[m])
        np.testing.assert_array_equal(a.mean_batch, b.mean_batch)


def test_a_step_cut_into_blocks_on_two_workers_is_the_point_run_whole():
    """A bisection step's pair runs as blocks of replications on the pool together (kept
    samples too); merged in order they are each point run in one process."""
    load = Load("concurrency", 4)
    keys = [(load, FixedK(3)), (load, BASELINE)]
    whole, blocks = evaluator(5), evaluator(5, workers=2)
    for ev in (whole, blocks):
        ev.keep_samples.add(load)
        ev.ensure(keys, step=True)
    blocks.executor.close()
    for key in keys:
        a, b = blocks.memo[key], whole.memo[key]
        assert a.replications == b.replications == 5
        for m, v in a.values.items():
            np.testing.assert_array_equal(v, b.values[m])
        for m, v in a.samples.items():
            np.testing.assert_array_equal(v, b.samples[m])
        np.testing.assert_array_equal(a.mean_batch, b.mean_batch)


def test_far_from_the_crossing_a_pair_stops_and_near_it_runs_every_replication():
    # CodePlans: k = 3 pays ~1.2x at 1 user and stops paying near 22 users
    metrics = ("per_user_tok_s",)
    grid = load_grid("concurrency", [1, 8, 32])
    seq = evaluator(8, rule=None, first=4)
    result = crossover(seq, grid, [3], metrics=metrics)
    whole = evaluator(8)
    full = crossover(whole, grid, [3], metrics=metrics, sequential=False)
    (c,) = result.curves[0].crossings
    (f,) = full.curves[0].crossings
    assert c.bracket == f.bracket  # the same neighbouring user counts
    assert c.ci95_brackets == f.ci95_brackets
    counts = {key: p.replications for key, p in seq.memo.items()}
    one = Load("concurrency", 1)
    assert counts[(one, FixedK(3))] == counts[(one, BASELINE)] == 4  # gain ~1.2: settled
    for x in c.bracket:  # around the crossing: all 8
        assert counts[(Load("concurrency", x), FixedK(3))] == 8
    # every gain the study reports is paired on the replications both points ran
    for x, g in zip(result.curves[0].loads, result.curves[0].gain, strict=True):
        load = Load("concurrency", x)
        a, b = seq(load, FixedK(3)), seq(load, BASELINE)
        assert g == gain(a, b, "per_user_tok_s")
        if a.replications == 4:  # stopped: settled on its 4
            assert GainsAgainst(BASELINE, metrics)({FixedK(3): a, BASELINE: b}, FixedK(3))
    assert seq.replications_run < whole.replications_run
    assert "replications: sequential" in result.assumptions[-1]
    assert result.settings["replications_run"] == seq.replications_run


@pytest.mark.parametrize("metrics", [("aggregate_tok_s", "tpot_p50_ms")])
def test_results_do_not_depend_on_workers(metrics):
    grid = load_grid("concurrency", [1, 6, 24])
    one = crossover(evaluator(6, workers=1), grid, [2, 3], metrics=metrics)
    two = crossover(evaluator(6, workers=2), grid, [2, 3], metrics=metrics)
    assert one.to_dict() == two.to_dict()


def test_a_rate_settled_early_keeps_the_mean_of_its_own_replications_in_the_jackknife():
    # rate 0 passes in all 4 replications it ran (NaN: the 4 it did not); the jackknife
    # leaves each replication out of the rest as if the row were constant at 1.0
    att = np.array(
        [
            [1.0, 1.0, 1.0, 1.0, np.nan, np.nan],
            [0.95, 0.93, 0.96, 0.94, 0.92, 0.97],
            [0.7, 0.8, 0.75, 0.72, 0.78, 0.74],
        ]
    )
    logs = np.log([1.0, 2.0, 4.0])
    filled = np.where(np.isnan(att), 1.0, att)
    np.testing.assert_allclose(
        _jackknife_crossings(logs, att, 0.9), _jackknife_crossings(logs, filled, 0.9)
    )


class _ShiftedDraws:
    """Four draws of ``replications`` 2 whose attainment at a rate is the nominal's first
    two replications moved by ``shift(rate, nominal)``: nothing is simulated for them."""

    replications = 2

    def __init__(self, evaluator, rows, shift):
        self.evaluator, self.rows, self.shift = evaluator, rows, shift
        self.draws = ((),) * 4
        self.points = [{} for _ in self.draws]

    def ensure(self, keys, which=None):
        for d in range(4) if which is None else which:
            for load, policy in keys:
                nominal = self.rows[float(load.value)]
                values = nominal[:2] + self.shift(float(load.value), nominal)
                point = PolicyPoint({"slo_attainment": values}, np.ones(2), {})
                self.points[d].setdefault((load, policy), point)


def test_a_capacity_draw_near_the_share_at_a_stopped_rate_runs_its_other_replications():
    """Capacity with sequential replications: a rate settled on its first 4 (its
    attainment far from the share) that a draw lands on near the share runs its other
    replications (the rate run whole), and the draws read its full mean; rates no draw
    lands near keep their 4."""
    slo = SloSpec(tpot_ms=14.0)  # CodePlans: k = 3's capacity near 89 requests/s
    ev = PointEvaluator(CodePlans(), replications=6, seed=7, slo=slo)
    p = capacity(ev, [3], sequential=True).policies[1]
    rates = np.exp(p.log_rates)
    rows = {float(r): row for r, row in zip(rates, p.attainment, strict=True)}
    stopped = [r for r, row in rows.items() if np.isnan(row).any()]
    far = min(r for r in stopped if r > p.rate_per_s)  # attainment ~0.5: settled on 4
    assert far > p.rate_per_s and np.isfinite(rows[far]).sum() == FIRST

    def shift(rate: float, nominal: np.ndarray) -> float:
        # every draw passes up to the far rate and fails there within 4 of its standard
        # errors of the share
        return (0.95 if rate < far else 0.8) - np.nanmean(nominal)

    draws = _ShiftedDraws(ev, rows, shift)
    caps, done, extra = completed_draws(draws, p, 0.9)
    j = int(np.flatnonzero(rates == far)[0])
    whole = run_point(PointTask(CodePlans(), Load("rate", far), FixedK(3), 6, 7, slo))
    np.testing.assert_array_equal(done.attainment[j], whole.values["slo_attainment"])
    assert extra == 6 - FIRST
    assert np.isfinite(caps).all()
    for i, row in enumerate(done.attainment):  # the others as they were
        if i != j:
            np.testing.assert_array_equal(row, p.attainment[i])
    curve = {r: a for r, a, _ in done.curve}
    assert curve[far] == level(whole, "slo_attainment")
    # and without the draw near the share, nothing runs
    calm = _ShiftedDraws(ev, rows, lambda rate, nominal: 0.0)
    assert completed_draws(calm, p, 0.9)[2] == 0


class _MovedDraws:
    """Draws of ``replications`` 2 whose attainment at rate ``x`` (the nominal mean moved
    by the paired shift) is ``curve[x]`` moved by a constant of their own (``moves[d]``),
    recording the rates each ran."""

    replications = 2

    def __init__(self, evaluator, rows, curve, moves):
        self.evaluator, self.rows, self.curve, self.moves = evaluator, rows, curve, moves
        self.draws = ((),) * len(moves)
        self.points = [{} for _ in self.draws]
        self.ran = [set() for _ in self.draws]

    def ensure(self, keys, which=None):
        for d in range(len(self.draws)) if which is None else which:
            for load, policy in keys:
                rate = float(load.value)
                nominal = self.rows[rate]
                shift = self.curve[rate] + self.moves[d] - nominal.mean()
                values = nominal[:2] + shift
                self.points[d].setdefault(
                    (load, policy), PolicyPoint({"slo_attainment": values}, np.ones(2), {})
                )
                self.ran[d].add(rate)


def test_a_draw_searches_its_crossing_among_the_rates_tried_and_finds_the_walks():
    """Each draw's capacity lies between the two neighbouring rates tried where its
    attainment crosses the share: where that attainment falls with the rate, the pair a
    rate-by-rate walk outwards from the capacity ends on. Bracketing with the nominal
    curve moved by the draw's shift finds the same capacities on fewer rates."""
    slo = SloSpec(tpot_ms=14.0)  # CodePlans: k = 3's capacity near 89 requests/s
    ev = PointEvaluator(CodePlans(), replications=4, seed=7, slo=slo)
    p = capacity(ev, [3], sequential=False).policies[1]
    stable = [j for j, x in enumerate(p.log_rates) if np.exp(x) not in p.unstable_rates]
    logs = p.log_rates[stable]
    # the draws' curve: the nominal one made to fall with the rate (it wobbles by a few
    # hundredths on 24 requests), each draw moved by a constant
    falling = np.minimum.accumulate(p.attainment[stable].mean(axis=1))
    moves = np.linspace(-0.5, 0.5, 8)  # some draws cross far from the capacity
    curve = {float(np.exp(x)): float(a) for x, a in zip(logs, falling, strict=True)}
    rows = {float(np.exp(x)): row for x, row in zip(p.log_rates, p.attainment, strict=True)}
    draws = _MovedDraws(ev, rows, curve, moves)
    caps, _, extra = completed_draws(draws, p, 0.9)
    assert extra == 0  # every rate ran its 4
    start = int(np.searchsorted(logs, np.log(p.rate_per_s), side="right")) - 1
    walked = 0  # the rates a walk outwards from (start, start + 1) runs
    for d, move in enumerate(moves):
        a = falling + move
        passing = np.flatnonzero(a >= 0.9)
        last = int(passing[-1]) if passing.size else -1
        walked += 2 + max(0, last - start - 1, start - last - 1)
        if last < 0:
            assert caps[d] == -np.inf
        elif last == len(a) - 1:
            assert caps[d] == np.inf
        else:
            t = (a[last] - 0.9) / (a[last] - a[last + 1])
            x = logs[last] + t * (logs[last + 1] - logs[last])
            assert caps[d] == pytest.approx(np.exp(x), rel=1e-12)
    assert sum(len(r) for r in draws.ran) < walked


def test_a_form_that_is_a_fixed_k_at_the_load_is_settled_against_it_by_identity():
    """Pairs (best-k's check): one point under two names (the table drafting k = 3 at
    every batch the load reaches, evaluator.py ``same_point``) compares nothing, so the
    pair does not hold it back; two runs that happen to agree stay a comparison whose
    exact zeros never settle."""
    one = PolicyPoint({"per_user_tok_s": np.array([10.0, 10.2, 9.9, 10.1])}, np.ones(4), {})
    far = PolicyPoint({"per_user_tok_s": np.array([5.0, 5.1, 4.9, 5.2])}, np.ones(4), {})
    table, k3, k0 = "table", FixedK(3), BASELINE
    rule = Pairs("per_user_tok_s", ((table, k3), (table, k0)))
    aliased = {table: one, k3: one, k0: far}
    assert rule(aliased, table) and rule(aliased, k3) and rule(aliased, k0)
    copied = {table: one, k3: PolicyPoint(dict(one.values), one.mean_batch, {}), k0: far}
    assert not rule(copied, table) and not rule(copied, k3) and rule(copied, k0)


def test_the_rule_is_asked_once_for_each_state_of_the_points_at_a_load():
    """A study reads a point many times; the rule's answer depends only on the points at
    its load and their replications, so it is asked again only when they change."""
    calls: list[object] = []
    inner = GainsAgainst(BASELINE, ("per_user_tok_s",))

    def counted(points, policy):
        calls.append(policy)
        return inner(points, policy)

    ev = evaluator(8, rule=counted, first=4)
    one = Load("concurrency", 1)  # k = 3 pays ~1.2x at 1 user: settled on its first 4
    keys = [(one, FixedK(3)), (one, BASELINE)]
    ev.ensure(keys)
    assert len(calls) == 2 and ev.memo[keys[0]].replications == 4
    for _ in range(3):  # read again: the same points, nothing asked
        ev.ensure(keys)
    assert len(calls) == 2
    ev.ensure([(one, FixedK(2))])  # a new point at the load: the rule is asked again
    assert len(calls) == 3
    ev.ensure(keys)  # ... and for the others, whose pairs now include it
    assert len(calls) == 5
    ev.complete(keys)  # the points grew: answers are asked again (complete ones not)
    ev.ensure([*keys, (one, FixedK(2))])
    assert len(calls) == 6 and ev.memo[(one, FixedK(2))].replications == 4
