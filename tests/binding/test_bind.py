"""Hand-worked checks of bind: values computed from the formulas and their sources."""

from __future__ import annotations

import numpy as np
import pytest

from sim.binding.acceptance_model import acceptance_model
from sim.binding.closed_form import pass_times
from sim.binding.decompose import scenario_hardware
from sim.binding.tree_cost import draft_pass_table_ms, tree_cost
from sim.scenario.load import load_scenario
from tests.conftest import SEED

SETS = ["acceptance.rank_rates=[0.7, 0.15, 0.06, 0.03]"]


def test_rank_rates_anchor_the_top1_rate_on_their_first_entry():
    """anchored_rates (acceptance_shape.py): q_1 (0.7) of rank_rates is the top-1 rate a_1
    at every depth, not the last rank's."""
    sc = load_scenario(SEED, SETS)
    np.testing.assert_allclose(acceptance_model(sc.acceptance, 3).mean_rates(), [0.7, 0.7, 0.7])


def test_tree_drafter_step_is_the_pass_over_topk_beams():
    """tree_cost (tree_cost.py): (num_steps - 1) drafter passes over topk = 2 beams:
    3 x table[2 - 1] of the hardware model."""
    sc = load_scenario(SEED, SETS)
    passes = pass_times(sc)
    table = draft_pass_table_ms(scenario_hardware(sc), 2)
    assert table is not None and table[1] > table[0]
    cost = tree_cost(sc, 4, 2, 6, passes, scenario_hardware(sc))
    assert cost.draft_ms == pytest.approx(3 * (table[1] + passes.draft_step_overhead_ms), rel=1e-12)


def test_a_specs_model_is_built_afresh_equal_and_cannot_be_changed():
    """acceptance_model keeps no process-wide memo: each call builds the model again, equal
    to the last, and its arrays are read-only (as ``bind``'s)."""
    spec = load_scenario(SEED).acceptance
    model = acceptance_model(spec, 3)
    again = acceptance_model(spec, 3)
    assert again is not model
    assert np.array_equal(again.mean_rates(), model.mean_rates())
    assert acceptance_model(spec, 4).num_steps == 4
    with pytest.raises(ValueError, match="read-only"):
        model.classes[0].mean_rates[0] = 0.5


def test_bound_holds_the_model_built_once_and_read_only():
    """``bind`` builds the acceptance model once per scenario and read-only, also for a mix
    (whose spec is not hashable); the scenario itself keeps no memo and no private state."""
    from sim.binding.bound import bind
    from sim.scenario.overrides import with_overrides
    from tests.helpers import MIXED, make

    sc = make(MIXED)
    bound = bind(sc)
    assert not bound.acceptance.classes[0].mean_rates.flags.writeable
    assert not bound.rates.flags.writeable
    assert not sc.__pydantic_private__
    other = bind(with_overrides(sc, {"speculation.num_steps": 2}))
    assert other.acceptance.num_steps == 2 and bound.acceptance.num_steps == sc.num_steps


@pytest.mark.parametrize(
    "name",
    [
        "kimi-k25-8xpcie-eagle3.toml",
        "kimi-k25-8xpcie-eagle3-mix.toml",
        "kimi-k25-8xh200-nvlink-eagle3.toml",
        "llama31-8b-1xh100-eagle3.toml",
    ],
)
def test_bound_holds_what_the_binding_functions_derive(name):
    """A ``Bound``'s pass times, rates and cycles are the binding's own answers, computed
    once: the expected cycle at E[L], the cycle-time model's at the passes' own L."""
    from sim.binding.bound import bind
    from sim.binding.closed_form import bound_cycle_cost, cycle_cost, scenario_rates

    sc = load_scenario(SEED.parent / name)
    bound = bind(sc)
    assert bound.passes == pass_times(sc)
    np.testing.assert_array_equal(bound.rates, scenario_rates(sc))
    assert bound.cost == cycle_cost(sc) and bound.cycle == bound_cycle_cost(sc)
    assert bound.cycle_time_model().cost == bound.cycle
