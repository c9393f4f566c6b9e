"""Sequential replications: a point stops at its first replications only where the
comparisons it enters are settled, continues the same seed otherwise, and the answer
does not depend on the worker count."""

from __future__ import annotations

import numpy as np
import pytest

from sim.model.policy import FixedK
from sim.parallel import LocalExecutor
from sim.studies.serving.capacity_ratio import _jackknife_crossings
from sim.studies.serving.crossover import crossover, load_grid
from sim.studies.serving.draw_intervals import near
from sim.studies.serving.evaluator import PointEvaluator
from sim.studies.serving.paired_metrics import Load, PolicyPoint, gain
from sim.studies.serving.scenario_plans import BASELINE
from sim.studies.serving.sequential import (
    EARLY,
    FIRST,
    PRECISION_SHARE,
    SETTLED_SE,
    GainsAgainst,
    Leader,
    Pairs,
    describe,
    exact_tie,
    precise,
    settled,
    settled_se,
)
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


def test_on_fewer_values_the_bound_has_the_tail_four_standard_errors_have_on_four():
    """settled_se(n < FIRST): Student's t quantile with the two-sided tail of 4 standard
    errors with 3 degrees of freedom, checked against the closed-form t laws of 1 and 2
    degrees of freedom (P(|T_1| > x) = 1 - 2 atan(x) / pi, P(|T_2| > x) = 1 - x /
    sqrt(2 + x^2))."""
    from scipy.stats import t as student

    tail = 2.0 * float(student.sf(SETTLED_SE, FIRST - 1))
    x2, x3 = settled_se(2), settled_se(3)
    assert 1.0 - 2.0 * np.arctan(x2) / np.pi == pytest.approx(tail, rel=1e-9)
    assert 1.0 - x3 / np.sqrt(2.0 + x3 * x3) == pytest.approx(tail, rel=1e-9)
    assert settled_se(FIRST) == settled_se(10) == SETTLED_SE
    assert x2 > x3 > SETTLED_SE > float(student.ppf(0.975, 1)) / 4.0  # 95% on one side
    v = np.array([1.10, 1.11])
    se = v.std(ddof=1) / np.sqrt(2.0)
    assert not settled(v, float(v.mean()) - 0.99 * x2 * se)
    assert settled(v, float(v.mean()) - 1.01 * x2 * se)
    assert not settled(v, float(v.mean()) - 1.01 * SETTLED_SE * se)  # 4 is not enough on 2
    assert "2 (22.7 standard errors)" in describe(4, 10, (2,))


def evaluator(
    replications: int, workers: int = 1, rule=None, first: int = 3, early=()
) -> PointEvaluator:
    return PointEvaluator(
        CodePlans(),
        replications=replications,
        seed=7,
        executor=LocalExecutor(workers, keep_pool=True),
        rule=rule,
        first=first,
        early=early,
    )


def test_an_early_look_stops_a_settled_point_and_grows_the_others_look_by_look():
    """``early``: every point runs 2 first; a far comparison (k = 3 at 1 user, ~1.2x) stops
    there, a point whose comparisons never settle runs 2, then 4, then all, and its
    replications are those of the point run at once."""
    one = Load("concurrency", 1)
    keys = [(one, FixedK(3)), (one, BASELINE)]
    ev = evaluator(8, rule=GainsAgainst(BASELINE, ("per_user_tok_s",)), first=4, early=(2,))
    ev.ensure(keys)
    a, b = ev.memo[keys[0]], ev.memo[keys[1]]
    assert a.replications == b.replications == 2
    assert settled(a.values["per_user_tok_s"] / b.values["per_user_tok_s"], 1.0)
    grown: list[int] = []
    never = Pairs("per_user_tok_s", ())

    def counted(points, policy):
        grown.append(points[policy].replications)
        return never(points, policy)

    seq, whole = evaluator(8, rule=counted, first=4, early=(2,)), evaluator(8)
    seq.ensure(keys)
    whole.ensure(keys)
    assert sorted(set(grown)) == [2, 4]  # asked at each look
    for key in keys:
        assert seq.memo[key].replications == 8
        for m, v in seq.memo[key].values.items():
            np.testing.assert_array_equal(v, whole.memo[key].values[m])
    with pytest.raises(ValueError):
        evaluator(8, rule=never, first=4, early=(1,))


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


def test_a_point_completed_in_steps_is_the_point_run_at_once():
    """``complete(keys, upto)`` grows a stopped point to ``upto`` replications (at most
    all), continuing the seed: after each step the point is the first ``upto`` of the
    point run whole, and a point already there runs nothing."""
    always = Pairs("per_user_tok_s", ((FixedK(3), FixedK(3)),))  # compares nothing: stops
    load = Load("concurrency", 4)
    key = (load, FixedK(3))
    seq, whole = evaluator(8, rule=always, first=4), evaluator(8)
    seq.ensure([key])
    whole.ensure([key])
    assert seq.memo[key].replications == 4
    full = whole.memo[key].values["per_user_tok_s"]
    for upto, want, runs in ((6, 6, True), (6, 6, False), (99, 8, True)):
        assert seq.complete([key], upto=upto) is runs
        np.testing.assert_array_equal(seq.memo[key].values["per_user_tok_s"], full[:want])


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


def test_a_form_that_is_a_fixed_k_at_the_load_is_settled_against_it_by_identity():
    """Pairs (best-k's check): one point under two names (the table drafting k = 3 at
    every batch the load reaches, evaluator.py ``same_point``) compares nothing, so the
    pair does not hold it back; two runs that happen to agree stay a comparison whose
    exact zeros (``exact_tie``) are a tie and hold neither back; ``settled`` alone never
    settles them, and a pair that differs on one replication is a comparison again."""
    one = PolicyPoint({"per_user_tok_s": np.array([10.0, 10.2, 9.9, 10.1])}, np.ones(4), {})
    far = PolicyPoint({"per_user_tok_s": np.array([5.0, 5.1, 4.9, 5.2])}, np.ones(4), {})
    table, k3, k0 = "table", FixedK(3), BASELINE
    rule = Pairs("per_user_tok_s", ((table, k3), (table, k0)))
    aliased = {table: one, k3: one, k0: far}
    assert rule(aliased, table) and rule(aliased, k3) and rule(aliased, k0)
    copied = {table: one, k3: PolicyPoint(dict(one.values), one.mean_batch, {}), k0: far}
    assert rule(copied, table) and rule(copied, k3) and rule(copied, k0)
    assert not settled(np.zeros(4), 0.0)
    apart = one.values["per_user_tok_s"] + np.array([0.0, 0.0, 0.0, 1e-6])
    once = {table: one, k3: PolicyPoint({"per_user_tok_s": apart}, one.mean_batch, {}), k0: far}
    assert not rule(once, table) and not rule(once, k3) and rule(once, k0)


def test_an_exact_tie_is_exact_zeros_on_the_first_look_or_more():
    """``exact_tie``: every paired difference exactly 0 on EARLY or more values; one
    value, a difference of one ulp or a value that is not finite is not a tie."""
    assert exact_tie(np.zeros(EARLY)) and exact_tie(np.zeros(10)) and exact_tie(-np.zeros(3))
    assert not exact_tie(np.zeros(EARLY - 1))
    assert not exact_tie(np.array([0.0, np.nextafter(0.0, 1.0)]))
    assert not exact_tie(np.array([0.0, np.nan])) and not exact_tie(np.array([0.0, np.inf]))


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


def test_a_mean_is_precise_below_a_quarter_of_its_band() -> None:
    """``precise``: the standard error at most PRECISION_SHARE x the band's standard
    deviation, from FIRST values on; never without a band, on fewer values or on a value
    that is not finite."""
    v = np.array([1.00, 1.02, 0.98, 1.01])
    se = float(v.std(ddof=1)) / 2.0
    assert PRECISION_SHARE == 0.25
    assert precise(v, se / (0.99 * PRECISION_SHARE))
    assert not precise(v, se / (1.01 * PRECISION_SHARE))
    assert not precise(v, 0.0)  # a measured batch: no band, the settled rule alone
    assert not precise(v[:3], 1.0)  # fewer than FIRST values
    assert not precise(np.array([1.0, np.nan, 1.0, 1.0]), 1.0)
    # 4 values: the Monte Carlo 95% interval is then at most half the band's 90% one
    from scipy.special import stdtrit

    assert float(stdtrit(FIRST - 1, 0.975)) * PRECISION_SHARE < 0.5 * 1.6448536
    assert np.sqrt(1.0 + PRECISION_SHARE**2) < 1.031


def _point(values) -> PolicyPoint:
    v = np.asarray(values, dtype=float)
    return PolicyPoint({"per_user_tok_s": v}, np.full(v.size, 8.0), {})


def test_a_gain_within_its_band_stops_once_precise_and_not_before() -> None:
    """GainsAgainst with a band: a gain of 1.002 +- 0.004 never settles against 1, but is
    resolved once its standard error is within a quarter of the band (on ln g); a band
    too narrow, or none, holds it."""
    base = _point([100.0, 101.0, 99.0, 100.5])
    spec = _point([100.2, 101.5, 99.0, 100.9])
    gains = spec.values["per_user_tok_s"] / base.values["per_user_tok_s"]
    se = float(gains.std(ddof=1)) / 2.0 / float(gains.mean())
    points = {BASELINE: base, FixedK(2): spec}
    metrics = ("per_user_tok_s",)
    assert not GainsAgainst(BASELINE, metrics)(points, FixedK(2))
    wide = GainsAgainst(BASELINE, metrics, band=lambda pts: 1.01 * se / PRECISION_SHARE)
    narrow = GainsAgainst(BASELINE, metrics, band=lambda pts: 0.99 * se / PRECISION_SHARE)
    assert wide(points, FixedK(2)) and wide(points, BASELINE)
    assert not narrow(points, FixedK(2)) and not narrow(points, BASELINE)


def test_a_near_tie_stops_once_precise_against_the_band_of_the_ratio() -> None:
    """Leader with a band: the difference from the best is precise against the band of
    their ratio in the objective's units (sigma x the best's mean)."""
    best = _point([100.0, 102.0, 98.0, 101.0])
    other = _point([99.9, 101.8, 98.1, 100.8])
    d = other.values["per_user_tok_s"] - best.values["per_user_tok_s"]
    sigma = (
        float(d.std(ddof=1)) / 2.0 / PRECISION_SHARE / float(best.values["per_user_tok_s"].mean())
    )
    points = {FixedK(1): best, FixedK(2): other}
    assert not Leader("per_user_tok_s")(points, FixedK(2))
    assert Leader("per_user_tok_s", band=lambda pts: 1.01 * sigma)(points, FixedK(2))
    assert not Leader("per_user_tok_s", band=lambda pts: 0.99 * sigma)(points, FixedK(2))


def test_draws_near_the_reference_leave_a_precise_nominal_as_it_is() -> None:
    own = np.array([1.001, 0.999, 1.002, 0.998])
    drawn = np.array([1.0, 1.1])
    se = float(own.std(ddof=1)) / 2.0
    assert near(drawn, own, 1.0)
    assert near(drawn, own, 1.0, 0.99 * se / PRECISION_SHARE)
    assert not near(drawn, own, 1.0, 1.01 * se / PRECISION_SHARE)


def test_the_assumption_says_when_a_point_stops_on_its_band() -> None:
    assert "standard deviation of its model-error band" not in describe(4, 10)
    for early in ((), (2,)):
        assert "from 4 on, a comparison whose Monte Carlo standard error is at most 0.25" in (
            describe(4, 10, early, band=True)
        )
