"""The cycle of a tree scenario on its pass times: SGLang's tree of (num_steps, topk,
num_draft_tokens) or a static ``[speculation.tree]``, the drafter's passes over its beams
from the hardware model when the model geometry is known.

Trees are imported where they are used: a chain scenario's ``specsim run`` never needs
them (start-up).
"""

from __future__ import annotations

from sim.hardware.pass_model import PassModel
from sim.model.cycle import CycleCost, PassTimes
from sim.model.cycle import cycle_cost as chain_cycle_cost
from sim.scenario.schema import Scenario


def draft_pass_table_ms(hw: PassModel, max_tokens: int) -> tuple[float, ...] | None:
    """The drafter's decode pass over m = 1..max_tokens tokens (beams), ms, from the
    scenario's hardware model ``hw`` when the model geometry is known
    (sim/hardware/pass_model.py), else None (then ``timing.draft_ms_per_extra_token`` grows
    it linearly, default 0: flat)."""
    known = hw.model.layers is not None and hw.model.hidden_size is not None
    if not known:
        return None
    return hw.draft_step_table_ms(max_tokens)


def tree_cost(
    scenario: Scenario,
    num_steps: int,
    topk: int,
    num_draft_tokens: int,
    passes: PassTimes,
    hw: PassModel,
) -> CycleCost:
    """The SGLang tree cycle of (num_steps, topk, num_draft_tokens) on ``passes``; topk = 1
    is the chain cycle exactly (sim/model/tree/cost.py). ``hw``: the scenario's hardware
    model (its drafter table)."""
    if topk == 1:
        return chain_cycle_cost(passes, num_steps)
    from sim.model.tree.cost import tree_cycle_cost  # lazy: trees only

    table = draft_pass_table_ms(hw, topk)
    return tree_cycle_cost(
        passes,
        num_steps,
        topk,
        num_draft_tokens,
        draft_ms_per_extra_token=scenario.timing.draft_ms_per_extra_token,
        draft_table_ms=table,
    )


def scenario_tree_cost(scenario: Scenario, passes: PassTimes, hw: PassModel) -> CycleCost:
    """The cycle of a tree scenario at its own configuration: SGLang's tree cycle
    (``tree_cost``), or a static tree's (sim/model/drafts.py ``draft_cycle_cost``: one
    drafter pass per level below the first over every node drafted so far, the verify
    over its node count)."""
    sp = scenario.speculation
    static = sp.static_tree
    if static is None:
        assert sp.num_draft_tokens is not None
        return tree_cost(scenario, sp.num_steps, sp.topk, sp.num_draft_tokens, passes, hw)
    from sim.model.drafts import draft_cycle_cost, max_beams  # lazy: trees only

    table = draft_pass_table_ms(hw, max_beams(static))
    return draft_cycle_cost(
        passes,
        static,
        draft_ms_per_extra_token=scenario.timing.draft_ms_per_extra_token,
        draft_table_ms=table,
    )
