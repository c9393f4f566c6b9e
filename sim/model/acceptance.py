"""Acceptance models: one rate, per-position rates, Beta per request, weighted mixes.

Vocabulary (sim/model/rates.py): conditional per-position rates a_1..a_k; cumulative
rates c_i = a_1 ... a_i (c_0 = 1); tokens per cycle L = accepted drafts + 1, so
P(L >= j + 1) = c_j and the accept length is AL = E[L] = c_0 + ... + c_k.

Heterogeneity. A request belongs to a class (chat, code, ...) with probability equal to the
class weight. A class has mean rates m_1..m_k and, optionally, a concentration kappa_i per
position; then each request draws ONE uniform U and takes a_i = F_i^-1(U), F_i the Beta(m_i
kappa_i, (1 - m_i) kappa_i) cdf. Positions are comonotone: a request that drafts well does so
at every position (an "easy" prompt). With equal means this is one Beta rate per request.

Theory carried by the model (expectations over requests):

* ``request_pmf``/``mean_accept_length``: E[pmf(a)] and E[AL(a)], what one random request
  sees per cycle on average; the mean per-request tok/s tends to 1000 E[AL(a)] / E[T] for
  long requests. For one Beta rate E[a^j] = prod_{r<j} (A + r) / (A + B + r) is exact; the
  per-position case integrates over U by graded Gauss-Legendre quadrature.
* ``cycle_pmf``/``cycle_mean_accept_length``: the pmf of all cycles pooled (what a server
  log reports). Requests with low rates run more cycles for the same tokens (about N / AL(a)),
  so the long-run pooled pmf is E[pmf(a) / AL(a)] / E[1 / AL(a)], and its mean is the harmonic
  1 / E[1 / AL(a)]. Without heterogeneity both views are the closed form of sim.model.closed_forms.

Sampling the coin flips of a cycle is sim/model/samplers.py; this module draws the rates
of each request (``AcceptanceModel.sample_requests``).

Common random numbers across means: for a fixed ``concentration``, the Beta quantile at a
fixed U rises with the mean, so raising rates never lowers a request's rates. With a fixed
``std`` instead this fails near the largest mean the std allows (the Beta turns U-shaped as
its concentration m (1 - m) / std^2 - 1 falls towards 0), and means with
std^2 >= m (1 - m) are invalid: give ``concentration`` for searches over the rate.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from scipy import special

from sim.model.beta_quantile import Table, beta_quantiles
from sim.model.rates import cumulative_rates, pmf_from_cumulative
from sim.model.samplers import accept_length_sequential

# --------------------------------------------------------------------------- theory helpers


def beta_raw_moments(mean: float, concentration: float, order: int) -> np.ndarray:
    """E[a^j] for j = 0..order of a ~ Beta(mean * conc, (1 - mean) * conc); shape (order + 1,).

    Closed form E[a^j] = prod_{r=0}^{j-1} (A + r) / (A + B + r), A + B = concentration.
    """
    a = mean * concentration
    r = np.arange(order)
    return np.concatenate([[1.0], np.cumprod((a + r) / (concentration + r))])


# --------------------------------------------------------------------------- the model


#: Gauss-Legendre nodes on the quadrature's panels away from u = 0.
PANEL_NODES = 24
#: Nodes of the 14 panels towards u = 0, [0, 1e-14], [1e-14, 1e-13], ..., [1e-2, 1e-1]:
#: ceil(24 - 1.76 (depth - 1)), depth 14 for [0, 1e-14] down to 1 for [1e-2, 1e-1]. The
#: quantile at every position rises with U, so c_i(U) does too and the panel below 10^-d
#: holds at most 10^-d / (1 - 10^-d) of E[c_i] (and of any nondecreasing integrand): it
#: needs 10x less relative accuracy than the panel above it, and Gauss-Legendre's error on
#: a panel of ratio 10 from a power-law end (u^(1/a)) falls about 1.92^2 = 3.7x a node
#: (Bernstein ellipse), 10x in 1.76 nodes. Within 1e-12 relative of 24 nodes on every
#: panel (tests/model/test_quadrature.py); 710 nodes for 864, the ones below 1e-2 the
#: costliest to invert.
LEFT_PANEL_NODES: tuple[int, ...] = tuple(
    math.ceil(PANEL_NODES - 1.76 * (depth - 1)) for depth in range(14, 0, -1)
)


def quadrature_edges() -> np.ndarray:
    """Panel breakpoints (37,) on [0, 1]: 0, 1e-14, 1e-13, ..., 0.1, 0.2, ..., 0.9, ...,
    1 - 1e-14, 1 (graded towards both ends, where the Beta quantile has algebraic
    singularities)."""
    small = 10.0 ** np.arange(-14, 0)
    return np.unique(np.concatenate([[0.0], small, np.linspace(0.1, 0.9, 9), 1 - small, [1.0]]))


def gauss_legendre_panels(edges: np.ndarray, nodes: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """Nodes (n,) and weights (n,) of Gauss-Legendre with ``nodes[p]`` points on the panel
    [edges[p], edges[p + 1]] (edges (P + 1,), nodes (P,))."""
    xs, ws = [], []
    rules = {n: np.polynomial.legendre.leggauss(n) for n in set(nodes)}  # one a count
    for lo, hi, n in zip(edges[:-1], edges[1:], nodes, strict=True):
        x, w = rules[n]
        xs.append(lo + (hi - lo) * (x + 1) / 2)
        ws.append((hi - lo) * w / 2)
    return np.concatenate(xs), np.concatenate(ws)


def exact_quadrature() -> tuple[np.ndarray, np.ndarray]:
    """Nodes (710,) and weights (710,) on (0, 1), read-only: Gauss-Legendre on
    ``quadrature_edges``' panels, ``LEFT_PANEL_NODES`` towards 0 and ``PANEL_NODES``
    elsewhere (built now; ``EXACT_RULE`` holds the one every class uses)."""
    edges = quadrature_edges()
    counts = [*LEFT_PANEL_NODES, *[PANEL_NODES] * (edges.size - 1 - len(LEFT_PANEL_NODES))]
    nodes, weights = gauss_legendre_panels(edges, counts)
    nodes.setflags(write=False)
    weights.setflags(write=False)
    return nodes, weights


def quadrature_weights() -> np.ndarray:
    """The weights (nodes,) of ``RateClass.quadrature_rates``' nodes (read-only)."""
    return EXACT_RULE[1]


#: Gauss-Legendre nodes a panel of the drawn scenarios' rule (``drawn_quadrature``): at most 8 on
#: each of ``quadrature_edges``' panels (the exact rule's fewer towards u = 0 kept), and the end
#: panels merged (``DRAWN_END``): 148 nodes for 710. An uncertainty study re-integrates every class
#: of a mix or per-request spread in each distinct draw of its acceptance inputs; a draw's answer
#: only has to be exact to well within the spread of the draws (an interval's width: 1e-3 relative
#: and wider). What the closed forms take from the rates is the accept length at each k, E[c_0] +
#: ... + E[c_k]: by this rule within 5e-5 relative of the exact rule's at every k up to 32 (the
#: worst at concentration 0.3, the widest spread tested; 1e-6 from concentration 3 up),
#: tests/model/test_quadrature.py. A deep E[c_i] that is negligible against the accept length (below
#: 1e-8 of it) can be far off relatively: the rule is for answers, not for the deep rates
#: themselves.
DRAWN_PANEL_NODES = 8


#: Where the drawn scenarios' rule stops grading towards u = 0 and 1: the panels below
#: ``DRAWN_END`` (and above 1 - ``DRAWN_END``) become one panel of ``DRAWN_END_NODES``
#: nodes. Every integrand the closed forms take (the c_i, products of rates in [0, 1]) is
#: bounded by 1 and nondecreasing in u, so a panel of width 1e-6 holds at most 1e-6 of it
#: and any rule on it errs by less: within 1e-6 of the accept length (>= 1), 1/40 of the
#: rule's own bound. Those panels held 130 of the 273 nodes, the costliest to invert.
DRAWN_END = 1e-6
DRAWN_END_NODES = 2


def drawn_quadrature() -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights (on (0, 1)) of the drawn scenarios' rule: the exact rule's
    panels between ``DRAWN_END`` and 1 - ``DRAWN_END`` with at most ``DRAWN_PANEL_NODES``
    nodes each, and one panel of ``DRAWN_END_NODES`` at each end (read-only; built now,
    ``DRAWN_RULE`` holds the one every class uses)."""
    edges = quadrature_edges()
    exact = [*LEFT_PANEL_NODES, *[PANEL_NODES] * (edges.size - 1 - len(LEFT_PANEL_NODES))]
    inner = [
        (lo, hi, min(n, DRAWN_PANEL_NODES))
        for lo, hi, n in zip(edges[:-1], edges[1:], exact, strict=True)
        if lo >= DRAWN_END and hi <= 1.0 - DRAWN_END
    ]
    cuts = np.array([0.0, *(lo for lo, _, _ in inner), inner[-1][1], 1.0])
    counts = [DRAWN_END_NODES, *(n for _, _, n in inner), DRAWN_END_NODES]
    nodes, weights = gauss_legendre_panels(cuts, counts)
    nodes.setflags(write=False)
    weights.setflags(write=False)
    return nodes, weights


#: The exact rule (``exact_quadrature``) and the drawn scenarios' rule
#: (``drawn_quadrature``): (nodes, weights), read-only constants built at import (2 ms).
EXACT_RULE: tuple[np.ndarray, np.ndarray] = exact_quadrature()
DRAWN_RULE: tuple[np.ndarray, np.ndarray] = drawn_quadrature()


@dataclass(frozen=True, slots=True)
class Spread:
    """How a class's rates vary per request: a Beta concentration or a standard deviation.

    With ``concentration`` c each position's rate is Beta(m c, (1 - m) c); with ``std`` s the
    concentration follows the mean, c = m (1 - m) / s^2 - 1 (a valid Beta needs
    s^2 < m (1 - m) for every mean strictly inside (0, 1)). Neither: no spread.
    """

    concentration: float | None = None
    std: float | None = None

    def kappa(self, means: np.ndarray) -> np.ndarray | None:
        """Per-position concentration for mean rates of shape (k,) (None: no spread)."""
        if self.concentration is not None:
            return np.full(means.shape, self.concentration)
        if self.std:
            var = self.std**2
            with np.errstate(divide="ignore", invalid="ignore"):
                kappa = means * (1.0 - means) / var - 1.0
            return np.where((means > 0) & (means < 1), kappa, np.inf)
        return None

    def infeasible_mean(self, means: np.ndarray) -> float | None:
        """The first mean (in order) that ``std`` is too wide for, or None when all are valid."""
        if not self.std:
            return None
        for m in np.asarray(means, dtype=float).tolist():
            if 0.0 < m < 1.0 and self.std**2 >= m * (1.0 - m):
                return m
        return None


@dataclass(frozen=True, slots=True)
class RateClass:
    """One class of requests: mean rates (k,) and how they spread per request.

    ``weight`` is the class's probability (the model normalises weights); ``concentration``
    (k,) or None is the per-position Beta concentration the ``spread`` gives at these means.
    Positions whose mean is 0 or 1, or whose concentration is None/inf, do not vary.
    """

    name: str
    weight: float
    mean_rates: np.ndarray
    spread: Spread = Spread()
    concentration: np.ndarray | None = field(init=False, repr=False)
    #: ``quadrature_rates`` once computed (at most one entry): a class whose expectation
    #: is taken for several trees (SGLang's and the best, sim/uncertainty/tree_sampled.py)
    #: inverts its Beta at the nodes once.
    _at_nodes: list[np.ndarray] = field(init=False, repr=False, compare=False)
    #: The quantile tables sampling has built, by Beta (a, b): a run's blocks of requests
    #: (sim/simulation/engines/fast.py) build each Beta's table once.
    _tables: dict[tuple[float, float], Table | None] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "concentration", self.spread.kappa(self.mean_rates))
        object.__setattr__(self, "_at_nodes", [])
        object.__setattr__(self, "_tables", {})

    def with_means(self, mean_rates: np.ndarray) -> RateClass:
        """The same class and spread at other mean rates (shape (k,))."""
        return replace(self, mean_rates=np.asarray(mean_rates, dtype=float))

    @property
    def num_steps(self) -> int:
        return int(self.mean_rates.shape[0])

    @property
    def varies(self) -> bool:
        if self.concentration is None:
            return False
        m = self.mean_rates
        return bool(np.any((m > 0.0) & (m < 1.0) & np.isfinite(self.concentration)))

    def rates_from_uniform(self, u: np.ndarray, sampling: bool = False) -> np.ndarray:
        """Per-request conditional rates, shape (n, k), from one uniform per request (n,).

        a_i = Beta ppf at ``u`` (comonotone across positions); increasing in ``u`` and, for a
        fixed concentration, in the mean rate. ``sampling``: the quantile of many uniforms
        from a checked interpolation table (sim/model/beta_quantile.py: within 1e-10 of
        ``betaincinv``, about 25x cheaper an element); the theory (quadrature) keeps the
        exact ``betaincinv``.
        """
        u = np.asarray(u, dtype=float)
        out = np.broadcast_to(self.mean_rates, (u.shape[0], self.num_steps)).copy()
        if not self.varies:
            return out
        assert self.concentration is not None
        m, kappa = self.mean_rates, self.concentration
        vary = (m > 0.0) & (m < 1.0) & np.isfinite(kappa)
        cols = np.flatnonzero(vary)
        # positions sharing (mean, concentration) share the quantile: compute each pair once
        pairs, which = np.unique(
            np.stack([m[cols], kappa[cols]], axis=1), axis=0, return_inverse=True
        )
        if sampling:
            a = np.stack(
                [beta_quantiles(m_p * k_p, (1 - m_p) * k_p, u, self._tables) for m_p, k_p in pairs],
                axis=1,
            )
        else:
            a = special.betaincinv(
                (pairs[:, 0] * pairs[:, 1])[None, :],
                ((1 - pairs[:, 0]) * pairs[:, 1])[None, :],
                u[:, None],
            )  # (n, pairs): the Beta quantile, as scipy.stats.beta.ppf computes it
        # scipy can return NaN for u within ~1e-16 of 0 or 1: the quantile's limit is 0 or 1
        a = np.where(np.isnan(a), (u[:, None] >= 0.5).astype(float), a)
        out[:, cols] = a[:, which.ravel()]
        return out

    def expect(self, fn: Callable[[np.ndarray], np.ndarray], drawn: bool = False) -> np.ndarray:
        """E[fn(a)] over this class's requests; ``fn`` maps rates (n, k) to (n, ...).

        E over the request's uniform U: composite Gauss-Legendre on panels graded towards
        0 and 1 (where the Beta quantile has algebraic singularities), one vectorized call.
        ``drawn``: the drawn scenarios' coarser rule (``drawn_quadrature``) instead of the
        exact one.
        """
        if not self.varies:
            return fn(self.mean_rates[None, :])[0]
        if drawn:
            nodes, weights = DRAWN_RULE
            return np.tensordot(weights, fn(self.rates_from_uniform(nodes)), axes=(0, 0))
        values = fn(self.quadrature_rates())
        return np.tensordot(EXACT_RULE[1], values, axes=(0, 0))

    def quadrature_rates(self) -> np.ndarray:
        """Per-request rates at the quadrature's nodes, shape (nodes, k), read-only:
        ``rates_from_uniform`` (exact ``betaincinv``), computed once per class."""
        if not self._at_nodes:
            rates = self.rates_from_uniform(EXACT_RULE[0])
            rates.setflags(write=False)
            self._at_nodes.append(rates)
        return self._at_nodes[0]

    def expected_cumulative(self, drawn: bool = False) -> np.ndarray:
        """E[c_0..c_k], shape (k + 1,), c_0 = 1. Exact Beta moments when all positions share
        one mean and concentration (one Beta rate per request), else quadrature (``drawn``:
        the drawn scenarios' rule, ``RateClass.expect``)."""
        k = self.num_steps
        if not self.varies:
            return np.concatenate([[1.0], cumulative_rates(self.mean_rates)])
        assert self.concentration is not None
        m, kappa = self.mean_rates, self.concentration
        if np.all(m == m[0]) and np.all(kappa == kappa[0]):
            return beta_raw_moments(float(m[0]), float(kappa[0]), k)
        return self.expect(
            lambda a: np.concatenate([np.ones((a.shape[0], 1)), cumulative_rates(a)], axis=1),
            drawn,
        )


@dataclass(frozen=True, slots=True)
class AcceptanceModel:
    """Acceptance of a scenario at ``num_steps`` = k: weighted rate classes.

    ``classes`` has at least one class; weights are normalised to sum to 1.
    """

    num_steps: int
    classes: tuple[RateClass, ...]
    _weights: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        w = np.array([c.weight for c in self.classes], dtype=float)
        object.__setattr__(self, "_weights", w / w.sum())

    @property
    def weights(self) -> np.ndarray:
        """Class probabilities, shape (classes,)."""
        return self._weights.copy()

    @property
    def class_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.classes)

    @property
    def heterogeneous(self) -> bool:
        return len(self.classes) > 1 or self.classes[0].varies

    # ----- levers

    def scaled(self, factor: float) -> AcceptanceModel:
        """Every class's mean rates times ``factor``, capped at 1; spreads kept."""
        return AcceptanceModel(
            self.num_steps,
            tuple(c.with_means(np.minimum(1.0, factor * c.mean_rates)) for c in self.classes),
        )

    def with_profile(self, mean_rates: np.ndarray) -> AcceptanceModel:
        """Every class at the mean rates ``mean_rates`` (k,), capped to [0, 1]; spreads kept."""
        means = np.clip(np.asarray(mean_rates, dtype=float), 0.0, 1.0)
        return AcceptanceModel(self.num_steps, tuple(c.with_means(means) for c in self.classes))

    def truncated(self, num_steps: int) -> AcceptanceModel:
        """The model over positions 1..``num_steps`` (at most k): every class's first
        ``num_steps`` mean rates, spreads kept (a class's spread is per position)."""
        if not 0 <= num_steps <= self.num_steps:
            raise ValueError(f"cannot cut a model of k = {self.num_steps} to {num_steps}")
        return AcceptanceModel(
            num_steps, tuple(c.with_means(c.mean_rates[:num_steps].copy()) for c in self.classes)
        )

    def with_equal_rates(self, alpha: float) -> AcceptanceModel:
        """Every class at one mean rate ``min(alpha, 1)`` at every position; spreads kept."""
        rate = min(1.0, alpha)
        return AcceptanceModel(
            self.num_steps,
            tuple(c.with_means(np.full(self.num_steps, rate)) for c in self.classes),
        )

    def infeasible(self) -> tuple[str, float, float] | None:
        """(class, mean, std) of the first class whose ``std`` is too wide for one of its
        means (a Beta with that mean cannot have that std), or None when all are valid."""
        for c in self.classes:
            m = c.spread.infeasible_mean(c.mean_rates)
            if m is not None:
                assert c.spread.std is not None
                return c.name, m, c.spread.std
        return None

    def mean_rates(self) -> np.ndarray:
        """Weight-averaged mean conditional rates over classes, shape (k,)."""
        return np.asarray(
            sum(w * c.mean_rates for w, c in zip(self._weights, self.classes, strict=True))
        )

    # ----- sampling

    def sample_requests(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Class index (n,) int and conditional rates (n, k) of ``n`` requests.

        Draws exactly 2 n uniforms whatever the rates (class pick, Beta quantile), so
        scenarios that differ only in rates see the same requests (common random numbers).
        """
        return self.requests_from_uniforms(rng.random((n, 2)))

    def requests_from_uniforms(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``sample_requests`` from its uniforms (n, 2), which engines may draw for several
        replications and convert in one call (one quantile table per class)."""
        n = u.shape[0]
        cut = np.cumsum(self._weights)[:-1]
        cls = np.searchsorted(cut, u[:, 0], side="right")
        rates = np.empty((n, self.num_steps))
        for i, c in enumerate(self.classes):
            rows = cls == i
            if rows.any():
                rates[rows] = c.rates_from_uniform(u[rows, 1], sampling=True)
        return cls, rates

    def chain_rates(self, rates: np.ndarray) -> np.ndarray:
        """Conditional rates (n, k) the engines draw a cycle's L from: a chain's own rates
        (a tree model maps its per-request parameters to a chain-equivalent, same law)."""
        return rates

    def sequential_length(self, row: Sequence[float]) -> Callable[[Sequence[float]], int]:
        """L of one cycle from k uniforms, position by position, for one request's rates."""
        return functools.partial(accept_length_sequential, rates=list(row))

    # ----- theory

    def _mix(self, per_class: Callable[[RateClass], np.ndarray]) -> np.ndarray:
        return sum(w * per_class(c) for w, c in zip(self._weights, self.classes, strict=True))

    def expected_cumulative(self, drawn: bool = False) -> np.ndarray:
        """E[c_0..c_k] over requests, shape (k + 1,) (``drawn``: ``RateClass.expect``)."""
        return self._mix(lambda c: c.expected_cumulative(drawn))

    def effective_rates(self, drawn: bool = False) -> np.ndarray:
        """Rates (k,) whose chain has the per-request expected pmf: E[c_i] / E[c_(i-1)]."""
        ec = self.expected_cumulative(drawn)
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.where(ec[:-1] > 0, ec[1:] / ec[:-1], 0.0)
        return np.clip(r, 0.0, 1.0)

    def closed_form_rates(self, drawn: bool = False) -> np.ndarray:
        """Conditional rates (k,) that the closed forms take: the one class's mean rates, or
        with heterogeneity the effective rates (exact per-request expectations; ``drawn``:
        by the drawn scenarios' rule, ``RateClass.expect``)."""
        if not self.heterogeneous:
            return self.classes[0].mean_rates.copy()
        return self.effective_rates(drawn)

    def request_pmf(self) -> np.ndarray:
        """E[pmf(a)] over requests: P(L = j + 1) of a cycle of a random request, (k + 1,)."""
        return pmf_from_cumulative(self.expected_cumulative()[1:])

    def mean_accept_length(self) -> float:
        """E[AL(a)] over requests (the per-request expectation)."""
        return float(self.expected_cumulative().sum())

    def _expect(self, fn: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        return self._mix(lambda c: c.expect(fn))

    def cycle_pmf(self) -> np.ndarray:
        """Long-run pmf of all cycles pooled, (k + 1,): E[pmf(a) / AL(a)] / E[1 / AL(a)]."""
        if not self.heterogeneous:
            return self.request_pmf()

        def weighted(a: np.ndarray) -> np.ndarray:
            pmf = pmf_from_cumulative(cumulative_rates(a))
            al = pmf @ np.arange(1, self.num_steps + 2)
            return np.concatenate([pmf / al[:, None], (1.0 / al)[:, None]], axis=1)

        e = self._expect(weighted)
        return e[:-1] / e[-1]

    def cycle_mean_accept_length(self) -> float:
        """Long-run tokens per cycle over all cycles pooled: 1 / E[1 / AL(a)]."""
        return float(self.cycle_pmf() @ np.arange(1, self.num_steps + 2))
