"""Hand-worked checks of tree acceptance: values computed from the formulas and their sources."""

from __future__ import annotations

import numpy as np
import pytest

from sim.model.tree import Tree
from sim.model.tree.acceptance import TreeAcceptance


def test_cycle_mean_accept_length_by_hand_for_one_class():
    """tree/theory.py: a 2-chain at rates 0.5, 0.5 has E[L] = 1 + 0.5 + 0.25 = 1.75 (one class:
    pooled = per request)."""
    model = TreeAcceptance.single(Tree.chain(2), np.array([0.5, 0.5]), ())
    np.testing.assert_allclose(model.cycle_pmf(), [0.5, 0.25, 0.25])
    assert model.cycle_mean_accept_length() == pytest.approx(1.75, rel=1e-12)
    assert model.mean_accept_length() == pytest.approx(1.75, rel=1e-12)
