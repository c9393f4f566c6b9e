"""The closed forms over many draws of their inputs at once (vectorized over samples).

An uncertainty study draws n versions of the inputs (pass times, verify slope, acceptance
anchor and shape) and re-solves the answer for each; ``SampledModel`` holds the draws as
arrays and answers for all of them in a few array operations:

* tok/s at draft length k: 1000 AL_k / T_cycle(k) (renewal-reward), AL_k = 1 + c_1 + ... + c_k,
  the cycle's draft extend taken at AL_k;
* what a target needs at every k: the accept length that reaches it and the
  scale x of the profile min(1, x g) that reaches it (g the shape factors, g_1 = 1), solved
  for every (draw, k) together by safeguarded Newton steps on AL_k(x) (increasing and
  piecewise polynomial in x); the first-position rate min(1, x), the mean rate over the
  chain and the equal (flat) rate giving the same accept length;
* the best k of each draw: the one needing the lowest first-position rate.

Shapes: n draws, K draft lengths (k = 1..K); arrays are (n,) or (n, K).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Newton iterations (each (draw, k) pair stops once its accept length is met to ``_TOL``).
_ITERATIONS = 40
_TOL = 1e-11
#: Bisection steps of the equal-rate solve (the bracket [0, 1] shrinks 2^-40).
_BISECT = 40


def equal_rate_accept_length(alpha: np.ndarray, num_steps: np.ndarray) -> np.ndarray:
    """Leviathan et al. 2023: (1 - a^(k+1)) / (1 - a) elementwise, k + 1 at a = 1; with
    expm1/log1p so it stays accurate next to a = 1."""
    a = np.asarray(alpha, dtype=float)
    m = np.asarray(num_steps, dtype=float) + 1.0
    one_minus = 1.0 - a
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = -np.expm1(m * np.log1p(-one_minus)) / one_minus
    return np.where(one_minus <= 0.0, m, np.where(a <= 0.0, 1.0, ratio))


def equal_rates_for_accept_lengths(need: np.ndarray, steps: int = _BISECT) -> np.ndarray:
    """The equal rate alpha (n, K) whose accept length at k is need[:, k - 1] (bisection on
    the closed form); 0 where the need is at most 1, NaN where it exceeds k + 1."""
    big_k = need.shape[1]
    k = np.broadcast_to(np.arange(1, big_k + 1, dtype=float)[None, :], need.shape)
    return _equal_rates(need, k, steps)


def _equal_rates(need: np.ndarray, k: np.ndarray, steps: int) -> np.ndarray:
    """``equal_rates_for_accept_lengths`` elementwise: the need and its k, same shape."""
    lo, hi = np.zeros(need.shape), np.ones(need.shape)
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        above = equal_rate_accept_length(mid, k) >= need
        hi = np.where(above, mid, hi)
        lo = np.where(above, lo, mid)
    out = np.where(need <= 1.0, 0.0, 0.5 * (lo + hi))
    return np.where(need > k + 1.0 + 1e-12, np.nan, out)


def _pair_accept_length(
    x: np.ndarray, g: np.ndarray, mask: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """AL(x) and dAL/dx for pairs: scales x (P,), factors g (P, K), positions mask (P, K)."""
    y = x[:, None] * g
    c = np.cumprod(np.minimum(y, 1.0), axis=1) * mask
    uncapped = np.cumsum(y < 1.0, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return 1.0 + c.sum(axis=1), (c * uncapped).sum(axis=1) / x


def _widths(ks: np.ndarray, big_k: int) -> np.ndarray:
    """The columns (P,) a pair at draft-length index ``ks`` is summed over: k rounded up
    to a multiple of 8, at most K. Beyond k its terms are exact zeros, and NumPy sums a
    row in 8 interleaved partial sums (``sim.model.shapes.numpy_sum``), so a row cut
    there sums to the same bits as the whole row: the cut saves work, not accuracy."""
    if big_k <= 8:
        return np.full(ks.shape, big_k)
    return np.minimum(-(-(ks + 1) // 8) * 8, big_k)


def scales_for_accept_lengths(
    need: np.ndarray, factors: np.ndarray, guess: np.ndarray | None = None
) -> np.ndarray:
    """The scale x (n, K) with AL_k(x) = need[:, k - 1] for every draw and k, where
    AL_k(x) = 1 + sum_{i <= k} prod_{j <= i} min(1, x g_j) (increasing in x).

    0 where the need is at most 1; NaN where it exceeds k + 1 (out of reach at that k).
    Every (draw, k) pair is solved together by Newton steps from ``guess`` (default: the
    equal rate over the mean factor), a step leaving the bracket [lo, hi] bisecting
    instead; pairs drop out as they converge. Pairs are solved in groups of the columns
    they need (``_widths``); each pair's steps do not depend on the others'.
    """
    big_k = factors.shape[1]
    cap = np.arange(1, big_k + 1, dtype=float)[None, :] + 1.0
    reach = (need > 1.0) & (need <= cap + 1e-12)
    positive = np.where(factors > 0, factors, np.inf)
    hi_all = 1.0 / np.minimum.accumulate(positive, axis=1)  # every rate at 1: AL_k = k + 1
    mean_g = np.cumsum(factors, axis=1) / np.arange(1, big_k + 1)[None, :]
    rows, ks = np.nonzero(reach)
    target = need[rows, ks]
    # no guess: a rough equal rate (at the pairs solved) is start enough for Newton
    start = _equal_rates(target, ks + 1.0, steps=10) if guess is None else guess[rows, ks]
    x = np.clip(start / mean_g[rows, ks], 0.0, hi_all[rows, ks])
    lo, hi = np.zeros(rows.size), hi_all[rows, ks].copy()
    widths = _widths(ks, big_k)
    for width in np.unique(widths):
        group = np.nonzero(widths == width)[0]
        _newton(x, lo, hi, target, factors[:, :width], rows, ks, group)
    out = np.where(need <= 1.0, 0.0, np.nan)
    out[rows, ks] = x
    return out


def _newton(
    x: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    target: np.ndarray,
    factors: np.ndarray,
    rows: np.ndarray,
    ks: np.ndarray,
    active: np.ndarray,
) -> None:
    """Safeguarded Newton steps on the pairs ``active`` (indices into ``x``, ``lo``,
    ``hi``, ``target``, ``rows``, ``ks``, all (P,)), updating ``x``, ``lo`` and ``hi`` in
    place; ``factors`` (n, W) holds the columns these pairs need."""
    positions = np.arange(factors.shape[1])[None, :]
    for _ in range(_ITERATIONS):
        if active.size == 0:
            break
        g = factors[rows[active]]
        mask = positions <= ks[active][:, None]
        xa = x[active]
        al, slope = _pair_accept_length(xa, g, mask)
        err = al - target[active]
        done = np.abs(err) <= _TOL * target[active]
        up = err > 0
        hi[active] = np.where(up, xa, hi[active])
        lo[active] = np.where(up, lo[active], xa)
        with np.errstate(divide="ignore", invalid="ignore"):
            newton = xa - err / slope
        inside = np.isfinite(newton) & (newton > lo[active]) & (newton < hi[active])
        step = np.where(inside, newton, 0.5 * (lo[active] + hi[active]))
        x[active] = np.where(done, xa, step)
        active = active[~done]


@dataclass(frozen=True)
class Requirement:
    """What one target needs in every draw at every k = 1..K (NaN: out of reach)."""

    tok_s: float
    need: np.ndarray  # required accept length (n, K)
    first_rate: np.ndarray  # (n, K)
    mean_rate: np.ndarray  # (n, K)
    flat_alpha: np.ndarray  # (n, K)
    scale: np.ndarray  # the profile's scale x; first_rate = min(1, x) (n, K)

    def best_index(self) -> np.ndarray:
        """Index (n,) of the k needing the least drafter quality: the lowest scale of the
        profile, so the lowest first-position rate (ties: smaller k); -1 where no k reaches
        the target."""
        key = np.where(np.isnan(self.scale), np.inf, self.scale)
        best = np.argmin(key, axis=1)
        reachable = np.isfinite(key[np.arange(key.shape[0]), best])
        return np.where(reachable, best, -1)

    def at_best(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(best k, first rate, mean rate, flat alpha at the flat-best k), each (n,);
        k = 0 and NaN rates where the target is out of reach."""
        idx = self.best_index()
        rows = np.arange(idx.shape[0])
        ok = idx >= 0
        safe = np.where(ok, idx, 0)
        first = np.where(ok, self.first_rate[rows, safe], np.nan)
        mean = np.where(ok, self.mean_rate[rows, safe], np.nan)
        flat = np.where(np.isnan(self.flat_alpha), np.inf, self.flat_alpha).min(axis=1)
        flat = np.where(np.isfinite(flat), flat, np.nan)
        return np.where(ok, safe + 1, 0), first, mean, flat


@dataclass(frozen=True)
class SampledModel:
    """n draws of the closed-form inputs.

    ``fixed_ms`` (n, K): the part of the cycle at k = 1..K that does not grow with the
    accept length, ``extend_per_token_ms`` (n,): the draft extend's growth per accepted
    token, so a cycle with accept length L lasts fixed + s L (sim/model/cycle.py
    ``CycleCost.fixed_ms``); ``decode_ms`` (n,); ``rates`` (n, K): the drafter's conditional
    rates at positions 1..K; ``factors`` (n, K): the shape the required rate scales
    (g_1 = 1; rates / rates[:, :1] for a listed profile).
    """

    decode_ms: np.ndarray
    fixed_ms: np.ndarray
    rates: np.ndarray
    factors: np.ndarray
    extend_per_token_ms: np.ndarray | None = None

    @property
    def per_token_ms(self) -> np.ndarray:
        if self.extend_per_token_ms is None:
            return np.zeros(self.size)
        return self.extend_per_token_ms

    def cycle_ms(self, num_steps: int, accept_length: np.ndarray | None = None) -> np.ndarray:
        """The cycle at k = ``num_steps`` with the extend at ``accept_length`` (default:
        the drafter's own accept length there), shape (n,)."""
        al = self.accept_length(num_steps) if accept_length is None else accept_length
        return self.fixed_ms[:, num_steps - 1] + self.per_token_ms * al

    @property
    def size(self) -> int:
        return int(self.fixed_ms.shape[0])

    def rows(self, index: slice) -> SampledModel:
        """The draws ``index`` of this model (every row is a draw of its own)."""
        per_token = self.extend_per_token_ms
        return SampledModel(
            self.decode_ms[index],
            self.fixed_ms[index],
            self.rates[index],
            self.factors[index],
            None if per_token is None else per_token[index],
        )

    @property
    def max_steps(self) -> int:
        return int(self.fixed_ms.shape[1])

    def accept_length(self, num_steps: int) -> np.ndarray:
        """AL at k = ``num_steps`` in each draw, shape (n,)."""
        if num_steps == 0:
            return np.ones(self.size)
        return 1.0 + np.cumprod(self.rates[:, :num_steps], axis=1).sum(axis=1)

    def tok_s(self, num_steps: int) -> np.ndarray:
        """Long-run tok/s at k in each draw (k = 0: plain decoding), shape (n,)."""
        if num_steps == 0:
            return 1000.0 / self.decode_ms
        al = self.accept_length(num_steps)
        return 1000.0 * al / self.cycle_ms(num_steps, al)

    def requirement(
        self,
        target_tok_s: float,
        flat: bool = True,
        columns: np.ndarray | None = None,
        mean: bool = True,
    ) -> Requirement:
        """What ``target_tok_s`` needs at every k in every draw: the accept length
        target F / (1000 - target s) (infinite, out of reach, when target s >= 1000).
        ``flat`` / ``mean`` False: the equal rate / the mean rate are not solved (NaN)."""
        denominator = 1000.0 - target_tok_s * self.per_token_ms[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            need = np.where(denominator > 0, target_tok_s * self.fixed_ms / denominator, np.inf)
        if columns is not None:  # draft lengths left out: not solved (NaN, out of reach)
            need = np.where(columns[None, :], need, np.nan)
        alpha = equal_rates_for_accept_lengths(need) if flat else np.full(need.shape, np.nan)
        x = scales_for_accept_lengths(need, self.factors, guess=alpha if flat else None)
        first = np.minimum(1.0, x)
        if not mean:
            return Requirement(target_tok_s, need, first, np.full(need.shape, np.nan), alpha, x)
        big_k = self.max_steps
        # mean of min(1, x g_i) over i <= k: running sums of the capped rates per k
        capped = np.minimum(1.0, x[:, :, None] * self.factors[:, None, :])
        means = np.einsum("nkp,kp->nk", np.nan_to_num(capped), np.tri(big_k)) / np.arange(
            1, big_k + 1
        )
        return Requirement(
            target_tok_s, need, first, np.where(np.isnan(x), np.nan, means), alpha, x
        )
