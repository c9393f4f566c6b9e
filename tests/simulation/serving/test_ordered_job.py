"""A job replaying given tasks in order (``ClosedLoop`` with ``tasks``; a scenario's
``workload.lengths = 'ordered'``): C users, each sending the next task when its last one
is answered. Exact laws where acceptance is fixed (plain decoding, or every draft
accepted): at C = 1 the job lasts the sum of its tasks run alone; with C >= the tasks'
number every task starts at once, so the job is the open replay of the same tasks all
arriving at 0, whatever their order."""

from __future__ import annotations

import numpy as np
import pytest

from sim.model.policy import FixedK
from sim.simulation.serving import ClosedLoop, Fixed, Trace, engine
from sim.simulation.serving.engine import run_replication
from sim.simulation.serving.simulate import serving_streams
from sim.simulation.serving.workload import Tasks
from tests.simulation.serving.helpers import WITH_KV, plan, records_equal

OUTPUTS = (50, 400, 30, 800, 20, 60, 7)
#: Acceptance fixed: every draft accepted, so a speculative request's cycles are certain.
SURE = {"alpha": 1.0}


def tasks(outputs=OUTPUTS, prompt: int = 0) -> Tasks:
    n = len(outputs)
    return Tasks(
        np.full(n, prompt, dtype=np.int64),
        np.asarray(outputs, dtype=np.int64),
        np.full(n, -1, dtype=np.int64),
    )


def job_plan(users: int, given: Tasks, **kw):
    """A plan of ``given`` sent by ``users`` users (its length distribution: the longest
    task, unused but for the bounds)."""
    return plan(
        ClosedLoop(users, 0.0, given.size, 1, given),
        output=Fixed(int(given.output_tokens.max())),
        requests=given.size,
        max_running_requests=64,
        **kw,
    )


def job(users: int, given: Tasks, k: int = 3):
    """One replication of ``given`` sent by ``users`` users, under plain decoding (k = 0)
    or a chain of ``k`` with every draft accepted."""
    p = job_plan(users, given, acceptance=SURE, curves=WITH_KV)
    return run_replication(p, p.check(FixedK(k)), serving_streams(np.random.SeedSequence(5)))


@pytest.mark.parametrize("k", [0, 3])
def test_one_user_takes_the_sum_of_the_tasks_run_alone(k):
    whole = job(1, tasks(), k)
    alone = [job(1, tasks((n,)), k).window_ms for n in OUTPUTS]
    # float sums of the same iteration times in another grouping: a few ulps apart
    assert whole.window_ms == pytest.approx(sum(alone), rel=1e-12)
    assert whole.tokens_delivered == sum(OUTPUTS)


@pytest.mark.parametrize("k", [0, 3])
@pytest.mark.parametrize("users", [len(OUTPUTS), 20])
def test_with_a_user_a_task_the_job_is_every_task_at_once(k, users):
    """The job ends with its longest task, run in a batch that shrinks as the others end:
    the open replay of the same tasks all arriving at 0, in any order."""
    ordered = job(users, tasks(), k)
    backwards = job(users, tasks(OUTPUTS[::-1]), k)
    n = len(OUTPUTS)
    at_once = plan(
        Trace(np.zeros(n), np.zeros(n, dtype=np.int64), np.asarray(OUTPUTS), np.full(n, -1)),
        acceptance=SURE,
        requests=n,
        curves=WITH_KV,
        max_running_requests=64,
    )
    trace = run_replication(
        at_once, at_once.check(FixedK(k)), serving_streams(np.random.SeedSequence(5))
    )
    # the same iterations; times summed in another grouping, a few ulps apart
    assert ordered.window_ms == pytest.approx(trace.window_ms, rel=1e-12)
    assert backwards.window_ms == pytest.approx(trace.window_ms, rel=1e-12)
    longest = ordered.finish_ms[ordered.output_tokens == max(OUTPUTS)][0]
    assert ordered.window_ms == pytest.approx(longest, rel=1e-12)


def test_the_next_user_free_takes_the_next_task_in_order():
    """Two users: tasks 0 and 1 start at 0; task 2 starts when the shorter of them ends,
    task 3 when the next one ends, and so on (plain decoding)."""
    rec = job(2, tasks(), 0)
    arrival = dict(zip(rec.output_tokens.tolist(), rec.arrival_ms.tolist(), strict=True))
    finish = dict(zip(rec.output_tokens.tolist(), rec.finish_ms.tolist(), strict=True))
    assert arrival[50] == arrival[400] == 0.0
    # (times summed in another grouping than the finish's: a few ulps apart)
    assert arrival[30] == pytest.approx(finish[50], rel=1e-12)  # task 0's user is free first
    assert arrival[800] == pytest.approx(finish[30], rel=1e-12)
    assert arrival[20] == pytest.approx(finish[400], rel=1e-12)
    assert arrival[60] == pytest.approx(finish[20], rel=1e-12)
    assert sorted(rec.output_tokens.tolist()) == sorted(OUTPUTS)


def test_every_replication_replays_the_same_lengths():
    """Lengths never drawn: two seeds give the same requests (only acceptance differs)."""
    p = job_plan(3, tasks())
    drafting = p.check(FixedK(3))
    one, two = (
        run_replication(p, drafting, serving_streams(np.random.SeedSequence(s))) for s in (1, 2)
    )
    assert sorted(one.output_tokens.tolist()) == sorted(two.output_tokens.tolist())
    assert one.tokens_delivered == two.tokens_delivered == sum(OUTPUTS)
    assert one.window_ms != two.window_ms  # acceptance is drawn


def test_held_rows_send_the_tasks_and_no_more(monkeypatch):
    """Requests held as rows (many users, short answers) take the job's tasks in order and
    stop at its end: the records of request objects, bit for bit."""
    given = tasks((3, 1, 4, 1, 5, 9, 2, 6, 5, 3))
    p = job_plan(4, given)
    drafting = p.check(FixedK(2))

    def run():
        return run_replication(p, drafting, serving_streams(np.random.SeedSequence(9)))

    monkeypatch.setattr(engine, "rows_pay", lambda plan: True)
    held = run()
    monkeypatch.setattr(engine, "holds_rows", lambda plan, horizon_ms, policy=None: False)
    objects = run()
    records_equal(held, objects)
    assert held.measured == given.size and held.unfinished_at_end == 0
    assert held.tokens_delivered == int(given.output_tokens.sum())


def test_a_job_of_tasks_has_one_turn_each_and_as_many_conversations():
    with pytest.raises(ValueError, match="conversations"):
        ClosedLoop(2, 0.0, 5, 1, tasks())
    with pytest.raises(ValueError, match="1 turn"):
        ClosedLoop(2, 0.0, len(OUTPUTS), 2, tasks())
    with pytest.raises(ValueError, match=">= 1 output"):
        tasks((5, 0))
