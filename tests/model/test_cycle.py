"""The SGLang chain cycle: (k - 1) drafts + verify over k + 1 tokens + extend + overhead."""

from __future__ import annotations

import pytest

from sim.binding.closed_form import baseline_tok_s
from sim.binding.closed_form import cycle_cost as scenario_cycle_cost
from sim.model.cycle import PassTimes, cycle_cost
from sim.scenario.load import load_scenario

PASSES = PassTimes(10.0, 30.0, 3, 0.7, 1.2, 1.5, 0.6)


@pytest.mark.parametrize(
    ("k", "draft", "verify"),
    [(1, 0.0, 29.3), (2, 1.2, 30.0), (3, 2.4, 30.7), (8, 8.4, 34.2)],
)
def test_cycle_phases(k, draft, verify):
    cost = cycle_cost(PASSES, k)
    assert cost.draft_ms == pytest.approx(draft)
    assert cost.verify_ms == pytest.approx(verify)
    assert cost.extend_ms == 1.5 and cost.overhead_ms == 0.6
    assert cost.total_ms == pytest.approx(draft + verify + 2.1)
    assert cost.max_tokens == k + 1


def test_verify_over_needs_a_token():
    with pytest.raises(ValueError):
        PASSES.verify_over_ms(0)


def test_verify_tokens_defaults_to_the_scenarios_k_plus_1(write_scenario):
    sc = load_scenario(write_scenario())  # k = 3, verify_tokens unset, per extra 0
    assert scenario_cycle_cost(sc).verify_ms == 20.0
    assert scenario_cycle_cost(sc).total_ms == pytest.approx(2 * 1.0 + 20.0 + 2.0 + 0.5)
    assert baseline_tok_s(sc) == pytest.approx(100.0)


def test_a_verify_table_extends_past_its_end_at_its_last_step() -> None:
    """Measured verify times for 1..4 tokens: 15, 16, 18.5, 19 ms; past the table each
    token adds the last step, 19 - 18.5 = 0.5 ms, so 6 tokens take 19 + 2 x 0.5 = 20 ms."""
    p = PassTimes(10.0, 20.0, 4, 0.4, 1.1, 2.3, 0.7, verify_table_ms=(15.0, 16.0, 18.5, 19.0))
    assert [p.verify_over_ms(n) for n in (1, 4, 5, 6)] == pytest.approx([15.0, 19.0, 19.5, 20.0])
