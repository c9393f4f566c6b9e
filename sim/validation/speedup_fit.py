"""The renewal-reward speedup a serving case calibrates on, AL x T_decode(B) / T_cycle(B)
at the mean context, and one field fitted so that it meets a published speedup."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from scipy import optimize

from sim.binding.bound import bind
from sim.binding.closed_form import scenario_rates
from sim.binding.serving_cost import serving_cost
from sim.model.rates import mean_accept_length
from sim.scenario.overrides import with_overrides
from sim.scenario.schema import Scenario
from sim.validation.llama8b_mt_bench import MT_BENCH_CONTEXT

if TYPE_CHECKING:
    from sim.model.batched_cost import IterationCost

__all__ = ["fit_speedup", "renewal_terms"]


def renewal_terms(scenario: Scenario) -> tuple[float, IterationCost]:
    """The scenario's mean accept length at its chain and its batched iteration cost (the
    model's KV bytes and attention FLOPs, its timing context as the reference): what the
    renewal-reward law AL x T_decode(B) / T_cycle(B) reads."""
    cost = serving_cost(
        bind(scenario),
        kv_bytes_per_token=scenario.model.kv_bytes_per_token or 0.0,
        attention_flops_per_pair=scenario.model.attention_flops_per_pair or 0.0,
        reference_context_tokens=scenario.timing.context_tokens or 0.0,
    )
    return mean_accept_length(scenario_rates(scenario, scenario.num_steps)), cost


def _speedup_at(scenario: Scenario, batch: int) -> float:
    """Renewal-reward speedup of aggregate tok/s at batch B and the mean context:
    AL x T_decode(B) / T_cycle(B) (used to calibrate, not to score)."""
    k = scenario.num_steps
    al, cost = renewal_terms(scenario)
    context = np.array([batch * MT_BENCH_CONTEXT])
    return (
        al
        * float(cost.decode_ms(batch, 0, context)[0])
        / float(cost.decode_ms(batch, k, context)[0])
    )


def fit_speedup(
    scenario: Scenario, field: str, lo: float, hi: float, target: float, batch: int
) -> Scenario:
    """The scenario with ``field`` set so that the speedup at ``batch`` is ``target``."""

    def gap(x: float) -> float:
        return (
            _speedup_at(with_overrides(scenario, {field: x}, source="validation"), batch) - target
        )

    value = optimize.brentq(gap, lo, hi, xtol=1e-6)
    return with_overrides(scenario, {field: value}, source="validation")
