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
from sim.model.policy import FixedK
from sim.parallel import LocalExecutor
from sim.scenario.load import load_scenario
from sim.scenario.overrides import with_overrides
from sim.studies.serving.best_k import best_k
from sim.studies.serving.crossover import crossover, load_grid
from sim.studies.serving.draws import (
    DRAW_NOISE_SHARE,
    NOISE_CONFIDENCE,
    DrawnPoints,
    interval90,
    measured_move,
    one_replication_enough,
    paired_gain,
    probe_draws,
)
from sim.studies.serving.evaluator import BASELINE, PointEvaluator, ScenarioPlans
from sim.studies.serving.paired_metrics import Load, gain
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


def _short(requests: int = 40, replications: int = 3):
    sc = with_overrides(
        load_scenario(SERVING),
        {"workload.requests": requests, "simulation.replications": replications},
    )
    return replace(ScenarioPlans.of(sc), sampled=input_draws(bind(sc), seed=5))


def _crossover(sequential: bool, workers: int = 1, requests: int = 40, metrics=None):
    builder = _short(requests)
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
    the comparison's 90% interval, lies within DRAW_NOISE_SHARE of the width of the
    interval two replications give, to 4 standard errors: the rule bounds the move's
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
            ends1, ends2 = interval90(one.tolist(), ci95), interval90(two.tolist(), ci95)
            assert ends1 is not None and ends2 is not None
            tol = 4 * DRAW_NOISE_SHARE * (ends2[1] - ends2[0])
            assert np.all(np.abs(one - two) <= tol)
            assert abs(ends1[0] - ends2[0]) <= tol and abs(ends1[1] - ends2[1]) <= tol
            checked += 1
    assert checked >= len(metrics)  # at least one load kept draws at one replication


def test_sequential_draws_do_not_depend_on_the_worker_count() -> None:
    """The same document at 1 and 2 workers, where the probe draws ran their second
    replication at a load and the others kept one (the measured bound decided)."""
    kw = {"sequential": True, "requests": 24, "metrics": ["per_user_tok_s"]}
    _, draws, _, got = _crossover(workers=1, **kw)
    assert draws.points_by_replications().get("1", 0) > 0  # some draws stopped at one
    probes = len(probe_draws(len(draws.draws)))
    mixed = [2] * probes + [1] * (len(draws.draws) - probes)
    keys = {k for g in draws.points if g for k in g}
    counts = [[g[k].replications for g in draws.points if g] for k in keys]
    assert mixed in counts  # the probes measured the move, and it was enough
    assert got.to_dict() == _crossover(workers=2, **kw)[3].to_dict()


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


def test_a_subset_of_draws_runs_every_replication_in_one_batch_as_two_would() -> None:
    """A comparison read on some draws only (a crossing's walk outwards) runs both
    replications there at once, and a lone draw's point is cut into one block a
    replication for the two workers: the same values as the first replication and then
    the second, which ``settle`` ran before, and as one worker running it whole."""
    builder = _short(requests=24)
    load = Load("concurrency", 4)
    keys = [(load, FixedK(2)), (load, BASELINE)]
    got = {}
    for workers in (1, 2):
        executor = _Recording(workers)
        ev = PointEvaluator(builder, replications=3, seed=5, executor=executor)  # type: ignore[arg-type]
        draws = DrawnPoints(ev, builder.draws, sequential=True)
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
