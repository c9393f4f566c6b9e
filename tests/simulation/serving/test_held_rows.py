"""Requests held as rows of the decode batch (engine.py, ``Answers.hold_requests``): where
every request decodes from its arrival to its answer, the records of request objects, bit
for bit."""

from __future__ import annotations

import numpy as np
import pytest

from sim.model.controllers import SGLangAdaptive
from sim.model.policy import FixedK
from sim.model.tree.acceptance import TreeDraft
from sim.simulation.serving import ClosedLoop, LogNormal, Poisson, engine
from sim.simulation.serving.decode_batch import DecodeBatch
from sim.simulation.serving.engine import holds_rows, run_replication
from sim.simulation.serving.records import Recorder
from sim.simulation.serving.simulate import serving_streams
from sim.simulation.serving.workload import Request
from tests.helpers import MIXED
from tests.simulation.serving.helpers import WITH_KV, plan, records_equal, tree_plan

TREE = TreeDraft(3, 2, 6)
ALPHA = {"alpha": 0.7, "rank_profile": "sequoia-jf68m-llama2-7b"}

LOADS = {
    "one user": lambda: (plan(ClosedLoop(1), output=LogNormal(60.0, 0.6, 300), requests=12), 3),
    "mix, warm-up": lambda: (
        plan(
            ClosedLoop(40),
            acceptance=MIXED,
            output=LogNormal(60.0, 0.6, 300),
            input_tokens=LogNormal(100.0, 0.5, 400),
            requests=150,
            warmup=30,
            curves=WITH_KV,
            max_running_requests=48,
        ),
        3,
    ),
    "more users than requests": lambda: (
        plan(ClosedLoop(200), output=LogNormal(30.0, 0.8, 200), requests=90, curves=WITH_KV),
        2,
    ),
    "tree": lambda: (tree_plan(ClosedLoop(12), TREE, acceptance=ALPHA, requests=60), TREE),
    "adaptive": lambda: (
        plan(ClosedLoop(20), k=7, output=LogNormal(60.0, 0.6, 300), requests=80),
        SGLangAdaptive(3),
    ),
}


@pytest.mark.parametrize("load", sorted(LOADS))
def test_held_rows_give_the_records_of_request_objects(load, monkeypatch):
    p, draft = LOADS[load]()
    policy = draft if isinstance(draft, SGLangAdaptive) else FixedK(draft)
    assert holds_rows(p, None)

    def run():
        return run_replication(p, p.check(policy), serving_streams(np.random.SeedSequence(9)))

    monkeypatch.setattr(engine, "rows_pay", lambda plan: True)
    held = run()
    monkeypatch.setattr(engine, "holds_rows", lambda plan, horizon_ms, policy=None: False)
    objects = run()
    assert held.measured > 0 and held.unfinished_at_end > 0
    records_equal(held, objects)


def test_rows_are_held_where_many_requests_finish_in_every_iteration():
    """A speed knob: at least ``HELD_USERS_PER_TOKEN`` users per output token."""
    assert not engine.rows_pay(plan(ClosedLoop(128), output=128))
    assert engine.rows_pay(plan(ClosedLoop(256), output=128))
    assert not engine.rows_pay(plan(Poisson(10.0), output=1))


def test_only_runs_where_every_request_decodes_from_its_arrival_hold_rows():
    closed = dict(output=LogNormal(60.0, 0.6, 300), requests=20)
    assert holds_rows(plan(ClosedLoop(8), **closed), None)
    assert not holds_rows(plan(ClosedLoop(8), **closed), 1000.0)  # a horizon
    assert not holds_rows(plan(ClosedLoop(8, think_ms=5.0), **closed), None)
    assert not holds_rows(plan(ClosedLoop(8), max_running_requests=4, **closed), None)
    assert not holds_rows(plan(ClosedLoop(8), kv_capacity_tokens=10_000, **closed), None)
    assert not holds_rows(plan(ClosedLoop(8), input_tokens=50, prefill="model", **closed), None)
    assert not holds_rows(plan(Poisson(10.0), **closed), None)


def test_first_tokens_of_the_newest_rows_are_those_of_a_search(monkeypatch):
    """Rows without a first token are found as the newest ones while no row with a token
    joined after them (``DecodeBatch.fresh_newest``), else by their -1: requests that
    prefill and requests without a prompt that decode at once, mixed, with a KV cache that
    preempts, give the records of the search alone."""
    p = plan(
        ClosedLoop(24),
        output=LogNormal(40.0, 0.6, 300),
        input_tokens=LogNormal(2.0, 1.5, 60, min_tokens=0),  # a prompt of 0 tokens often
        requests=200,
        prefill="model",
        kv_capacity_tokens=700,
        curves=WITH_KV,
    )

    def run():
        return run_replication(p, p.check(FixedK(3)), serving_streams(np.random.SeedSequence(3)))

    newest = run()
    never = property(lambda self: False, lambda self, value: None)
    monkeypatch.setattr(DecodeBatch, "fresh_newest", never, raising=False)
    searched = run()
    assert newest.preemptions_total > 0
    records_equal(newest, searched)


@pytest.mark.parametrize("first", [0, 2, 3, 7, 20])
def test_arrivals_counted_together_are_those_counted_one_by_one(first):
    """``Recorder.arrive_ids``: the ids, window opening and arrival counts of as many
    ``arrive_id`` calls, and of as many request objects' ``arrive``, whichever arrival of
    a group opens the window."""
    groups = [(0.0, 2), (0.0, 3), (1.5, 4), (1.5, 1), (2.0, 6)]
    one, together = Recorder(8, None, first, 10), Recorder(8, None, first, 10)
    ids = [one.arrive_id(t) for t, m in groups for _ in range(m)]
    assert [i for t, m in groups for i in together.arrive_ids(t, m)] == ids
    assert one.window == together.window
    assert one.window_start_ms == together.window_start_ms
    objects = Recorder(8, None, first, 10)
    requests = [Request(0, 1, 0, np.zeros(1, dtype=np.int64), np.uint64(0)) for _ in ids]
    for req, t in zip(requests, [t for t, m in groups for _ in range(m)], strict=True):
        objects.arrive(req, t)
    assert [r.id for r in requests] == ids
    assert [r.measured for r in requests] == [first <= i < first + 10 for i in ids]
    assert objects.window == one.window
    assert objects.window_start_ms == one.window_start_ms
    times = [t for t, m in groups for _ in range(m)]  # what the counts must be
    lo = times[first] if first < len(times) else float("inf")
    assert together.window.lo == lo
    # counted from the arrival that opens the window (those before it are carried)
    assert together.window.arrivals == max(len(times) - first, 0)
    assert (together.window.last_arrival_ms, together.window.at_last) == (2.0, 6)
    assert ids == list(range(len(times)))
