"""A block's iterations that no arrival can cut run as one event (engine.py
``uncut_iterations``, ``jumps``): the records are those of one timeout per iteration, bit
for bit."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.simulation.serving import ClosedLoop, FixedK, LogNormal, Poisson, Trace
from sim.simulation.serving.engine import run_replication
from sim.simulation.serving.planner import BlockPlanner
from sim.simulation.serving.simulate import serving_streams
from sim.simulation.serving.timeouts import ACCUMULATE_ENDS, jumps
from tests.simulation.serving.helpers import WITH_KV, plan


def _reached(now: float, delays: list[float]) -> float:
    for delay in delays:
        now = now + delay  # as SimPy schedules a timeout
    return now


def test_jumps_reach_an_end_one_difference_misses():
    """From 3434.576... ms, iterations of 2713.2 and 1422.2 ms end at 7569.976... ms:
    ``end - now`` is rounded and ``now + (end - now)`` misses the end by one unit in the
    last place; the jumps land on it exactly, in two timeouts (the first end is within
    twice ``now``)."""
    now = 3434.5764255398503
    durations = [2713.2, 1422.2]
    end = list(itertools.accumulate(durations, initial=now))[-1]
    assert now + (end - now) != end
    delays = jumps(now, durations)
    assert _reached(now, delays) == end
    assert len(delays) == 2


@pytest.mark.parametrize("n", [ACCUMULATE_ENDS - 1, ACCUMULATE_ENDS, 512])
def test_a_blocks_ends_are_its_successive_sums(n):
    """A long block's ends (one ``np.add.accumulate``) are the running sums a Python loop
    adds, bit for bit: the delays reach the same end from a late ``now`` and from an early
    one (where the difference may round and more timeouts are needed)."""
    durations = np.random.default_rng(n).uniform(5.0, 60.0, n)
    for now in (123456.789, 3.25):
        end = list(itertools.accumulate(durations.tolist(), initial=now))[-1]
        delays = jumps(now, durations)
        assert delays == jumps(now, durations.tolist())
        assert _reached(now, delays) == end


def test_jumps_of_no_iterations_are_none():
    """A block cut before its first end (an arrival may wait there) jumps nowhere."""
    assert jumps(12.5, []) == []
    assert jumps(12.5, np.array([])) == []


def test_jumps_one_timeout_when_the_difference_lands():
    assert jumps(1000.0, [30.0, 31.5, 29.25]) == [90.75]
    assert jumps(0.0, [0.1, 0.2]) == [0.1 + 0.2]


@settings(max_examples=300, deadline=None)
@given(
    now=st.one_of(st.just(0.0), st.floats(0.0, 1e7)),
    durations=st.lists(st.floats(1e-3, 500.0), min_size=1, max_size=40),
)
def test_jumps_land_where_successive_timeouts_end(now, durations):
    end = list(itertools.accumulate(durations, initial=now))[-1]
    delays = jumps(now, durations)
    assert _reached(now, delays) == end
    # a block's durations as its plan holds them (float64 array): the same delays
    assert jumps(now, np.array(durations)) == delays
    assert all(d > 0 for d in delays)
    assert len(delays) <= 2 + int(np.log2(max(end, 1.0) / max(now, 1e-300)))


def _trace(seed: int, n: int, mean_gap_ms: float) -> Trace:
    rng = np.random.default_rng(seed)
    return Trace(
        arrival_ms=np.cumsum(rng.exponential(mean_gap_ms, n)),
        input_tokens=rng.integers(1, 300, n),
        output_tokens=rng.integers(1, 200, n),
        request_class=np.full(n, -1),
    )


LOADS = {
    "closed": dict(arrivals=ClosedLoop(12), output=LogNormal(80.0, 0.5, 400)),
    "think": dict(arrivals=ClosedLoop(6, think_ms=300.0), output=LogNormal(60.0, 0.5, 300)),
    "poisson": dict(arrivals=Poisson(40.0), output=LogNormal(60.0, 0.5, 300)),
    "poisson_full": dict(
        arrivals=Poisson(200.0), output=LogNormal(60.0, 0.5, 300), max_running_requests=4
    ),
    "trace_kv": dict(
        arrivals=_trace(3, 80, 15.0),
        requests=80,
        max_running_requests=16,
        kv_capacity_tokens=900,
        prefill="model",
    ),
    "chunked": dict(
        arrivals=Poisson(60.0),
        input_tokens=LogNormal(200.0, 0.5, 900),
        output=LogNormal(60.0, 0.5, 300),
        batching="chunked",
        prefill="model",
    ),
}


@pytest.mark.parametrize("load", sorted(LOADS))
@pytest.mark.parametrize("k", [0, 3])
def test_one_event_per_uncut_run_gives_the_same_records(load, k, monkeypatch):
    """Every field of the record equals the one-timeout-per-iteration run's exactly."""
    settings_ = dict(LOADS[load])
    p = plan(
        settings_.pop("arrivals"),
        requests=settings_.pop("requests", 60),
        curves=WITH_KV,
        **settings_,
    )

    def run():
        return run_replication(p, p.check(FixedK(k)), serving_streams(np.random.SeedSequence(11)))

    fast = run()
    monkeypatch.setattr(BlockPlanner, "uncut_iterations", lambda self, durations: 0)
    slow = run()
    assert slow.decode_iterations > 0
    for f in dataclasses.fields(fast):
        a, b = getattr(fast, f.name), getattr(slow, f.name)
        if isinstance(a, np.ndarray):
            assert a.dtype == b.dtype and np.array_equal(a, b), f.name
        else:
            assert a == b, f.name


@pytest.mark.parametrize("users", [8, 64])
def test_one_iteration_plans_follow_the_block_paths_sample_path(monkeypatch, users):
    """Where a request may finish in the next iteration the engine plans that iteration
    alone; planning blocks there instead (the former rule) gives the same sample path:
    the same cycles, accept lengths and iterations, times equal up to the rounding of
    their sums (a block adds its iterations' durations before adding the start)."""
    p = plan(ClosedLoop(users), output=LogNormal(60.0, 0.6, 300), requests=4 * users)

    def run():
        return run_replication(p, p.check(FixedK(3)), serving_streams(np.random.SeedSequence(3)))

    short = run()
    original = BlockPlanner.block_size

    def blocks_only(self, k):
        need = self.batch.need
        saved = need.copy()
        need[:] = np.maximum(need, 1000)  # never "may finish now"
        size = original(self, k)
        need[:] = saved
        return size

    monkeypatch.setattr(BlockPlanner, "block_size", blocks_only)
    long = run()
    assert long.decode_iterations == short.decode_iterations
    for name in ("cycles", "output_tokens", "sample_index"):
        np.testing.assert_array_equal(getattr(long, name), getattr(short, name))
    assert long.cycle_tokens == short.cycle_tokens and long.request_cycles == short.request_cycles
    for name in ("finish_ms", "first_token_ms", "batch_time_ms"):
        np.testing.assert_allclose(getattr(long, name), getattr(short, name), rtol=1e-12)
    a, b = long.itl_stats, short.itl_stats  # the same gaps, kept per block or per iteration
    assert a.weight == b.weight and a.mean == pytest.approx(b.mean, rel=1e-12)
