"""What the closed forms take of a scenario and what they give: its conditional rates,
``[timing]``, ``[model]``, ``[hardware]`` -> ``PassTimes`` (measured, re-composed or
derived by the hardware model, sim/hardware/pass_model.py) -> ``CycleCost``, and the
renewal-reward tok/s.
"""

from __future__ import annotations

import numpy as np

from sim.binding.acceptance_model import acceptance_model, resolve_acceptance
from sim.binding.decompose import scenario_hardware, scenario_pass_times
from sim.binding.draft_binding import draft_binding
from sim.hardware.passes import PassMemo
from sim.model.cycle import CycleCost, PassTimes, throughput_tok_s
from sim.model.cycle import cycle_cost as chain_cycle_cost
from sim.model.rates import mean_accept_length
from sim.scenario.schema import Scenario
from sim.scenario.sections.acceptance import AcceptanceSpec


def conditional_rates(
    spec: AcceptanceSpec | None, num_steps: int, drawn: bool = False
) -> np.ndarray:
    """Conditional rates a_1..a_k, shape (num_steps,), that the closed forms take.

    The listed rates (the last repeats); for a mix or per-request heterogeneity the
    effective rates E[c_i] / E[c_(i-1)] (c_i = a_1 ... a_i, expectations over requests), so
    the closed forms fed with them give the exact per-request expectations of the accept
    length and its pmf (sim/model/acceptance.py). No acceptance: zeros. ``drawn``: an
    uncertainty study's drawn scenario, whose expectations take the coarser rule
    (sim/model/acceptance.py ``drawn_quadrature``); the nominal answer keeps the exact one.
    """
    if spec is None:
        return np.zeros(num_steps)
    return acceptance_model(spec, num_steps).closed_form_rates(drawn)


def scenario_rates(scenario: Scenario, num_steps: int | None = None) -> np.ndarray:
    """``conditional_rates`` of a scenario at its own or another ``num_steps`` (k,); a
    tree at its own configuration gives its chain-equivalent rates (depth,)."""
    if num_steps is None and scenario.speculation.is_tree:  # as bind binds it
        resolved = resolve_acceptance(scenario.acceptance, scenario.num_steps)
        return draft_binding(scenario).acceptance(resolved).closed_form_rates()
    k = scenario.num_steps if num_steps is None else num_steps
    return conditional_rates(scenario.acceptance, k)


def pass_times(scenario: Scenario, memo: PassMemo | None = None) -> PassTimes:
    """The pass times a scenario implies on its hardware.

    As measured when the hardware is the one the timings were measured on
    (``timing.measured_on``); otherwise re-composed (calibrated compute + the new
    communication and launch) or derived by the hardware model (sim/hardware/pass_model.py).
    Computed once per bound model (``Bound.pass_times``, sim/binding/bound.py). ``memo``:
    the hardware answers of what asks for many scenarios' passes (sim/hardware/passes.py
    ``PassMemo``; None: the hardware model's own).
    """
    return scenario_pass_times(scenario, memo)


def bound_cycle_cost(scenario: Scenario, num_steps: int | None = None) -> CycleCost:
    """The cycle of a scenario at its own ``num_steps`` or at another (a chain there; a
    tree at its own configuration is the tree cycle), the draft extend at the pass times'
    own accept length; ``CycleCost.at_accept_length`` moves it to an E[L]. At the
    scenario's own k it is computed once per bound model (``Bound.cycle``)."""
    if num_steps is not None:
        return chain_cycle_cost(pass_times(scenario), num_steps)
    hw = scenario_hardware(scenario)
    return draft_binding(scenario).cycle(hw.passes, hw)


def cycle_cost(scenario: Scenario, num_steps: int | None = None) -> CycleCost:
    """The expected cycle of a scenario at its own ``num_steps`` or at another
    (``bound_cycle_cost``), the draft extend taken at the accept length E[L] its
    acceptance gives (exact: the extend is linear in L; ``CycleCost.at_accept_length``).
    An extend that does not grow with L needs no E[L] (no acceptance model is built)."""
    cost = bound_cycle_cost(scenario, num_steps)
    if cost.num_steps == 0 or cost.extend_per_token_ms == 0.0:
        return cost
    return cost.at_accept_length(mean_accept_length(scenario_rates(scenario, num_steps)))


def baseline_tok_s(scenario: Scenario) -> float:
    """Plain decoding throughput, tokens per second: 1000 / decode_ms."""
    return 1000.0 / pass_times(scenario).decode_ms


def closed_form_tok_s(scenario: Scenario, num_steps: int | None = None) -> float:
    """Long-run tok/s of a scenario by renewal-reward: 1000 E[L] / E[T_cycle] (a tree at its
    own configuration: its E[L] and its cycle)."""
    al = mean_accept_length(scenario_rates(scenario, num_steps))
    return throughput_tok_s(al, cycle_cost(scenario, num_steps))
