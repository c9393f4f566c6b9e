"""Hand-worked checks of drafts: values computed from the formulas and their sources."""

from __future__ import annotations

import pytest

from sim.model.cycle import PassTimes, cycle_cost
from sim.model.drafts import draft_cycle_cost
from sim.model.tree import Tree
from sim.model.tree.acceptance import TreeDraft

VLLM_TREE = Tree.from_rank_paths([(0,), (1,), (0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)])


def test_static_tree_extend_is_taken_at_its_depth_plus_one():
    """drafts.py: extend_tokens = max_depth + 1 when the pass times leave it None (depth 2 -> 3)."""
    passes = PassTimes(12.0, 30.0, 3, 0.5, 1.2, 1.5, 0.6)
    assert passes.draft_extend_tokens is None
    c = draft_cycle_cost(passes, VLLM_TREE)
    assert c.extend_tokens == 3.0
    assert c.num_steps == 2


def test_topk_one_tree_draft_is_the_chain_whatever_its_draft_tokens():
    """drafts.py: a TreeDraft with topk 1 is SGLang's chain of num_steps drafts (verify over k + 1 =
    5)."""
    passes = PassTimes(12.0, 30.0, 3, 0.5, 1.2, 1.5, 0.6)
    c = draft_cycle_cost(passes, TreeDraft(4, 1, 3))
    assert c == cycle_cost(passes, 4)
    assert c.verify_ms == pytest.approx(30.0 + 2 * 0.5)
