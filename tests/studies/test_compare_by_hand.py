"""Hand-worked checks of compare: values computed from the formulas and their sources."""

from __future__ import annotations

import pytest

from sim.binding.bound import bind
from sim.scenario.load import load_scenario
from sim.scenario.overrides import with_overrides
from sim.studies.compare import compare_scenarios
from tests.conftest import SEED

SMALL = {"simulation.replications": 3, "workload.requests": 10, "workload.output_tokens": 128}


def test_speedup_is_the_monte_carlo_mean_over_plain_decoding():
    """compare.py: speedup = Monte Carlo tok_s_mean / baseline_tok_s (not the analytic tok/s)."""
    (col,) = compare_scenarios(
        [("seed", bind(with_overrides(load_scenario(SEED), SMALL)))]
    ).to_dict()["scenarios"]
    assert col["speedup"] == pytest.approx(col["tok_s_mean"] / col["baseline_tok_s"], rel=1e-12)
    assert col["tok_s_mean"] != col["analytic_tok_s"]
