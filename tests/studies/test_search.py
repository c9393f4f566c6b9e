"""Inverse search: agreement with the closed forms, reachability, quantiles, levers, CLI."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.binding.acceptance_model import resolve_acceptance
from sim.binding.acceptance_shape import acceptance_shape
from sim.binding.bound import bind
from sim.binding.closed_form import pass_times
from sim.cli import main
from sim.errors import SpecsimError
from sim.model.closed_forms import answer_at_k, leviathan_accept_length
from sim.model.shapes import first_rate_for_accept_length
from sim.scenario.load import load_scenario
from sim.scenario.overrides import with_overrides
from sim.simulation.summary import Stats
from sim.studies.bisection import (
    ALPHA_XTOL,
    MonteCarloStats,
    Probe,
    closed_form_stats,
    first_passing,
)
from sim.studies.search import search_acceptance
from sim.studies.solve import solve_lever

SMALL = {"simulation.replications": 4, "workload.requests": 25, "workload.output_tokens": 256}


@pytest.fixture
def seed(seed_path: Path):
    return load_scenario(seed_path)


@pytest.fixture
def small(seed):
    return with_overrides(seed, SMALL)


class CountingSimulate:
    """The Monte Carlo, counting its calls (to check the reported evaluation count)."""

    def __init__(self, engine: str = "fast"):
        self.calls = 0
        self.run = MonteCarloStats(engine)

    def __call__(self, scenario, acceptance, targets) -> Stats:
        self.calls += 1
        return self.run(scenario, acceptance, targets)


# --------------------------------------------------------------------------- root finding


@given(
    root=st.floats(0.0, 1.0),
    hint=st.floats(0.0, 1.0),
    step=st.floats(1e-3, 0.5),
    sign=st.sampled_from([1, -1]),
)
@settings(max_examples=80, deadline=None)
def test_first_passing_finds_the_least_effort_point(
    root: float, hint: float, step: float, sign: int
) -> None:
    """For a monotone step function, the answer is within xtol of the jump, on its good side."""

    def evaluate(x: float) -> dict[str, Any]:
        good = x >= root if sign > 0 else x <= root
        return {"v": 1.0 if good else 0.0}

    probe = Probe(evaluate, sign, 0.0, 1.0)
    x = first_passing(probe, lambda s: s["v"], 0.5, hint=hint, step=step, xtol=1e-4)
    assert x is not None
    assert evaluate(x)["v"] == 1.0
    assert abs(x - root) <= 1e-4 + 1e-12


def test_first_passing_is_none_when_the_best_end_fails() -> None:
    probe = Probe(lambda x: {"v": x}, 1, 0.0, 1.0)
    assert first_passing(probe, lambda s: s["v"], 2.0, hint=0.5, step=0.1, xtol=1e-3) is None


def test_first_passing_on_integers() -> None:
    probe = Probe(lambda x: {"v": float(x)}, 1, 0, 100, integer=True)
    assert first_passing(probe, lambda s: s["v"], 37.5, hint=3, step=1, xtol=1) == 38


# --------------------------------------------------------------------------- acceptance search


def _closed(scn, tok_s: float, k: int):
    """The closed-form answer at k under the scenario's acceptance shape."""
    return answer_at_k(tok_s, pass_times(scn), k, bind(scn).factors)


def test_search_machinery_reproduces_the_closed_form(seed) -> None:
    """With the closed form as the 'simulation', the answer is answer_at_k to the tolerance:
    the first-position rate under the scenario's shape, the mean rate, and the flat alpha."""
    assert acceptance_shape(seed.acceptance).decay < 1  # the decay prior, not flat
    res = search_acceptance(seed, [100.0, 150.0], range(1, 9), simulate=closed_form_stats)
    for t in res.targets:
        for r in t.per_num_steps:
            cf = _closed(seed, t.tok_s, r.num_steps)
            if cf.first_rate is None:
                assert not r.reachable
            else:
                assert r.first_rate == pytest.approx(cf.first_rate, abs=ALPHA_XTOL)
                assert r.alpha == pytest.approx(cf.mean_rate, abs=ALPHA_XTOL)
                assert r.flat_alpha == pytest.approx(cf.alpha, abs=1e-12)
    best = res.targets[1].best
    assert best is not None and res.targets[1].to_dict()["best_num_steps"] == best.num_steps


def test_monte_carlo_search_agrees_with_the_closed_form_without_jitter_or_spread(seed) -> None:
    """No jitter, one rate: the closed form lies in the Monte Carlo interval (plus the
    bisection tolerance). Long requests make the last cycle's overshoot negligible."""
    scn = with_overrides(
        seed,
        {"simulation.replications": 6, "workload.requests": 10, "workload.output_tokens": 20000},
    )
    assert scn.timing.jitter_cv == 0 and not scn.acceptance.heterogeneous
    res = search_acceptance(scn, [100.0, 150.0], [4, 6])
    for t in res.targets:
        for r in t.per_num_steps:
            cf = _closed(scn, t.tok_s, r.num_steps).first_rate
            assert r.reachable == (cf is not None)
            if cf is None:
                continue
            lo, hi = r.first_rate_ci95
            assert lo is not None and hi is not None and lo <= r.first_rate <= hi
            assert lo - 2 * ALPHA_XTOL <= cf <= hi + 2 * ALPHA_XTOL, (t.tok_s, r)
            assert hi - lo < 0.01  # the interval is informative


def test_evaluation_count_is_the_number_of_monte_carlo_runs(small) -> None:
    counter = CountingSimulate()
    res = search_acceptance(small, [120.0], [4, 5], simulate=counter)
    assert res.evaluations == counter.calls > 0
    assert res.to_dict()["evaluations"] == counter.calls


def test_unreachable_target_reports_ceiling_and_reason(small) -> None:
    res = search_acceptance(small, [1000.0], [1, 2, 3]).to_dict()
    t = res["targets"][0]
    assert t["reachable"] is False and t["alpha"] is None and t["best_num_steps"] is None
    assert t["ceiling_tok_s"] == pytest.approx(max(r["ceiling_tok_s"] for r in t["per_num_steps"]))
    assert "1000" in t["reason"] and "ceiling" in t["reason"]
    assert all(not r["reachable"] for r in t["per_num_steps"])


def test_an_unreachable_target_names_the_acceptance_its_simulated_ceiling_ran_at(small) -> None:
    """With a Beta std the search stops where the std stops being possible (mean rate
    below 1), yet the reason said 'simulated at alpha 1'."""
    capped = with_overrides(small, {"acceptance.std": 0.3})
    t = search_acceptance(capped, [1000.0], [2], simulate=closed_form_stats).to_dict()
    row = t["targets"][0]["per_num_steps"][0]
    a = row["simulated_ceiling_alpha"]
    assert row["simulated_ceiling_tok_s"] is not None and 0.5 < a < 0.9
    assert (
        f"simulated at alpha {a:.3f}, the highest acceptance.std allows"
        in t["targets"][0]["reason"]
    )
    free = search_acceptance(small, [1000.0], [2], simulate=closed_form_stats).to_dict()
    assert free["targets"][0]["per_num_steps"][0]["simulated_ceiling_alpha"] == 1.0
    assert "simulated at alpha 1:" in free["targets"][0]["reason"]


def test_a_std_limits_the_search_around_the_scenarios_own_acceptance(small) -> None:
    """A Beta std on an anchored alpha: the upper end was sought from a scale of 0, where a
    std forbids means too, so the search stopped at alpha 0.000 and called every target
    unreachable; below the lowest valid mean the Monte Carlo of an impossible Beta drew
    accept length 1.5 at a first-position rate of 0.000."""
    spread = with_overrides(small, {"acceptance.std": 0.2})
    res = search_acceptance(spread, [45.0, 70.0, 31.0], [2]).to_dict()
    t45, t70, t31 = (t["per_num_steps"][0] for t in res["targets"])
    assert t45["reachable"] and t70["reachable"]  # were unreachable
    assert 0.3 < t45["alpha"] < t70["alpha"] < 0.8
    # 0.2^2 < m (1 - m) needs m > 0.0417: the lowest valid scale answers a target below it
    assert t31["reachable"] and t31["alpha"] == pytest.approx(0.0417, abs=2e-3)
    assert t31["required_accept_length"] < 1.1  # the impossible Beta gave 1.5
    assert "near 0 or 1" in res["acceptance_lever"] and "down to 0.04" in res["acceptance_lever"]


def test_a_tree_scenario_is_searched_as_chains_and_says_so(small) -> None:
    """Without --topk a tree scenario is searched as chains of its top-1 rates: that was
    not said, the 'now' line gave the tree's tok/s as if it were the chain's at its k, and
    no k had a 90% interval (the chains' closed forms have them)."""
    tree = {
        "speculation.topk": 4, "speculation.num_draft_tokens": 8, "speculation.num_steps": 3,
        "acceptance.rank_profile": "sequoia-jf68m-llama2-7b",
    }  # fmt: skip
    scenario = with_overrides(small, tree)
    res = search_acceptance(scenario, [100.0], [3, 4], simulate=closed_form_stats).to_dict()
    assert res["acceptance_lever"].startswith(
        "the scenario drafts a tree 3/4/8: searched as chains of its top-1 rates"
    )
    assert res["current"]["draft"] == "tree 3/4/8"
    chain = with_overrides(scenario, {"speculation.topk": 1})
    want = search_acceptance(chain, [100.0], [3, 4], simulate=closed_form_stats).to_dict()
    got_rows, want_rows = res["targets"][0]["per_num_steps"], want["targets"][0]["per_num_steps"]
    assert [r["interval90"] for r in got_rows] == [r["interval90"] for r in want_rows]
    assert all(r["interval90"] is not None for r in got_rows)
    assert want["current"]["draft"] == "k = 3"


def test_trivially_reachable_target_needs_no_acceptance(small) -> None:
    # at alpha = 0 every cycle emits one token: k = 1 runs 1000 / 31.4 ms = 31.8 tok/s
    res = search_acceptance(small, [20.0], [1]).to_dict()
    r = res["targets"][0]["per_num_steps"][0]
    assert r["reachable"] and r["alpha"] == 0.0


def test_quantile_form_needs_at_least_the_mean_form(seed) -> None:
    scn = with_overrides(seed, {**SMALL, "timing.jitter_cv": 0.3})
    mean = search_acceptance(scn, [120.0], [5]).targets[0].per_num_steps[0]
    q90 = search_acceptance(scn, [120.0], [5], quantile=0.9).targets[0].per_num_steps[0]
    assert q90.alpha > mean.alpha
    assert q90.alpha_ci95[0] <= q90.alpha <= q90.alpha_ci95[1]


def test_per_position_profile_is_scaled_keeping_its_shape(seed) -> None:
    scn = with_overrides(seed, {**SMALL, "acceptance.per_position": [0.9, 0.6, 0.5]})
    res = search_acceptance(scn, [80.0], [3], simulate=closed_form_stats).to_dict()
    assert "scales every mean rate" in res["acceptance_lever"]
    r = res["targets"][0]["per_num_steps"][0]
    rates = np.array(r["per_position"])
    assert rates[1] / rates[2] == pytest.approx(0.6 / 0.5)
    assert r["alpha"] == pytest.approx(rates.mean())


def test_heterogeneous_acceptance_is_searched_by_scaling_the_mean(seed) -> None:
    """Beta spread per request: the closed form over the spread (effective rates) lies in
    the Monte Carlo interval, which is wider than without the spread."""
    long = {"simulation.replications": 6, "workload.requests": 50, "workload.output_tokens": 4000}
    het = with_overrides(seed, {**long, "acceptance.concentration": 20.0})
    res = search_acceptance(het, [110.0], [4])
    assert "per-request spread" in res.note
    r = res.targets[0].per_num_steps[0]
    lo, hi = r.alpha_ci95
    assert lo - 2 * ALPHA_XTOL <= r.closed_form_alpha <= hi + 2 * ALPHA_XTOL
    homo = search_acceptance(with_overrides(seed, long), [110.0], [4]).targets[0]
    h_lo, h_hi = homo.per_num_steps[0].alpha_ci95
    assert hi - lo > h_hi - h_lo


def test_common_random_numbers_make_the_estimate_monotone_in_alpha(small) -> None:
    sim = MonteCarloStats()
    means = [
        sim(with_overrides(small, {"acceptance.alpha": a}), None, []).tok_s_mean
        for a in np.linspace(0.5, 1.0, 11)
    ]
    assert all(b >= a for a, b in itertools.pairwise(means))


def test_bad_search_inputs(small) -> None:
    with pytest.raises(SpecsimError):
        search_acceptance(small, [], [2])
    with pytest.raises(SpecsimError):
        search_acceptance(small, [100.0], [2], quantile=1.5)
    with pytest.raises(SpecsimError):
        search_acceptance(small, [100.0], [0, 2])
    with pytest.raises(SpecsimError):
        search_acceptance(small, [-5.0], [2])


# --------------------------------------------------------------------------- levers


def test_solve_verify_ms_is_at_most_and_matches_the_closed_form(small) -> None:
    res = solve_lever(small, "timing.verify_ms", [100.0], simulate=closed_form_stats)
    t = res.targets[0]
    assert res.direction == "at most" and t.reachable
    # closed form: 1000 * AL / (cycle without verify + verify) = 100
    scn = with_overrides(small, {"timing.verify_ms": t.value})
    tput = closed_form_stats(scn, None, ()).tok_s_mean
    assert tput == pytest.approx(100.0, rel=2e-3)


def test_solve_with_monte_carlo_brackets_its_answer(small) -> None:
    res = solve_lever(small, "timing.verify_ms", [100.0])
    t = res.targets[0]
    lo, hi = t.value_ci95
    assert lo is not None and hi is not None and lo <= t.value <= hi
    assert res.warnings == ()  # monotone under common random numbers
    assert t.value == pytest.approx(t.closed_form_value, rel=0.03)
    assert res.evaluations == len(res.points)


def test_solve_alpha_agrees_with_the_acceptance_search(small) -> None:
    """Solving acceptance.alpha (an equal-rate accept length at the measured k) and
    searching the first-position rate under the shape describe the same drafter. solve
    bisects the Monte Carlo; search finds the exact root (no jitter, one profile): the
    exact root lies in solve's Monte Carlo interval, and the Monte Carlo roots of both
    agree (search through a plain wrapper, which takes the Monte Carlo path)."""
    lever = solve_lever(small, "acceptance.alpha", [70.0])
    k = small.num_steps
    search = search_acceptance(small, [70.0], [k])
    assert lever.direction == "at least"
    shape = acceptance_shape(small.acceptance)

    def first_rate(alpha: float) -> float:
        al = leviathan_accept_length(alpha, small.acceptance.measured_num_steps)
        return float(first_rate_for_accept_length(shape.shape, shape.decay, al, k))

    exact = search.targets[0].per_num_steps[0]
    assert exact.method == "exact"
    lo, hi = (first_rate(v) for v in lever.targets[0].value_ci95)
    assert lo - 2 * ALPHA_XTOL <= exact.first_rate <= hi + 2 * ALPHA_XTOL
    mc = search_acceptance(small, [70.0], [k], simulate=CountingSimulate())
    mc_row = mc.targets[0].per_num_steps[0]
    assert mc_row.method == "monte_carlo"
    assert first_rate(lever.targets[0].value) == pytest.approx(
        mc_row.first_rate, abs=3 * ALPHA_XTOL
    )


def test_solve_an_integer_field(small) -> None:
    # more GPUs shard the model further: a whole number of them reaches the target
    res = solve_lever(small, "hardware.gpus", [55.0], simulate=closed_form_stats)
    assert res.targets[0].value is None or float(res.targets[0].value).is_integer()


def test_the_draft_length_is_not_a_monotone_lever(small) -> None:
    # tok/s peaks at a best k: bisection on k said 'unreachable up to k = 64' for 70 tok/s
    # while k = 0 (plain decoding, 82.5 tok/s) reaches it
    with pytest.raises(SpecsimError, match=r"not a monotone lever.*specsim search"):
        solve_lever(small, "speculation.num_steps", [70.0], simulate=closed_form_stats)


def test_an_unreachable_lever_names_where_the_search_stopped(small) -> None:
    # hardware.gpus may go to 1024; the search stops at 2**6 times its value (8 -> 512)
    res = solve_lever(small, "hardware.gpus", [500.0], simulate=closed_form_stats)
    reason = res.targets[0].reason
    assert "= 512 (the end of the range searched; the field allows more)" in reason


def test_an_unreachable_lever_at_its_bound_says_so(small) -> None:
    res = solve_lever(small, "timing.draft_step_ms", [500.0], simulate=closed_form_stats)
    assert "(the end of its valid range)" in res.targets[0].reason


def test_unreachable_lever_says_why(small) -> None:
    res = solve_lever(small, "timing.draft_step_ms", [500.0], simulate=closed_form_stats)
    t = res.targets[0]
    assert not t.reachable and "valid range" in t.reason


@pytest.mark.parametrize("field", ["name", "timing.verify_cuda_graph", "timing.nope"])
def test_solve_rejects_non_numeric_or_missing_fields(small, field: str) -> None:
    with pytest.raises(SpecsimError):
        solve_lever(small, field, [100.0])


# --------------------------------------------------------------------------- CLI


def _run(*args: str):
    return CliRunner().invoke(main, list(args))


def test_cli_search_json_schema(seed_path: Path) -> None:
    result = _run(
        "search", str(seed_path), "--target", "100", "--target", "1000", "--num-steps", "3:5",
        "--replications", "3", "--requests", "10", "--set", "workload.output_tokens=128", "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert {"scenario", "evaluations", "targets"} <= set(doc)
    assert doc["evaluations"] > 0
    t0, t1 = doc["targets"]
    for key in (
        "tok_s", "reachable", "best_num_steps", "alpha", "alpha_ci95", "required_accept_length",
        "ceiling_tok_s", "quantile", "per_num_steps",
    ):  # fmt: skip
        assert key in t0
    assert [r["num_steps"] for r in t0["per_num_steps"]] == [3, 4, 5]
    for key in ("num_steps", "reachable", "alpha", "alpha_ci95", "ceiling_tok_s"):
        assert key in t0["per_num_steps"][0]
    assert t0["reachable"] and not t1["reachable"] and t1["reason"]


def test_cli_search_text_and_plot(seed_path: Path, tmp_path: Path) -> None:
    result = _run(
        "search", str(seed_path), "--num-steps", "2,4", "--replications", "2", "--requests",
        "10", "--set", "workload.output_tokens=64", "--plot", str(tmp_path / "fig"),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "target 150 tok/s" in result.output and "Monte Carlo evaluations" in result.output
    assert (tmp_path / "fig" / "required-alpha.png").stat().st_size > 10_000


def test_cli_solve(seed_path: Path) -> None:
    result = _run(
        "search", str(seed_path), "--target", "100", "--solve", "timing.verify_ms",
        "--replications", "2", "--requests", "10", "--set", "workload.output_tokens=128",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "timing.verify_ms at most" in result.output


@pytest.mark.parametrize(
    "args",
    [
        ["--quantile", "2"],
        ["--num-steps", "0:3"],
        ["--num-steps", "a"],
        ["--solve", "timing.verify_ms", "--num-steps", "2"],
        ["--solve", "name"],
        ["--target", "-5"],
        ["--target", "0"],
    ],
)
def test_cli_search_bad_input_exits_2(seed_path: Path, args: list[str]) -> None:
    result = _run("search", str(seed_path), *args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output


def test_search_from_a_plain_decoding_scenario(write_scenario) -> None:
    path = write_scenario(
        'name = "k0"\n[timing]\ndecode_ms = 10.0\nverify_ms = 20.0\ndraft_step_ms = 1.0\n'
        "draft_extend_ms = 2.0\n[speculation]\nnum_steps = 0\n[targets]\ntok_s = [60.0]\n"
    )
    scn = load_scenario(path)
    res = search_acceptance(scn, [60.0], [1, 2], simulate=closed_form_stats)
    for r in res.targets[0].per_num_steps:
        # the measured verify pass covers 1 token (k + 1 at k = 0), as in the closed forms;
        # the searched acceptance takes the pooled decay prior
        no_acceptance = resolve_acceptance(None, r.num_steps).factors
        cf = answer_at_k(60.0, pass_times(scn), r.num_steps, no_acceptance)
        assert r.flat_alpha == pytest.approx(cf.alpha, abs=1e-12)
        assert r.first_rate >= r.flat_alpha - ALPHA_XTOL


def test_quantile_answer_holds_on_fresh_random_numbers(seed) -> None:
    """At the returned rate, about 90% of requests reach the target on a new seed too.

    Tolerance: 4 standard errors of the two binomial proportions (the search's 400
    requests and the check's 4000)."""
    scn = with_overrides(
        seed,
        {"simulation.replications": 8, "workload.requests": 50, "workload.output_tokens": 256,
         "timing.jitter_cv": 0.3},
    )  # fmt: skip
    r = search_acceptance(scn, [110.0], [5], quantile=0.9).targets[0].per_num_steps[0]
    check = with_overrides(
        scn,
        {
            "speculation.num_steps": 5,
            "acceptance.first_rate": r.first_rate,
            "simulation.seed": 12345,
            "workload.requests": 500,
        },
    )
    (entry,) = MonteCarloStats()(check, None, [110.0]).targets
    se = np.sqrt(0.9 * 0.1 / 400 + 0.9 * 0.1 / 4000)
    assert abs(entry.p_at_least - 0.9) < 4 * se


@pytest.mark.slow
def test_search_with_the_simpy_engine_agrees_with_the_fast_engine(seed) -> None:
    """Both engines simulate the same model with different random streams: their answers
    must agree within the sum of the two 95% half-widths (a conservative band)."""
    scn = with_overrides(
        seed,
        {"simulation.replications": 8, "workload.requests": 50, "workload.output_tokens": 256,
         "timing.jitter_cv": 0.2},
    )  # fmt: skip
    fast = search_acceptance(scn, [100.0], [4], engine="fast").targets[0].per_num_steps[0]
    des = search_acceptance(scn, [100.0], [4], engine="des").targets[0].per_num_steps[0]
    half = [(r.alpha_ci95[1] - r.alpha_ci95[0]) / 2 for r in (fast, des)]
    assert abs(fast.alpha - des.alpha) <= sum(half) + 2 * ALPHA_XTOL


def test_search_result_does_not_depend_on_workers(small) -> None:
    one = search_acceptance(small, [90.0, 120.0], [3, 4, 5]).to_dict()
    two = search_acceptance(small, [90.0, 120.0], [3, 4, 5], workers=2).to_dict()
    assert one == two
    assert one["evaluations"] > 0


# --------------------------------------------------------------------------- exact roots


def test_seed_search_finds_exact_roots_with_few_monte_carlo_runs(seed) -> None:
    """The seed (one rate, fixed cycles): one Monte Carlo check per reachable (k, target),
    at most 30 in all; the exact root lies in the interval the check gives."""
    res = search_acceptance(seed, [150.0, 200.0], range(1, 17))
    rows = [r for t in res.targets for r in t.per_num_steps]
    assert all(r.method == "exact" for r in rows)
    assert res.evaluations == sum(r.reachable for r in rows) <= 30
    for r in rows:
        if r.reachable:
            lo, hi = r.alpha_ci95
            assert lo is not None and hi is not None and lo <= r.alpha <= hi


def test_exact_roots_match_monte_carlo_bisection_within_the_tolerance(seed) -> None:
    """The seed's mean-tok/s search: the same answers as the Monte Carlo bisection (a plain
    wrapper takes that path) within the search tolerance, on the seed's sample of 2000
    requests; the intervals agree to twice that."""
    exact = search_acceptance(seed, [150.0, 200.0], [6, 12])
    mc = search_acceptance(seed, [150.0, 200.0], [6, 12], simulate=CountingSimulate())
    for te, tm in zip(exact.targets, mc.targets, strict=True):
        for e, m in zip(te.per_num_steps, tm.per_num_steps, strict=True):
            assert (e.method, m.method) == ("exact", "monte_carlo")
            assert e.reachable == m.reachable
            if not e.reachable:
                continue
            assert e.alpha == pytest.approx(m.alpha, abs=ALPHA_XTOL)
            for a, b in zip(e.alpha_ci95, m.alpha_ci95, strict=True):
                assert a == pytest.approx(b, abs=2 * ALPHA_XTOL)
    assert exact.evaluations == 3 < mc.evaluations


def test_exact_quantile_root_lies_in_the_monte_carlo_interval(seed) -> None:
    """P(tok/s >= t) >= 0.9: the binomial noise of 2000 requests moves the Monte Carlo
    root by more than the tolerance, so the check is that the exact root lies in the
    bisection's 95% interval, and that both intervals have about the same width."""
    exact = search_acceptance(seed, [110.0], [6, 12], quantile=0.9)
    mc = search_acceptance(seed, [110.0], [6, 12], quantile=0.9, simulate=CountingSimulate())
    for e, m in zip(exact.targets[0].per_num_steps, mc.targets[0].per_num_steps, strict=True):
        lo, hi = m.alpha_ci95
        assert lo - ALPHA_XTOL <= e.alpha <= hi + ALPHA_XTOL
        e_lo, e_hi = e.alpha_ci95
        assert (e_hi - e_lo) == pytest.approx(hi - lo, rel=0.5, abs=2 * ALPHA_XTOL)


def test_exact_roots_with_an_extend_growing_with_l(seed) -> None:
    """The joint law of (cycles, emitted tokens) keeps the roots exact; they match the
    Monte Carlo bisection within the tolerance."""
    scn = with_overrides(seed, {"timing.draft_extend_ms_per_token": 0.1})
    exact = search_acceptance(scn, [150.0], [10])
    mc = search_acceptance(scn, [150.0], [10], simulate=CountingSimulate())
    e, m = exact.targets[0].per_num_steps[0], mc.targets[0].per_num_steps[0]
    assert (e.method, m.method, exact.evaluations) == ("exact", "monte_carlo", 1)
    assert e.alpha == pytest.approx(m.alpha, abs=ALPHA_XTOL)
