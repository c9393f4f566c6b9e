"""Hand-worked checks of bind: values computed from the formulas and their sources."""

from __future__ import annotations

import numpy as np
import pytest

from sim.scenario.bind import acceptance_model, draft_pass_table_ms, pass_times, tree_cost
from sim.scenario.load import load_scenario
from tests.conftest import SEED

SETS = ["acceptance.rank_rates=[0.7, 0.15, 0.06, 0.03]"]


def test_rank_rates_anchor_the_top1_rate_on_their_first_entry():
    """bind.py anchored_rates: q_1 (0.7) of rank_rates is the top-1 rate a_1 at every depth, not the
    last rank's."""
    sc = load_scenario(SEED, SETS)
    np.testing.assert_allclose(acceptance_model(sc.acceptance, 3).mean_rates(), [0.7, 0.7, 0.7])


def test_tree_drafter_step_is_the_pass_over_topk_beams():
    """bind.py tree_cost: (num_steps - 1) drafter passes over topk = 2 beams: 3 x table[2 - 1] of
    the hardware model."""
    sc = load_scenario(SEED, SETS)
    passes = pass_times(sc)
    table = draft_pass_table_ms(sc, 2)
    assert table is not None and table[1] > table[0]
    cost = tree_cost(sc, 4, 2, 6, passes)
    assert cost.draft_ms == pytest.approx(3 * (table[1] + passes.draft_step_overhead_ms), rel=1e-12)


def test_a_spec_is_bound_once_and_its_model_cannot_be_changed():
    """acceptance_model is memoised on the frozen spec: the same model comes back, and its
    arrays are read-only (a caller changing them in place would change every user's)."""
    spec = load_scenario(SEED).acceptance
    model = acceptance_model(spec, 3)
    assert acceptance_model(spec, 3) is model
    assert acceptance_model(spec, 4) is not model
    with pytest.raises(ValueError, match="read-only"):
        model.classes[0].mean_rates[0] = 0.5
    assert np.array_equal(model.mean_rates(), acceptance_model(spec, 3).mean_rates())


def test_scenario_memo_and_acceptance_built_once():
    """``Scenario.derived`` is the private ``_derived`` memo; the acceptance model is built
    once per scenario object and read-only, also for a mix (whose spec is not hashable)."""
    from sim.scenario.bind import scenario_acceptance
    from sim.scenario.load import with_overrides
    from tests.helpers import MIXED, make

    sc = make(MIXED)
    assert sc.derived is sc._derived
    model = scenario_acceptance(sc)
    assert scenario_acceptance(sc) is model and sc.derived["acceptance"] is model
    assert not model.classes[0].mean_rates.flags.writeable
    other = with_overrides(sc, {"speculation.num_steps": 2})
    assert other.derived is not sc.derived and scenario_acceptance(other).num_steps == 2
