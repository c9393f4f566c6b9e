"""``sweep`` over serving.concurrency x speculation.num_steps gives the crossover's curves."""

from __future__ import annotations

import pytest

from sim.studies.serving.crossover import crossover, load_grid
from sim.studies.serving.evaluator import PointEvaluator
from sim.studies.serving.scenario_plans import ScenarioPlans
from sim.studies.sweep import run_sweep
from tests.studies.serving.helpers import small_scenario


def test_sweep_and_crossover_agree_for_the_same_seed(tmp_path):
    scenario = small_scenario()
    users, ks = (1, 3), (2, 4)
    outcome = run_sweep(
        scenario,
        [("serving.concurrency", users), ("speculation.num_steps", ks)],
        tmp_path / "sweep",
    )
    builder = ScenarioPlans.of(scenario)
    ev = PointEvaluator(
        builder, replications=scenario.simulation.replications, seed=scenario.simulation.seed
    )
    result = crossover(
        ev,
        load_grid("concurrency", users),
        ks,
        metrics=["per_user_tok_s", "aggregate_tok_s"],
        refine=False,
    )
    assert len(outcome.rows) == len(users) * len(ks)
    for row in outcome.rows:
        c, k = row["serving.concurrency"], row["speculation.num_steps"]
        for metric in ("per_user_tok_s", "aggregate_tok_s"):
            curve = result.curve(metric, k)
            i = curve.loads.index(float(c))
            g, s, b = curve.gain[i], curve.speculative[i], curve.baseline[i]
            assert row[f"speedup_{metric}_mean"] == pytest.approx(g.mean, rel=1e-12)
            assert row[f"speedup_{metric}_ci95_lo"] == pytest.approx(g.ci95[0], rel=1e-12)
            assert row[f"speedup_{metric}_ci95_hi"] == pytest.approx(g.ci95[1], rel=1e-12)
            assert row[f"speculative_{metric}_mean"] == pytest.approx(s.mean, rel=1e-12)
            assert row[f"baseline_{metric}_mean"] == pytest.approx(b.mean, rel=1e-12)
