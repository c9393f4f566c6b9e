"""A study's serving plans: (load, num_steps) -> ``ServingPlan``, and what a study reads
from the scenario they come from.

A ``PlanBuilder`` turns (load, num_steps) into a ``ServingPlan``. ``ScenarioPlans`` does it
the way ``sweep`` does for a serving point: the scenario with ``serving.concurrency`` (or
``serving.rate_per_s``) and ``speculation.num_steps`` overridden, then
``serving_setup`` (sim/simulation/serving/setup.py), so a study's point and the sweep's
point at the same fields and seed are the same simulation. From the scenario's plans a
study also reads the model-error term at a load's decode batch (``load_term``,
``gain_band``) and the settings its document records (``study_settings``).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from sim.binding.bound import bind
from sim.errors import SpecsimError
from sim.hardware.pass_terms import PassTerms
from sim.model.policy import FixedK, SpeculationPolicy
from sim.scenario.overrides import pin_verify_tokens, with_overrides
from sim.scenario.schema import Scenario
from sim.scenario.validate import scenario_from_dict
from sim.simulation.serving.plan import ServingPlan
from sim.simulation.serving.setup import ServingSetup, serving_setup
from sim.studies.serving.paired_metrics import Load, PolicyPoint
from sim.studies.serving.sequential import Band, Points
from sim.uncertainty.model_error import ModelErrorTerm, model_error_term
from sim.uncertainty.perturb import InputDraws, Overrides

__all__ = [
    "BASELINE",
    "STUDY_KEYS",
    "PlanBuilder",
    "ScenarioPlans",
    "gain_band",
    "load_term",
    "plan_steps",
    "study_settings",
]


#: The plain-decoding policy every gain is measured against.
BASELINE = FixedK(0)


#: Keys of the scenario's serving section that the decision studies set themselves: the
#: load and the speculation policy.
STUDY_KEYS: tuple[str, ...] = (
    "concurrency",
    "rate_per_s",
    "trace",
    "trace_format",
    "trace_rate_scale",
    "trace_window_s",
    "k_table",
    "disable_above_batch",
)


class PlanBuilder(Protocol):
    """(load, num_steps) -> the serving plan; ``default_steps``: the plan the baseline
    runs on (any k gives the baseline the same records; the scenario's own k is used)."""

    @property
    def default_steps(self) -> int: ...

    def __call__(self, load: Load, num_steps: int) -> ServingPlan: ...


def plan_steps(policy: SpeculationPolicy, builder: PlanBuilder) -> int:
    """The num_steps of the plan a policy runs on: its largest k (the baseline's: the
    builder's default)."""
    return policy.max_k if policy.max_k > 0 else builder.default_steps


@dataclass(frozen=True, slots=True)
class ScenarioPlans:
    """Plans of a scenario at any load and k (picklable: the scenario as a mapping).

    ``base`` is the scenario's mapping with its verify tokens pinned (the measured verify
    stays the measured one at every k, as in search and sweep) and without its own load,
    k table or disable threshold (the studies set the load and choose the policy).
    ``base_dir``: where the scenario's relative paths (an empirical lengths trace) start.
    ``model_error``: the scenario's model-error term, read once from it (at batch 1; a
    study's answer takes it at its own batch, ``ModelErrorTerm.at``).
    """

    base: dict[str, Any]
    model_error: ModelErrorTerm
    source: str = "scenario"
    base_dir: str | None = None
    #: Overrides of one draw of the uncertain inputs (sim/studies/serving/draws.py),
    #: applied at every load and k; empty: the scenario as given.
    drawn: tuple[tuple[str, Any], ...] = ()
    #: The uncertain inputs a study's intervals draw, their draws (each a ``drawn``) and
    #: what those were conditioned on, made once from the bound scenario as loaded
    #: (sim/uncertainty/perturb.py ``input_draws``); empty: none.
    sampled: InputDraws = field(default_factory=InputDraws)
    #: The token-count terms of every plan's passes (sim/hardware/pass_terms.py
    #: ``PassTerms``): the plans of a study at each load and k meet the same prompt
    #: lengths again. Pickled as its owner's name: a worker's tasks share one table.
    terms: PassTerms = field(default_factory=PassTerms, compare=False, repr=False)

    @staticmethod
    def of(
        scenario: Scenario, *, source: str = "scenario", base_dir: str | Path | None = None
    ) -> ScenarioPlans:
        if scenario.num_steps < 1 or scenario.acceptance is None:
            raise SpecsimError(
                "the scenario does not speculate (speculation.num_steps 0 or no [acceptance]): "
                "nothing to compare with plain decoding",
                source=source,
                field="speculation.num_steps",
            )
        if scenario.speculation.is_tree:
            # the studies vary a chain's k (FixedK(k)): on a tree scenario they ran chains of
            # its top-1 rates without a word, and refused a k the tree cannot have
            sp, field = scenario.speculation, "speculation.topk"
            raise SpecsimError(
                f"{sp.topk}: the scenario drafts a tree ({sp.num_steps}/{sp.topk}/"
                f"{sp.num_draft_tokens}), and crossover, best-k, capacity and controllers "
                "compare chains of k drafts with plain decoding: compare the tree with "
                "`specsim tree-load` or `specsim serve`, or study chains of its top-1 rates "
                "with --set speculation.topk=1",
                source=f"{source} ({via})"
                if (via := scenario.origins.overrides.get(field))
                else source,
                field=field,
            )
        raw = pin_verify_tokens(scenario).model_dump(exclude_none=True)
        raw = copy.deepcopy(raw)
        for key in STUDY_KEYS:
            raw.get("serving", {}).pop(key, None)
        return ScenarioPlans(
            raw,
            model_error_term(scenario, 1.0),
            source,
            None if base_dir is None else str(base_dir),
        )

    @property
    def default_steps(self) -> int:
        return int(self.base["speculation"]["num_steps"])

    @property
    def draws(self) -> tuple[Overrides, ...]:
        """The draws a study's intervals take (``sampled``'s overrides; empty: none)."""
        return self.sampled.overrides

    @property
    def conditioning(self) -> dict[str, Any] | None:
        """What the draws were conditioned on (``sampled``'s; None: nothing)."""
        return self.sampled.conditioning

    def scenario(self, load: Load | None, num_steps: int) -> Scenario:
        """The base scenario at ``load`` (None: its own) and ``num_steps``."""
        base = scenario_from_dict(self.base, source=self.source)
        over: dict[str, Any] = {**dict(self.drawn), "speculation.num_steps": num_steps}
        if load is not None:
            over.update(load.overrides())
        return with_overrides(base, over, source=self.source)

    def setup(self, load: Load | None, num_steps: int) -> ServingSetup:
        base_dir = Path(self.base_dir) if self.base_dir else None
        return serving_setup(
            bind(self.scenario(load, num_steps), self.terms.passes),
            base_dir=base_dir,
            source=self.source,
            terms=self.terms,
        )

    def __call__(self, load: Load, num_steps: int) -> ServingPlan:
        return self.setup(load, num_steps).plan


def load_term(builder: PlanBuilder, points: Mapping[Any, PolicyPoint]) -> ModelErrorTerm | None:
    """The scenario's model-error term (sim/uncertainty/model_error.py) at a load's decode
    batch: the largest mean batch of the ``points`` run there (as the answers' 90%
    intervals take it). None for plans built without a scenario (no term)."""
    if not isinstance(builder, ScenarioPlans):
        return None
    batch = max((float(p.mean_batch.mean()) for p in points.values()), default=1.0)
    return builder.model_error.at(batch)


def gain_band(builder: PlanBuilder) -> Band | None:
    """The standard deviation on ln(gain) of the gains' model-error band at a load, from
    the points run there (sequential.py ``Band``): ``load_term``'s gain sigma. None for
    plans built without a scenario (no term)."""
    if not isinstance(builder, ScenarioPlans):
        return None

    def band(points: Points) -> float:
        term = load_term(builder, points)
        assert term is not None  # scenario plans
        return term.gain_sigma

    return band


def study_settings(builder: ScenarioPlans, load: Load) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The settings a study's document records (seed, replications, requests, lengths,
    scheduler, SLOs) and the setup's assumptions at ``load`` (its load line left out:
    a study names its own loads). Warm-up grows with the concurrency; it is given here at
    ``load``."""
    setup = builder.setup(load, builder.default_steps)
    plan = setup.plan
    w, sched = plan.workload, plan.scheduler
    settings: dict[str, Any] = {
        "seed": setup.seed,
        "replications": setup.replications,
        "requests": w.requests,
        "warmup_requests": w.warmup,
        "input_tokens_mean": w.input_tokens.mean,
        "output_tokens_mean": w.output_tokens.mean,
        "max_running_requests": sched.max_running_requests,
        "max_running_requests_speculative": sched.max_running_requests_speculative,
        "batching": sched.batching,
        "prefill": sched.prefill,
        "kv_capacity_tokens": sched.kv_capacity_tokens,
        "plain_kv_capacity_tokens": sched.plain_kv_capacity_tokens,
        "slo": {"ttft_ms": setup.slo.ttft_ms, "tpot_ms": setup.slo.tpot_ms},
    }
    notes = tuple(a for a in setup.assumptions if not a.startswith(("load:", "warm-up:")))
    return settings, notes
