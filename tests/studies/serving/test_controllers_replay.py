"""Controllers replayed on phase-changing traces: the trace, the replay's pairing."""

from __future__ import annotations

import numpy as np
import pytest

from sim.errors import SpecsimError
from sim.model.controllers import SGLangAdaptive
from sim.model.policy import FixedK, KTable
from sim.simulation.serving import Poisson
from sim.studies.serving.controller_phases import Phase, default_phases, phase_trace
from sim.studies.serving.controller_policies import standard_policies, vllm_profile
from sim.studies.serving.controller_replay import replay
from tests.simulation.serving.helpers import plan

MIX = {
    "mix": [
        {"name": "chat", "weight": 0.7, "alpha": 0.55},
        {"name": "code", "weight": 0.3, "alpha": 0.9},
    ]
}


def mixed_plan():
    return plan(Poisson(1.0), acceptance=MIX, k=7, output=30, requests=10)


def test_phase_trace_has_its_shares_exactly_and_paced_arrivals():
    phases = [
        Phase(10, 2.0, (("chat", 0.9), ("code", 0.1))),
        Phase(20, 4.0, (("chat", 0.25), ("code", 0.75))),
    ]
    trace, phase_of = phase_trace(phases, ("chat", "code"), 0, 30)
    assert trace.size == 30 and list(np.bincount(phase_of)) == [10, 20]
    assert np.bincount(trace.request_class[:10], minlength=2).tolist() == [9, 1]
    assert np.bincount(trace.request_class[10:], minlength=2).tolist() == [5, 15]
    assert np.allclose(np.diff(trace.arrival_ms[:11]), 500.0)
    assert np.allclose(np.diff(trace.arrival_ms[10:]), 250.0)
    with pytest.raises(SpecsimError, match="unknown acceptance class"):
        phase_trace([Phase(2, 1.0, (("prose", 1.0),))], ("chat", "code"), 0, 30)
    with pytest.raises(ValueError):
        Phase(2, 1.0, (("chat", 0.5),))


def test_replay_pairs_every_policy_with_the_reference():
    p = mixed_plan()
    phases = default_phases(p, one_user_req_s=1.0, requests=8)
    assert [ph.shares[0] for ph in phases] == [("chat", 0.9), ("chat", 0.1)] * 2
    policies = {
        "table": KTable(((1, 4, 3), (5, 64, 1))),
        "k = 3": FixedK(3),
        "SGLang adaptive": SGLangAdaptive(3),
    }
    result = replay(p, phases, policies, reference="table", replications=2, seed=4)
    doc = result.to_dict()
    assert set(doc["policies"]) == set(policies)
    for metric, values in doc["policies"]["table"]["advantage_over_reference"].items():
        assert all(v["mean"] == 0.0 for v in values), metric
    assert len(doc["winners"]) == 4 * 4
    # code-heavy phases decode faster with speculation than chat-heavy ones (alpha 0.9)
    k3 = doc["policies"]["k = 3"]["phases"]["per_user_tok_s"]
    assert k3[1]["mean"] > k3[0]["mean"]


def test_standard_policies_profile_the_plan():
    p = mixed_plan()
    stats = vllm_profile(p, 15.0, 64)
    assert sorted(stats) == [1, 4, 16, 64] and sorted(stats[1]) == [0, 1, 3, 5]
    assert stats[64][3] > stats[1][3]  # iterations grow with the batch
    pols = standard_policies(p, KTable(((1, 64, 2),)), [1, 2], 2, 15.0)
    assert list(pols) == [
        "plain decoding",
        "k = 1",
        "k = 2",
        "best-k table",
        "SGLang adaptive",
        "vLLM DSD table",
        "vLLM DSD online",
    ]


def test_a_one_class_scenario_is_refused_before_any_simulation():
    """The default phases swap the acceptance mix, so a scenario without one is refused
    before the one-user run that sets the phases' load (it used to run first, ~2 s)."""
    from sim.studies.serving.controllers import controller_study

    class NoRuns:
        def __call__(self, *args, **kwargs):
            raise AssertionError("simulated before checking the mix")

    from sim.scenario.load import load_scenario
    from sim.studies.serving.scenario_plans import ScenarioPlans
    from tests.conftest import ROOT

    one_class = load_scenario(ROOT / "scenarios" / "kimi-k25-8xpcie-eagle3-serving.toml")
    with pytest.raises(SpecsimError, match=r"\[\[acceptance.mix\]\] of at least two"):
        controller_study(ScenarioPlans.of(one_class), NoRuns(), [], [1, 2])


def test_a_policy_tied_with_the_reference_is_not_named_the_winner():
    """A fixed k that is the table's k at every batch of a phase ties it exactly; the
    winner was then whichever came first ('k = 4 (+0 ms vs the best-k table, within
    noise)'), so the reference is preferred on a tie."""
    p = mixed_plan()
    phases = default_phases(p, one_user_req_s=1.0, requests=8)
    policies = {"k = 3": FixedK(3), "table": KTable(((1, 1024, 3),))}
    result = replay(p, phases, policies, reference="table", replications=2, seed=4)
    assert {w["best"] for w in result.to_dict()["winners"]} == {"table"}


def test_winners_say_which_way_a_latency_advantage_goes():
    """'+0.538 ms vs the best-k table' read as 0.538 ms slower; the winner's TPOT is that
    much lower, and its tok/s that much higher."""
    from sim.report.controllers import render_controllers

    p = mixed_plan()
    phases = default_phases(p, one_user_req_s=1.0, requests=8)[:1]
    policies = {"table": KTable(((1, 1024, 1),)), "k = 3": FixedK(3)}
    doc = replay(p, phases, policies, reference="table", replications=2, seed=4).to_dict()
    doc = {**doc, "kind": "controllers", "replications": 2, "requests": 8}
    text = render_controllers(doc)
    lines = [ln for ln in text.splitlines() if ln.startswith("  phase 1, ")]
    tpot = next(ln for ln in lines if "median time per output token" in ln)
    speed = next(ln for ln in lines if "per-user" in ln)
    assert "k = 3 (" in tpot and " ms lower than the table" in tpot and "+" not in tpot
    assert " tok/s higher than the table" in speed


def test_controllers_levels_and_advantages_keep_their_digits():
    """'77.4' beside '75.93' and '+0 [0.00, 0.00]': a level to four significant digits and
    an advantage to three, trailing zeros kept, with its sign."""
    from sim.report.controllers import render_controllers

    p = mixed_plan()
    phases = default_phases(p, one_user_req_s=1.0, requests=8)[:1]
    policies = {"table": KTable(((1, 1024, 3),)), "k = 3": FixedK(3)}
    doc = replay(p, phases, policies, reference="table", replications=2, seed=4).to_dict()
    doc = {**doc, "kind": "controllers", "replications": 2, "requests": 8}
    pol = doc["policies"]["k = 3"]
    pol["phases"]["per_user_tok_s"][0]["mean"] = 77.4
    adv = pol["advantage_over_reference"]["per_user_tok_s"][0]
    adv["mean"], adv["ci95"] = -0.5, [-0.61, -0.4]
    doc["policies"]["table"]["aggregate_tok_s"] = {"mean": 479.5, "ci95": [479.2, 479.8]}
    text = render_controllers(doc)
    row = next(ln for ln in text.splitlines() if ln.startswith("    k = 3") and "77.40" in ln)
    assert row.split()[3:] == ["77.40", "-0.500", "[-0.610,", "-0.400]-"]
    assert "whole trace 479.5 tok/s [479.2, 479.8]" in text
