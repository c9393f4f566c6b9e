"""90% intervals of serving answers from inputs and model (sim/studies/serving/draws.py):
the draws' overrides, the paired shift, and the crossover's crossing interval."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sim.binding.bound import bind
from sim.hardware.memory import reserve_range_gib
from sim.model.model_error import Z90
from sim.model.policy import FixedK
from sim.parallel import LocalExecutor
from sim.scenario.load import load_scenario
from sim.scenario.overrides import with_overrides
from sim.scenario.validate import scenario_from_dict
from sim.studies.serving.best_k_selection import LoadChoice, input_ties
from sim.studies.serving.crossover import crossover, load_grid
from sim.studies.serving.draw_intervals import interval90, prediction_half_width, shifted
from sim.studies.serving.draws import DrawnPoints
from sim.studies.serving.evaluator import PointEvaluator
from sim.studies.serving.paired_metrics import Load, PolicyPoint, level
from sim.studies.serving.scenario_plans import BASELINE, ScenarioPlans
from sim.studies.serving.serve_intervals import serve_intervals
from sim.uncertainty.perturb import input_draws, serving_inputs
from tests.conftest import ROOT
from tests.studies.serving.helpers import CodePlans

SERVING = ROOT / "scenarios" / "kimi-k25-8xpcie-eagle3-serving.toml"


def test_no_draws_leave_the_monte_carlo_interval() -> None:
    assert interval90([], (0.9, 1.1)) == [0.9, 1.1]
    assert interval90([float("nan")], None) is None
    # draws never narrow the Monte Carlo interval; draws spread wider widen it, to where
    # one more draw would fall (the normal prediction interval of the draws)
    lo, hi = interval90([1.0, 1.01, 1.0, 1.01], (0.9, 1.1))
    assert lo == 0.9 and hi == 1.1
    values = np.linspace(0.5, 1.5, 101)
    lo, hi = interval90(list(values), (0.9, 1.1))
    half = prediction_half_width(values)
    assert (lo, hi) == (pytest.approx(1.0 - half), pytest.approx(1.0 + half))
    assert lo < 0.55 and hi > 1.45  # beyond the draws' own 5-95% quantiles


def test_a_level_or_ratio_takes_its_prediction_interval_on_the_log_scale() -> None:
    """Skewed positive draws (a saturated load's TPOT): the linear prediction interval
    reaches below 0, the log-scale one stays above it and holds every draw."""
    values = [20.0, 25.0, 30.0, 60.0, 200.0, 400.0, 35.0, 28.0]
    assert interval90(values, None)[0] < 0
    lo, hi = interval90(values, None, positive=True)
    assert 0 < lo < min(values) and hi > max(values)


def test_the_prediction_interval_holds_one_more_draw_90_percent_of_the_time() -> None:
    """The exact law: for n normal draws, mean +- t(0.95, n-1) s sqrt(1 + 1/n) holds one
    more draw from the same normal with probability 0.90; the draws' own 5-95% quantiles
    hold it less often (about (n - 1) / (n + 1) at most)."""
    rng = np.random.default_rng(11)
    trials, n = 4000, 8
    draws = rng.normal(size=(trials, n))
    new = rng.normal(size=trials)
    half = np.array([prediction_half_width(d) for d in draws])
    inside = np.abs(new - draws.mean(axis=1)) <= half
    se = math.sqrt(0.9 * 0.1 / trials)
    assert abs(inside.mean() - 0.90) < 4 * se
    q = np.quantile(draws, [0.05, 0.95], axis=1)
    assert ((q[0] <= new) & (new <= q[1])).mean() < (n - 1) / (n + 1) + 4 * se


def test_the_paired_shift_moves_the_nominal_by_the_draws_difference() -> None:
    """On common random numbers the noise the draw shares with the nominal run cancels:
    a draw that is the nominal plus 0.1 on every replication is the nominal mean + 0.1."""
    rng = np.random.default_rng(3)
    first = rng.normal(1.0, 0.2, size=2)
    assert shifted(1.02, first + 0.1, first) == pytest.approx(1.12, rel=1e-12)


def test_a_scenario_without_uncertain_inputs_draws_nothing() -> None:
    sc = load_scenario(SERVING)
    raw = sc.model_dump(exclude_none=True)
    # given: no default range (the kernel slope's, the expert skew's, the KV reserve's and
    # the logit rows' defaults, given)
    raw["serving"].update(
        host_us_per_request=20.0,
        kernel_slope=1.0,
        expert_skew=0.65,
        kv_reserve_gib=0.9,
        bytes_per_logit=12.0,
    )
    raw["acceptance"].update(shape="flat", tilt=1.0)  # no decay prior, no shape error
    raw["uncertainty"] = {}
    bare = scenario_from_dict(raw, source="test")
    assert [u.field for u in serving_inputs(bind(bare))] == []
    assert input_draws(bind(bare), seed=1).overrides == ()
    # the shipped one draws its [uncertainty] entries and the default host work
    fields = [u.field for u in serving_inputs(bind(sc))]
    assert "timing.verify_ms" in fields and "serving.host_us_per_request" in fields
    draws = input_draws(bind(sc), seed=1).overrides
    assert len(draws) == 8
    host = [dict(d)["serving.host_us_per_request"] for d in draws]
    assert 7.0 <= min(host) < max(host) <= 38.0
    # and the batched terms a batch-1 calibration cannot identify: the kernel slope, and on
    # this MoE target the expert skew, each over its published range
    slope = [dict(d)["serving.kernel_slope"] for d in draws]
    skew = [dict(d)["serving.expert_skew"] for d in draws]
    assert 0.1 <= min(slope) < max(slope) <= 1.35 and 0.0 <= min(skew) < max(skew) <= 1.3
    # the KV capacity derived by SGLang's rule: its reserve over SGLang's range on this GPU
    reserve = [dict(d)["serving.kv_reserve_gib"] for d in draws]
    _, low, high = reserve_range_gib("sglang", 96.0)
    assert low <= min(reserve) < max(reserve) <= high
    # the bytes a logit of every row of target logits, over greedy decoding to sampling
    logit = [dict(d)["serving.bytes_per_logit"] for d in draws]
    assert 4.0 <= min(logit) < max(logit) <= 40.0
    dense = load_scenario(ROOT / "scenarios" / "llama31-8b-1xh100-eagle3.toml")
    assert "serving.expert_skew" not in [u.field for u in serving_inputs(bind(dense))]
    assert all(isinstance(dict(d)["model.kernels_per_layer"], int) for d in draws)


def test_a_study_describes_the_inputs_its_draws_were_made_of() -> None:
    """A serving study keeps its draws with the inputs they were made of, both from the
    bound scenario as loaded (``ScenarioPlans.sampled``): after a ``--set`` of the kernel
    slope the host work is still a default the draws move, and the document lists it (a
    scenario rebuilt from the study's plans reads every field as given and lost it)."""
    from sim.studies.serving.serve import serving_study

    sc = load_scenario(SERVING, ["serving.kernel_slope=0.5"])
    builder, _ = serving_study(sc, draws=4)
    fields = [u.field for u in builder.sampled.inputs]
    assert "serving.host_us_per_request" in fields and "serving.kernel_slope" not in fields
    assert fields == [u.field for u in serving_inputs(bind(sc))]
    drawn = set().union(*(dict(d) for d in builder.draws))
    assert len(builder.draws) == 4 and set(fields) <= drawn
    doc = builder.sampled.doc(2)
    assert [row["field"] for row in doc["inputs"]] == fields
    assert (doc["draws"], doc["replications_per_draw"]) == (4, 2)


def test_without_draws_a_crossing_keeps_its_monte_carlo_interval() -> None:
    ev = PointEvaluator(CodePlans(), replications=3, seed=7, executor=LocalExecutor(1))
    grid = load_grid("concurrency", [1, 8, 32])
    result = crossover(ev, grid, [3], metrics=["per_user_tok_s"], draws=DrawnPoints(ev, ()))
    (curve,) = result.curves
    (c,) = curve.crossings
    users = tuple(math.ceil(x) for x in c.ci95)  # the fewest users on the new side
    assert curve.interval90 == (users,)
    assert curve.to_dict()["crossings"][0]["interval90"] == list(users)


def test_a_crossing_interval_contains_the_crossing() -> None:
    """The shipped serving scenario, short runs: speculation at k = 2 starts paying at a
    few users; the 90% interval from inputs and model holds the crossing and is wider than
    its Monte Carlo interval (the inputs move it more than 2 replications' noise)."""
    sc = with_overrides(
        load_scenario(SERVING), {"workload.requests": 40, "simulation.replications": 3}
    )
    builder = ScenarioPlans.of(sc)
    from dataclasses import replace

    builder = replace(builder, sampled=input_draws(bind(sc), seed=5))
    ev = PointEvaluator(builder, replications=3, seed=5, executor=LocalExecutor(1))
    draws = DrawnPoints(ev, builder.draws)
    grid = load_grid("concurrency", [1, 2, 4, 8])
    result = crossover(ev, grid, [2], metrics=["per_user_tok_s"], refine=False, draws=draws)
    (curve,) = result.curves
    (c,) = curve.crossings
    lo, hi = curve.interval90[0]
    assert lo is not None and hi is not None
    assert lo <= math.ceil(c.at) <= hi  # users: the fewest on the new side
    # each draw ran 2 replications of both policies at the two loads around the crossing
    # (2 and 4 users), and further loads only where it crosses beyond them
    ran = [p for p in draws.points if p is not None]
    assert len(ran) == 8
    for p in ran:
        assert {(grid[j], q) for j in (1, 2) for q in (BASELINE, FixedK(2))} <= set(p)
        assert all(point.replications == 2 for point in p.values())
    assert sum(len(p) for p in ran) < 8 * 2 * 4


def _short(sc):
    return with_overrides(sc, {"workload.requests": 30, "simulation.replications": 3})


def _serve(sc, draws: int = 8):
    from sim.simulation.serving.setup import serving_setup
    from sim.simulation.serving.simulate import simulate_serving

    setup = serving_setup(bind(sc))
    run = simulate_serving(setup.plan, setup.draftings, replications=3, seed=setup.seed)
    got = serve_intervals(
        bind(sc), run.records, slo=setup.slo, seed=setup.seed, batch=16, draws=draws
    )
    return run, setup, got


def test_serve_intervals_contain_the_nominal_and_name_the_extrapolation() -> None:
    from sim.studies.serving.paired_metrics import (
        gain,
        level,
        policy_point,
        replication_values,
    )

    run, setup, got = _serve(_short(load_scenario(SERVING)))
    assert got["draws"] == got["draws_run"] == 8 and got["replications_per_draw"] == 2
    points = {n: policy_point(r, setup.slo) for n, r in run.records.items()}
    for name, recs in run.records.items():  # a draw's values are its point's, computed alone
        values = replication_values(recs, setup.slo)
        assert values.keys() == points[name].values.keys()
        for m, v in values.items():
            np.testing.assert_array_equal(v, points[name].values[m])
    for name, point in points.items():
        for m, (lo, hi) in got["levels"][name].items():
            nominal = level(point, m)
            assert lo <= nominal.mean <= hi
            assert lo <= nominal.ci95[0] and nominal.ci95[1] <= hi  # joined with the MC
    lo, hi = got["speedup"]["speculative"]["per_user_tok_s"]
    g = gain(points["speculative"], points["baseline"], "per_user_tok_s")
    assert lo <= g.mean <= hi and hi - lo > g.ci95[1] - g.ci95[0]  # the inputs move it
    assert "beyond the highest measured batch (8)" in got["note"]


def test_serve_without_uncertain_inputs_gives_the_monte_carlo_interval() -> None:
    from sim.studies.serving.paired_metrics import gain, level, policy_point

    sc = _short(load_scenario(SERVING))
    raw = sc.model_dump(exclude_none=True)
    raw["serving"].update(
        host_us_per_request=20.0,
        kernel_slope=1.0,
        expert_skew=0.65,
        kv_reserve_gib=0.9,
        bytes_per_logit=12.0,
    )
    raw["acceptance"].update(shape="flat", tilt=1.0)
    raw["uncertainty"] = {}
    raw["serving"]["model_error"] = {"level_per_sqrt_log_load": 0.0, "gain_ceiling": 0.0}
    run, setup, got = _serve(scenario_from_dict(raw, source="test"))
    assert got["draws"] == got["draws_run"] == 0 and got["inputs"] == []
    assert got["model_error"]["included"] is False
    points = {n: policy_point(r, setup.slo) for n, r in run.records.items()}
    for name, point in points.items():
        for m, ends in got["levels"][name].items():
            assert ends == list(level(point, m).ci95)
    g = gain(points["speculative"], points["baseline"], "aggregate_tok_s")
    assert got["speedup"]["speculative"]["aggregate_tok_s"] == list(g.ci95)
    # with the model-error term: the Monte Carlo interval joined with the term's
    raw["serving"]["model_error"] = {
        "level_per_sqrt_log_load": 0.1,
        "gain_ceiling": 0.05,
        "gain_log_load_scale": 1.0,
    }
    run, setup, got = _serve(scenario_from_dict(raw, source="test"))
    term = got["model_error"]
    assert term["included"] and term["origin"] == "serving.model_error"
    assert term["level_sigma"] == pytest.approx(0.1 * math.sqrt(term["log_distance"]))
    assert term["gain_sigma"] == pytest.approx(0.05 * -math.expm1(-term["log_distance"]))
    point = policy_point(run.records["speculative"], setup.slo)
    mc = level(point, "aggregate_tok_s")
    lo, hi = got["levels"]["speculative"]["aggregate_tok_s"]
    m = Z90 * term["level_sigma"]
    assert hi == pytest.approx(max(mc.ci95[1], mc.mean * math.exp(m)))
    assert lo == pytest.approx(min(mc.ci95[0], mc.mean * math.exp(-m))) and lo < mc.ci95[0]


class _FakeDraws:
    """Draws whose points are given: ``ensure`` runs nothing."""

    replications = 2
    sequential = False
    uncertain = True  # draws of uncertain inputs (DrawnPoints.uncertain)
    shifts = DrawnPoints.shifts
    settle = DrawnPoints.settle

    def __init__(self, points):
        self.points = points
        self.draws = tuple(() for _ in points)

    def ensure(self, keys, which=None) -> None:
        assert all(key in p for p in self.points for key in keys)


def _point(values) -> PolicyPoint:
    return PolicyPoint({"per_user_tok_s": np.array(values, dtype=float)}, np.ones(1), {})


@pytest.mark.parametrize("spread, tied", [(0.3, True), (0.05, False)])
def test_best_k_calls_a_difference_inside_the_inputs_interval_a_tie(spread, tied) -> None:
    """k = 2 beats k = 1 by 0.2 tok/s on every replication (a Monte Carlo interval of
    zero width: significant); draws that move k = 1 by +-``spread`` relative to k = 2 make
    it a tie when the spread reaches past the 0.2 (and not when it does not)."""
    load = Load("concurrency", 8)
    points = {1: _point([10.0, 10.1, 10.0, 10.1]), 2: _point([10.2, 10.3, 10.2, 10.3])}
    levels = {k: level(p, "per_user_tok_s") for k, p in points.items()}
    choice = LoadChoice(8, levels, best=2, tied=())
    drawn = [
        {
            (load, FixedK(1)): _point([10.0 + s, 10.1 + s]),
            (load, FixedK(2)): _point([10.2, 10.3]),
        }
        for s in np.linspace(-spread, spread, 8)
    ]
    got = input_ties(_FakeDraws(drawn), load, choice, points, "per_user_tok_s")
    lo, hi = got.interval90[1]
    assert lo <= -0.2 <= hi
    assert (1 in got.tied_by_inputs) is tied
    assert got.to_dict()["tied_within_inputs"] == ([1] if tied else [])


@pytest.mark.slow  # about a minute on the shared 2-core machine
def test_capacity_intervals_hold_the_capacity_and_each_draw_crosses_near_it() -> None:
    from dataclasses import replace

    from sim.studies.serving.capacity import capacity
    from sim.studies.serving.capacity_ladder import drawn_capacities

    # the kernel slope and the expert skew given: their published ranges move the
    # capacity past the rates the search brackets (an open end), which is not what this
    # checks
    sc = with_overrides(
        load_scenario(SERVING),
        {
            "workload.requests": 30,
            "simulation.replications": 3,
            "serving.kernel_slope": 1.0,
            "serving.expert_skew": 0.65,
        },
    )
    builder = replace(ScenarioPlans.of(sc), sampled=input_draws(bind(sc), seed=5))
    ev = PointEvaluator(builder, replications=3, seed=5, slo=builder.setup(None, 2).slo)
    draws = DrawnPoints(ev, builder.draws)
    result = capacity(ev, [2], draws=draws)
    for p, row in zip(result.policies, result.interval90, strict=True):
        assert p.crossing
        lo, hi = row["capacity_interval90"]
        assert lo is not None and hi is not None and lo <= p.rate_per_s <= hi
        caps = drawn_capacities(draws, p, result.share)  # cached: nothing new runs
        assert np.isfinite(caps).all()
        assert np.all((caps > p.rate_per_s / 2) & (caps < p.rate_per_s * 2))
    lo, hi = result.interval90[1]["capacity_gain_interval90"]
    gain = result.policies[1].rate_per_s / result.policies[0].rate_per_s
    assert lo <= gain <= hi


def test_a_refit_conditions_every_draw_on_the_calibration() -> None:
    """With a refit, each draw carries the fitted fields it returns for that draw's
    overrides; a draw under which the fit finds no value is left out (the data rule it
    out), and the others keep their order and values."""
    sc = load_scenario(SERVING)
    free = input_draws(bind(sc), seed=1).overrides
    seen: list[dict] = []

    def refit(over):  # the overhead as a function of the drawn host work
        seen.append(dict(over))
        host = float(over["serving.host_us_per_request"])
        if host > 30.0:
            raise ValueError("no root")
        return {"timing.cycle_overhead_ms": host / 10.0}

    fitted = input_draws(bind(sc), seed=1, refit=refit).overrides
    assert [dict(d) for d in free] == seen  # the refit sees each draw's overrides
    kept = [dict(d) for d in free if dict(d)["serving.host_us_per_request"] <= 30.0]
    assert 0 < len(kept) < len(free)
    assert [dict(d) for d in fitted] == [
        {**d, "timing.cycle_overhead_ms": d["serving.host_us_per_request"] / 10.0} for d in kept
    ]


def test_a_capacity_gain_beyond_the_rates_tried_opens_the_upper_end() -> None:
    """A draw whose capacity lies beyond the ladder's rates (inf) while plain decoding's
    is found has a gain at least the highest ladder rate over plain decoding's capacity:
    it is not left out. At 5% of the draws or more the gain's upper end is open (None);
    below that it still raises the 95% end to the largest finite draws' order statistic,
    never below the finite draws' own."""
    from sim.studies.serving.capacity_intervals import capacity_intervals
    from sim.studies.serving.capacity_result import PolicyCapacity

    def policy(k: int, rate: float) -> PolicyCapacity:
        return PolicyCapacity(k, rate, (rate * 0.95, rate * 1.05), (), ladder_ends=(0.5, 2.0))

    plain, spec = policy(0, 1.0), policy(2, 1.5)
    base = np.full(40, 1.0)
    finite = np.linspace(1.2, 1.8, 40)
    closed = capacity_intervals([plain, spec], [base, finite], [None, (1.4, 1.6)])
    lo, hi = closed[1]["capacity_gain_interval90"]
    assert lo is not None and hi is not None and lo <= 1.5 <= hi
    beyond = finite.copy()
    beyond[-4:] = np.inf  # 10% of the draws beyond the rates tried: gains at least 2
    opened = capacity_intervals([plain, spec], [base, beyond], [None, (1.4, 1.6)])
    assert opened[1]["capacity_gain_interval90"][1] is None
    assert opened[1]["capacity_gain_interval90"][0] == pytest.approx(lo, rel=0.05)
    one = finite.copy()
    one[-1] = np.inf  # 2.5%: the end stays closed, at least the finite draws' own
    got = capacity_intervals([plain, spec], [base, one], [None, (1.4, 1.6)])
    assert got[1]["capacity_gain_interval90"][1] is not None
    assert got[1]["capacity_gain_interval90"][1] >= np.quantile(finite[:-1], 0.95)


def test_a_draw_beyond_the_ladder_bounds_its_gain_on_one_side() -> None:
    """Each draw's gain as (lowest, value, highest): a policy's capacity above its ladder
    (passes at the highest rate, 2.0) gives at least 2.0 over plain decoding's; below it
    (fails at the lowest, 0.5) at most 0.5 over it; plain decoding's beyond its own
    ladder the other way round; both beyond: unknown (NaN). A draw whose gain has no
    lower bound at the 5% quantile opens the lower end, instead of being left out."""
    from sim.studies.serving.capacity_intervals import capacity_intervals, gain_draws
    from sim.studies.serving.capacity_result import PolicyCapacity

    cap = np.array([1.5, np.inf, -np.inf, 1.5, 1.5, np.inf])
    base = np.array([1.0, 1.25, 1.0, np.inf, -np.inf, np.inf])
    low, value, high = gain_draws(cap, base, (0.5, 2.0), (0.25, 3.0))
    np.testing.assert_allclose(low[:5], [1.5, 1.6, 0.0, 0.0, 6.0])
    np.testing.assert_allclose(high[:5], [1.5, np.inf, 0.5, 0.5, np.inf])
    np.testing.assert_allclose(value[:5], [1.5, 1.6, 0.5, 0.5, 6.0])
    assert np.isnan(low[5]) and np.isnan(value[5]) and np.isnan(high[5])

    def policy(k: int, rate: float) -> PolicyCapacity:
        return PolicyCapacity(k, rate, (rate * 0.95, rate * 1.05), (), ladder_ends=(0.25, 3.0))

    spec = np.linspace(1.3, 1.6, 8)
    plain = np.full(8, 1.0)
    plain[0] = np.inf  # plain decoding beyond its ladder: this draw's gain at most 1.3 / 3
    got = capacity_intervals([policy(0, 1.0), policy(2, 1.45)], [plain, spec], [None, (1.4, 1.5)])
    lo, hi = got[1]["capacity_gain_interval90"]
    assert lo is None  # the 5% quantile of 8 draws is their lowest: unbounded below
    assert hi is not None and hi >= 1.6
