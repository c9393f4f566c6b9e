"""Hand-worked checks of tree search: values computed from the formulas and their sources."""

from __future__ import annotations

import pytest

from sim.binding.acceptance_model import acceptance_model
from sim.scenario.load import load_scenario
from sim.scenario.overrides import pin_verify_tokens
from sim.studies.tree_search import TreeTarget, search_trees, tree_configs
from tests.conftest import SEED

SETS = ["acceptance.rank_rates=[0.7, 0.15, 0.06, 0.03]"]


def test_num_draft_tokens_up_to_the_candidates_plus_the_root():
    """model/tree/build.py: 2 + (2 - 1) x 4 = 6 candidates at (2 steps, topk 2), so num_draft_tokens
    <= 7."""
    assert tree_configs([2], [2], [6, 7, 8]) == [(2, 2, 6), (2, 2, 7)]


def test_best_per_topk_takes_the_lowest_rate():
    """tree_search.py TreeTarget.best_per_topk: per topk the configuration needing the least top-1
    rate."""
    table = {(2, 2, 3): 0.5, (3, 2, 4): 0.4, (2, 4, 5): 0.6, (3, 2, 5): None}
    t = TreeTarget(100.0, table, {}, {}, None, None)
    assert t.best_per_topk() == {2: ((3, 2, 4), 0.4), 4: ((2, 4, 5), 0.6)}


def test_depth_scale_is_the_scenarios_decay_of_the_top1_rate():
    """model/tree/required.py RankShape: g_d = mean top-1 rate at depth d / at depth 1, from the
    scenario's shape."""
    sc = load_scenario(SEED, ["acceptance.rank_profile=sequoia-jf68m-llama2-7b"])
    res = search_trees(sc, [100.0], [1, 2, 3], [1, 2], [4])
    rates = acceptance_model(pin_verify_tokens(sc).acceptance, 3).mean_rates()
    assert len(set(rates.round(12))) > 1  # the seed's rates decay with depth
    assert res.depth_scale == pytest.approx(tuple(rates / rates[0]))
