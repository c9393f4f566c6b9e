"""Sequential draws (sim/studies/serving/draws.py ``DrawnPoints(sequential=True)``): a
draw keeps its first replication at a comparison where the second could move its answer
by at most a tenth of the comparison's 90% interval (``one_replication_enough``: the a
priori bound, or the one measured on the probe draws' two replications,
``measured_move``), and the intervals then agree with those of two replications
everywhere within that Monte Carlo error, for any worker count."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from sim.binding.bound import bind
from sim.model.model_error import Z90
from sim.model.policy import FixedK
from sim.parallel import LocalExecutor
from sim.scenario.load import load_scenario
from sim.scenario.overrides import with_overrides
from sim.studies.serving.best_k import best_k
from sim.studies.serving.crossover import crossover, load_grid
from sim.studies.serving.draw_intervals import (
    DRAW_NOISE_SHARE,
    NOISE_CONFIDENCE,
    band_joined,
    interval90,
    measured_move,
    one_replication_enough,
    paired_gain,
    probe_draws,
)
from sim.studies.serving.draws import DrawnPoints
from sim.studies.serving.evaluator import PointEvaluator
from sim.studies.serving.paired_metrics import Load, gain
from sim.studies.serving.scenario_plans import BASELINE, ScenarioPlans, gain_band
from sim.studies.serving.sequential import GainsAgainst
from sim.uncertainty.perturb import input_draws
from tests.conftest import ROOT

SERVING = ROOT / "scenarios" / "kimi-k25-8xpcie-eagle3-serving.toml"


def test_one_replication_is_enough_where_its_noise_is_small_against_the_interval() -> None:
    drawn = np.linspace(0.8, 1.2, 8)
    lo, hi = interval90(drawn.tolist(), None)

    def own(sd: float) -> np.ndarray:  # two replications with standard deviation ``sd``
        return 1.0 + np.array([-1.0, 1.0]) * sd / math.sqrt(2.0)

    # the move a second replication can make: sqrt(2) x the nominal's per-replication sd
    assert one_replication_enough(drawn, own(0.09 * (hi - lo) / math.sqrt(2.0)))
    large = own(0.11 * (hi - lo) / math.sqrt(2.0))
    assert not one_replication_enough(drawn, large)
    # a wide Monte Carlo interval widens the comparison's interval: the same noise is enough
    assert one_replication_enough(drawn, large, ci95=(0.0, 2.0))
    # too few values to say: never enough
    assert not one_replication_enough(np.array([1.0, np.nan]), large)
    assert not one_replication_enough(drawn, np.array([1.0]))
    assert DRAW_NOISE_SHARE == 0.1


def test_the_rule_bounds_the_move_of_the_second_replication() -> None:
    """The exact law behind the rule: a draw's answer on one replication is its answer
    plus noise e1; on two, plus (e1 + e2) / 2; the move (e2 - e1) / 2 has standard
    deviation sd(e) / sqrt(2) <= sqrt(2) s_nominal when sd(e) <= 2 s_nominal (e = draw -
    nominal on one seed, sd at most s_draw + s_nominal). Checked on 20,000 simulated
    pairs, perfectly anti-correlated (the worst case) and independent."""
    rng = np.random.default_rng(5)
    s = 0.3
    for rho in (-1.0, 0.0):
        z = rng.normal(size=(2, 20_000, 2))  # (replication, trial, draw / nominal)
        nom = s * z[..., 1]
        own = s * (rho * z[..., 1] + math.sqrt(1 - rho * rho) * z[..., 0])
        e = own - nom
        move = (e[1] - e[0]) / 2.0
        sd = float(move.std(ddof=1))
        se = sd / math.sqrt(2 * (move.size - 1))  # the standard error of a sample sd
        assert sd <= math.sqrt(2.0) * s + 4 * se


def test_the_measured_move_is_an_upper_bound_at_its_confidence() -> None:
    """``measured_move`` on m = 4 probe draws: the pooled chi-square bound on the move's
    standard deviation (sigma / sqrt(2), sigma the sd of a one-replication shift) lies
    below the truth in 1 - NOISE_CONFIDENCE of 20,000 sets of differences e1 - e2 ~
    N(0, 2 sigma^2), within 4 standard errors of a proportion."""
    rng = np.random.default_rng(11)
    sigma, trials, m = 0.7, 20_000, len(probe_draws(8))
    assert m == 4
    e = sigma * rng.normal(size=(trials, m, 2))
    below = np.mean([measured_move(x[:, 0] - x[:, 1]) < sigma / math.sqrt(2.0) for x in e])
    p = 1.0 - NOISE_CONFIDENCE
    assert abs(below - p) <= 4 * math.sqrt(p * (1 - p) / trials)
    # the formula: sqrt(S / (4 q)), q the 5% quantile of chi^2(4) (0.7107)
    d = np.array([0.1, -0.2, 0.3, 0.0])
    assert measured_move(d) == pytest.approx(math.sqrt(0.14 / (4 * 0.710723)), rel=1e-5)
    assert measured_move(np.array([0.1, np.nan])) == math.inf  # one difference: no bound


def test_the_measured_move_replaces_the_a_priori_bound_where_the_probes_ran() -> None:
    drawn = np.linspace(0.8, 1.2, 8)
    lo, hi = interval90(drawn.tolist(), None)
    noisy = 1.0 + np.array([-1.0, 1.0]) * 0.5 * (hi - lo)  # fails the a priori bound
    assert not one_replication_enough(drawn, noisy)
    q = 0.710723  # 5% quantile of chi^2(4): the move's bound is sqrt(4 d^2 / (4 q))
    small = np.full(4, 0.09 * (hi - lo) * math.sqrt(q))
    assert one_replication_enough(drawn, noisy, differences=small)
    assert not one_replication_enough(drawn, noisy, differences=small * 0.11 / 0.09)
    assert not one_replication_enough(drawn, noisy, differences=small[:1])  # one: no bound
    assert list(probe_draws(8)) == [0, 1, 2, 3] and list(probe_draws(2)) == [0, 1]


def _short(requests: int = 40, replications: int = 3, band: bool = True):
    """The shipped serving scenario, short runs; ``band``: with its gains' model-error
    term (False: the term off, so a comparison's 90% interval is its draws' alone)."""
    sets = {"workload.requests": requests, "simulation.replications": replications}
    if not band:
        sets["serving.model_error.gain_ceiling"] = 0.0
    sc = with_overrides(load_scenario(SERVING), sets)
    return replace(ScenarioPlans.of(sc), sampled=input_draws(bind(sc), seed=5))


def _crossover(
    sequential: bool, workers: int = 1, requests: int = 40, metrics=None, band: bool = True
):
    builder = _short(requests, band=band)
    ev = PointEvaluator(builder, replications=3, seed=5, executor=LocalExecutor(workers))
    draws = DrawnPoints(ev, builder.draws, sequential=sequential)
    grid = load_grid("concurrency", [1, 2, 4, 8])
    metrics = metrics or ["per_user_tok_s", "aggregate_tok_s"]
    result = crossover(ev, grid, [2], metrics=metrics, refine=False, draws=draws)
    return ev, draws, grid, result


@pytest.mark.slow  # about 20 s on the shared 2-core machine
def test_crossover_draws_keep_one_replication_where_it_settles_and_agree_with_two() -> None:
    """The shipped serving scenario, short runs: the sequential draws run fewer
    replications, say how many, and every draw's gain at the loads around the crossing is
    the one two replications give within 4 standard errors of the move (sqrt(2) x the
    nominal gain's per-replication sd); the crossings' 90% intervals agree within that
    error carried through the gain's slope across the cell (plus one user: users round
    up)."""
    _, seq, grid, one = _crossover(sequential=True)
    ev2, full, _, two = _crossover(sequential=False)
    ran = seq.points_by_replications()
    assert ran.get("1", 0) > 0
    assert seq.replications_run < full.replications_run == 2 * sum(ran.values())
    doc = one.to_dict()
    assert doc["draw_points_by_replications"] == ran
    assert any(a.startswith("draws: sequential") for a in doc["assumptions"])
    assert "draw_points_by_replications" not in two.to_dict()
    for c1, c2 in zip(one.curves, two.curves, strict=True):
        (x1,), (x2,) = c1.crossings, c2.crossings
        assert x1.at == x2.at  # the nominal answer is the same
        lo, hi = x1.bracket
        for x in (lo, hi):
            load = grid[0].at(x)
            spec, base = ev2(load, FixedK(2)), ev2(load, BASELINE)
            own = spec.values[c1.metric] / base.values[c1.metric]
            tol = 4 * math.sqrt(2.0) * float(np.std(own, ddof=1))
            g1 = seq.gains(load, 2, c1.metric)
            g2 = full.gains(load, 2, c1.metric)
            assert np.all(np.abs(g1 - g2) <= tol + 1e-12)
        g_lo, g_hi = (c2.gain[c2.loads.index(x)].mean for x in (lo, hi))
        slack = tol * (hi - lo) / abs(g_hi - g_lo) + 1.0
        for e1, e2 in zip(c1.interval90[0], c2.interval90[0], strict=True):
            assert (e1 is None) == (e2 is None)
            if e1 is not None:
                assert abs(e1 - e2) <= slack


@pytest.mark.slow  # about 30 s on the shared 2-core machine
def test_a_draw_kept_at_one_replication_lies_within_the_share_of_the_two_replication_interval():
    """Where the rule kept some draws of a comparison at one replication (the a priori
    bound, or the move measured on the probe draws), each draw's answer, and each end of
    the comparison's 90% interval (joined with its model-error band, as the answer
    reports it), lies within DRAW_NOISE_SHARE of the width of the interval two
    replications give, to 4 standard errors: the rule bounds the move's
    standard deviation by that share, and an end moves by about one draw's move. Both
    read on the same nominal points (the two-replication run's), so the difference is the
    draws' move alone. Fixed seeds; the shipped serving scenario, short runs."""
    metrics = ["per_user_tok_s", "aggregate_tok_s", "tpot_p50_ms", "tpot_p99_ms"]
    _, seq, grid, _ = _crossover(sequential=True, metrics=metrics)
    ev, full, _, _ = _crossover(sequential=False, metrics=metrics)
    checked = 0
    for load in grid:
        keys = [(load, FixedK(2)), (load, BASELINE)]
        ran = [g for g in seq.points if g is not None and all(k in g for k in keys)]
        if len(ran) < len(seq.draws) or all(g[k].replications == 2 for g in ran for k in keys):
            continue  # not read on every draw, or every draw ran both
        for metric in metrics:
            spec, base = ev(*keys[0]), ev(*keys[1])
            own = paired_gain(spec.values[metric], base.values[metric], metric)
            ci95 = gain(spec, base, metric).ci95

            def pair(a: np.ndarray, b: np.ndarray, metric: str = metric) -> np.ndarray:
                return paired_gain(a, b, metric)

            one = seq.shifts(keys, metric, pair, float(np.mean(own)), own)
            two = full.shifts(keys, metric, pair, float(np.mean(own)), own)
            # the interval the answer reports: joined with the gains' band at the load
            band = gain_band(ev.builder)
            assert band is not None
            here = {p: pt for (at, p), pt in ev.memo.items() if at == load}
            joined = band_joined(float(np.mean(own)), band(here))
            ends1 = joined(interval90(one.tolist(), ci95))
            ends2 = joined(interval90(two.tolist(), ci95))
            assert ends1 is not None and ends2 is not None
            tol = 4 * DRAW_NOISE_SHARE * (ends2[1] - ends2[0])
            assert np.all(np.abs(one - two) <= tol)
            assert abs(ends1[0] - ends2[0]) <= tol and abs(ends1[1] - ends2[1]) <= tol
            checked += 1
    assert checked >= len(metrics)  # at least one load kept draws at one replication


#: crossover with sequential draws and without the model-error band (which on this scenario
#: is wide enough for one replication everywhere: the next tests).
MEASURED_BOUND = {"sequential": True, "requests": 24, "metrics": ["per_user_tok_s"], "band": False}


def test_the_probe_draws_measure_the_move_and_the_others_keep_one_replication() -> None:
    """The probe draws ran their second replication at a load and the others kept one (the
    measured bound decided)."""
    _, draws, _, _ = _crossover(workers=1, **MEASURED_BOUND)
    assert draws.points_by_replications().get("1", 0) > 0  # some draws stopped at one
    probes = len(probe_draws(len(draws.draws)))
    mixed = [2] * probes + [1] * (len(draws.draws) - probes)
    keys = {k for g in draws.points if g for k in g}
    counts = [[g[k].replications for g in draws.points if g] for k in keys]
    assert mixed in counts  # the probes measured the move, and it was enough


@pytest.mark.slow  # two crossovers with draws, one on a pool (the fast tests' subsets cover 2)
def test_sequential_draws_do_not_depend_on_the_worker_count() -> None:
    """The previous test's crossover gives the same document at 1 and 2 workers."""
    one = _crossover(workers=1, **MEASURED_BOUND)[3].to_dict()
    assert one == _crossover(workers=2, **MEASURED_BOUND)[3].to_dict()


@pytest.mark.slow  # about a minute on the shared 2-core machine
def test_best_k_ties_from_sequential_draws_agree_with_two_replications() -> None:
    """best-k's selection: the 90% interval of each contender's difference from the best
    from sequential draws agrees with the one two replications give within 4 standard
    errors of the move (sqrt(2) x the nominal difference's per-replication sd)."""
    docs, runs = [], []
    for sequential in (True, False):
        builder = _short(requests=40, replications=4)
        ev = PointEvaluator(builder, replications=4, seed=5, executor=LocalExecutor(1))
        draws = DrawnPoints(ev, builder.draws, sequential=sequential)
        got = best_k(ev, [2, 8], [1, 2, 3], draws=draws, refine=False)
        docs.append(got)
        runs.append((ev, draws))
    seq, full = docs
    assert runs[0][1].replications_run < runs[1][1].replications_run
    ev = runs[1][0]
    for a, b in zip(seq.choices, full.choices, strict=True):
        assert a.best == b.best
        assert a.interval90 is not None and b.interval90 is not None
        assert set(a.interval90) == set(b.interval90)
        for k, iv in a.interval90.items():
            load = Load("concurrency", a.users)
            x = ev(load, FixedK(k)).values["per_user_tok_s"]
            y = ev(load, FixedK(b.best)).values["per_user_tok_s"]
            n = min(x.size, y.size)
            tol = 4 * math.sqrt(2.0) * float(np.std(x[:n] - y[:n], ddof=1))
            other = b.interval90[k]
            assert iv is not None and other is not None
            assert abs(iv[0] - other[0]) <= tol and abs(iv[1] - other[1]) <= tol


class _Recording:
    """A local executor that records each batch's items (for the order and size of the
    batches the draws send)."""

    def __init__(self, workers: int) -> None:
        self.inner = LocalExecutor(workers)
        self.batches: list[list] = []

    def width(self) -> int:
        return self.inner.width()

    def map_unordered(self, fn, items):
        self.batches.append(list(items))
        return self.inner.map_unordered(fn, items)


def _recorded(builder, workers: int) -> tuple[_Recording, PointEvaluator, DrawnPoints]:
    """A recording executor of ``workers``, an evaluator of 3 replications through it and
    sequential draws of ``builder``'s."""
    executor = _Recording(workers)
    ev = PointEvaluator(builder, replications=3, seed=5, executor=executor)  # type: ignore[arg-type]
    return executor, ev, DrawnPoints(ev, builder.draws, sequential=True)


def test_a_subset_of_draws_runs_every_replication_in_one_batch_as_two_would() -> None:
    """A comparison read on some draws only (a crossing's walk outwards) runs both
    replications there at once (without a model-error band wide enough for one, the next
    test), and a lone draw's point is cut into one block a replication for the two
    workers: the same values as the first replication and then the second, which
    ``settle`` ran before, and as one worker running it whole."""
    builder = _short(requests=24, band=False)
    load = Load("concurrency", 4)
    keys = [(load, FixedK(2)), (load, BASELINE)]
    got = {}
    for workers in (1, 2):
        executor, ev, draws = _recorded(builder, workers)
        ev.ensure(keys)
        draws.ensure(keys[1:], [1], upto=2)  # plain decoding's point in draw 1 has run
        executor.batches.clear()
        draws.gains(load, 2, "per_user_tok_s", which=[1])
        assert len(executor.batches) == 1  # one batch, not the first and then the second
        # k's point in draw 1: whole on one worker, one block a replication on two
        assert [t.replications for t in executor.batches[0]] == [[2], [1, 1]][workers - 1]
        got[workers] = draws.points[1]
    ev = PointEvaluator(builder, replications=3, seed=5)
    stepwise = DrawnPoints(ev, builder.draws, sequential=True)
    stepwise.ensure(keys, [1])
    stepwise.ensure(keys, [1], upto=2)
    for key in keys:
        for point in (got[1][key], got[2][key]):
            assert point.replications == 2
            for metric, values in stepwise.points[1][key].values.items():
                assert np.array_equal(point.values[metric], values, equal_nan=True)


def test_the_band_of_the_answer_counts_in_the_width_one_replication_is_judged_against() -> None:
    """``joined``: the comparison's 90% interval is the one its answer reports, joined
    with its model-error band; a band wider than the draws' spread makes one replication
    enough where the draws alone do not, and with no draws (a subset of them) the band
    and the Monte Carlo interval alone decide."""
    drawn = np.linspace(0.98, 1.02, 8)
    lo, hi = interval90(drawn.tolist(), None)
    noisy = 1.0 + np.array([-1.0, 1.0]) * 0.2 * (hi - lo)
    assert not one_replication_enough(drawn, noisy)
    band = band_joined(1.0, 0.1)  # 90%: x/exp(0.164), 0.33 wide
    ends = band(None)
    assert ends is not None and ends[1] - ends[0] == pytest.approx(
        math.exp(Z90 * 0.1) - math.exp(-Z90 * 0.1)
    )
    assert one_replication_enough(drawn, noisy, joined=band)
    assert one_replication_enough(np.array([]), noisy, joined=band)  # the band alone
    assert not one_replication_enough(np.array([]), noisy)  # no draws, no band: never
    assert not one_replication_enough(np.array([]), noisy, joined=band_joined(1.0, 0.0))
    wide = 1.0 + np.array([-1.0, 1.0]) * 0.2 * (ends[1] - ends[0])
    assert not one_replication_enough(drawn, wide, joined=band)  # a tenth of its width


def test_a_subset_of_draws_keeps_one_replication_where_the_band_alone_is_wide_enough() -> None:
    """A crossing's walk outwards reads a few draws; where the a priori move is within a
    tenth of the gain's model-error band at the load (4 users: batch 4, x/1.13), those
    draws keep their first replication, in one batch."""
    builder = _short(requests=24)
    load = Load("concurrency", 4)
    keys = [(load, FixedK(2)), (load, BASELINE)]
    executor = _Recording(1)
    ev = PointEvaluator(builder, replications=3, seed=5, executor=executor)  # type: ignore[arg-type]
    draws = DrawnPoints(ev, builder.draws, sequential=True)
    ev.ensure(keys)
    executor.batches.clear()
    draws.gains(load, 2, "per_user_tok_s", which=[1])
    assert len(executor.batches) == 1
    assert [t.replications for t in executor.batches[0]] == [1, 1]
    assert all(draws.points[1][key].replications == 1 for key in keys)


def _band_stopped(workers: int) -> dict:
    """crossover with draws of TPOT p99 on ``workers`` (6 replications): its document,
    checked to stop some pair on the gains' band (below)."""
    builder = _short(requests=24, replications=6)
    ev = PointEvaluator(builder, replications=6, seed=5, executor=LocalExecutor(workers))
    draws = DrawnPoints(ev, builder.draws, sequential=True)
    grid = load_grid("concurrency", [1, 2, 4, 8])
    got = crossover(ev, grid, [2], metrics=["tpot_p99_ms"], refine=False, draws=draws)
    band = gain_band(builder)
    assert band is not None
    stopped = []
    for load in grid:
        pts = {p: pt for (at, p), pt in ev.memo.items() if at == load}
        plain = GainsAgainst(BASELINE, ("tpot_p99_ms",))
        if pts[FixedK(2)].replications == 4 and not plain(pts, FixedK(2)):
            assert GainsAgainst(BASELINE, ("tpot_p99_ms",), band)(pts, FixedK(2))
            stopped.append(load)
    assert stopped  # the band stopped a pair the settled rule alone would have grown
    return got.to_dict()


def test_points_stop_on_their_band() -> None:
    """crossover with draws: some pair near its crossing stops at its first replications
    because it is precise against the gains' band there, though not settled against 1
    (k = 2's TPOT p99 gain at 4 users, 1.03, 2 standard errors from 1), and says so."""
    doc = _band_stopped(1)
    assert any("model-error band at the load stops too" in a for a in doc["assumptions"])


@pytest.mark.slow  # the same crossover again on a pool (the fast tests' subsets cover 2)
def test_points_stopped_on_their_band_do_not_depend_on_the_worker_count() -> None:
    """The previous test's crossover gives the same document at 1 and 2 workers."""
    assert _band_stopped(1) == _band_stopped(2)


def test_a_batch_of_draws_sends_each_draws_points_as_one_unit_with_the_same_values() -> None:
    """On two workers a batch over several draws goes to the pool as one unit a draw (its
    pass terms computed in one worker: ``run_points``), longest first; every point is the
    one a worker running the tasks one by one gives, bit for bit."""
    builder = _short(requests=24, band=False)
    keys = [(Load("concurrency", 2), policy) for policy in (FixedK(2), BASELINE)]

    def run(workers: int):
        executor, _, draws = _recorded(builder, workers)
        draws.ensure(keys, [0, 1, 2])
        return executor.batches, draws.points

    (one,), alone = run(1)
    (units,), together = run(2)
    assert len(one) == 6 and all(not isinstance(t, list) for t in one)  # a task a point
    assert len(units) == 3 and sorted(len(unit) for unit in units) == [2, 2, 2]
    assert all(len({t.builder.drawn for t in unit}) == 1 for unit in units)
    for i in range(3):
        for key in keys:
            a, b = alone[i][key], together[i][key]
            assert a.replications == b.replications == 1
            for metric, values in a.values.items():
                assert np.array_equal(b.values[metric], values, equal_nan=True)
