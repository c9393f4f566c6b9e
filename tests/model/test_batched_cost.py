"""Batched iteration cost: exactly the batch-1 cycle at batch 1, the curve's growth beyond."""

from __future__ import annotations

import numpy as np
import pytest

from sim.binding.bound import bind
from sim.binding.closed_form import pass_times
from sim.binding.serving_cost import serving_cost
from sim.model.batched_cost import IterationCost
from sim.model.cycle import PassTimes, cycle_cost
from sim.model.drafts import draft_cycle_cost
from sim.model.pass_curves import LinearCurve, PrefillLoad, ServingCurves, pass_load
from sim.model.tree import Tree
from sim.model.tree.acceptance import TreeDraft
from sim.model.tree.cost import tree_cycle_cost
from sim.scenario.load import load_scenario
from tests.conftest import ROOT, SEED

PASSES = PassTimes(12.12, 30.0, 3, 0.7, 1.2, 1.5, 0.6)
LINEAR = ServingCurves(
    decode=LinearCurve(9.0, 0.01, 1e-5),
    verify=LinearCurve(25.0, 0.05, 2e-5),
    prefill=LinearCurve(5.0, 0.02),
    draft_step=LinearCurve(1.0, 0.001, 1e-6),
    draft_extend=LinearCurve(1.2, 0.002),
    draft_prefill=LinearCurve(0.5, 0.001),
)


@pytest.mark.parametrize("k", range(0, 9))
@pytest.mark.parametrize("context", [0.0, 2048.0])
def test_batch_one_at_the_reference_context_is_the_batch_one_cycle_exactly(k, context):
    cost = IterationCost(PASSES, LINEAR, reference_context_tokens=context)
    got = cost.decode_ms(1, k, np.array([context, context]))
    assert got.tolist() == [cycle_cost(PASSES, k).total_ms] * 2  # bit for bit
    phases = cost.decode_phases(1, k, np.array([context]))
    c = cycle_cost(PASSES, k)
    assert [float(p[0]) for p in phases] == [c.draft_ms, c.verify_ms, c.extend_ms, c.overhead_ms]


@pytest.mark.parametrize("path", [SEED, ROOT / "scenarios" / "llama31-8b-1xh100-eagle3.toml"])
def test_hardware_curves_are_exact_at_batch_one(path):
    scenario = load_scenario(path, ["model.draft_params=2.0e9"] if path == SEED else [])
    cost = serving_cost(
        bind(scenario), kv_bytes_per_token=70_000.0, reference_context_tokens=1000.0
    )
    for k in range(0, 7):
        assert (
            float(cost.decode_ms(1, k, np.array([1000.0]))[0])
            == cycle_cost(pass_times(scenario), k).total_ms
        )


def test_growth_is_the_curves_difference():
    cost = IterationCost(PASSES, LINEAR, reference_context_tokens=0.0)
    b, k, s = 8, 3, 8000.0
    c = cycle_cost(PASSES, k)
    expected = c.total_ms
    for times, curve, m in (
        (k - 1, LINEAR.draft_step, 1),
        (1, LINEAR.verify, k + 1),
        (1, LINEAR.draft_extend, k + 1),
    ):
        t, kv, pr = pass_load(b, m, s)
        t1, kv1, pr1 = pass_load(1, m, 0.0)
        expected += times * (float(curve.pass_ms(t, kv, pr)) - float(curve.pass_ms(t1, kv1, pr1)))
    assert float(cost.decode_ms(b, k, np.array([s]))[0]) == pytest.approx(expected, rel=1e-12)
    # the per-phase path and the cached total agree
    assert float(sum(p[0] for p in cost.decode_phases(b, k, np.array([s])))) == pytest.approx(
        expected, rel=1e-12
    )


def test_seed_verify_grows_faster_than_decode_with_batch():
    scenario = load_scenario(SEED, ["model.draft_params=2.0e9"])
    cost = serving_cost(bind(scenario))
    plain = [float(cost.decode_ms(b, 0, np.array([0.0]))[0]) for b in (1, 8, 32)]
    spec = [float(cost.decode_ms(b, 2, np.array([0.0]))[0]) for b in (1, 8, 32)]
    assert plain == sorted(plain) and spec == sorted(spec)
    # a verify over B (k + 1) tokens reads more distinct experts than a decode over B
    assert (spec[2] - spec[0]) > (plain[2] - plain[0])


def test_prefill_and_fused_chunks():
    cost = IterationCost(PASSES, LINEAR)
    load = PrefillLoad.of_chunks([100, 50], [0, 200])
    assert load.tokens == 150 and load.kv_tokens == 100 + 250
    assert load.pairs == pytest.approx(100 * 101 / 2 + 50 * 200 + 50 * 51 / 2)
    alone = cost.prefill_ms(load, drafter=False)
    assert alone == pytest.approx(float(LINEAR.prefill.pass_ms(150, 350, load.pairs)))
    assert cost.prefill_ms(load, drafter=True) > alone
    fused = float(cost.decode_ms(4, 2, np.array([400.0]), prefill=load)[0])
    assert fused > float(cost.decode_ms(4, 2, np.array([400.0]))[0])


# ----- trees (sim/model/drafts.py)


@pytest.mark.parametrize("context", [0.0, 2048.0])
@pytest.mark.parametrize(
    "draft",
    [TreeDraft(5, 4, 8), TreeDraft(2, 8, 32), Tree.from_rank_paths([(0,), (1,), (0, 0), (1, 0)])],
    ids=str,
)
def test_a_tree_at_batch_one_is_the_batch_one_tree_cycle_exactly(draft, context):
    cost = IterationCost(
        PASSES, LINEAR, reference_context_tokens=context, draft_ms_per_extra_token=0.25
    )
    expected = draft_cycle_cost(PASSES, draft, draft_ms_per_extra_token=0.25)
    if isinstance(draft, TreeDraft):
        assert expected == tree_cycle_cost(
            PASSES,
            draft.num_steps,
            draft.topk,
            draft.num_draft_tokens,
            draft_ms_per_extra_token=0.25,
        )
    for width in (None, 2, 3):
        got = cost.decode_ms(1, draft, np.array([context, context]), extend_tokens=width)
        assert got.tolist() == [expected.total_ms] * 2  # bit for bit


def test_tree_growth_is_verify_over_batch_n_and_drafts_over_batch_topk_beams():
    """At batch B: the verify over B N tokens, num_steps - 1 drafter passes over B topk
    beams (each beam a sequence with its request's context), the extend at its width."""
    cost = IterationCost(PASSES, LINEAR, draft_ms_per_extra_token=0.25)
    draft, b, s, width = TreeDraft(4, 3, 10), 8, 8000.0, 3
    expected = draft_cycle_cost(PASSES, draft, draft_ms_per_extra_token=0.25).total_ms

    def curve_ms(curve, rows, m, context):
        return float(curve.pass_ms(*pass_load(rows, m, context)))

    beams = draft.topk
    expected += 3 * (
        curve_ms(LINEAR.draft_step, b * beams, 1, beams * s)
        - curve_ms(LINEAR.draft_step, beams, 1, 0.0)
    )
    expected += curve_ms(LINEAR.verify, b, 10, s) - curve_ms(LINEAR.verify, 1, 10, 0.0)
    expected += curve_ms(LINEAR.draft_extend, b, width, s) - curve_ms(
        LINEAR.draft_extend, 1, width, 0.0
    )
    got = float(cost.decode_ms(b, draft, np.array([s]), extend_tokens=width)[0])
    assert got == pytest.approx(expected, rel=1e-12)
    phases = cost.decode_phases(b, draft, np.array([s]), extend_tokens=width)
    assert float(sum(p[0] for p in phases)) == pytest.approx(expected, rel=1e-12)
    # more beams cost more at batch 8; the chain of the same steps costs less still
    wider = float(cost.decode_ms(b, TreeDraft(4, 4, 10), np.array([s]), extend_tokens=width)[0])
    chain = float(cost.decode_ms(b, 4, np.array([s]), extend_tokens=width)[0])
    assert chain < got < wider


def test_the_extend_follows_the_batch_one_law_over_the_accepted_tokens():
    passes = PassTimes(12.12, 30.0, 3, 0.7, 1.2, 1.5, 0.6, draft_extend_ms_per_token=0.1)
    cost = IterationCost(passes, LINEAR)
    c = cycle_cost(passes, 3)
    accepted = np.array([1.0, 2.0, 4.0])  # batch 1: L = 1, 2, 4
    got = cost.decode_ms(1, 3, np.zeros(3), accepted_tokens=accepted)
    assert got.tolist() == pytest.approx([c.at_accept_length(x).total_ms for x in accepted])


def test_pass_load_by_hand() -> None:
    """2 requests bring 3 tokens each to contexts summing to 100: 6 tokens, 106 KV tokens
    read, and attention pairs 3 x 100 (each new token against the context) plus 2 x (1 +
    2 + 3) among the new tokens (causal): 312."""
    tokens, kv, pairs = pass_load(2, 3, 100.0)
    assert (tokens, float(kv), float(pairs)) == (6, 106.0, 312.0)


def test_a_batched_extend_grows_with_the_mean_accepted_tokens_per_request() -> None:
    """At batch 4 the draft extend runs over each request's accepted tokens: with 0.1 ms a
    token and 4 tokens priced in (k + 1 at k = 3), 4, 8 and 16 tokens accepted in all (1,
    2 and 4 a request) move the iteration by 0.1 x (tokens / 4 - 4) ms."""
    passes = PassTimes(12.12, 30.0, 3, 0.7, 1.2, 1.5, 0.6, draft_extend_ms_per_token=0.1)
    cost = IterationCost(passes, LINEAR)
    accepted = np.array([4.0, 8.0, 16.0])
    moved = cost.decode_ms(4, 3, np.zeros(3), accepted_tokens=accepted) - cost.decode_ms(
        4, 3, np.zeros(3)
    )
    assert moved.tolist() == pytest.approx((0.1 * (accepted / 4 - 4.0)).tolist())
