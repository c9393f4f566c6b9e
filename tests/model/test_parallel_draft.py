"""A block-parallel drafter (DFlash, DSpark, P-EAGLE): one drafter pass proposes the chain.

Its cycle is the chain of 1's with k - 1 more query tokens on the draft extend: checked
against hand computations at batch 1 (the drafter table's difference), batched (the extend's
growth over the accepted path plus the masks, no drafter steps), at k = 1 against the chain
of 1, and through the scenario (schema, the serving engine).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from sim.binding.bound import bind
from sim.binding.closed_form import pass_times
from sim.errors import SpecsimError
from sim.model.batched_cost import IterationCost
from sim.model.cycle import PassTimes, cycle_cost, draft_over_ms
from sim.model.pass_curves import LinearCurve, ServingCurves, pass_load
from sim.scenario.load import load_scenario
from sim.studies.serving.serve import serve
from tests.conftest import ROOT

SCENARIO = ROOT / "scenarios" / "llama31-8b-1xh100-eagle3.toml"
SEQUENTIAL = PassTimes(12.12, 30.0, 3, 0.7, 1.2, 1.5, 0.6, draft_step_overhead_ms=0.1)
#: the drafter pass over 1, 2, 3 tokens; beyond, its last slope (0.05 ms a token)
TABLE = (1.2, 1.3, 1.35)
PARALLEL = replace(SEQUENTIAL, parallel_draft_table_ms=TABLE)
LINEAR = ServingCurves(
    decode=LinearCurve(9.0, 0.01, 1e-5),
    verify=LinearCurve(25.0, 0.05, 2e-5),
    prefill=LinearCurve(5.0, 0.02),
    draft_step=LinearCurve(1.0, 0.001, 1e-6),
    draft_extend=LinearCurve(1.2, 0.002, 3e-6),
    draft_prefill=LinearCurve(0.5, 0.001),
)


def test_k_one_is_the_chain_of_one():
    assert cycle_cost(PARALLEL, 1) == cycle_cost(SEQUENTIAL, 1)
    cost = IterationCost(PARALLEL, LINEAR, reference_context_tokens=500.0)
    chain = IterationCost(SEQUENTIAL, LINEAR, reference_context_tokens=500.0)
    s = np.array([500.0, 8000.0])
    for batch in (1, 16):
        assert cost.decode_ms(batch, 1, s).tolist() == chain.decode_ms(batch, 1, s).tolist()


@pytest.mark.parametrize("k", [2, 3, 7])
def test_batch_one_cycle_by_hand(k):
    c = cycle_cost(PARALLEL, k)
    # one drafter pass: k - 1 more query tokens on the pass (1.2, 1.3, 1.35, then +0.05 each)
    masks = {2: 1.3 - 1.2, 3: 1.35 - 1.2, 7: 1.35 + 4 * 0.05 - 1.2}[k]
    assert c.draft_ms == pytest.approx(masks, abs=1e-12)
    assert c.draft_overhead_ms == 0.0  # no sequential drafter steps, no per-step overhead
    assert c.verify_ms == SEQUENTIAL.verify_over_ms(k + 1)
    assert c.extend_ms == 1.5 and c.overhead_ms == 0.6
    # against the sequential chain: (k - 1) steps of 1.2 + 0.1 replaced by the masks
    seq = cycle_cost(SEQUENTIAL, k)
    assert seq.total_ms - c.total_ms == pytest.approx((k - 1) * 1.3 - masks, abs=1e-12)
    assert c.draft_ms == draft_over_ms(1.2, k, table_ms=TABLE) - 1.2


def test_flat_drafter_pass_costs_nothing_more_at_batch_one():
    flat = replace(SEQUENTIAL, parallel_draft_table_ms=(1.2, 1.2))
    assert cycle_cost(flat, 7).draft_ms == 0.0


@pytest.mark.parametrize("k", [1, 4])
def test_batched_cost_by_hand(k):
    ref = 600.0
    cost = IterationCost(PARALLEL, LINEAR, reference_context_tokens=ref)
    b, s, path = 12, 9000.0, 3
    c = cycle_cost(PARALLEL, k)

    def growth(curve: LinearCurve, m: int) -> float:
        t, kv, pr = pass_load(b, m, np.array([s]))
        t1, kv1, pr1 = pass_load(1, m, np.array([ref]))
        return float(curve.pass_ms(t, kv, pr)[0]) - float(curve.pass_ms(t1, kv1, pr1)[0])

    # no drafter steps; the verify over k + 1; the extend over the path plus k - 1 masks
    expected = c.total_ms + growth(LINEAR.verify, k + 1) + growth(LINEAR.draft_extend, path + k - 1)
    got = cost.decode_ms(b, k, np.array([s]), extend_tokens=path)
    assert float(got[0]) == pytest.approx(expected, rel=1e-12)
    phases = cost.decode_phases(b, k, np.array([s]), extend_tokens=path)
    assert float(phases[0][0]) == c.draft_ms  # the batch-1 masks only: no draft_step growth
    assert float(sum(p[0] for p in phases)) == pytest.approx(expected, rel=1e-12)
    assert float(cost.decode_ms_at(b, k, s, extend_tokens=path)) == pytest.approx(
        expected, rel=1e-12
    )


def test_batch_one_is_the_batch_one_cycle_exactly():
    cost = IterationCost(PARALLEL, LINEAR, reference_context_tokens=700.0)
    for k in range(0, 9):
        assert cost.decode_ms(1, k, np.array([700.0])).tolist() == [
            cycle_cost(PARALLEL, k).total_ms
        ]


def test_scenario_key_tabulates_the_drafter_pass():
    scenario = load_scenario(SCENARIO, ["speculation.parallel_draft=true"])
    passes = pass_times(scenario)
    assert passes.parallel_draft_table_ms is not None
    assert len(passes.parallel_draft_table_ms) == 64
    plain = pass_times(load_scenario(SCENARIO))
    assert plain.parallel_draft_table_ms is None
    assert replace(passes, parallel_draft_table_ms=None) == plain
    k = scenario.num_steps
    assert bind(scenario).cycle.total_ms < bind(load_scenario(SCENARIO)).cycle.total_ms
    assert bind(scenario).cycle.draft_ms == pytest.approx(
        passes.parallel_draft_table_ms[k - 1] - passes.parallel_draft_table_ms[0], abs=1e-12
    )


@pytest.mark.parametrize(
    "override",
    [
        ["speculation.parallel_draft=true", "speculation.topk=2", "speculation.num_draft_tokens=4"],
        ['speculation.parallel_draft="yes"'],
    ],
)
def test_bad_values_name_the_field(override):
    with pytest.raises(SpecsimError, match=r"speculation\.parallel_draft"):
        load_scenario(SCENARIO, override)


def test_the_serving_engine_runs_it():
    scenario = load_scenario(SCENARIO, ["speculation.parallel_draft=true"])
    served = serve(scenario, concurrency=4, replications=1, requests=12, seed=3)
    chain = serve(load_scenario(SCENARIO), concurrency=4, replications=1, requests=12, seed=3)
    # same arrivals and acceptance, a shorter draft phase: at least as fast a cycle
    assert served.summary.speedup["speculative"]["per_user_tok_s"].mean >= (
        chain.summary.speedup["speculative"]["per_user_tok_s"].mean
    )
