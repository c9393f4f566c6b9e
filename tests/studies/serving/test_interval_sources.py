"""What a serving answer's 90% interval holds, said where it is less than the inputs'
draws: one draw asked from the library (the command line refuses --draws 1), or all but
one draw rejected by the scenario (NaN answers). sim/studies/serving/draw_intervals.py
``IntervalSources``."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from sim.binding.bound import bind
from sim.model.tree.acceptance import TreeDraft
from sim.parallel import LocalExecutor
from sim.report.best_k import _held_lines as held_lines
from sim.report.capacity import render_capacity
from sim.report.controllers import render_controllers, render_controllers_screen
from sim.report.crossover import render_crossover
from sim.report.serving import render_serving, served_to_dict
from sim.report.tree_load import render_tree_load, tree_load_to_dict
from sim.scenario.load import load_scenario
from sim.scenario.overrides import with_overrides
from sim.simulation.serving.metrics import SloSpec
from sim.studies.serving.best_k import best_k_table
from sim.studies.serving.capacity import capacity
from sim.studies.serving.controller_phases import Phase
from sim.studies.serving.controllers import controller_study
from sim.studies.serving.crossover import crossover, load_grid
from sim.studies.serving.draw_intervals import (
    IntervalSources,
    answering,
    interval90,
    sources90,
    weakest,
)
from sim.studies.serving.draws import DrawnPoints
from sim.studies.serving.evaluator import PointEvaluator
from sim.studies.serving.scenario_plans import ScenarioPlans
from sim.studies.serving.serve import serve, serving_study
from sim.studies.serving.tree_load import tree_load_study
from sim.uncertainty.perturb import input_draws
from tests.studies.serving.helpers import LLAMA, small_scenario

MONTE_CARLO = IntervalSources.MONTE_CARLO
INPUTS = IntervalSources.INPUTS
#: A draw the scenario rejects (an acceptance rate above 1): its answers are NaN.
REJECTED = (("acceptance.alpha", 1.5),)


def test_sources_follow_the_draws_that_answered() -> None:
    ci = (1.0, 2.0)
    assert sources90(answering([1.1, 1.2]), ci) is INPUTS
    assert sources90(answering([1.1, np.nan]), ci) is MONTE_CARLO
    assert sources90(answering([np.nan, np.nan]), None) is IntervalSources.NONE
    # no uncertain input: nothing to draw, the Monte Carlo interval holds the inputs' none
    assert sources90(0, ci, uncertain=False) is INPUTS
    assert weakest([INPUTS, MONTE_CARLO, INPUTS]) is MONTE_CARLO
    assert weakest([]) is INPUTS
    assert INPUTS.label == "90% interval from inputs and model"
    assert "inputs and model" not in MONTE_CARLO.label + MONTE_CARLO.short


def test_one_draw_is_no_interval_of_its_own() -> None:
    """One finite draw has no spread: with the Monte Carlo interval it only joins it, and
    alone it is a point, not an interval."""
    assert interval90([1.5, np.nan], None) is None
    assert interval90([1.5, np.nan], (1.0, 2.0)) == [1.0, 2.0]
    assert interval90([2.5], (1.0, 2.0)) == [1.0, 2.5]


@pytest.mark.parametrize("draws", [1, 2])
def test_serve_from_the_library_labels_one_draw_as_monte_carlo(draws: int) -> None:
    """serve with 1 draw (library only): the document and its text say Monte Carlo, not
    inputs and model; with 2 they say inputs and model and carry no ``sources``."""
    doc = served_to_dict(serve(small_scenario(), interval_draws=draws), "llama")
    iv = doc["interval90"]
    text = render_serving(doc)
    if draws == 1:
        assert iv["sources"] == "monte_carlo"
        assert iv["label"] == MONTE_CARLO.label
        assert "inputs and model" not in text
        assert f"{MONTE_CARLO.label}: 1 of 1 draw of" in text
    else:
        assert "sources" not in iv
        assert iv["label"] == INPUTS.label
        assert f"{INPUTS.label} (2 draws of" in text


@pytest.fixture(scope="module")
def llama() -> tuple[ScenarioPlans, int]:
    """The Llama scenario with 24-token answers and 6 requests, its 8 input draws."""
    sc = with_overrides(
        load_scenario(LLAMA), {"workload.output_tokens": 24, "workload.requests": 6}
    )
    seed = sc.simulation.seed
    return replace(ScenarioPlans.of(sc), sampled=input_draws(bind(sc), seed)), seed


def _drawn(builder: ScenarioPlans, seed: int, rejected: bool) -> DrawnPoints:
    """The evaluator and its draws: all 8, or the first with 7 the scenario rejects."""
    ev = PointEvaluator(builder, replications=2, seed=seed, executor=LocalExecutor(1))
    draws = builder.draws if not rejected else (builder.draws[0], *(REJECTED,) * 7)
    return DrawnPoints(ev, draws)


@pytest.mark.parametrize("rejected", [False, True])
def test_crossover_with_one_draw_answering_says_monte_carlo(llama, rejected: bool) -> None:
    """k = 3 at 1 and 8 users stops paying in between: with all 8 draws its interval is
    from inputs and model (no ``interval90_sources``); with 7 rejected it holds the Monte
    Carlo interval and the one draw, and the document and its text say so."""
    builder, seed = llama
    draws = _drawn(builder, seed, rejected)
    result = crossover(draws.evaluator, load_grid("concurrency", [1, 8]), [3], draws=draws)
    curve = result.curves[0]
    assert curve.crossings and curve.interval90
    doc = result.to_dict()
    crossing = doc["curves"][0]["crossings"][0]
    text = render_crossover(doc)
    if rejected:
        assert curve.sources == (MONTE_CARLO,) * len(curve.crossings)
        assert crossing["interval90_sources"] == "monte_carlo"
        assert MONTE_CARLO.short in text and "90% from inputs and model" not in text
    else:
        assert curve.sources == (INPUTS,) * len(curve.crossings)
        assert "interval90_sources" not in crossing
        assert "90% from inputs and model" in text and MONTE_CARLO.short not in text


@pytest.mark.parametrize("rejected", [False, True])
def test_best_k_ties_with_one_draw_answering_say_monte_carlo(llama, rejected: bool) -> None:
    """best-k's ties at 1 and 8 users, k = 0 or 3: with 7 draws rejected every difference's
    interval is the Monte Carlo one (``advantage_over_best_sources``), said in the text."""
    builder, seed = llama
    draws = _drawn(builder, seed, rejected)
    _, choices, _ = best_k_table(draws.evaluator, [1, 8], [3], refine=False, draws=draws)
    drawn = [c for c in choices if c.interval90]
    assert drawn
    for c in drawn:
        docs = c.to_dict()
        if rejected:
            assert c.sources == dict.fromkeys(c.interval90, MONTE_CARLO)
            assert set(docs["advantage_over_best_sources"].values()) == {"monte_carlo"}
        else:
            assert not c.sources and "advantage_over_best_sources" not in docs
    # the lines under the selection table that say where its ties are Monte Carlo only
    lines = "\n".join(held_lines({"selection": [c.to_dict() for c in choices]}))
    assert (MONTE_CARLO.short in lines) is rejected


@pytest.mark.parametrize("rejected", [False, True])
def test_capacity_with_one_draw_answering_says_monte_carlo(rejected: bool) -> None:
    """Capacity of plain decoding and k = 2 under a TPOT SLO of 8 ms (6 requests, 3
    replications): with 2 draws both intervals are from inputs and model; with the second
    rejected, each names what it holds, in the document and its heading."""
    sc = small_scenario("workload.requests=6", "simulation.replications=3")
    builder = replace(ScenarioPlans.of(sc), sampled=input_draws(bind(sc), seed=5, draws=2))
    ev = PointEvaluator(
        builder, replications=3, seed=5, slo=SloSpec(tpot_ms=8.0), executor=LocalExecutor(1)
    )
    draws = builder.draws if not rejected else (builder.draws[0], REJECTED)
    result = capacity(ev, [2], draws=DrawnPoints(ev, draws))
    rows = result.to_dict()["policies"]
    assert all("capacity_interval90" in row for row in rows)
    assert "capacity_gain_interval90" in rows[1]
    held = {k: v for row in rows for k, v in row.items() if k.endswith("_sources")}
    text = render_capacity(result.to_dict())
    if rejected:
        assert set(held) == {"capacity_interval90_sources", "capacity_gain_interval90_sources"}
        assert set(held.values()) == {"monte_carlo"}
        assert f"\n{MONTE_CARLO.label}:\n" in text and "inputs and model" not in text
    else:
        assert not held and "\n90% interval from inputs and model (the draws" in text


@pytest.mark.parametrize("draws", [1, 2])
def test_tree_load_from_the_library_labels_one_draw_as_monte_carlo(draws: int) -> None:
    """tree-load with 1 draw (library only) at 1 and 8 users: its document's label and
    ``sources`` and its text say Monte Carlo, not inputs and model; with 2, as before."""
    sc = small_scenario("acceptance.rank_profile=sequoia-jf68m-llama2-7b", "workload.requests=6")
    result = tree_load_study(sc, [1, 8], chains=[3], trees=[TreeDraft(3, 4, 8)], draws=draws)
    doc = tree_load_to_dict(result)
    iv = doc["interval90"]
    text = render_tree_load(doc)
    if draws == 1:
        assert iv["sources"] == "monte_carlo" and iv["label"] == MONTE_CARLO.label
        assert "inputs and model" not in text and f"[{MONTE_CARLO.label}]" in text
    else:
        assert "sources" not in iv and iv["label"] == INPUTS.label
        assert f"[{INPUTS.label}]" in text


@pytest.mark.parametrize("draws", [1, 2])
def test_controllers_from_the_library_label_one_draw_as_monte_carlo(draws: int) -> None:
    """controllers with 1 draw (library only), two phases of a chat / code mix: the
    document's label and ``sources``, its text and its first screen say Monte Carlo, not
    inputs and model; with 2, as before."""
    mix = 'acceptance.mix=[{name="chat",weight=0.7,alpha=0.8},{name="code",weight=0.3,alpha=0.95}]'
    sc = load_scenario(LLAMA, [mix, "workload.output_tokens=48", "workload.requests=8"])
    phases = [
        Phase(6, 20.0, (("chat", 0.9), ("code", 0.1))),
        Phase(6, 80.0, (("chat", 0.1), ("code", 0.9))),
    ]
    builder, evaluator = serving_study(sc, replications=2, draws=draws, executor=LocalExecutor(1))
    doc = controller_study(builder, evaluator, phases, [1, 3]).to_dict()
    iv = doc["interval90"]
    texts = render_controllers(doc) + render_controllers_screen(doc)
    if draws == 1:
        assert iv["sources"] == "monte_carlo" and iv["label"] == MONTE_CARLO.label
        assert "inputs and model" not in texts and MONTE_CARLO.short in texts
    else:
        assert "sources" not in iv and iv["label"] == INPUTS.label
        assert INPUTS.label in texts and "inputs' spread" not in texts
