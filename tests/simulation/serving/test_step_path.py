"""One decode iteration planned alone (step_plan.py ``plan_step``, engine.py ``step_done``):
the numbers of a block of one iteration (``plan_block``, ``decode_done``), bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from sim.model.policy import FixedK
from sim.model.tree.acceptance import TreeDraft
from sim.simulation.serving import ClosedLoop, LogNormal, Poisson, engine
from sim.simulation.serving.block_plan import plan_block
from sim.simulation.serving.decode_batch import DecodeBatch
from sim.simulation.serving.engine import run_replication
from sim.simulation.serving.planner import BlockPlanner
from sim.simulation.serving.simulate import serving_streams
from sim.simulation.serving.step_plan import plan_step
from tests.simulation.serving.helpers import WITH_KV, plan, records_equal, tree_plan

TREE = TreeDraft(3, 2, 6)
ALPHA = {"alpha": 0.7, "rank_profile": "sequoia-jf68m-llama2-7b"}


def _batch(rng: np.random.Generator, rows: int, columns: int) -> DecodeBatch:
    batch = DecodeBatch(columns)
    for i in range(rows):
        thresholds = np.sort(rng.integers(0, 2**32 + 1, columns))[::-1]
        batch.append(
            i,
            np.uint64(rng.integers(0, 2**63)),
            thresholds,
            int(rng.integers(1, 300)),
            int(rng.integers(0, 5000)),
            int(rng.integers(0, 100)),
            -1.0,
        )
    return batch


@pytest.mark.parametrize("rows", [1, 7, 130, 300])
@pytest.mark.parametrize("k", [0, 1, 3, 6])
@pytest.mark.parametrize("extend", [False, True])
def test_a_step_is_a_block_of_one(rows, k, extend):
    """Accept lengths, tokens and duration: those of ``plan_block`` at one iteration
    (whether the step compares column by column or reduces rows)."""
    p = plan(ClosedLoop(rows), k=6, curves=WITH_KV)
    batch = _batch(np.random.default_rng(rows + 10 * k), rows, 6)
    block = plan_block(batch, k, 1, float("inf"), p.cost, None, True, accepted_extend=extend)
    step = plan_step(batch, k, p.cost, True, accepted_extend=extend)
    assert np.array_equal(step.lengths, block.lengths[:, 0])
    assert step.tokens == int(block.total[0])
    assert step.duration_ms == float(block.durations_ms[0])


def _blocks_of_one(monkeypatch) -> None:
    """Plan every single iteration as a block (the path before ``plan_step``)."""

    def plan_decode(self):
        b = self.batch.size
        k = self.k_now(b)
        size = self.block_size(k)
        if self.controller is not None:
            size = min(size, self.controller.horizon(b))
        return self.block(k, size)

    monkeypatch.setattr(BlockPlanner, "plan_decode", plan_decode)


LOADS = {
    "closed": lambda: plan(ClosedLoop(24), output=LogNormal(60.0, 0.6, 300), requests=80),
    "poisson_kv": lambda: plan(
        Poisson(300.0),
        output=LogNormal(60.0, 0.5, 300),
        input_tokens=LogNormal(200.0, 0.5, 900),
        requests=80,
        max_running_requests=32,
        kv_capacity_tokens=4000,
        prefill="model",
        curves=WITH_KV,
    ),
    "chunked": lambda: plan(
        ClosedLoop(16),
        output=LogNormal(60.0, 0.5, 300),
        input_tokens=LogNormal(200.0, 0.5, 900),
        requests=60,
        batching="chunked",
        prefill="model",
        curves=WITH_KV,
    ),
    "tree": lambda: tree_plan(ClosedLoop(12), TREE, acceptance=ALPHA, requests=48),
}


@pytest.mark.parametrize("load", sorted(LOADS))
def test_the_step_path_gives_the_block_paths_records(load, monkeypatch):
    """Every field of a replication's record, with iterations planned alone or as blocks
    of one."""
    p = LOADS[load]()
    policy = FixedK(TREE) if load == "tree" else FixedK(3)

    def run():
        return run_replication(p, p.check(policy), serving_streams(np.random.SeedSequence(5)))

    fast = run()
    _blocks_of_one(monkeypatch)
    slow = run()
    assert fast.decode_iterations > 0
    records_equal(fast, slow)


def test_a_closed_loop_without_think_time_needs_no_zero_timeout(monkeypatch):
    """A closed loop without think time sends from the completion itself, so no process
    waits for the instant after it: the records with the zero timeout kept are the same."""
    p = LOADS["closed"]()

    def run():
        return run_replication(p, p.check(FixedK(3)), serving_streams(np.random.SeedSequence(6)))

    fast = run()
    monkeypatch.setattr(engine, "others_wait", lambda arrivals, horizon_ms: True)
    slow = run()
    records_equal(fast, slow)


@pytest.mark.parametrize("rows", [1, 7, 130])
@pytest.mark.parametrize("iterations", [1, 2, 40, 400])
@pytest.mark.parametrize("kv_free", [float("inf"), 50.0])
def test_plain_decoding_blocks_are_draws_that_never_pass(rows, iterations, kv_free):
    """At k = 0 a block counts one token a row and iteration without drawing: its length,
    tokens, KV growth and context sums are those of k = 1 against thresholds of 0 (no
    draw is below them, so every cycle emits one token), and each row's tokens are the
    lengths' sum."""
    p = plan(ClosedLoop(rows), k=6, curves=WITH_KV)
    batch = _batch(np.random.default_rng(rows + iterations), rows, 6)
    plain = plan_block(batch, 0, iterations, kv_free, p.cost)
    batch.thresholds[...] = 0  # no draw passes
    drawn = plan_block(batch, 1, iterations, kv_free, p.cost)
    assert drawn.iterations == plain.iterations
    n = plain.iterations
    for name in ("context", "growth", "total", "per_iteration"):
        assert np.array_equal(getattr(plain, name), getattr(drawn, name)), name
    assert np.array_equal(plain.lengths[:, :n], drawn.lengths[:, :n])
    for m in range(1, n + 1):
        assert np.array_equal(plain.emitted(m), drawn.emitted(m))
        assert np.array_equal(plain.emitted(m), plain.lengths[:, :m].sum(axis=1))
        # the drawn plan's running counts (rows <= CLOSE_ROWS) or its reduce (more rows)
        assert np.array_equal(drawn.emitted(m), drawn.lengths[:, :m].sum(axis=1))
