"""A scenario's ``[serving]`` and ``[workload]`` as a serving plan, its policies and SLOs.

What each key means is written once, in the module that reads it: the arrivals and the
requests in sim/simulation/serving/setup_workload.py, the speculation policies in
setup_policies.py, the KV capacity and admission caps here (the cost model comes from
``sim.binding.serving_cost.serving_cost``); ``ServingSetup.assumptions`` says, for the report,
which inputs were given, which were defaulted and which were derived.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sim.binding.bound import Bound
from sim.binding.kv_capacity import KvCapacity, kv_capacity
from sim.binding.serving_model import serving_model
from sim.errors import SpecsimError
from sim.model.batched_cost import IterationCost
from sim.model.pass_curves import PrefillLoad
from sim.model.policy import FixedK, SpeculationPolicy, k_lookup
from sim.scenario.overrides import with_load
from sim.scenario.sections.serving import ServingSpec
from sim.simulation.serving.metrics import SloSpec
from sim.simulation.serving.plan import Drafting, ServingPlan
from sim.simulation.serving.scheduler import SchedulerConfig, admission_cap
from sim.simulation.serving.setup_policies import (
    check_policies,
    draft_notes,
    scenario_policy,
    widest_drafts,
)
from sim.simulation.serving.setup_workload import (
    arrivals_of,
    mean_tokens_of,
    ordered_workload,
    plain_workload,
)

if TYPE_CHECKING:  # only named here: the passes are built in sim/binding/serving_cost.py
    from sim.hardware.pass_terms import PassTerms

__all__ = [
    "BASELINE",
    "SPECULATIVE",
    "ServingSetup",
    "serving_setup",
    "with_load",
]

BASELINE, SPECULATIVE = "baseline", "speculative"


@dataclass(frozen=True, slots=True)
class ServingSetup:
    """Everything ``simulate_serving`` needs for a scenario, and what it assumed.

    ``draftings``: ``baseline`` (plain decoding) and, when the scenario speculates,
    ``speculative`` (its policy), each worked out and checked on the plan once
    (``ServingPlan.check``: what ``simulate_serving`` and the load check take);
    ``mean_tokens``: the requests' mean (input, output) tokens; ``load``: the arrival
    pattern in words; ``kv_capacity``: where the plan's KV capacity comes from (given,
    derived with its range, unlimited); ``max_beams``: the most drafter beams a request of
    any of its policies' trees drafts (1 without trees), which its cost was built for.
    """

    plan: ServingPlan
    draftings: dict[str, Drafting]
    slo: SloSpec
    replications: int
    seed: int
    load: str
    assumptions: tuple[str, ...]
    mean_tokens: tuple[float, float]
    kv_capacity: KvCapacity | None = None
    max_beams: int = 1

    @property
    def speculates(self) -> bool:
        """Whether any policy run drafts (its cost then holds the drafter's passes)."""
        return any(d.policy.max_k > 0 for d in self.draftings.values())

    @property
    def policies(self) -> dict[str, SpeculationPolicy]:
        """The policies run, by name (each ``draftings`` entry's policy)."""
        return {name: d.policy for name, d in self.draftings.items()}


def serving_setup(
    bound: Bound,
    *,
    base_dir: Path | None = None,
    source: str = "scenario",
    policies: Mapping[str, SpeculationPolicy] | None = None,
    terms: PassTerms | None = None,
) -> ServingSetup:
    """The serving plan of the bound scenario (``base_dir``: where relative trace paths
    start; ``source``: the name errors give the scenario). ``policies``: run these (by
    name) beside the baseline instead of the scenario's own policy (a study comparing
    drafts: the plan then covers every depth, width and lookahead they use). The batched
    cost, acceptance, rank shares and KV capacity are the bound scenario's serving model
    (sim/binding/serving_model.py ``serving_model``), built here once; ``terms``: the token-count
    terms its passes share with the other setups of a study (sim/hardware/pass_terms.py
    ``PassTerms``; None: a table of this setup's own)."""
    scenario = bound.scenario
    serving = scenario.serving or ServingSpec()
    notes: list[str] = []
    arrivals, load = arrivals_of(bound, serving, base_dir, notes)
    cut: str | None
    if scenario.workload.lengths == "ordered":
        names = bound.acceptance.class_names if bound.num_steps else ()
        workload, cut = ordered_workload(scenario, arrivals, names, base_dir, source, notes)
    else:
        workload, cut = plain_workload(scenario, arrivals, base_dir, source, notes)
    mean_tokens = mean_tokens_of(workload)
    run = {BASELINE: FixedK(0), **(policies or {})}
    if policies is None and scenario.num_steps > 0:
        run[SPECULATIVE] = scenario_policy(bound, serving, source)
    speculates = any(p.max_k > 0 for p in run.values())
    try:
        capacity = kv_capacity(scenario, speculates)
    except SpecsimError as exc:
        raise SpecsimError(exc.message, source=source, field=exc.field) from None
    caps = _admission_caps(serving, capacity)
    lookups = {n: (p, k_lookup(p, admission_cap(p, *caps))) for n, p in run.items()}
    drafts = [d for _, by_batch in lookups.values() for d in dict.fromkeys(by_batch[1:])]
    notes.extend(draft_notes(drafts, serving, speculates))
    widest, beams = widest_drafts(drafts)
    served = serving_model(
        bound,
        speculative=speculates,
        max_beams=beams,
        max_k=max(p.max_k for p in run.values()),
        widest=widest,
        source=source,
        capacity=capacity,
        terms=terms,
    )
    notes.extend(served.notes)
    if mean_tokens[0] > 0 and serving.prefill == "model":
        _check_prefill(served.cost, speculates, source)
    if scenario.timing.jitter_cv:
        notes.append(
            f"timing.jitter_cv = {scenario.timing.jitter_cv:g} is not applied: serving "
            "iteration times are deterministic given the batch (jitter is a batch-1 Monte "
            "Carlo setting)"
        )
    scheduler = SchedulerConfig(
        max_running_requests=caps[0],
        batching=serving.batching,
        token_budget=serving.token_budget,
        kv_capacity_tokens=served.kv.tokens,
        prefill=serving.prefill,
        plain_kv_capacity_tokens=served.kv.plain,
        max_running_requests_speculative=caps[1],
        pooled_state=served.kv.state,
        kv_block_tokens=served.kv.blocks(True),
        plain_kv_block_tokens=served.kv.blocks(False),
    )
    plan = ServingPlan(
        workload,
        scheduler,
        served.cost,
        served.acceptance,
        rank_shares=served.rank_shares,
        draft_extend=serving.draft_extend,
    )
    return ServingSetup(
        plan=plan,
        draftings=check_policies(plan, lookups, serving, source),
        slo=SloSpec(tuple(scenario.target_tok_s), serving.ttft_slo_ms, serving.tpot_slo_ms),
        replications=scenario.simulation.replications,
        seed=scenario.simulation.seed,
        load=cut or load,
        assumptions=tuple(notes),
        mean_tokens=mean_tokens,
        kv_capacity=served.kv,
        max_beams=beams,
    )


def _check_prefill(cost: IterationCost, drafter: bool, source: str) -> None:
    """Price a one-token prefill once, so that a prefill the scenario cannot price (an
    ungraphed pass without ``model.kernels_per_layer``) is refused here, naming the
    scenario's ``source``, before any run rather than from inside one."""
    try:
        cost.prefill_ms(PrefillLoad.of_chunks([1], [0]), drafter)
    except SpecsimError as exc:
        raise SpecsimError(exc.message, source=source, field=exc.field) from None


def _admission_caps(serving: ServingSpec, capacity: KvCapacity) -> tuple[int, int | None]:
    """The admission caps, plain and speculating (None: the plain one's): the scenario's,
    each bounded by the running requests whose states SGLang's state pool holds on that
    server (a hybrid target under SGLang's rule: sim/binding/kv_capacity.py
    ``KvCapacity.running``)."""
    caps = (serving.max_running_requests, serving.max_running_requests_speculative)
    plain, spec = capacity.running(False), capacity.running(True)
    if plain is None or spec is None:
        return caps
    return min(caps[0], plain), min(caps[1] or caps[0], spec)
