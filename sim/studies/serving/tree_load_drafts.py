"""The drafts ``tree-load`` compares: SGLang trees and chains asked for, their names, their
``serving.draft_table`` rows, and the study's first stage (``drafts_asked``): the drafts
asked, checked, with what was defaulted (the tree, the rank profile) and where it comes
from."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pydantic import ValidationError

from sim.binding.draft_binding import draft_binding
from sim.errors import SpecsimError
from sim.model.drafts import Draft, acceptance_depth, describe_draft, is_tree
from sim.model.tree import Tree
from sim.model.tree.acceptance import TreeDraft
from sim.model.tree.presets import DEFAULT_RANK_PROFILE
from sim.scenario.overrides import with_overrides
from sim.scenario.schema import Scenario
from sim.scenario.sections.bounds import MAX_NUM_STEPS
from sim.scenario.sections.speculation import SpeculationSpec

__all__ = [
    "DEFAULT_TREE",
    "AskedDrafts",
    "chain_names",
    "check_chains",
    "draft_name",
    "drafts_asked",
    "parse_tree",
    "table_row",
    "tree_names",
]


#: The tree compared when neither the scenario nor ``--tree`` gives one: SGLang's default
#: EAGLE tree, num_steps 5, topk 4, num_draft_tokens 8: what SGLang sets when none of
#: ``--speculative-num-steps``, ``--speculative-eagle-topk``,
#: ``--speculative-num-draft-tokens`` is given, for Llama and every architecture it does not
#: list (sgl-project/sglang python/sglang/srt/server_args.py ``auto_choose_speculative_params``;
#: for DeepSeek-V2/V3 architectures recent versions choose the chain 3/1/4 instead).
DEFAULT_TREE = TreeDraft(5, 4, 8)


def parse_tree(text: str) -> TreeDraft:
    """``num_steps/topk/num_draft_tokens`` (e.g. ``5/4/8``) as SGLang's tree, validated as
    ``[speculation]`` is (SpecsimError naming ``--tree`` otherwise)."""
    parts = text.replace(",", "/").split("/")
    try:
        steps, topk, n = (int(p) for p in parts)
    except ValueError:
        raise SpecsimError(
            f"{text!r}: a tree is num_steps/topk/num_draft_tokens, e.g. 5/4/8", param="trees"
        ) from None
    if topk < 2:
        raise SpecsimError(f"{text!r}: topk 1 is a chain (give it as a chain)", param="trees")
    try:
        SpeculationSpec(num_steps=steps, topk=topk, num_draft_tokens=n)
    except ValidationError as exc:
        msg = str(exc.errors()[0]["msg"]).removeprefix("Value error, ")
        raise SpecsimError(f"{text!r}: {msg}", param="trees") from None
    return TreeDraft(steps, topk, n)


def check_chains(chains: Sequence[int]) -> None:
    """SpecsimError naming ``--chain`` unless there is a chain and every length is within
    the bound on ``speculation.num_steps`` (1 to ``MAX_NUM_STEPS``)."""
    if not chains:
        raise SpecsimError("give at least one chain length", param="chains")
    for k in chains:
        if not 1 <= k <= MAX_NUM_STEPS:
            raise SpecsimError(
                f"{k} is not in the range 1<=x<={MAX_NUM_STEPS} (the bound on "
                "speculation.num_steps)",
                param="chains",
            )


def draft_name(draft: Draft) -> str:
    """A short policy name: ``off``, ``chain 3``, ``tree 5/4/8``."""
    if isinstance(draft, int):
        return "off" if draft == 0 else f"chain {draft}"
    return describe_draft(draft)


def table_row(start: int, end: int, draft: Draft) -> list[int]:
    """A ``serving.draft_table`` row for ``draft`` (a chain or an SGLang tree)."""
    if isinstance(draft, int):
        return [start, end, draft, 1, draft + 1]
    if isinstance(draft, TreeDraft):
        return [start, end, draft.num_steps, draft.topk, draft.num_draft_tokens]
    raise ValueError("a static tree has no draft_table row")


def tree_names(drafts: Mapping[str, Draft]) -> tuple[str, ...]:
    """The names of the trees among ``drafts``, in their order."""
    return tuple(n for n, d in drafts.items() if is_tree(d))


def chain_names(drafts: Mapping[str, Draft]) -> tuple[str, ...]:
    """The names of the chains among ``drafts`` (plain decoding, k = 0, is neither)."""
    return tuple(n for n, d in drafts.items() if not is_tree(d) and d != 0)


@dataclass(frozen=True, slots=True)
class AskedDrafts:
    """The drafts a study compares (``drafts_asked``): ``drafts`` by name (``off``, the
    chains, the trees), the scenario they run on (with the default rank profile where it
    gives no rank shape), and what was defaulted: ``defaults`` (a short line each) and
    ``notes`` (where each comes from, for the assumptions)."""

    scenario: Scenario
    drafts: dict[str, Draft]
    defaults: dict[str, str]
    notes: tuple[str, ...]
    trees: tuple[str, ...]
    chains: tuple[str, ...]


def drafts_asked(
    scenario: Scenario,
    concurrencies: Sequence[int],
    chains: Sequence[int] | None,
    trees: Sequence[TreeDraft | Tree],
    source: str,
) -> AskedDrafts:
    """Stage 1 of ``tree_load_study``: the drafts compared, checked, with their defaults.

    Trees: ``trees``, else the scenario's own tree, else ``DEFAULT_TREE``; chains:
    ``chains``, else the scenario's num_steps (the tree's depth when it drafts one). A
    scenario without a rank shape takes ``DEFAULT_RANK_PROFILE``'s. SpecsimError naming
    the option or field when a chain, a concurrency or the acceptance is missing or out of
    range."""
    own = draft_binding(scenario).draft
    tree_list: list[TreeDraft | Tree] = list(trees) or ([] if isinstance(own, int) else [own])
    defaults: dict[str, str] = {}
    notes: list[str] = []
    if not tree_list:
        tree_list = [DEFAULT_TREE]
        defaults["tree"] = f"{draft_name(DEFAULT_TREE)}, SGLang's default EAGLE tree"
        notes.append(
            f"default tree: {draft_name(DEFAULT_TREE)} (the scenario drafts a chain and no "
            "--tree was given) is what SGLang sets when no speculative num_steps, topk or "
            "num_draft_tokens is given (python/sglang/srt/server_args.py "
            "auto_choose_speculative_params, Llama and unlisted architectures)"
        )
    steps = scenario.num_steps if isinstance(own, int) else acceptance_depth(own)
    chain_list = list(chains) if chains is not None else [steps]
    check_chains(chain_list)
    if not concurrencies or any(c < 1 for c in concurrencies):
        raise SpecsimError("give concurrencies >= 1", param="concurrencies")
    if scenario.acceptance is None:
        raise SpecsimError("needed to draft", source=source, field="acceptance")
    if scenario.acceptance.rank_shape() is None:
        scenario = with_overrides(
            scenario, {"acceptance.rank_profile": DEFAULT_RANK_PROFILE}, source=source
        )
        defaults["acceptance.rank_profile"] = (
            f"ranks below the top-1 from the {DEFAULT_RANK_PROFILE} prior, top-1 rates the chain's"
        )
        notes.append(
            "default rank profile: a tree's acceptance is derived from the chain's (the "
            "scenario gives no rank shape): its top-1 rate at each depth is the scenario's, "
            f"the ranks below share the top-1's misses as {DEFAULT_RANK_PROFILE} does (a small "
            "drafter's profile, not this drafter's; --set acceptance.rank_profile or "
            "rank_rates replaces it)"
        )
    drafts: dict[str, Draft] = {"off": 0}
    drafts.update({draft_name(k): k for k in chain_list})
    drafts.update({draft_name(t): t for t in tree_list})
    return AskedDrafts(
        scenario, drafts, defaults, tuple(notes), tree_names(drafts), chain_names(drafts)
    )
