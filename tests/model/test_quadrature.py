"""The quadrature over a request's uniform U (sim/model/acceptance.py): fewer nodes on the
panels towards u = 0 (``LEFT_PANEL_NODES``) stay within 1e-12 relative of 24 nodes on every
panel for E[c_i] at every depth up to 32 (nondecreasing in U: what the effective rates, and
so every interval, take), and within 1e-13 absolute for the pooled-cycle integrands
E[pmf(a) / AL(a)] and E[1 / AL(a)] (not monotone), on the shipped mix, the seed with a
spread, and a family of Beta spreads and profiles."""

from __future__ import annotations

import numpy as np
import pytest

from sim.binding.acceptance_model import acceptance_model
from sim.model.acceptance import (
    DRAWN_END,
    DRAWN_RULE,
    EXACT_RULE,
    LEFT_PANEL_NODES,
    PANEL_NODES,
    RateClass,
    Spread,
    beta_raw_moments,
    drawn_quadrature,
    exact_quadrature,
    gauss_legendre_panels,
    quadrature_edges,
    quadrature_weights,
)
from sim.model.rates import cumulative_rates, pmf_from_cumulative
from sim.scenario.load import load_scenario
from sim.scenario.overrides import with_overrides
from tests.conftest import ROOT, SEED

#: Relative error of E[c_i] allowed against 24 nodes on every panel.
BOUND = 1e-12
#: Absolute error of the pooled-cycle expectations allowed against 24 nodes.
CYCLE_BOUND = 1e-13


def _classes() -> list[RateClass]:
    """Classes at 32 positions: the shipped mix, the seed with a concentration or a std,
    and geometric profiles under concentrations 0.3-1000 and stds 0.01-0.2."""
    seed = load_scenario(SEED)
    mix = load_scenario(ROOT / "scenarios" / "kimi-k25-8xpcie-eagle3-mix.toml")
    scenarios = [
        mix,
        with_overrides(mix, {"acceptance.concentration": 2.0}),
        with_overrides(seed, {"acceptance.concentration": 5.0}),
        with_overrides(seed, {"acceptance.concentration": 0.5}),
        with_overrides(seed, {"acceptance.std": 0.2}),
    ]
    out = [c for sc in scenarios for c in acceptance_model(sc.acceptance, 32).classes]
    for kappa in (0.3, 3.0, 30.0, 1000.0):
        for first in (0.05, 0.5, 0.95, 0.995):
            for decay in (1.0, 0.9):
                means = first * decay ** np.arange(32)
                out.append(RateClass("x", 1.0, means, Spread(concentration=kappa)))
    for std in (0.01, 0.05, 0.2):
        out.append(RateClass("x", 1.0, 0.99 * 0.97 ** np.arange(32), Spread(std=std)))
    return [c for c in out if c.varies]


def _integrands(rates: np.ndarray) -> np.ndarray:
    """c_0..c_k, pmf(a) / AL(a) and 1 / AL(a) of rates (n, k): shape (n, 2k + 3)."""
    c = np.concatenate([np.ones((rates.shape[0], 1)), cumulative_rates(rates)], axis=1)
    pmf = pmf_from_cumulative(c[:, 1:])
    al = c.sum(axis=1)
    return np.concatenate([c, pmf / al[:, None], 1.0 / al[:, None]], axis=1)


def test_fewer_nodes_towards_zero_keep_the_answer() -> None:
    edges = quadrature_edges()
    full_nodes, full_weights = gauss_legendre_panels(edges, [PANEL_NODES] * (edges.size - 1))
    classes = _classes()
    assert len(classes) > 30
    for c in classes:
        full = full_weights @ _integrands(c.rates_from_uniform(full_nodes))
        graded = quadrature_weights() @ _integrands(c.quadrature_rates())
        # the same weighted sum, through tensordot instead of @: BLAS may add the 710
        # positive terms in another order, within n * eps = 7.9e-14 of each other
        assert c.expect(_integrands) == pytest.approx(graded, rel=1e-13, abs=0)
        k = c.num_steps
        seen = full[: k + 1] > 1e-250  # the deepest c_i of a wide spread underflow
        rel = graded[: k + 1][seen] / full[: k + 1][seen] - 1
        assert np.abs(rel).max() < BOUND, c
        assert np.abs(graded[k + 1 :] - full[k + 1 :]).max() < CYCLE_BOUND, c


@pytest.mark.parametrize("a, b", [(0.05, 0.05), (0.3, 2.0), (3.5, 1.5), (57.5, 22.7), (2e3, 9.0)])
def test_one_beta_rate_against_its_exact_moments(a: float, b: float) -> None:
    """Equal means and concentrations: E[a^j] by the quadrature is the closed form."""
    kappa, mean = a + b, a / (a + b)
    cls = RateClass("x", 1.0, np.full(8, mean) + np.arange(8) * 1e-15, Spread(concentration=kappa))
    q = cls.quadrature_rates()[:, 0]
    moments = quadrature_weights() @ q[:, None] ** np.arange(9)[None, :]
    assert moments == pytest.approx(beta_raw_moments(mean, kappa, 8), rel=1e-12)


#: What the drawn scenarios' rule keeps: the accept length at every k (sum of E[c_0..c_k])
#: within this relative error of the exact rule's (sim/model/acceptance.py
#: ``DRAWN_PANEL_NODES``; 4.1e-5 at the widest spread below, concentration 0.3).
DRAWN_BOUND = 1e-4


def test_the_drawn_scenarios_rule_keeps_every_accept_length() -> None:
    for c in _classes():
        exact = np.cumsum(c.expected_cumulative())
        drawn = np.cumsum(c.expected_cumulative(drawn=True))
        assert np.abs(drawn / exact - 1).max() < DRAWN_BOUND, c


def test_the_drawn_rule_is_the_exact_rule_thinned() -> None:
    """Fewer nodes, the same panels between 1e-6 and 1 - 1e-6 and one panel beyond each:
    on a smooth integrand both are exact (u^3)."""
    nodes, weights = drawn_quadrature()
    assert nodes.size < quadrature_weights().size
    assert weights @ nodes**3 == pytest.approx(0.25, rel=1e-14)


def test_the_merged_end_panels_move_an_accept_length_by_less_than_their_width() -> None:
    """The drawn rule against the same rule graded all the way to 0 and 1 (273 nodes): the
    c_i are bounded by 1, so the two panels of width ``DRAWN_END`` move E[c_0 + ... + c_k]
    by less than 2 x ``DRAWN_END``, and so relatively at most that (accept length >= 1)."""
    edges = quadrature_edges()
    exact = [*LEFT_PANEL_NODES, *[PANEL_NODES] * (edges.size - 1 - len(LEFT_PANEL_NODES))]
    graded, graded_w = gauss_legendre_panels(edges, [min(n, 8) for n in exact])
    nodes, weights = drawn_quadrature()
    assert nodes.size < graded.size
    for c in _classes():
        rates = [c.rates_from_uniform(u) for u in (graded, nodes)]
        full, merged = (
            np.cumsum(w @ np.concatenate([np.ones((r.shape[0], 1)), cumulative_rates(r)], axis=1))
            for w, r in zip((graded_w, weights), rates, strict=True)
        )
        assert np.abs(merged - full).max() < 2 * DRAWN_END, c


@pytest.mark.parametrize(
    "rule, build", [(EXACT_RULE, exact_quadrature), (DRAWN_RULE, drawn_quadrature)]
)
def test_the_rules_every_class_uses_are_read_only_constants(rule, build) -> None:
    """Built once at import, the same bits as a rule built now, and not writable."""
    for held, fresh in zip(rule, build(), strict=True):
        assert np.array_equal(held, fresh)
        with pytest.raises(ValueError, match="read-only"):
            held[0] = 0.5
    assert quadrature_weights() is EXACT_RULE[1]
