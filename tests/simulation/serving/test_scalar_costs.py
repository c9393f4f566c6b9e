"""The one-value-at-a-time cost paths (``DecodeCurve.ms_at``, ``scalar_pass``,
``ComputeCurve.at_scalar``, ``Envelope.at_scalar``) give the array paths' bits."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.binding.bound import bind
from sim.model import decode_curve
from sim.model.decode_curve import SCALAR_VALUES
from sim.model.pass_curves import LinearCurve, PrefillLoad
from sim.model.tree.acceptance import TreeDraft
from sim.scenario.load import load_scenario
from sim.simulation.serving.setup import serving_setup
from tests.conftest import ROOT

SERVING = ROOT / "scenarios" / "kimi-k25-8xpcie-eagle3-serving.toml"
LLAMA = ROOT / "scenarios" / "llama31-8b-1xh100-eagle3.toml"
_COSTS = {}


def cost(path):
    """The serving cost of a shipped scenario (hardware curves: measured points, eager
    and graphed passes, MoE and dense)."""
    if path not in _COSTS:
        _COSTS[path] = serving_setup(bind(load_scenario(path))).plan.cost
    return _COSTS[path]


def bits(values) -> list[int]:
    return np.asarray(values, dtype=np.float64).view(np.int64).tolist()


#: A decode curve's arguments: scenario, batch, draft, extend tokens, drafter.
CURVES = dict(
    path=st.sampled_from([SERVING, LLAMA]),
    batch=st.sampled_from([1, 2, 5, 8, 64, 300]),
    draft=st.sampled_from([0, 1, 2, 4, TreeDraft(3, 2, 4)]),
    extend=st.sampled_from([None, 1, 3]),
    drafter=st.booleans(),
)
CONTEXTS = st.lists(st.floats(0.0, 5e6), min_size=1, max_size=SCALAR_VALUES + 8)


@settings(max_examples=80, deadline=None)
@given(
    path=st.sampled_from([SERVING, LLAMA]),
    batch=st.sampled_from([1, 2, 3, 5, 8, 13, 64, 300, 1024]),
    draft=st.sampled_from([0, 1, 2, 4, TreeDraft(3, 2, 4)]),
    extend=st.sampled_from([None, 1, 3]),
    drafter=st.booleans(),
    contexts=CONTEXTS,
)
def test_decode_curve_one_at_a_time_is_the_array_path(
    path, batch, draft, extend, drafter, contexts
):
    """Every term and the host work (serial on a speculating server's iterations, hidden
    on a plain one's up to the iteration's time) in the array path's order."""
    curve = cost(path).decode_curve(batch, draft, extend, drafter)
    assert curve.host is not None  # the shipped scenarios price host work
    s = np.array(contexts)
    scalar = [curve.ms_at(v) for v in contexts]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(decode_curve, "SCALAR_VALUES", 0)
        array = curve.ms(s)
    assert bits(scalar) == bits(array)
    assert bits(curve.ms(s)) == bits(array)  # whichever path ``ms`` takes


@settings(max_examples=80, deadline=None)
@given(
    path=st.sampled_from([SERVING, LLAMA]),
    name=st.sampled_from(
        ["prefill", "draft_prefill", "decode", "verify", "draft_step", "draft_extend"]
    ),
    tokens=st.integers(1, 9000),
    rows=st.one_of(st.none(), st.integers(1, 9000)),
    kv=st.floats(0.0, 1e7),
    pairs=st.floats(0.0, 1e10),
)
def test_a_pass_one_at_a_time_is_the_array_path(path, name, tokens, rows, kv, pairs):
    """Every pass kind, dense and MoE (the tokens' rows routing alike when given), graphed
    and eager (past the capture limits), one-line and many-line envelopes."""
    curve = getattr(cost(path).curves, name)
    rows = None if rows is None else min(rows, tokens)
    got = curve.scalar_pass(tokens, rows)(kv, pairs)
    assert bits([got]) == bits(curve.pass_ms(tokens, np.array([kv]), np.array([pairs]), rows))
    # below, between and beyond the calibration points
    work = curve.work_ms(tokens, kv, pairs, rows)
    for x in (0.0, float(work), *curve.curve.work_ms.tolist(), 10 * float(curve.curve.work_ms[-1])):
        assert bits([curve.curve.at_scalar(x)]) == bits(curve.curve.at(np.array([x])))
        envelope = curve._token_terms(tokens, rows)[2]
        assert bits([envelope.at_scalar(x)]) == bits(envelope.at(np.array([x])))


def test_a_linear_curve_one_at_a_time_is_the_array_path():
    line = LinearCurve(9.0, 0.01, 1e-5, 3e-9)
    for tokens, kv, pairs in ((1, 0.0, 0.0), (7, 12345.5, 9.75e6), (300, 3, 7)):
        assert line.scalar_pass(tokens)(kv, pairs) == float(line.pass_ms(tokens, kv, pairs))


@pytest.mark.parametrize("path", [SERVING, LLAMA])
def test_a_prefill_costs_its_pass(path):
    c = cost(path)
    load_tokens, kv, pairs = 777, 900.0, 3.0e5
    load = PrefillLoad(load_tokens, kv, pairs)
    expected = float(c.curves.prefill.pass_ms(load_tokens, kv, pairs))
    expected += float(c.curves.draft_prefill.pass_ms(load_tokens, kv, pairs))
    assert c.prefill_ms(load, drafter=True) == expected


def test_a_used_cost_model_pickles_for_worker_processes():
    """Once evaluated a cost model holds closures (the scalar terms) and its token-count
    table (``PassTerms``): it pickles without either, and the copy rebuilds the first and
    starts a table of its own, one for all its passes, whose terms give the same bits."""
    c = cost(SERVING)
    s = np.array([30000.0])
    many = 30000.0 + 64.0 * np.arange(SCALAR_VALUES + 5)  # the passes' work at once
    before, before_many = c.decode_curve(8, 2, 1).ms(s), c.decode_curve(8, 2, 1).ms(many)
    c.prefill_ms(PrefillLoad(999, 999.0, 999.0), drafter=True)
    blob = pickle.dumps(c)
    clone = pickle.loads(blob)
    assert bits(clone.decode_curve(8, 2, 1).ms(s)) == bits(before)
    assert bits(clone.decode_curve(8, 2, 1).ms(many)) == bits(before_many)
    assert clone.curves.prefill._per_tokens is not c.curves.prefill._per_tokens
    assert clone.curves.prefill._terms is clone.curves.decode._terms
    assert len(blob) < 200_000  # the terms (an envelope per token count) are not in it
