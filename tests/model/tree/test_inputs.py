"""Static trees as engines write them: vLLM's speculative_token_tree, EAGLE-1's default
tree and Sequoia growmaps, each read into the same ``Tree``."""

from __future__ import annotations

import pytest

from sim.model.tree import Tree
from sim.model.tree.inputs import (
    EAGLE1_DEFAULT,
    growmap_paths,
    level_uniform,
    parse_vllm_tree,
    preset_paths,
    tree_from_paths,
    vllm_tree_text,
)


def test_eagle1_default_tree_has_its_published_shape():
    # mc_sim_7b_63: 25 drafts, 4 / 8 / 8 / 3 / 2 per depth, ranks up to 3
    tree = tree_from_paths(preset_paths("eagle1-default"))
    assert tree.drafts == 25 == len(EAGLE1_DEFAULT)
    assert tree.nodes_per_depth().tolist() == [1, 4, 8, 8, 3, 2]
    assert (tree.max_depth, tree.width) == (5, 4)


def test_vllm_string_reads_as_the_same_tree_in_any_order():
    # vLLM sorts the list breadth-first itself: the order given does not matter
    a = parse_vllm_tree("[(0,), (1,), (0, 0), (1, 0)]")
    b = parse_vllm_tree("[(1, 0), (0, 0), (1,), (0,)]")
    assert a == b == ((0,), (1,), (0, 0), (1, 0))


def test_vllm_text_round_trips():
    tree = tree_from_paths(EAGLE1_DEFAULT)
    assert tree_from_paths(parse_vllm_tree(vllm_tree_text(tree))) == tree


def test_a_chain_in_vllm_form_is_the_chain():
    # what vLLM writes for num_speculative_tokens = 3 without a tree
    assert tree_from_paths(parse_vllm_tree("[(0,), (0, 0), (0, 0, 0)]")) == Tree.chain(3)


def test_level_uniform_says_which_trees_vllm_drafts_as_given():
    assert level_uniform(tree_from_paths([(0,), (1,), (0, 0), (1, 0)]))
    # EAGLE-1's tree gives its nodes different child counts: vLLM's proposer would draft
    # n_l // n_(l-1) children under every node instead
    assert not level_uniform(tree_from_paths(EAGLE1_DEFAULT))


def test_growmap_successors_become_rank_paths():
    growmap = {"Successors": [[1, 2], [3], [4], [5], [], []], "size": 6}
    assert growmap_paths(growmap) == ((0,), (1,), (0, 0), (1, 0), (0, 0, 0))


@pytest.mark.parametrize(
    ("paths", "message"),
    [
        ([], "at least one path"),
        ([(0,), (1, 1)], "without its parent [1]"),
        ([(0,), (0,)], "given twice"),
        ([(0,), (0, -1)], "ranks are integers >= 0"),
        ([()], "empty"),
    ],
)
def test_bad_paths_are_named(paths, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        tree_from_paths(paths)


@pytest.mark.parametrize(
    ("growmap", "message"),
    [
        ({}, "needs Successors"),
        ({"Successors": [[1], [1]]}, "names node 1"),
        ({"Successors": [[1], [], []]}, "node 2 of the growmap is no node's successor"),
        ({"Successors": [[1], []], "size": 3}, "size 3"),
        ({"Successors": [[1], []], "depth": [0, 2]}, "depth does not match"),
        ({"Successors": [[]]}, "root only"),
    ],
)
def test_bad_growmaps_are_named(growmap, message):
    with pytest.raises(ValueError, match=message):
        growmap_paths(growmap)


def test_unknown_preset_names_the_known():
    with pytest.raises(ValueError, match="known: eagle1-default"):
        preset_paths("eagle2")


def test_a_path_list_builds_an_equal_tree_each_time():
    """No process-wide memo: each call builds the tree again, equal to the last (lists or
    tuples alike)."""
    paths = preset_paths("eagle1-default")
    tree = tree_from_paths(paths)
    again = tree_from_paths([list(p) for p in paths])
    assert again is not tree
    assert (again.parent, again.rank) == (tree.parent, tree.rank)
