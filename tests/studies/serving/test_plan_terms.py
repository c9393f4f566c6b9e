"""A study's plan builder owns one table of its passes' token-count terms
(sim/hardware/batched.py ``PassTerms``): its plans at every load and k share it, a copy
sent to a worker process starts one of its own (shared by the copies it receives), and
the costs are those of passes with a table of their own."""

from __future__ import annotations

import pickle

import numpy as np

from sim.studies.serving.paired_metrics import Load
from sim.studies.serving.scenario_plans import ScenarioPlans
from tests.studies.serving.helpers import small_scenario


def test_a_builders_plans_share_their_pass_terms():
    builder = ScenarioPlans.of(small_scenario())
    one, other = builder(Load("concurrency", 1), 2), builder(Load("concurrency", 8), 3)
    table = one.cost.curves.decode._per_tokens
    assert other.cost.curves.decode._per_tokens is table
    alone = ScenarioPlans.of(small_scenario())(Load("concurrency", 8), 3)
    assert alone.cost.curves.decode._per_tokens is not table
    context = np.array([4000.0])
    for draft in (0, 3):
        shared = other.cost.decode_ms(8, draft, context, None, True)
        assert np.array_equal(shared, alone.cost.decode_ms(8, draft, context, None, True))
    copy = pickle.loads(pickle.dumps(builder))
    assert copy.terms is not builder.terms
    fresh = copy(Load("concurrency", 8), 3).cost.curves.decode._per_tokens
    assert set(fresh) < set(table)  # its calibration's entries, none of the iterations'
