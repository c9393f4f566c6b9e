"""A serving setup's speculation policies: the scenario's own over the draft bind decided
(plain above a batch, a table by batch, or one draft), a ``serving.draft_table`` row's
draft, the widest tree the policies draft, what their drafts assume in words, and each
policy worked out on the plan (sim/simulation/serving/setup.py ``serving_setup``).
"""

from __future__ import annotations

from collections.abc import Mapping

from sim.binding.bound import Bound
from sim.errors import SpecsimError
from sim.model.drafts import Draft, is_tree, max_beams, rank_width
from sim.model.policy import DisableAbove, FixedK, KTable, SpeculationPolicy
from sim.model.tree import Tree
from sim.model.tree.acceptance import TreeDraft
from sim.scenario.sections.serving import ServingSpec
from sim.simulation.serving.plan import Drafting, ServingPlan

__all__ = ["check_policies", "draft_notes", "row_draft", "scenario_policy", "widest_drafts"]


def row_draft(num_steps: int, topk: int, num_draft_tokens: int) -> Draft:
    """A ``serving.draft_table`` row's draft: a chain when topk is 1 (SGLang then verifies
    num_steps + 1 tokens whatever num_draft_tokens says), else SGLang's tree."""
    return num_steps if topk == 1 else TreeDraft(num_steps, topk, num_draft_tokens)


def scenario_policy(bound: Bound, serving: ServingSpec, source: str) -> SpeculationPolicy:
    """The scenario's own policy over the draft bind decided (``Bound.drafting``): plain
    above a batch, a table by batch, or its draft at every batch."""
    scenario, k = bound.scenario, bound.num_steps
    draft = bound.drafting.draft
    if serving.disable_above_batch is not None:
        return DisableAbove(draft, serving.disable_above_batch)
    if serving.k_table is not None:
        if scenario.speculation.is_tree:
            raise SpecsimError(
                "k_table rows are chain lengths; a tree scenario's table is serving.draft_table "
                "([start_bs, end_bs, num_steps, topk, num_draft_tokens] rows)",
                source=source,
                field="serving.k_table",
            )
        return KTable(tuple((a, b, min(kk, k)) for a, b, kk in serving.k_table))
    if serving.draft_table is not None:
        return KTable(tuple((a, b, row_draft(s, t, n)) for a, b, s, t, n in serving.draft_table))
    return FixedK(draft)


def widest_drafts(drafts: list[Draft]) -> tuple[int, int]:
    """(the most ranks, the most drafter beams per request) any of ``drafts``' trees need
    (1, 1 without trees)."""
    trees = [d for d in drafts if is_tree(d)]
    return max(map(rank_width, trees), default=1), max(map(max_beams, trees), default=1)


def draft_notes(drafts: list[Draft], serving: ServingSpec, speculates: bool) -> list[str]:
    """What the policies' drafts assume: static trees, SGLang's trees, the draft extend."""
    notes = []
    if any(isinstance(d, Tree) for d in drafts):
        notes.append(
            "static tree: verified as given every iteration; per iteration the drafter runs "
            "one pass per level below the first over batch x the nodes drafted so far (vLLM's "
            "propose_tree) and the verify covers batch x its nodes (tree mask timed as a "
            "causal verify); acceptance per request from its own top-1 rates through the tree"
        )
    if any(isinstance(d, TreeDraft) for d in drafts):
        notes.append(
            "trees: the tree SGLang's beam search builds at the population's mean rank rates "
            "(static, as in the batch-1 engines); per iteration the drafter runs num_steps - 1 "
            "passes over batch x topk beams and the verify covers batch x num_draft_tokens "
            "tokens (tree mask timed as a causal verify); acceptance per request from its own "
            "top-1 rates through the tree"
        )
    if speculates:
        notes.append(
            "draft extend: over each request's accepted path (serving.draft_extend = "
            "'accepted', default; SGLang's eager extend and vLLM's proposer)"
            if serving.draft_extend == "accepted"
            else "draft extend: padded to the verify's width per request (serving.draft_extend "
            "= 'padded': SGLang's CUDA-graphed draft extend)"
        )
    return notes


def check_policies(
    plan: ServingPlan,
    lookups: Mapping[str, tuple[SpeculationPolicy, list[Draft]]],
    serving: ServingSpec,
    source: str,
) -> dict[str, Drafting]:
    """Each policy (with its ``k_lookup``) worked out on ``plan``; SpecsimError naming
    the field to change when one cannot run on it."""
    draftings = {}
    for name, (policy, by_batch) in lookups.items():
        try:
            draftings[name] = plan.check(policy, by_batch)
        except ValueError as exc:
            text = str(exc)
            if "KV cache" in text:
                field = "serving.kv_capacity_tokens"
            elif "ranks have rates" in text:
                field = "serving.draft_table" if serving.draft_table else "acceptance.rank_rates"
            else:
                field = "serving.token_budget"
            raise SpecsimError(f"{text} ({name})", source=source, field=field) from None
    return draftings
