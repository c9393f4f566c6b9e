"""What each draft costs a server per request (sim/model/drafts.py)."""

from __future__ import annotations

import pytest

from sim.model.cycle import PassTimes, cycle_cost
from sim.model.drafts import (
    acceptance_depth,
    describe_draft,
    draft_cycle_cost,
    draft_passes,
    lookahead_tokens,
    max_beams,
    max_tokens,
    verify_tokens,
)
from sim.model.tree import Tree
from sim.model.tree.acceptance import TreeDraft

#: The tree of vllm-project/vllm PR 22752 (two children of the root, three of each).
VLLM_TREE = Tree.from_rank_paths([(0,), (1,), (0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)])


@pytest.mark.parametrize("k", range(0, 6))
def test_a_chain_is_todays_chain(k):
    assert draft_passes(k) == (((k - 1, 1),) if k > 1 else ())
    assert verify_tokens(k) == max_tokens(k) == lookahead_tokens(k) == k + 1
    assert acceptance_depth(k) == k and max_beams(k) == 1
    passes = PassTimes(12.0, 30.0, 3, 0.7, 1.2, 1.5, 0.6)
    assert draft_cycle_cost(passes, k) == cycle_cost(passes, k)


def test_sglang_tree():
    d = TreeDraft(5, 4, 8)
    assert draft_passes(d) == ((4, 4),)  # num_steps - 1 passes over topk beams
    assert verify_tokens(d) == 8 and max_tokens(d) == 6 and max_beams(d) == 4
    assert lookahead_tokens(d) == 20  # max(num_steps x topk, num_draft_tokens)
    assert lookahead_tokens(TreeDraft(2, 4, 16)) == 16
    assert describe_draft(d) == "tree 5/4/8"


def test_static_tree_reruns_every_drafted_node_per_level():
    """vLLM's propose_tree: the pass of level j runs over every node drafted so far."""
    assert draft_passes(VLLM_TREE) == ((1, 2),)
    deeper = Tree.from_rank_paths([(0,), (1,), (0, 0), (1, 0), (0, 0, 0)])
    assert draft_passes(deeper) == ((1, 2), (1, 4))
    assert verify_tokens(VLLM_TREE) == 9 and max_tokens(VLLM_TREE) == 3
    passes = PassTimes(12.0, 30.0, 3, 0.5, 1.2, 1.5, 0.6)
    c = draft_cycle_cost(passes, VLLM_TREE, draft_ms_per_extra_token=0.1)
    assert c.draft_ms == pytest.approx(1.3) and c.verify_ms == pytest.approx(33.0)


@pytest.mark.parametrize("bad", [-1, True, 2.0, "3"])
def test_bad_drafts(bad):
    with pytest.raises((TypeError, ValueError)):
        verify_tokens(bad)
