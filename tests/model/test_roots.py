"""The plain-Python brentq returns what scipy.optimize.brentq returns, bit for bit."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq as scipy_brentq

from sim.errors import SpecsimError
from sim.model.closed_forms import leviathan_accept_length
from sim.model.roots import brentq


@pytest.mark.parametrize("k", [1, 2, 3, 5, 8, 16, 32])
def test_identical_to_scipy_on_leviathan_inversions(k):
    for need in np.linspace(1.0001, k + 0.9999, 37):
        f = lambda a, need=need: leviathan_accept_length(a, k) - need  # noqa: E731
        assert brentq(f, 0.0, 1.0, xtol=1e-12) == scipy_brentq(f, 0.0, 1.0, xtol=1e-12)


def test_identical_to_scipy_on_assorted_functions():
    rng = np.random.default_rng(3)
    fns = [
        lambda x: math.cos(x) - x,
        lambda x: x**3 - 2 * x - 5,
        lambda x: math.exp(x) - 10.0,
        lambda x: math.atan(x - 0.3),
        lambda x: (x - 0.7) ** 5,
    ]
    for f in fns:
        for _ in range(20):
            a, b = -1.0 - 3 * rng.random(), 3.0 + 3 * rng.random()
            if f(a) * f(b) > 0:
                continue
            for xtol in (1e-12, 1e-6, 2e-12):
                assert _outcome(brentq, f, a, b, xtol) == _outcome(scipy_brentq, f, a, b, xtol)


def _outcome(solver, f, a, b, xtol):
    """The root, or "no convergence" (both give up on the flat (x - 0.7)^5 at 1e-12)."""
    try:
        return solver(f, a, b, xtol=xtol)
    except RuntimeError:
        return "no convergence"


def test_endpoint_roots_and_sign_error():
    assert brentq(lambda x: x, 0.0, 1.0) == 0.0
    assert brentq(lambda x: x - 1.0, 0.0, 1.0) == 1.0
    with pytest.raises(SpecsimError):
        brentq(lambda x: x + 1.0, 0.0, 1.0)
