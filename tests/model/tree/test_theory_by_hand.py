"""Hand-worked checks of tree theory: values computed from the formulas and their sources."""

from __future__ import annotations

import numpy as np

from sim.model.tree.rates import extend_shares


def test_geometric_extension_by_hand():
    """tree/rates.py: h = (0.2, 0.1) extended to width 5 continues with ratio 1/2: 0.05, 0.025."""
    np.testing.assert_allclose(extend_shares([0.2, 0.1], 5), [0.2, 0.1, 0.05, 0.025], rtol=1e-12)
