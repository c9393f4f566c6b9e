"""Open loads above a policy's service bound are not simulated (sim/simulation/serving/
stability.py ``LoadCheck``): crossover, search at a rate and serving sweeps say so and name
the bound, and leave their stable points as they were."""

from __future__ import annotations

import dataclasses
import math

import pytest

import sim.studies.serving.point_tasks as point_tasks
import sim.studies.serving.search as serving_search
import sim.studies.sweep as sweep_module
from sim.binding.bound import bind
from sim.documents import document
from sim.model.policy import FixedK
from sim.report.crossover import render_crossover
from sim.report.search import render_search
from sim.simulation.serving.metrics import summarize_serving
from sim.simulation.serving.setup import serving_setup
from sim.simulation.serving.simulate import simulate_serving
from sim.simulation.serving.stability import check_open_load, service_bound
from sim.studies.serving.crossover import crossover
from sim.studies.serving.crossover_result import NEITHER, PLAIN, SPECULATION
from sim.studies.serving.evaluator import PointEvaluator
from sim.studies.serving.paired_metrics import Load, gain
from sim.studies.serving.scenario_plans import BASELINE
from sim.studies.serving.search import search_at_load
from sim.studies.sweep import PointTask, evaluate_serving_point, point_scenario
from tests.simulation.serving.helpers import plan
from tests.studies.serving.helpers import CodePlans, small_scenario


class Counted:
    """``simulate_serving`` that records each call's rate and policies."""

    def __init__(self, real):
        self.real, self.calls = real, []

    def __call__(self, plan, policies, **kw):
        arrivals = plan.workload.arrivals
        self.calls.append((getattr(arrivals, "rate_per_s", None), tuple(policies.values())))
        return self.real(plan, policies, **kw)


@pytest.fixture
def counted(monkeypatch):
    """Every serving simulation the studies run, counted."""
    spy = Counted(point_tasks.simulate_serving)
    for module in (point_tasks, serving_search, sweep_module):
        monkeypatch.setattr(module, "simulate_serving", spy)
    return spy


def bounds(builder, k: int) -> tuple[float, float]:
    """(plain decoding's, k's) service bound on ``builder``'s plans (requests/s)."""
    at = Load("rate", 1.0)
    plain, speculative = builder(at, builder.default_steps), builder(at, k)
    base = service_bound(plain, plain.drafting(BASELINE)).rate_per_s
    return base, service_bound(speculative, speculative.drafting(FixedK(k))).rate_per_s


# --------------------------------------------------------------------------- crossover


def test_crossover_does_not_simulate_rates_above_a_bound(counted):
    """k = 3 answers fewer requests a second than plain decoding at its best batch: a rate
    under both bounds runs both, one between them is plain decoding's without a run, one
    above both neither's; only the first is simulated."""
    builder = CodePlans(requests=12, output=20)
    base_b, spec_b = bounds(builder, 3)
    assert spec_b < base_b
    low, mid, high = round(0.1 * spec_b), round(math.sqrt(spec_b * base_b)), round(2 * base_b)
    assert spec_b < mid < base_b
    loads = [Load("rate", x) for x in (low, mid, high)]
    ev = PointEvaluator(builder, replications=2, seed=5)
    res = crossover(ev, loads, [3], metrics=["per_user_tok_s"], refine=False)
    assert {rate for rate, _ in counted.calls} == {low} and ev.runs == 2
    curve = res.curves[0]
    assert curve.loads == (low,)
    assert [(o.load, o.verdict) for o in curve.overloaded] == [(mid, PLAIN), (high, NEITHER)]
    assert curve.overloaded[0].speculative_bound == spec_b
    assert curve.overloaded[0].baseline_bound == base_b
    doc = res.to_dict()
    assert [c["offered_rate_per_s"] for c in doc["overloads"]] == [mid, high]
    assert doc["overloads"][0]["unstable"] == ["3"]
    assert doc["overloads"][1]["unstable"] == ["0", "3"]
    assert doc["overloads"][1]["service_bounds"]["3"]["rate_per_s"] == spec_b
    text = doc["curves"][0]["summary"]
    assert f"plain decoding wins at {mid:g} requests/s" in text
    assert f"at most {spec_b:.3g} requests/s" in text and f"neither is stable at {high:g}" in text
    assert list(doc["distributions"][0]["by_num_steps"]) == ["0", "3"]
    assert [d["load"] for d in doc["distributions"]] == [low]


def test_crossover_speculation_wins_where_plain_decoding_cannot_carry_the_load(counted):
    """Two running slots and alpha 0.9: speculation answers more requests a second than
    plain decoding, so a rate between the bounds is speculation's."""

    @dataclasses.dataclass(frozen=True)
    class TwoSlots(CodePlans):
        def __call__(self, load, num_steps):
            return plan(
                load.arrivals(),
                acceptance={"alpha": self.alpha},
                k=num_steps,
                output=self.output,
                requests=self.requests,
                warmup=1,
                max_running_requests=2,
            )

    builder = TwoSlots(alpha=0.9, requests=8, output=20)
    base_b, spec_b = bounds(builder, 3)
    assert base_b < spec_b
    between = math.sqrt(base_b * spec_b)
    ev = PointEvaluator(builder, replications=2, seed=5)
    res = crossover(ev, [Load("rate", between), Load("rate", 2 * spec_b)], [3], refine=False)
    assert counted.calls == [] and ev.runs == 0
    curve = res.curves[0]
    assert [o.verdict for o in curve.overloaded] == [SPECULATION, NEITHER]
    assert curve.loads == () and curve.summary().startswith("no load simulated; speculation wins")


def test_crossover_stable_points_are_what_the_evaluator_gives_alone():
    """The rates under both bounds give the gains a fresh evaluator computes for them, bit
    for bit, whether or not a rate above a bound is on the grid."""
    builder = CodePlans(requests=12, output=20)
    stable = [Load("rate", 5.0), Load("rate", 20.0)]
    with_overload = crossover(
        PointEvaluator(builder, replications=2, seed=5),
        [*stable, Load("rate", 500.0)],
        [3],
        metrics=["per_user_tok_s"],
        refine=False,
    )
    without = crossover(
        PointEvaluator(builder, replications=2, seed=5),
        stable,
        [3],
        metrics=["per_user_tok_s"],
        refine=False,
    )
    alone = PointEvaluator(builder, replications=2, seed=5)
    direct = [gain(alone(x, FixedK(3)), alone(x, BASELINE), "per_user_tok_s") for x in stable]
    a, b = with_overload.curves[0], without.curves[0]
    assert a.gain == b.gain == tuple(direct)
    assert a.to_dict()["points"] == b.to_dict()["points"]
    assert "overloaded" not in b.to_dict() and "overloads" not in without.to_dict()


def test_a_closed_loop_is_never_checked():
    ev = PointEvaluator(CodePlans(), replications=1, seed=1)
    assert ev.bound(Load("concurrency", 4), FixedK(3)) is None
    assert ev.check(Load("concurrency", 4), {"k": FixedK(3)}) is None
    assert ev.stable(Load("concurrency", 10_000), FixedK(3))


# --------------------------------------------------------------------------- search at a rate


def test_search_at_a_rate_above_every_bound_simulates_nothing(counted):
    """1e6 requests a second is more than the server answers at any acceptance: every
    target unreachable, the reason naming the bound, no simulation, no simulated ceiling."""
    scenario = small_scenario()
    res = search_at_load(scenario, [100.0], [2, 3], Load("rate", 1e6))
    assert counted.calls == []
    assert res.evaluations == 0  # nothing ran, so no Monte Carlo evaluation is counted
    assert res.refused > 0 and res.settings["stability"]["not_simulated"] == res.refused
    t = res.targets[0]
    assert not any(r.reachable for r in t.per_num_steps)
    assert all(r.simulated_ceiling_tok_s is None for r in t.per_num_steps)
    assert t.reason.startswith("1e+06 requests/s is more than the server answers with k = 2")
    stab = res.settings["stability"]
    assert stab["offered_rate_per_s"] == 1e6
    for row in stab["per_num_steps"]:
        assert row["least_stable_alpha"] is None and row["service_bound_at_top_per_s"] < 1e6
        assert f"at most {row['service_bound_at_top_per_s']:.3g} requests/s" in t.reason


def test_search_simulates_only_acceptances_whose_bound_carries_the_rate(counted):
    """A rate between the bound at alpha 0 and at alpha 1: every simulated acceptance is
    at or above the least stable one, and the answer too."""
    scenario = small_scenario()
    assert "stability" not in search_at_load(scenario, [1.0], [2], Load("rate", 1.0)).settings
    top = serving_search.stability(serving_search.ServingStats(Load("rate", 1.0)), scenario, [2])
    rate = 0.999 * top[0].bound_at_top.rate_per_s
    found = serving_search.stability(serving_search.ServingStats(Load("rate", rate)), scenario, [2])
    least = found[0].least_stable_alpha
    assert least is not None and least > 0.5
    counted.calls.clear()
    res = search_at_load(scenario, [1.0], [2], Load("rate", rate))
    row = res.targets[0].per_num_steps[0]
    assert row.reachable and row.alpha >= least - 1e-6
    assert res.settings["stability"]["per_num_steps"][0]["least_stable_alpha"] == least
    assert counted.calls and all(r == rate for r, _ in counted.calls)
    # the figure counts the runs, and the refused lever values are counted apart
    assert res.evaluations == len(counted.calls)
    assert res.settings["stability"]["not_simulated"] == res.refused


def test_search_at_a_rate_counts_the_same_with_two_workers(counted):
    """Refused lever values counted the same way when the draft lengths run in processes."""
    scenario = small_scenario()
    one = search_at_load(scenario, [100.0], [2, 3], Load("rate", 1e6))
    two = search_at_load(scenario, [100.0], [2, 3], Load("rate", 1e6), workers=2)
    assert (two.evaluations, two.refused) == (one.evaluations, one.refused) == (0, one.refused)
    assert one.refused > 0


# --------------------------------------------------------------------------- sweep


def sweep_task(rate: float) -> PointTask:
    base = small_scenario().model_dump(exclude_none=True)
    return PointTask(base, {"serving.rate_per_s": rate}, "fast", (100.0,), "test")


def test_a_sweep_point_above_a_bound_is_marked_not_simulated(counted):
    row = evaluate_serving_point(sweep_task(1e6))
    assert counted.calls == []
    assert row["stable"] is False and row["offered_rate_per_s"] == 1e6
    assert row["unstable"] == "baseline;speculative"
    setup = serving_setup(bind(small_scenario("serving.rate_per_s=1e6")))
    check = check_open_load(setup.plan, setup.draftings)
    for name, b in check.bounds.items():
        assert row[f"{name}_service_bound_per_s"] == b.rate_per_s
    assert row["serving.rate_per_s"] == 1e6 and row["num_steps"] == 5
    assert not any(k.endswith("_mean") for k in row)


def test_a_stable_sweep_point_has_no_stability_columns(counted):
    row = evaluate_serving_point(sweep_task(2.0))
    assert len(counted.calls) == 1
    assert not {"stable", "offered_rate_per_s", "unstable"} & set(row)
    assert row["speculative_per_user_tok_s_mean"] > 0


def test_search_report_says_how_many_acceptance_values_were_refused():
    """The text header counts the runs and, apart, the values refused without one."""
    res = search_at_load(small_scenario(), [100.0], [2, 3], Load("rate", 1e6))
    text = render_search(res.to_dict())
    n = res.refused
    assert f"; 0 Monte Carlo evaluations ({n} more acceptance values above the service " in text
    assert "refused, not simulated)" in text


def test_a_sweep_point_serve_calls_not_steady_says_so():
    """A stable rate whose run grew its backlog through the window (serve's NOT STEADY)
    had its latencies in the table without a word; the row now counts the replications,
    as serve does, and a steady point's row has no such column."""
    base = small_scenario("workload.requests=60").model_dump(exclude_none=True)
    task = PointTask(base, {"serving.rate_per_s": 150.0}, "fast", (100.0,), "test")
    row = evaluate_serving_point(task)
    assert "stable" not in row  # under both bounds: simulated
    setup = serving_setup(bind(point_scenario(task)), source="test")
    run = simulate_serving(
        setup.plan,
        setup.draftings,
        replications=setup.replications,
        seed=setup.seed,
    )
    summary = summarize_serving(run.records, setup.slo, baseline=BASELINE)
    for name, policy in summary.policies.items():
        assert policy.overloaded > 0
        assert row[f"{name}_not_steady_replications"] == policy.overloaded
    steady = evaluate_serving_point(sweep_task(1.0))
    assert not [k for k in steady if k.endswith("_not_steady_replications")]


def test_crossover_says_which_simulated_rates_were_not_steady():
    """A rate under both bounds whose backlog grew through the window (serve's NOT STEADY)
    had its gain tabled as a steady one; the result names it with each policy's count of
    such replications (the backlog count serve prints), and a low rate is not named."""
    builder = CodePlans(requests=12, output=20)
    _, spec_b = bounds(builder, 3)
    low, near = round(0.1 * spec_b), 0.95 * spec_b
    ev = PointEvaluator(builder, replications=2, seed=5)
    res = crossover(
        ev, [Load("rate", low), Load("rate", near)], [3], metrics=["per_user_tok_s"], refine=False
    )
    assert res.not_steady and {x for x, *_ in res.not_steady} == {near}
    for x, k, n, r in res.not_steady:
        policy = BASELINE if k == 0 else FixedK(k)
        assert n == ev(Load("rate", x), policy).not_steady and 0 < n <= r == 2
    doc = res.to_dict()
    assert doc["not_steady"][0]["load"] == near
    text = render_crossover(document("crossover", doc))
    assert f"NOT STEADY: {near:g} requests/s (" in text


def test_a_steady_crossover_document_is_as_it_was():
    builder = CodePlans(requests=12, output=20)
    ev = PointEvaluator(builder, replications=2, seed=5)
    res = crossover(ev, [Load("concurrency", 1), Load("concurrency", 4)], [3], refine=False)
    assert res.not_steady == () and "not_steady" not in res.to_dict()
