"""Invariants of the serving engine: KV never over-committed, tokens conserved, CRN,
determinism whatever the worker count."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.errors import SpecsimError
from sim.model.kv_blocks import whole_blocks
from sim.simulation.serving import (
    ClosedLoop,
    FixedK,
    KTable,
    LogNormal,
    Poisson,
    Trace,
    simulate_serving,
    work_out,
)
from sim.simulation.serving.engine import run_replication
from sim.simulation.serving.plan import ServingPlan
from sim.simulation.serving.server import Server
from sim.simulation.serving.simulate import replication_blocks, serving_streams
from tests.simulation.serving.helpers import WITH_KV, plan


def _trace(rng: np.random.Generator, n: int, rate_per_ms: float) -> Trace:
    return Trace(
        arrival_ms=np.cumsum(rng.exponential(1.0 / rate_per_ms, n)),
        input_tokens=rng.integers(1, 200, n),
        output_tokens=rng.integers(1, 120, n),
        request_class=np.full(n, -1),
    )


class KvWatch:
    """The KV container's level after every get/put, and (bookkeeping, container) pairs
    of held tokens whenever the engine computes them."""

    def __init__(self) -> None:
        self.levels: list[float] = []
        self.held: list[tuple[int, float]] = []


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(5, 60),
    rate=st.floats(0.002, 0.2),
    capacity_extra=st.integers(0, 3000),
    users=st.integers(1, 12),
    batching=st.sampled_from(["prefill_first", "chunked"]),
    prefill=st.sampled_from(["model", "skip"]),
    k=st.integers(0, 4),
    block=st.sampled_from([1, 16, 48]),
)
def test_kv_never_over_committed_and_tokens_conserved(
    seed, n, rate, capacity_extra, users, batching, prefill, k, block
):
    """Also in whole KV blocks (``block`` tokens: vLLM's, sim/model/kv_blocks.py)."""
    rng = np.random.default_rng(seed)
    trace = _trace(rng, n, rate)
    largest = int((trace.input_tokens + trace.output_tokens).max()) + k + 2
    capacity = whole_blocks(largest, block) + capacity_extra
    p = plan(
        trace,
        k=max(k, 1),
        requests=n,
        curves=WITH_KV,
        max_running_requests=users,
        kv_capacity_tokens=capacity,
        batching=batching,
        prefill=prefill,
        token_budget=max(256, users * (k + 1) + 1),
        kv_block_tokens=block,
    )
    watch = KvWatch()
    rec = _run_watched(p, FixedK(k), seed, watch)
    assert all(0 <= level <= capacity for level in watch.levels)
    assert rec.kv_peak_tokens <= capacity
    for value, in_container in watch.held:
        assert value == in_container  # the container's level is the bookkeeping's
    # every request answered, with exactly its tokens (recomputed ones not delivered twice)
    assert np.all(rec.finish_ms >= rec.arrival_ms)
    assert rec.tokens_delivered == int(trace.output_tokens.sum())
    assert np.all(rec.first_token_ms <= rec.finish_ms)


def _run_watched(p: ServingPlan, policy, seed, watch: KvWatch):
    """One replication with the server's KV container and bookkeeping watched."""
    original = Server.__init__

    def init(server, *a, **kw):
        original(server, *a, **kw)
        kv = server.kv
        for name in ("get", "put"):
            method = getattr(kv, name)

            def wrapped(amount, _m=method):
                event = _m(amount)
                watch.levels.append(kv.level)
                return event

            setattr(kv, name, wrapped)
        held = server.held_tokens

        def checked():
            value = held()
            watch.held.append((value, kv.capacity - kv.level))
            return value

        server.held_tokens = checked

    Server.__init__ = init
    try:
        return run_replication(p, p.check(policy), serving_streams(np.random.SeedSequence(seed)))
    finally:
        Server.__init__ = original


def _tight(seed: int, n: int, rate: float, slack: int, batching: str) -> tuple[Trace, ServingPlan]:
    """A trace and a plan whose KV cache holds the largest request plus ``slack`` tokens."""
    trace = _trace(np.random.default_rng(seed), n, rate)
    capacity = int((trace.input_tokens + trace.output_tokens).max()) + slack
    p = plan(
        trace,
        requests=n,
        curves=WITH_KV,
        max_running_requests=16,
        kv_capacity_tokens=capacity,
        batching=batching,
        prefill="model",
    )
    return trace, p


@pytest.mark.parametrize("batching", ["prefill_first", "chunked"])
def test_tight_kv_preempts_and_recomputes(batching):
    """Preemption happens, is counted, never over-commits, and recomputed requests are
    not delivered twice."""
    trace, p = _tight(1, 60, 0.05, 10, batching)
    watch = KvWatch()
    rec = _run_watched(p, FixedK(3), 2, watch)
    assert rec.preemptions_total > 0 and rec.preemptions.sum() == rec.preemptions_total
    assert min(watch.levels) >= 0
    assert rec.tokens_delivered == int(trace.output_tokens.sum())


def test_same_arrivals_and_lengths_for_every_policy():
    p = plan(
        Poisson(30.0),
        input_tokens=LogNormal(80, 0.5, 400),
        output=LogNormal(50, 0.6, 300),
        requests=80,
        prefill="model",
    )
    run = simulate_serving(
        p,
        work_out(
            p, {"baseline": FixedK(0), "k3": FixedK(3), "table": KTable(((1, 4, 3), (5, 64, 1)))}
        ),
        replications=2,
        seed=7,
    )
    for r in range(2):
        base = run.records["baseline"][r]
        for name in ("k3", "table"):
            other = run.records[name][r]
            np.testing.assert_array_equal(other.arrival_ms, base.arrival_ms)
            np.testing.assert_array_equal(other.output_tokens, base.output_tokens)
            np.testing.assert_array_equal(other.input_tokens, base.input_tokens)


def test_closed_loop_users_keep_their_requests_across_policies():
    p = plan(ClosedLoop(6), output=LogNormal(40, 0.5, 200), requests=60)
    run = simulate_serving(p, work_out(p, {"a": FixedK(0), "b": FixedK(3)}), replications=1, seed=3)
    a, b = run.records["a"][0], run.records["b"][0]
    assert sorted(a.output_tokens.tolist()) != [] and a.output_tokens.sum() > 0
    # arrival order differs between policies, but the first request of each user is the same
    np.testing.assert_array_equal(a.output_tokens[:6], b.output_tokens[:6])


def test_same_seed_same_numbers_whatever_the_workers():
    p = plan(
        Poisson(25.0), input_tokens=30, output=30, requests=40, prefill="model", curves=WITH_KV
    )
    policies = {"baseline": FixedK(0), "k2": FixedK(2)}
    one = simulate_serving(p, work_out(p, policies), replications=5, seed=12, workers=1)
    for workers in (2, 3):  # blocks of replications: 4 (1, 1, 1, 2) and 5 tasks
        many = simulate_serving(p, work_out(p, policies), replications=5, seed=12, workers=workers)
        for name in policies:
            for x, y in zip(one.records[name], many.records[name], strict=True):
                np.testing.assert_array_equal(x.finish_ms, y.finish_ms)
                np.testing.assert_array_equal(x.itl_ms, y.itl_ms)
                assert x.tokens_delivered == y.tokens_delivered


def test_replications_run_in_blocks_two_a_slot_and_one_by_one_alone():
    assert replication_blocks(10, 1) == [(i, i + 1) for i in range(10)]
    assert replication_blocks(10, 2) == [(0, 2), (2, 5), (5, 7), (7, 10)]
    assert replication_blocks(3, 8) == [(0, 1), (1, 2), (2, 3)]
    for n, width in ((1, 2), (7, 3), (100, 16)):
        blocks = replication_blocks(n, width)
        assert blocks[0][0] == 0 and blocks[-1][1] == n
        assert all(hi > lo for lo, hi in blocks)
        assert all(a[1] == b[0] for a, b in itertools.pairwise(blocks))


def test_a_policy_beyond_the_acceptance_model_is_refused():
    p = plan(ClosedLoop(2), k=2)
    with pytest.raises(SpecsimError, match="acceptance model"):
        simulate_serving(p, work_out(p, {"k4": FixedK(4)}), replications=1, seed=1)


def test_kv_smaller_than_one_request_is_refused():
    p = plan(ClosedLoop(2), output=100, input_tokens=100, kv_capacity_tokens=150)
    with pytest.raises(SpecsimError, match="smaller than one request"):
        simulate_serving(p, work_out(p, {"k3": FixedK(3)}), replications=1, seed=1)
