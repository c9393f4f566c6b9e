"""A finite job (``ClosedLoop`` with ``conversations``): C users share N conversations of
T turns, like SGLang's ``run_batch(num_threads=C)`` over multi-turn programs."""

from __future__ import annotations

import numpy as np
import pytest

from sim.simulation.serving import ClosedLoop, FixedK, simulate_serving, work_out
from sim.simulation.serving.job import JobPool
from tests.simulation.serving.helpers import plan


def test_a_user_sends_its_conversations_turns_before_taking_another():
    pool = JobPool(conversations=2, turns=2)
    sent = [(user, pool.take(user)) for user in ("a", "b", "a", "a", "b", "b")]
    # a: 1st turn, b: 2nd conversation's 1st turn, a: 2nd turn, a: none left,
    # b: its 2nd turn, b: none left
    assert sent == [("a", True), ("b", True), ("a", True), ("a", False), ("b", True), ("b", False)]


@pytest.mark.parametrize(("users", "conversations"), [(3, 5), (8, 5), (1, 2)])
def test_every_request_of_the_job_runs_and_never_more_than_the_job_holds(users, conversations):
    turns, output = 2, 60
    p = plan(
        ClosedLoop(users, 0.0, conversations, turns),
        output=output,
        requests=conversations * turns,
        max_running_requests=64,
    )
    run = simulate_serving(p, work_out(p, {"k3": FixedK(3)}), replications=2, seed=3)
    for rec in run.records["k3"]:
        assert rec.tokens_delivered == conversations * turns * output
        busy = np.nonzero(rec.batch_time_ms)[0]
        assert busy.max() <= min(users, conversations)


def test_a_job_is_measured_whole():
    with pytest.raises(ValueError, match="measured whole"):
        plan(ClosedLoop(2, 0.0, 5, 2), requests=9)
