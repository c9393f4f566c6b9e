"""The Qwen3-30B-A3B curves on SGLang: calibrated on batch 1 only, every other batch scored."""

from __future__ import annotations

import numpy as np
import pytest

from sim.binding.bound import bind
from sim.simulation.serving.setup import scenario_draft, serving_setup
from sim.validation.moe_tree_serving_cases import (
    ANGELSLIM,
    CONVERSATIONS,
    SPECFORGE,
    _simulate,
    calibrated,
)
from sim.validation.serving_cases import MT_BENCH_CONTEXT


@pytest.mark.parametrize("curve", [ANGELSLIM, SPECFORGE], ids=lambda c: c.label)
def test_the_batch_1_cycle_is_the_measured_one_and_batch_1_is_never_scored(curve):
    sc, _, cycle_ms, derived_ms = calibrated(curve)
    cost = serving_setup(bind(sc), source="test").plan.cost
    got = float(cost.decode_ms(1, scenario_draft(sc), np.array([MT_BENCH_CONTEXT]))[0])
    # the overhead is added to the derived cycle as it is: the sum to float precision
    assert got == pytest.approx(cycle_ms, rel=1e-9)
    assert derived_ms < cycle_ms
    assert 1 not in curve.scored()
    # the measured batch-1 cycle: accept length / tok/s
    assert cycle_ms == pytest.approx(1000 * curve.accept_length[1] / curve.tok_s[curve.arm][1])


def test_the_tree_is_sglangs_and_its_top1_gives_the_batch_1_accept_length():
    sc, top1, _, _ = calibrated(ANGELSLIM)
    setup = serving_setup(bind(sc), source="test")
    draft = scenario_draft(sc)
    tree = setup.plan.tree_acceptance(draft)
    assert (sc.speculation.num_steps, sc.speculation.topk) == (4, 4)
    assert 0 < top1 < 1 and tree.depth == 4
    # the top-1 rate is solved (brentq to 1e-6 on the rate) on the tree the plan builds
    assert tree.mean_accept_length() == pytest.approx(ANGELSLIM.accept_length[1], abs=1e-4)


def test_the_benchmark_holds_no_more_than_its_20_conversations_whatever_the_batch():
    # bench_eagle3.py --benchmark-list mtbench:20: 20 two-turn programs over batch threads,
    # so batch 32 and 64 run the same job (the same users' draws, the same seed)
    sc, _, _, _ = calibrated(SPECFORGE)
    assert CONVERSATIONS[SPECFORGE.label] == 20
    at_32, at_64, at_16 = (_simulate(sc, SPECFORGE.label, b) for b in (32, 64, 16))
    assert at_32 == at_64
    assert at_16["baseline"][0] < at_32["baseline"][0]
