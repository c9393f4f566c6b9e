"""Acceptance models: one rate, per-position rates, Beta per request, weighted mixes.

Vocabulary (reference section 2): conditional per-position rates a_1..a_k; cumulative
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
  1 / E[1 / AL(a)]. Without heterogeneity both views are the closed form of sim.theory.

Sampling (pure functions over uniforms, so common random numbers work: with the same
uniforms, higher rates never give a shorter accept length):

* ``accept_lengths_inverse_cdf``: one uniform per cycle, L = 1 + #{j : u < c_j} (the fast
  engine does this on 32-bit uniform integers: ``accept_lengths_from_bits``);
* ``accept_length_sequential``: k uniforms per cycle, draft i accepted when u_i < a_i and
  draft i - 1 was (the SimPy engine, position by position as the protocol runs).

Both give exactly the chain's distribution; tests compare them.

Common random numbers across means: for a fixed ``concentration``, the Beta quantile at a
fixed U rises with the mean, so raising rates never lowers a request's rates. With a fixed
``std`` instead this fails near the largest mean the std allows (the Beta turns U-shaped as
its concentration m (1 - m) / std^2 - 1 falls towards 0), and means with
std^2 >= m (1 - m) are invalid: give ``concentration`` for searches over the rate.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import special

from sim.scenario import AcceptanceClass, AcceptanceSpec, listed_rates

# --------------------------------------------------------------------------- samplers


def cumulative_rates(rates: np.ndarray) -> np.ndarray:
    """c_1..c_k = running products of conditional rates; shape (..., k) -> (..., k)."""
    return np.cumprod(np.asarray(rates, dtype=float), axis=-1)


def accept_lengths_inverse_cdf(u: np.ndarray, cumulative: np.ndarray) -> np.ndarray:
    """Tokens per cycle by inverse cdf: L = 1 + #{j : u < c_j}.

    ``u``: uniforms on [0, 1), any shape S (one per cycle). ``cumulative``: c_1..c_k along
    the FIRST axis, shape (k, ...), each ``cumulative[j]`` broadcastable to S (a scalar when
    every cycle shares the rates; e.g. (k, B, 1, Q) for cycles laid out (B, C, Q)).
    Returns uint8 of shape S with 1 <= L <= k + 1. Exact: P(L >= j + 1) = P(u < c_j) = c_j.
    Monotone: larger c (higher rates) never lowers L for the same u.
    """
    out = np.ones(np.shape(u), dtype=np.uint8)
    for c_j in cumulative:
        out += u < c_j
    return out


def bit_thresholds(cumulative: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Thresholds for 32-bit uniform integers B (uniform on 0 .. 2^32 - 1).

    Draft j is accepted when ``B <= t_j`` and ``c_j > 0``, with t_j = ceil(c_j 2^32) - 1:
    P = ceil(c_j 2^32) / 2^32, within 2^-32 of c_j, exactly 0 at c_j = 0 and exactly 1 at
    c_j = 1, and non-decreasing in c_j (common random numbers). Returns (t as uint32,
    c > 0 as bool), both of the shape of ``cumulative``.
    """
    c = np.asarray(cumulative, dtype=float)
    t = np.clip(np.ceil(c * 2.0**32) - 1.0, 0.0, 2.0**32 - 1.0)
    return t.astype(np.uint32), c > 0.0


def accept_lengths_from_bits(
    bits: np.ndarray, thresholds: np.ndarray, positive: np.ndarray
) -> np.ndarray:
    """``accept_lengths_inverse_cdf`` for 32-bit uniform integers (the fast engine's draws).

    ``bits``: uint32 of any shape S, one per cycle; ``thresholds``/``positive``: from
    ``bit_thresholds``, position j along the FIRST axis, each entry broadcastable to S.
    Returns uint8 of shape S: L = 1 + #{j : bits <= t_j and c_j > 0}.
    """
    out = np.ones(np.shape(bits), dtype=np.uint8)
    for t_j, p_j in zip(thresholds, positive, strict=True):
        out += (bits <= t_j) & p_j
    return out


def accept_length_sequential(u: Sequence[float], rates: Sequence[float]) -> int:
    """Tokens in one cycle, drafts checked position by position (plain Python floats).

    Draft i is accepted when ``u[i] < rates[i]`` and draft i - 1 was; the target adds one
    token (correction or bonus). ``u`` and ``rates`` have length k. Returns 1..k + 1.
    """
    length = 1
    for ui, ai in zip(u, rates, strict=True):
        if ui < ai:
            length += 1
        else:
            break
    return length


# --------------------------------------------------------------------------- theory helpers


def accept_length_pmfs(cumulative: np.ndarray) -> np.ndarray:
    """P(L = j + 1), j = 0..k, from cumulative rates of shape (..., k): shape (..., k + 1)."""
    c = np.asarray(cumulative, dtype=float)
    ones = np.ones((*c.shape[:-1], 1))
    surv = np.concatenate([ones, c], axis=-1)  # P(L >= j + 1)
    nxt = np.concatenate([c, np.zeros_like(ones)], axis=-1)  # P(L >= j + 2)
    return surv - nxt


def beta_raw_moments(mean: float, concentration: float, order: int) -> np.ndarray:
    """E[a^j] for j = 0..order of a ~ Beta(mean * conc, (1 - mean) * conc); shape (order + 1,).

    Closed form E[a^j] = prod_{r=0}^{j-1} (A + r) / (A + B + r), A + B = concentration.
    """
    a = mean * concentration
    r = np.arange(order)
    return np.concatenate([[1.0], np.cumprod((a + r) / (concentration + r))])


# --------------------------------------------------------------------------- the model


@functools.cache
def _quadrature_nodes(per_panel: int = 24) -> tuple[np.ndarray, np.ndarray]:
    """Nodes (n,) and weights (n,) on (0, 1): Gauss-Legendre on panels with breakpoints
    0, 1e-14, 1e-13, ..., 0.1, 0.2, ..., 0.9, ..., 1 - 1e-14, 1 (symmetric grading)."""
    small = 10.0 ** np.arange(-14, 0)
    edges = np.unique(np.concatenate([[0.0], small, np.linspace(0.1, 0.9, 9), 1 - small, [1.0]]))
    x, w = np.polynomial.legendre.leggauss(per_panel)
    lo, hi = edges[:-1, None], edges[1:, None]
    nodes = (lo + (hi - lo) * (x + 1) / 2).ravel()
    weights = ((hi - lo) * w / 2).ravel()
    nodes.setflags(write=False)
    weights.setflags(write=False)
    return nodes, weights


@dataclass(frozen=True)
class RateClass:
    """One class of requests: mean rates (k,) and per-position Beta concentration (k,) or None.

    ``weight`` is the class's probability (the model normalises weights). Positions whose
    mean is 0 or 1, or whose concentration is None/inf, do not vary.
    """

    name: str
    weight: float
    mean_rates: np.ndarray
    concentration: np.ndarray | None = None

    @property
    def num_steps(self) -> int:
        return int(self.mean_rates.shape[0])

    @property
    def varies(self) -> bool:
        if self.concentration is None:
            return False
        m = self.mean_rates
        return bool(np.any((m > 0.0) & (m < 1.0) & np.isfinite(self.concentration)))

    def rates_from_uniform(self, u: np.ndarray) -> np.ndarray:
        """Per-request conditional rates, shape (n, k), from one uniform per request (n,).

        a_i = Beta ppf at ``u`` (comonotone across positions); increasing in ``u`` and, for a
        fixed concentration, in the mean rate.
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
        a = special.betaincinv(
            (pairs[:, 0] * pairs[:, 1])[None, :],
            ((1 - pairs[:, 0]) * pairs[:, 1])[None, :],
            u[:, None],
        )  # (n, pairs): the Beta quantile, as scipy.stats.beta.ppf computes it
        # scipy can return NaN for u within ~1e-16 of 0 or 1: the quantile's limit is 0 or 1
        a = np.where(np.isnan(a), (u[:, None] >= 0.5).astype(float), a)
        out[:, cols] = a[:, which.ravel()]
        return out

    def expect(self, fn: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        """E[fn(a)] over this class's requests; ``fn`` maps rates (n, k) to (n, ...).

        E over the request's uniform U: composite Gauss-Legendre on panels graded towards
        0 and 1 (where the Beta quantile has algebraic singularities), one vectorized call.
        """
        if not self.varies:
            return fn(self.mean_rates[None, :])[0]
        nodes, weights = _quadrature_nodes()
        values = fn(self.rates_from_uniform(nodes))
        return np.tensordot(weights, values, axes=(0, 0))

    def expected_cumulative(self) -> np.ndarray:
        """E[c_0..c_k], shape (k + 1,), c_0 = 1. Exact Beta moments when all positions share
        one mean and concentration (one Beta rate per request), else quadrature."""
        k = self.num_steps
        if not self.varies:
            return np.concatenate([[1.0], cumulative_rates(self.mean_rates)])
        assert self.concentration is not None
        m, kappa = self.mean_rates, self.concentration
        if np.all(m == m[0]) and np.all(kappa == kappa[0]):
            return beta_raw_moments(float(m[0]), float(kappa[0]), k)
        return self.expect(
            lambda a: np.concatenate([np.ones((a.shape[0], 1)), cumulative_rates(a)], axis=1)
        )


def _concentration(
    spread: AcceptanceClass | AcceptanceSpec, means: np.ndarray
) -> np.ndarray | None:
    """Per-position concentration from ``concentration`` or ``std`` (None: no spread)."""
    if spread.concentration is not None:
        return np.full(means.shape, spread.concentration)
    if spread.std:
        var = spread.std**2
        with np.errstate(divide="ignore", invalid="ignore"):
            kappa = means * (1.0 - means) / var - 1.0
        return np.where((means > 0) & (means < 1), kappa, np.inf)
    return None


@dataclass(frozen=True)
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

    # ----- sampling

    def sample_requests(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Class index (n,) int and conditional rates (n, k) of ``n`` requests.

        Draws exactly 2 n uniforms whatever the rates (class pick, Beta quantile), so
        scenarios that differ only in rates see the same requests (common random numbers).
        """
        u = rng.random((n, 2))
        cut = np.cumsum(self._weights)[:-1]
        cls = np.searchsorted(cut, u[:, 0], side="right")
        rates = np.empty((n, self.num_steps))
        for i, c in enumerate(self.classes):
            rows = cls == i
            if rows.any():
                rates[rows] = c.rates_from_uniform(u[rows, 1])
        return cls, rates

    # ----- theory

    def _mix(self, per_class: Callable[[RateClass], np.ndarray]) -> np.ndarray:
        return sum(w * per_class(c) for w, c in zip(self._weights, self.classes, strict=True))

    def expected_cumulative(self) -> np.ndarray:
        """E[c_0..c_k] over requests, shape (k + 1,)."""
        return self._mix(lambda c: c.expected_cumulative())

    def effective_rates(self) -> np.ndarray:
        """Rates (k,) whose chain has the per-request expected pmf: E[c_i] / E[c_(i-1)]."""
        ec = self.expected_cumulative()
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.where(ec[:-1] > 0, ec[1:] / ec[:-1], 0.0)
        return np.clip(r, 0.0, 1.0)

    def request_pmf(self) -> np.ndarray:
        """E[pmf(a)] over requests: P(L = j + 1) of a cycle of a random request, (k + 1,)."""
        ec = self.expected_cumulative()
        return ec - np.concatenate([ec[1:], [0.0]])

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
            pmf = accept_length_pmfs(cumulative_rates(a))
            al = pmf @ np.arange(1, self.num_steps + 2)
            return np.concatenate([pmf / al[:, None], (1.0 / al)[:, None]], axis=1)

        e = self._expect(weighted)
        return e[:-1] / e[-1]

    def cycle_mean_accept_length(self) -> float:
        """Long-run tokens per cycle over all cycles pooled: 1 / E[1 / AL(a)]."""
        return float(self.cycle_pmf() @ np.arange(1, self.num_steps + 2))


def _rate_class(
    cls: AcceptanceClass | AcceptanceSpec,
    num_steps: int,
    *,
    name: str,
    weight: float,
    default: AcceptanceSpec | None = None,
) -> RateClass:
    means = listed_rates(cls.alpha, cls.per_position, num_steps)
    spread: AcceptanceClass | AcceptanceSpec = cls
    if default is not None and cls.concentration is None and cls.std is None:
        spread = default
    return RateClass(name, weight, means, _concentration(spread, means))


def acceptance_model(spec: AcceptanceSpec | None, num_steps: int) -> AcceptanceModel:
    """The acceptance model of a scenario's ``[acceptance]`` at k = ``num_steps``.

    ``spec`` None (plain decoding, k = 0) gives one class with no drafts.
    """
    if spec is None or num_steps == 0:
        return AcceptanceModel(num_steps, (RateClass("all", 1.0, np.zeros(num_steps)),))
    if spec.mix is None:
        return AcceptanceModel(num_steps, (_rate_class(spec, num_steps, name="all", weight=1.0),))
    return AcceptanceModel(
        num_steps,
        tuple(
            _rate_class(c, num_steps, name=c.name, weight=c.weight, default=spec) for c in spec.mix
        ),
    )
