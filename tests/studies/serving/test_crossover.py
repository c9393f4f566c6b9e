"""The crossover study on small plans: where speculation stops paying, and its interval."""

from __future__ import annotations

import pytest

from sim.errors import SpecsimError
from sim.model.policy import FixedK
from sim.parallel import LocalExecutor
from sim.studies.serving.crossover import crossover, default_loads, load_grid
from sim.studies.serving.evaluator import PointEvaluator
from sim.studies.serving.paired_metrics import Load, gain
from sim.studies.serving.scenario_plans import BASELINE
from tests.studies.serving.helpers import CodePlans


def evaluator(builder=None, replications: int = 4, workers: int = 1) -> PointEvaluator:
    return PointEvaluator(
        builder or CodePlans(),
        replications=replications,
        seed=7,
        executor=LocalExecutor(workers),
    )


def test_default_loads():
    assert default_loads("concurrency", 64) == [1, 2, 4, 8, 16, 32, 64]
    assert default_loads("concurrency", 48) == [1, 2, 4, 8, 16, 32, 48]
    assert default_loads("rate", 8.0)[0] == pytest.approx(0.125)
    with pytest.raises(SpecsimError):
        load_grid("concurrency", [4])
    with pytest.raises(SpecsimError):
        load_grid("concurrency", [0, 4])


def test_stops_paying_where_the_linear_costs_say():
    # batch 1: gain ~ E[L] 10 / 24.5 = 1.2; iteration costs grow 0.38 vs 0.05 ms per user:
    # the closed-loop crossing is near 22 users (only decode iterations: no prefill)
    ev = evaluator()
    result = crossover(ev, load_grid("concurrency", [1, 8, 32]), [3], metrics=["per_user_tok_s"])
    (curve,) = result.curves
    (c,) = curve.crossings
    assert c.direction == "stops paying"
    assert 18 < c.at < 27
    lo, hi = c.ci95
    assert lo is not None and hi is not None and lo <= c.at <= hi
    assert c.bracket[1] - c.bracket[0] == 1  # bisected to neighbouring user counts
    # the curve holds the refined loads, with the gain of the paired runs
    assert set(curve.loads) >= {1.0, 8.0, 32.0, c.bracket[0], c.bracket[1]}
    for x, g in zip(curve.loads, curve.gain, strict=True):
        load = result_load(x)
        assert g == gain(ev(load, FixedK(3)), ev(load, BASELINE), "per_user_tok_s")
    # speculation pays before the crossing and not after
    assert curve.gain[0].mean > 1.0 > curve.gain[-1].mean


def result_load(x: float) -> Load:
    return Load("concurrency", x)


def test_results_do_not_depend_on_workers():
    grid = load_grid("concurrency", [2, 16])
    kw = {"metrics": ["aggregate_tok_s"], "refine": False}
    one = crossover(evaluator(replications=2), grid, [3], **kw).to_dict()
    two = crossover(evaluator(replications=2, workers=2), grid, [3], **kw).to_dict()
    assert one == two


def test_baseline_runs_once_per_load():
    ev = evaluator(replications=2)
    crossover(ev, load_grid("concurrency", [1, 2]), [1, 2, 3], refine=False)
    assert ev.runs == 2 * 4  # two loads x (baseline + three k)


def test_bad_draft_lengths():
    with pytest.raises(SpecsimError):
        crossover(evaluator(), load_grid("concurrency", [1, 2]), [0])


def test_bisections_inside_the_draws_range_stop_and_leave_the_90_interval_as_it_was():
    """The Llama scenario at 1 and 8 users, k = 3 (24-token answers, 6 requests, 2
    replications, the scenario's 8 draws): bisecting every crossing to neighbouring user
    counts simulates 5 loads between the two; stopping each bisection once its bracket
    lies inside the draws' 5-95% of its crossing simulates 4. Every crossing's 90%
    interval is the same; a stopped crossing's 95% interval holds the full bisection's,
    and the document says so."""
    from dataclasses import replace

    from sim.binding.bound import bind
    from sim.scenario.load import load_scenario
    from sim.scenario.overrides import with_overrides
    from sim.studies.serving.break_even import stopped_short
    from sim.studies.serving.crossover import WITHIN_NOTE
    from sim.studies.serving.draws import DrawnPoints
    from sim.studies.serving.scenario_plans import ScenarioPlans
    from sim.uncertainty.perturb import input_draws
    from tests.studies.serving.helpers import LLAMA

    sc = with_overrides(
        load_scenario(LLAMA),
        {"workload.output_tokens": 24, "workload.requests": 6},
    )
    seed = sc.simulation.seed
    builder = replace(ScenarioPlans.of(sc), sampled=input_draws(bind(sc), seed))
    grid = load_grid("concurrency", [1, 8])
    out = {}
    for within in (True, False):
        ev = PointEvaluator(builder, replications=2, seed=seed, executor=LocalExecutor(1))
        draws = DrawnPoints(ev, builder.draws)
        out[within] = (crossover(ev, grid, [3], draws=draws, within=within), ev.runs)
    (fast, fast_runs), (full, full_runs) = out[True], out[False]
    assert (fast_runs, full_runs) == (12, 14)
    stopped = 0
    for a, b in zip(fast.curves, full.curves, strict=True):
        assert a.interval90 == b.interval90
        for c, d in zip(a.crossings, b.crossings, strict=True):
            if stopped_short(c, True, 0.02):
                stopped += 1
                lo, hi = c.ci95
                assert lo is not None and hi is not None
                assert d.ci95[0] is not None and d.ci95[1] is not None
                assert lo <= d.ci95[0] and d.ci95[1] <= hi
            else:
                assert c == d
    assert stopped >= 1
    assert WITHIN_NOTE in fast.assumptions and WITHIN_NOTE not in full.assumptions
