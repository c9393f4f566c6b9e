"""The closed-form analysis of one scenario: what ``specsim run`` reports in expectation."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from sim.binding.acceptance_shape import AcceptanceShape
from sim.binding.bound import Bound
from sim.binding.provenance import (
    Assumption,
    assumptions,
    effective_hardware,
    override_entries,
)
from sim.model.closed_forms import TargetAnswer, answer_target
from sim.model.cycle import (
    CycleCost,
    PassTimes,
    break_even_accept_length,
    ceiling_tok_s,
    throughput_tok_s,
)
from sim.model.rates import accept_length_pmf
from sim.scenario.schema import Scenario
from sim.uncertainty.answers import UncertaintyResult, answer_uncertainty

if TYPE_CHECKING:
    from sim.binding.tree_analysis import TreeAnalysis


@dataclass(frozen=True, slots=True)
class Analysis:
    """Closed-form answers for one scenario at its own ``num_steps`` (k).

    ``rates`` has shape (k,) and ``pmf`` shape (k + 1,) with ``pmf[j] = P(L = j + 1)``.
    ``break_even_accept_length`` is None for k = 0 (nothing to break even with).
    """

    scenario: Scenario
    passes: PassTimes
    cost: CycleCost
    rates: np.ndarray
    pmf: np.ndarray
    accept_length: float
    baseline_tok_s: float
    throughput_tok_s: float
    ceiling_tok_s: float
    break_even_accept_length: float | None
    targets: tuple[TargetAnswer, ...]
    tree: TreeAnalysis | None = None  # a tree scenario (topk > 1): SGLang's and the best tree
    #: The acceptance shape by position (None without acceptance), every input's
    #: provenance, and the 90% intervals from inputs and model (``uncertainty=True``).
    shape: AcceptanceShape | None = None
    assumptions: tuple[Assumption, ...] = ()
    uncertainty: UncertaintyResult | None = None
    #: The hardware the answer is for and the one its timings were measured on, and the
    #: overridden fields (sim/binding/provenance.py ``effective_hardware``,
    #: ``override_entries``): every report's header.
    hardware: dict[str, Any] = field(default_factory=dict)
    overrides: list[dict[str, Any]] = field(default_factory=list)

    @property
    def num_steps(self) -> int:
        return self.cost.num_steps

    @property
    def speedup(self) -> float:
        return self.throughput_tok_s / self.baseline_tok_s


def analyze(bound: Bound, *, uncertainty: bool = False) -> Analysis:
    """Closed-form analysis of a bound scenario: accept length, long-run tok/s, ceiling,
    break-even, targets, the inputs' provenance, and (``uncertainty``) the answers' 90%
    intervals."""
    scenario = bound.scenario
    k = scenario.num_steps
    passes = bound.passes
    cost = bound.cost  # the expected cycle (extend at E[L]); a tree's own
    baseline = bound.baseline_tok_s
    rates = bound.rates  # a tree: its chain-equivalent rates (depth,)
    al = bound.accept_length
    ceiling = ceiling_tok_s(cost, rates.size + 1) if k > 0 else ceiling_tok_s(cost)
    return Analysis(
        scenario=scenario,
        passes=passes,
        cost=cost,
        rates=rates,
        pmf=accept_length_pmf(rates),
        accept_length=al,
        baseline_tok_s=baseline,
        throughput_tok_s=throughput_tok_s(al, cost),
        ceiling_tok_s=ceiling,
        break_even_accept_length=break_even_accept_length(baseline, cost) if k > 0 else None,
        targets=tuple(
            answer_target(t, passes, k, factors=bound.factors) for t in scenario.target_tok_s
        ),
        tree=bound.drafting.tree_analysis(bound.acceptance, cost),
        shape=bound.shape,
        assumptions=assumptions(bound),
        hardware=effective_hardware(scenario),
        overrides=override_entries(scenario),
        uncertainty=answer_uncertainty(bound) if uncertainty else None,
    )
