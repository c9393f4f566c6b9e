"""Static draft trees as engines and papers write them down, read into a ``Tree``.

Three forms, each a list of rank paths in the end (sim/model/tree/nodes.py: a node is named by
the ranks of its path from the root, rank 0 the drafter's top-1 guess):

* vLLM's ``speculative_token_tree``: the string of a Python list of tuples, each tuple the
  child ranks from the root, e.g. ``"[(0,), (1,), (0, 0)]"``. vLLM reads it with
  ``ast.literal_eval`` and sorts it breadth-first, ``sorted(key=lambda t: (len(t), t))``
  (vllm-project/vllm vllm/config/speculative.py ``SpeculativeConfig.__post_init__``), and
  its EAGLE proposer drafts level by level (vllm/v1/spec_decode/eagle.py
  @ f7eef1b6987f4780fe8636077682936fe075aa2f, ``EagleProposer.__init__``:
  ``child_drafts_per_level[l] = nodes at level l // nodes at level l - 1``, then
  ``propose_tree`` takes that many top-ranked children of every node of the level above).
  So vLLM builds the tree it was given only when every node of a level has the same
  children, ranks 0..c_l - 1 (``level_uniform``); any other list is drafted as a
  different tree. ``num_speculative_tokens`` must equal the number of paths (vLLM's test
  tests/v1/spec_decode/test_eagle.py asserts it).
* EAGLE-1's default tree: ``mc_sim_7b_63`` of SafeAILab/EAGLE eagle/model/choices.py
  @ 08dc06ccb428f2d3cf8380933ea50ed3e4178168, 25 drafts over 5 depths (the same
  list-of-paths form; EAGLE's own tree attention takes any rank-closed tree).
* Sequoia's growmaps (Infini-AI-Lab/Sequoia tree_search.py, the dict it saves with
  ``torch.save``): ``Successors[i]`` lists node i's children in rank order (node 0 the
  root; children of a node get consecutive indices, the rank-r child the r-th), with
  ``roots``/``branches`` (the nodes expanded per level and their child counts), ``depth``
  and ``size`` (nodes, the root included). The file is a torch pickle; read as JSON here
  (``{k: v.tolist() if hasattr(v, "tolist") else v for k, v in torch.load(f).items()}``),
  ``Successors`` required, ``size`` and ``depth`` checked when given.

Every function raises ``ValueError`` with one line naming what is wrong.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from typing import Any

from sim.model.tree import RankPath, Tree

__all__ = [
    "EAGLE1_DEFAULT",
    "TREE_PRESETS",
    "growmap_paths",
    "level_uniform",
    "parse_vllm_tree",
    "preset_paths",
    "tree_from_paths",
    "vllm_tree_text",
]

#: EAGLE-1's default tree ``mc_sim_7b_63`` (SafeAILab/EAGLE eagle/model/choices.py
#: @ 08dc06ccb428f2d3cf8380933ea50ed3e4178168), as printed there.
EAGLE1_DEFAULT: tuple[RankPath, ...] = (
    (0,), (1,), (2,), (3,), (0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (2, 0), (2, 1), (3, 0),
    (0, 0, 0), (0, 0, 1), (0, 0, 2), (0, 1, 0), (0, 1, 1), (0, 2, 0), (0, 2, 1), (1, 0, 0),
    (0, 0, 0, 0), (0, 0, 0, 1), (0, 0, 0, 2), (0, 0, 0, 0, 0), (0, 0, 0, 0, 1),
)  # fmt: skip

#: Named trees (``speculation.tree.preset``) and where each comes from.
TREE_PRESETS: dict[str, tuple[tuple[RankPath, ...], str]] = {
    "eagle1-default": (
        EAGLE1_DEFAULT,
        "EAGLE-1 mc_sim_7b_63, SafeAILab/EAGLE eagle/model/choices.py "
        "@ 08dc06ccb428f2d3cf8380933ea50ed3e4178168",
    ),
}

#: The most drafts a static tree may hold (vLLM's examples and EAGLE's use 25-63).
MAX_TREE_DRAFTS = 1024


def preset_paths(name: str) -> tuple[RankPath, ...]:
    """The rank paths of a named tree (ValueError naming the known ones otherwise)."""
    try:
        return TREE_PRESETS[name][0]
    except KeyError:
        raise ValueError(
            f"unknown tree preset {name!r}; known: {', '.join(sorted(TREE_PRESETS))}"
        ) from None


def tree_from_paths(paths: Sequence[Sequence[int]]) -> Tree:
    """The tree of ``paths`` (every prefix of a path given, no path twice, ranks >= 0,
    at least one, at most ``MAX_TREE_DRAFTS``): ValueError naming the first problem.
    Built at each call (EAGLE-1's 63 drafts in 0.1 ms; a run with its uncertainty asks
    27 times)."""
    return _tree_of(tuple(tuple(p) for p in paths))


def _tree_of(paths: tuple[RankPath, ...]) -> Tree:
    if not paths:
        raise ValueError("a tree needs at least one path")
    if len(paths) > MAX_TREE_DRAFTS:
        raise ValueError(f"{len(paths)} paths: at most {MAX_TREE_DRAFTS} drafts")
    seen: set[RankPath] = set()
    for i, p in enumerate(paths):
        path = tuple(p)
        if not path:
            raise ValueError(f"path {i} is empty (the root is implied)")
        if any(isinstance(r, bool) or not isinstance(r, int) or r < 0 for r in path):
            raise ValueError(f"path {i} {list(path)}: ranks are integers >= 0")
        if path in seen:
            raise ValueError(f"path {i} {list(path)} is given twice")
        seen.add(path)
    for i, p in enumerate(paths):
        path = tuple(p)
        if len(path) > 1 and path[:-1] not in seen:
            raise ValueError(f"path {i} {list(path)} is given without its parent {list(path[:-1])}")
    return Tree.from_rank_paths(seen)


def level_uniform(tree: Tree) -> bool:
    """True when every node of each level above the deepest has the same children, ranks
    0..c - 1: the only trees vLLM's EAGLE proposer drafts as given (module docstring)."""
    kids = tree.child_lists
    for level in (0, *range(1, tree.max_depth)):
        nodes = [0] if level == 0 else list(tree.levels[level - 1])
        counts = set()
        for u in nodes:
            present = [c for c in kids[u] if c >= 0]
            if list(kids[u][: len(present)]) != present:
                return False
            counts.add(len(present))
        if len(counts) > 1:
            return False
    return True


def parse_vllm_tree(text: str) -> tuple[RankPath, ...]:
    """The paths of a vLLM ``speculative_token_tree`` string (a list of int tuples)."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise ValueError(f"{text[:60]!r} is not a Python list of tuples") from None
    if not isinstance(value, list | tuple) or not all(isinstance(p, list | tuple) for p in value):
        raise ValueError("a speculative_token_tree is a list of tuples of child ranks")
    return tuple(tuple(p) for p in tree_from_paths(value).rank_paths()[1:])


def vllm_tree_text(tree: Tree) -> str:
    """The tree as vLLM's ``speculative_token_tree`` string, breadth-first as vLLM sorts it."""
    paths = sorted(tree.rank_paths()[1:], key=lambda t: (len(t), t))
    return str(paths)


def _int_list(value: Any, what: str) -> list[int]:
    if not isinstance(value, list) or any(
        isinstance(v, bool) or not isinstance(v, int) for v in value
    ):
        raise ValueError(f"{what} must be a list of integers")
    return list(value)


def growmap_paths(growmap: Mapping[str, Any]) -> tuple[RankPath, ...]:
    """The rank paths of a Sequoia growmap read as JSON (module docstring)."""
    succ = growmap.get("Successors")
    if not isinstance(succ, list) or not succ:
        raise ValueError("a growmap needs Successors: node i's children, node 0 the root")
    if len(succ) > MAX_TREE_DRAFTS + 1:
        raise ValueError(f"{len(succ)} nodes: at most {MAX_TREE_DRAFTS} drafts")
    children = [_int_list(s, f"Successors[{i}]") for i, s in enumerate(succ)]
    paths: dict[int, RankPath] = {0: ()}
    order = [0]
    for u in order:
        for r, c in enumerate(children[u]):
            if not 0 < c < len(children) or c in paths:
                raise ValueError(f"Successors[{u}] names node {c}: not a new node of the map")
            paths[c] = (*paths[u], r)
            order.append(c)
    if len(paths) != len(children):
        missing = min(set(range(len(children))) - set(paths))
        raise ValueError(f"node {missing} of the growmap is no node's successor")
    size = growmap.get("size")
    if size is not None and size != len(children):
        raise ValueError(f"size {size} but Successors lists {len(children)} nodes")
    depth = growmap.get("depth")
    if depth is not None:
        given = _int_list(depth, "depth")
        if given != [len(paths[i]) for i in range(len(children))]:
            raise ValueError("depth does not match the depths Successors implies")
    if len(children) < 2:
        raise ValueError("the growmap holds the root only: no drafts")
    return tuple(paths[i] for i in range(1, len(children)))
