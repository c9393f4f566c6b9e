"""What a serving plan reads from the bound scenario, built once per serving setup
(``serving_model``): its batched iteration cost (sim/binding/serving_cost.py), its
acceptance over the policies' drafts, rank shares, KV capacity and the notes for the
assumptions (sim/binding/serving_notes.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sim.binding.bound import Bound
from sim.binding.kv_capacity import KvCapacity
from sim.binding.reference_context import reference_context
from sim.binding.serving_cost import scenario_serving_cost
from sim.binding.serving_notes import (
    expert_routing_note,
    host_work_note,
    logit_rows_note,
    recurrent_state_note,
)
from sim.model.acceptance import AcceptanceModel

if TYPE_CHECKING:
    from sim.hardware.pass_terms import PassTerms
    from sim.model.batched_cost import IterationCost
    from sim.model.tree.rates import Shares


@dataclass(frozen=True, slots=True)
class ServingModel:
    """What a serving plan takes from a bound scenario, built once: the batched iteration
    ``cost``, the ``acceptance`` model over the policies' longest draft, the
    ``rank_shares`` of their widest tree (empty without one), the ``kv`` capacity the
    scheduler runs with (sim/binding/kv_capacity.py), and the ``notes`` for the
    assumptions (the cost's, then the KV capacity's and the host work's)."""

    cost: IterationCost
    acceptance: AcceptanceModel
    rank_shares: Shares | tuple[()]
    kv: KvCapacity
    notes: tuple[str, ...]


def serving_model(
    bound: Bound,
    *,
    speculative: bool,
    max_beams: int,
    max_k: int,
    widest: int,
    source: str,
    capacity: KvCapacity,
    terms: PassTerms | None = None,
) -> ServingModel:
    """The serving plan's model of ``bound``: its batched cost (``serving_cost`` with the
    scenario's ``[model]`` KV and attention terms at ``timing.context_tokens`` and its
    ``timing.points``; ``speculative``: the drafter's passes; ``max_beams``: the widest
    drafter pass), the acceptance model up to ``max_k`` positions and the rank shares of
    ``widest`` ranks (both from the acceptance bind resolved, ``Bound.resolved``) and the
    KV ``capacity`` its caller derived (``kv_capacity(scenario, speculative)``, read once:
    a hybrid's state pool under SGLang's rule also bounds the admission caps the draft
    lookups take). Errors name ``source`` (the scenario's file); ``terms``: as
    ``serving_cost`` takes them."""
    scenario = bound.scenario
    spec, timing = scenario.model, scenario.timing
    notes = []
    kv = spec.kv_bytes_per_token
    attn = spec.attention_flops_per_pair
    _, reference_note = reference_context(scenario, source)
    if reference_note:
        notes.append(reference_note)
    if kv is None:
        notes.append("KV reads: not modelled (no model.kv_bytes_per_token): passes ignore context")
    if attn is None:
        notes.append("attention FLOPs: not modelled (no model.attention_flops_per_pair)")
    cost = scenario_serving_cost(
        bound, speculative=speculative, max_beams=max_beams, source=source, terms=terms
    )
    measured = sorted({p.kind for p in timing.points or []})
    notes.append(
        "batched passes: the hardware model calibrated to the batch-1 [timing] passes"
        + (f" and measured points for {', '.join(measured)}" if measured else "")
        + (
            ""
            if "prefill" in measured
            else "; prefill: no measured prefill, the decode pass's curve (assumed; the "
            "compute-bound prefill is then priced at the decode pass's slope)"
        )
    )
    logit_note = logit_rows_note(cost.logits)
    notes.extend((capacity.note, host_work_note(scenario), logit_note))
    routing = expert_routing_note(bound)
    if routing is not None:
        notes.append(routing)
    if cost.state.shape:
        notes.append(recurrent_state_note(cost.state))
    acceptance = bound.resolved.at(max_k)
    shares = bound.resolved.rank_shares(widest)
    return ServingModel(cost, acceptance, shares, capacity, tuple(notes))
