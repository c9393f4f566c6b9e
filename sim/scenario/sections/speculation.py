"""``[speculation]``: chain, SGLang tree, static tree or block-parallel drafting."""

# No ``from __future__ import annotations`` here: pydantic evaluates a string annotation
# by compiling it (one ``compile`` per field), which made building these models most
# of their import time (start-up); the annotations are evaluated once, as objects.
from typing import TYPE_CHECKING, Annotated, Self

from pydantic import Field, ValidationInfo, field_validator, model_validator

from sim.errors import UnknownNameError
from sim.scenario.sections.bounds import MAX_LIST, MAX_NUM_STEPS
from sim.scenario.sections.section import Section

if TYPE_CHECKING:
    from sim.model.tree import Tree


# The tree modules (sim.model.tree) are imported where a validator needs them: a chain
# scenario never does, and importing them cost every ``run`` about 10 ms of start-up.


class TreeSpec(Section):
    """``[speculation.tree]``: a static draft tree verified every cycle, as vLLM's
    ``speculative_token_tree`` and EAGLE-1 configure one (sim/model/tree/inputs.py).

    Exactly one of ``paths`` (rank paths from the root: ``[[0], [1], [0, 0]]``, rank 0 the
    drafter's top-1 guess), ``vllm`` (vLLM's own string, ``"[(0,), (1,), (0, 0)]"``),
    ``preset`` (``eagle1-default``: EAGLE-1's ``mc_sim_7b_63``) or ``growmap`` (a Sequoia
    growmap saved as JSON, relative to the scenario file; read when the file is loaded,
    which replaces it by its ``paths`` and says so in ``source``). ``source``: where the
    tree comes from (free text, kept in the answer).
    """

    paths: (
        Annotated[
            list[Annotated[list[int], Field(min_length=1, max_length=MAX_NUM_STEPS)]],
            Field(min_length=1, max_length=1024),
        ]
        | None
    ) = None
    vllm: Annotated[str, Field(min_length=2, max_length=100_000)] | None = None
    preset: str | None = None
    growmap: Annotated[str, Field(min_length=1)] | None = None
    source: Annotated[str, Field(max_length=500)] | None = None

    @field_validator("paths")
    @classmethod
    def _paths_make_a_tree(cls, value: list[list[int]] | None) -> list[list[int]] | None:
        from sim.model.tree.inputs import tree_from_paths  # lazy: start-up

        if value is not None:
            tree_from_paths(value)  # ValueError naming the path
        return value

    @field_validator("vllm")
    @classmethod
    def _vllm_tree(cls, value: str | None) -> str | None:
        from sim.model.tree.inputs import parse_vllm_tree  # lazy: start-up

        if value is not None:
            parse_vllm_tree(value)
        return value

    @field_validator("preset")
    @classmethod
    def _known_preset(cls, value: str | None) -> str | None:
        from sim.model.tree.inputs import TREE_PRESETS  # lazy: start-up

        if value is not None and value not in TREE_PRESETS:
            raise ValueError(str(UnknownNameError("tree preset", value, sorted(TREE_PRESETS))))
        return value

    @model_validator(mode="after")
    def _one_form(self) -> Self:
        given = [n for n in ("paths", "vllm", "preset", "growmap") if getattr(self, n) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of paths, vllm, preset, growmap")
        return self

    def rank_paths(self) -> tuple[tuple[int, ...], ...]:
        """The tree's rank paths as given (ValueError for a growmap not yet read)."""
        # lazy: only a static tree needs them (start-up)
        from sim.model.tree.inputs import parse_vllm_tree, preset_paths

        if self.paths is not None:
            return tuple(tuple(p) for p in self.paths)
        if self.vllm is not None:
            return parse_vllm_tree(self.vllm)
        if self.preset is not None:
            return preset_paths(self.preset)
        raise ValueError(
            f"growmap {self.growmap!r} is read when the scenario is loaded from its file"
        )

    def tree(self) -> "Tree":
        """The ``Tree`` (sim/model/tree/nodes.py) these paths make."""
        from sim.model.tree.inputs import tree_from_paths  # lazy: start-up

        return tree_from_paths(self.rank_paths())


class SpeculationSpec(Section):
    """Chain or tree drafting as SGLang's EAGLE worker runs it (``--speculative-num-steps``,
    ``--speculative-eagle-topk``, ``--speculative-num-draft-tokens``).

    ``topk = 1`` is a chain: SGLang sets ``num_draft_tokens`` to ``num_steps + 1`` (and says
    so); the same adjustment is applied here (``draft_tokens``) and said (``adjustments``).
    ``topk > 1`` is a tree (sim/model/tree/build.py): ``num_draft_tokens`` is required, and SGLang's
    ``torch.topk`` over its ``topk + (num_steps - 1) topk^2`` candidates must be able to pick
    ``num_draft_tokens - 1`` of them. SGLang does not refuse ``topk > num_draft_tokens - 1``
    (no such check in its server arguments), so neither does specsim: the tree then verifies
    fewer drafts than the drafter expands at depth 1.
    """

    num_steps: Annotated[int, Field(ge=0, le=MAX_NUM_STEPS)]
    topk: Annotated[int, Field(gt=0, le=MAX_LIST)] = 1
    num_draft_tokens: Annotated[
        int | None, Field(gt=0, le=MAX_NUM_STEPS * MAX_LIST, validate_default=True)
    ] = None
    #: A static tree (vLLM ``speculative_token_tree``, EAGLE-1, a Sequoia growmap): then
    #: topk stays 1, num_draft_tokens unset, and num_steps is the tree's depth.
    tree: TreeSpec | None = None
    #: A block-parallel drafter (DFlash, DSpark, P-EAGLE): the chain of num_steps drafts
    #: comes from one drafter pass over num_steps query tokens a request (the sampled token
    #: and num_steps - 1 masks) instead of num_steps - 1 sequential passes; the verify and
    #: acceptance are the chain's (sim/model/cycle.py). A chain only (topk 1, no tree).
    parallel_draft: bool = False

    @field_validator("num_draft_tokens")
    @classmethod
    def _tree_fits(cls, value: int | None, info: ValidationInfo) -> int | None:
        steps, topk = info.data.get("num_steps"), info.data.get("topk")
        if steps is None or topk is None or topk == 1:
            return value
        if steps < 1:
            raise ValueError(f"topk = {topk} drafts a tree: num_steps must be >= 1")
        if value is None:
            raise ValueError(
                f"required with topk = {topk} (SGLang's --speculative-num-draft-tokens: the "
                "root plus the drafts verified)"
            )
        pool = topk + (steps - 1) * topk**2
        if not 2 <= value <= pool + 1:
            raise ValueError(
                f"{value}: SGLang verifies the root plus 1..{pool} of the {pool} candidates "
                f"that num_steps {steps} and topk {topk} draft (topk + (num_steps - 1) "
                f"topk^2), so it must be in 2..{pool + 1}"
            )
        return value

    @model_validator(mode="after")
    def _parallel_is_a_chain(self) -> Self:
        if self.parallel_draft and (self.topk != 1 or self.tree is not None):
            raise ValueError(
                "speculation.parallel_draft: a block-parallel drafter proposes a chain; "
                "leave topk at 1 and speculation.tree out"
            )
        return self

    @model_validator(mode="after")
    def _static_tree_fits(self) -> Self:
        if self.tree is None or self.tree.growmap is not None:
            return self
        if self.topk != 1 or self.num_draft_tokens is not None:
            raise ValueError(
                "speculation.topk: a static tree (speculation.tree) fixes its own width "
                "and size; leave topk and num_draft_tokens out"
            )
        depth = self.tree.tree().max_depth
        if self.num_steps != depth:
            raise ValueError(
                f"speculation.num_steps: {self.num_steps}, but speculation.tree is {depth} "
                f"deep; set num_steps = {depth} (the most drafts one cycle can accept)"
            )
        return self

    @property
    def is_tree(self) -> bool:
        return self.topk > 1 or self.tree is not None

    @property
    def static_tree(self) -> "Tree | None":
        """The static ``Tree`` of ``[speculation.tree]``, or None (a chain or SGLang's)."""
        return None if self.tree is None else self.tree.tree()

    @property
    def rank_width(self) -> int:
        """Ranks the acceptance needs rates for: topk, or the static tree's width."""
        return self.topk if self.tree is None else max(self.tree.tree().width, 1)

    @property
    def draft_tokens(self) -> int:
        """Tokens in one verify pass: the last accepted token plus the drafts."""
        if self.tree is not None:
            return int(self.tree.tree().size)
        if self.is_tree:
            assert self.num_draft_tokens is not None
            return self.num_draft_tokens
        return self.num_steps + 1

    @property
    def adjustments(self) -> tuple[str, ...]:
        """SGLang's own adjustments of the given values, as sentences: a chain's
        num_draft_tokens is num_steps + 1 whatever is given (the given value is kept in the
        file's data, so a later topk > 1 override finds it)."""
        n = self.num_draft_tokens
        if self.is_tree or n is None or n == self.num_steps + 1:
            return ()
        return (
            f"speculation.num_draft_tokens {n} -> {self.num_steps + 1}: SGLang sets it to "
            "num_steps + 1 when topk = 1",
        )
