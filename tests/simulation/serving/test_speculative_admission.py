"""A speculating server's own admission cap (SGLang resets ``max_running_requests`` to 48
with any speculative algorithm): it holds the drafting policy's batch, not the plain one's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sim.binding.bound import bind
from sim.scenario.load import load_scenario
from sim.scenario.overrides import with_overrides
from sim.simulation.serving import ClosedLoop, FixedK, SchedulerConfig, simulate_serving, work_out
from sim.simulation.serving.setup import BASELINE, SPECULATIVE, serving_setup, with_load
from tests.simulation.serving.helpers import plan

SCENARIO = Path(__file__).parents[3] / "scenarios" / "llama31-8b-1xh100-eagle3.toml"

POLICIES = {"plain": FixedK(0), "k = 3": FixedK(3)}


def test_each_policy_runs_with_its_own_cap() -> None:
    config = SchedulerConfig(max_running_requests=64, max_running_requests_speculative=48)
    assert config.max_running(FixedK(0)) == 64
    assert config.max_running(FixedK(3)) == 48
    assert config.largest_running == 64
    same = SchedulerConfig(max_running_requests=64)
    assert same.max_running(FixedK(3)) == 64 and same.largest_running == 64
    with pytest.raises(ValueError, match="max_running_requests_speculative"):
        SchedulerConfig(max_running_requests=8, max_running_requests_speculative=0)


def test_the_speculative_batch_never_exceeds_its_cap_while_the_plain_one_fills() -> None:
    """8 users, the speculating server admits 4: its decode batches are at most 4 requests
    (the others wait in its queue), plain decoding runs all 8."""
    p = plan(ClosedLoop(8), requests=40, max_running_requests_speculative=4)
    run = simulate_serving(p, work_out(p, POLICIES), replications=2, seed=3)
    for rec in run.records["k = 3"]:
        assert rec.batch_time_ms.size == 5 and rec.batch_time_ms[4] > 0.0
        assert np.any(rec.admitted_ms > rec.arrival_ms)  # someone waited for a slot
    for rec in run.records["plain"]:
        assert rec.batch_time_ms.size == 9 and rec.batch_time_ms[8] > 0.0


def test_a_cap_at_or_above_the_load_changes_nothing() -> None:
    """Same seed, same plan but for a speculative cap the 8 users never reach: the same
    records, policy by policy (the cap is the only difference)."""
    base = plan(ClosedLoop(8), requests=30)
    capped = plan(ClosedLoop(8), requests=30, max_running_requests_speculative=8)
    a = simulate_serving(base, work_out(base, POLICIES), replications=2, seed=5)
    b = simulate_serving(capped, work_out(capped, POLICIES), replications=2, seed=5)
    for name in POLICIES:
        for x, y in zip(a.records[name], b.records[name], strict=True):
            assert np.array_equal(x.finish_ms, y.finish_ms)


def test_the_scenario_field_reaches_the_speculative_arm_only() -> None:
    sc = with_overrides(
        load_scenario(SCENARIO), {"serving.max_running_requests_speculative": 2}, source="test"
    )
    setup = serving_setup(bind(with_load(sc, concurrency=4, source="test")), source="test")
    sched = setup.plan.scheduler
    assert sched.max_running_requests_speculative == 2
    assert sched.max_running(setup.policies[SPECULATIVE]) == 2
    assert sched.max_running(setup.policies[BASELINE]) == sched.max_running_requests
