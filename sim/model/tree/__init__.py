"""Draft trees (topk > 1): the tree as data and everything computed over one.

Modules: ``nodes`` (the tree as frozen data: ``Tree``, ``RankPath``), ``build`` (SGLang's
beam tree and the best tree), ``pool`` (the beam run as arrays), ``theory`` (rank-wise
closed forms), ``samplers`` (per-depth categorical draws), ``rates`` and ``presets`` (rank
profiles), ``acceptance`` (requests over a tree), ``cost`` (the tree cycle), ``inputs``
(trees given by engine flags), ``required`` and ``metrics`` (required and implied top-1
rates).
"""

from sim.model.tree.nodes import RankPath, Tree

__all__ = ["RankPath", "Tree"]
