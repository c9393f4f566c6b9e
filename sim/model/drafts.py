"""What one speculative decode iteration drafts: a chain, SGLang's beam tree, or a static tree.

A ``Draft`` is one of

* an ``int`` k: a chain of k drafts (``--speculative-eagle-topk 1``); k = 0 is plain
  decoding;
* a ``TreeDraft`` (num_steps, topk, num_draft_tokens): the tree SGLang's EAGLE worker
  builds by beam search (sim/model/tree/build.py);
* a ``Tree``: a static tree verified every cycle (vLLM's ``speculative_token_tree``).

The functions below say what each costs a server per request: the drafter decode passes
and how many beams each runs over, the tokens the verify covers, the most tokens one
cycle emits, and the KV slots reserved ahead of the accepted tokens. For a chain they are
today's chain numbers exactly (k - 1 passes over 1 token, a verify over k + 1, k + 1
lookahead slots).

Drafter passes (the draft extend after the verify is not one of them: it is the pass that
yields the first level's candidates, priced separately over the accepted path):

* SGLang (sgl-project/sglang python/sglang/srt/speculative/eagle_worker.py ``draft_forward``):
  num_steps - 1 passes over the topk beams, whatever the final selection keeps;
* static tree (vllm-project/vllm vllm/v1/spec_decode/eagle.py ``propose_tree``, commit
  008603a3): one pass per level below the first, over every node drafted so far
  (``query_len = total_num_drafts``: the levels above are run again with a tree mask).

KV lookahead: SGLang allocates ``max(num_steps x topk, num_draft_tokens)`` slots per request
per decode step (the drafter's beams and the verify's tree; sgl-project/sglang
python/sglang/srt/mem_cache/common.py ``get_alloc_len_per_decode``), which for a chain is
k + 1, as today's serving engine reserves; a static tree reserves its node count.

``draft_cycle_cost`` is the batch-1 cycle of any draft: the chain's ``cycle_cost``, SGLang's
``tree_cycle_cost`` (both exactly what the batch-1 engines run), and for a static tree the
same terms with its drafter passes.
"""

from __future__ import annotations

from collections.abc import Sequence

from sim.model.cycle import CycleCost, PassTimes, cycle_cost
from sim.model.tree import Tree
from sim.model.tree.acceptance import TreeDraft
from sim.model.tree.cost import draft_over_ms, tree_cycle_cost

__all__ = [
    "Draft",
    "acceptance_depth",
    "describe_draft",
    "draft_cycle_cost",
    "draft_passes",
    "is_tree",
    "lookahead_tokens",
    "max_beams",
    "max_tokens",
    "rank_width",
    "verify_tokens",
]

#: A chain of k drafts (int), SGLang's beam tree, or a static tree.
Draft = int | TreeDraft | Tree


def is_tree(draft: Draft) -> bool:
    return not isinstance(draft, int)


def _check(draft: Draft) -> None:
    if isinstance(draft, bool) or not isinstance(draft, int | TreeDraft | Tree):
        raise TypeError(f"a draft is an int, a TreeDraft or a Tree, got {draft!r}")
    if isinstance(draft, int) and draft < 0:
        raise ValueError(f"a chain drafts k >= 0 tokens, got {draft}")


def acceptance_depth(draft: Draft) -> int:
    """Depths of top-1 rates the draft's acceptance needs: k, num_steps, or the tree's depth."""
    _check(draft)
    if isinstance(draft, int):
        return draft
    if isinstance(draft, TreeDraft):
        return draft.num_steps
    return draft.max_depth


def draft_passes(draft: Draft) -> tuple[tuple[int, int], ...]:
    """Drafter decode passes as (times, beams per request) pairs, beams ascending."""
    _check(draft)
    if isinstance(draft, int):
        return ((draft - 1, 1),) if draft > 1 else ()
    if isinstance(draft, TreeDraft):
        return ((draft.num_steps - 1, draft.topk),) if draft.num_steps > 1 else ()
    per_depth = draft.nodes_per_depth()[1:]  # nodes at depth 1..D
    drafted = [int(per_depth[:j].sum()) for j in range(1, draft.max_depth)]
    counts: dict[int, int] = {}
    for beams in drafted:
        counts[beams] = counts.get(beams, 0) + 1
    return tuple(sorted((times, beams) for beams, times in counts.items()))


def verify_tokens(draft: Draft) -> int:
    """Tokens per request the target pass covers: 1 (plain decoding), k + 1, or the tree's
    nodes (num_draft_tokens, the root included)."""
    _check(draft)
    if isinstance(draft, int):
        return draft + 1
    if isinstance(draft, TreeDraft):
        return draft.num_draft_tokens
    return draft.size


def max_tokens(draft: Draft) -> int:
    """The most tokens one cycle emits: k + 1, num_steps + 1 (a bound: SGLang's tree may be
    shallower), or the static tree's depth + 1."""
    return acceptance_depth(draft) + 1


def max_beams(draft: Draft) -> int:
    """The widest drafter pass per request (1 for a chain or plain decoding)."""
    passes = draft_passes(draft)
    return max((beams for _, beams in passes), default=1)


def rank_width(draft: Draft) -> int:
    """Ranks whose rates the draft's acceptance needs: 1 (a chain), topk, or the static
    tree's width (1 + its largest rank)."""
    _check(draft)
    if isinstance(draft, int):
        return 1
    if isinstance(draft, TreeDraft):
        return draft.topk
    return max(draft.width, 1)


def lookahead_tokens(draft: Draft) -> int:
    """KV slots reserved per running request beyond its context (see the module docstring)."""
    _check(draft)
    if isinstance(draft, TreeDraft):
        return max(draft.num_steps * draft.topk, draft.num_draft_tokens)
    return verify_tokens(draft)


def describe_draft(draft: Draft) -> str:
    """``k = 3``, ``no speculation (k = 0)``, ``tree 5/4/8`` (num_steps/topk/num_draft_tokens)
    or ``static tree (8 drafts, depth 2)``."""
    _check(draft)
    if isinstance(draft, int):
        return "no speculation (k = 0)" if draft == 0 else f"k = {draft}"
    if isinstance(draft, TreeDraft):
        return f"tree {draft.num_steps}/{draft.topk}/{draft.num_draft_tokens}"
    return f"static tree ({draft.drafts} drafts, depth {draft.max_depth})"


def draft_cycle_cost(
    passes: PassTimes,
    draft: Draft,
    *,
    draft_ms_per_extra_token: float = 0.0,
    draft_table_ms: Sequence[float] | None = None,
) -> CycleCost:
    """The batch-1 cycle of ``draft`` on ``passes`` (the draft extend at the pass times'
    own accept length; ``CycleCost.at_accept_length`` moves it). ``draft_table_ms`` /
    ``draft_ms_per_extra_token``: the drafter pass over m beams (``draft_over_ms``)."""
    _check(draft)
    if isinstance(draft, int):
        return cycle_cost(passes, draft)
    if isinstance(draft, TreeDraft):
        if draft.topk == 1:
            return cycle_cost(passes, draft.num_steps)
        return tree_cycle_cost(
            passes,
            draft.num_steps,
            draft.topk,
            draft.num_draft_tokens,
            draft_ms_per_extra_token=draft_ms_per_extra_token,
            draft_table_ms=draft_table_ms,
        )
    draft_ms = overhead = 0.0
    for times, beams in draft_passes(draft):
        step = draft_over_ms(
            passes.draft_step_ms,
            beams,
            ms_per_extra_token=draft_ms_per_extra_token,
            table_ms=draft_table_ms,
        )
        draft_ms += times * (step + passes.draft_step_overhead_ms)
        overhead += times * passes.draft_step_overhead_ms
    tokens = passes.draft_extend_tokens
    return CycleCost(
        num_steps=draft.max_depth,
        draft_ms=draft_ms,
        verify_ms=passes.verify_over_ms(draft.size),
        extend_ms=passes.draft_extend_ms,
        overhead_ms=passes.cycle_overhead_ms,
        extend_per_token_ms=passes.draft_extend_ms_per_token,
        extend_tokens=float(draft.max_depth + 1 if tokens is None else tokens),
        draft_overhead_ms=overhead,
    )
