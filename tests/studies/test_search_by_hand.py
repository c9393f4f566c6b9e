"""Hand-worked checks of search: values computed from the formulas and their sources."""

from __future__ import annotations

import numpy as np
import pytest

from sim.model.acceptance import AcceptanceModel, RateClass
from sim.simulation.summary import Stats
from sim.studies.bisection import Criterion
from sim.studies.exact_search import ExactLever, cycles_reaching, exact_root


def test_cycles_reaching_counts_an_exact_tie():
    """exact_search.py: the most m with 1000 N / (m T) >= target; at target = 1000 / 1.9 (N = 1, T =
    1.9) m = 1."""
    assert cycles_reaching(1, 1.9, 1000.0 / 1.9) == 1


def test_interval_ends_invert_an_asymmetric_band():
    """exact_search.py docstring: ends at g = thr - (hi - g*) = 115 (optimistic) and g = thr + (g* -
    lo) = 121 (pessimistic), to the secant shortcut's accuracy."""
    lever = ExactLever(
        lambda x: AcceptanceModel(3, (RateClass("all", 1.0, np.full(3, x)),)),
        cycle_ms=20.0,
        output_tokens=64,
        x_max=1.0,
    )

    def monte_carlo(x: float) -> Stats:
        g = lever.mean_tok_s(x)
        return Stats(g, (g - 1.0, g + 5.0), 1.0, ())

    crit = Criterion(120.0)
    root, _ = exact_root(lever, crit, monte_carlo, hint=0.5)
    assert lever.mean_tok_s(root.value) == pytest.approx(120.0, abs=1e-4)
    optimistic, pessimistic = root.ci95
    assert lever.mean_tok_s(optimistic) == pytest.approx(115.0, abs=0.05)
    assert lever.mean_tok_s(pessimistic) == pytest.approx(121.0, abs=0.05)
