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

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sim.model.shapes import scale_for_accept_length

#: Newton iterations (each (draw, k) pair stops once its accept length is met to ``_TOL``).
_ITERATIONS = 40
_TOL = 1e-11
#: Bisection steps of the equal-rate solve (the bracket [0, 1] shrinks 2^-40).
_BISECT = 40


def equal_rate_accept_length(alpha: np.ndarray, num_steps: np.ndarray | int) -> np.ndarray:
    """Leviathan et al. 2023: (1 - a^(k+1)) / (1 - a) elementwise, k + 1 at a = 1; with
    expm1/log1p so it stays accurate next to a = 1."""
    a = np.asarray(alpha, dtype=float)
    m = np.asarray(num_steps, dtype=float) + 1.0
    one_minus = 1.0 - a
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = _ratio(m, one_minus)
    return np.where(one_minus <= 0.0, m, np.where(a <= 0.0, 1.0, ratio))


def _ratio(m: np.ndarray, one_minus: np.ndarray) -> np.ndarray:
    """(1 - a^m) / (1 - a) from ``one_minus`` = 1 - a, with expm1/log1p (exact next to a
    = 1; meaningless at a = 0 or 1, which callers handle or never reach)."""
    return -np.expm1(m * np.log1p(-one_minus)) / one_minus


def equal_rates_for_accept_lengths(need: np.ndarray, steps: int = _BISECT) -> np.ndarray:
    """The equal rate alpha (n, K) whose accept length at k is need[:, k - 1] (bisection on
    the closed form); 0 where the need is at most 1, NaN where it exceeds k + 1."""
    big_k = need.shape[1]
    k = np.broadcast_to(np.arange(1, big_k + 1, dtype=float)[None, :], need.shape)
    return _equal_rates(need, k, steps)


def _equal_rates(need: np.ndarray, k: np.ndarray, steps: int) -> np.ndarray:
    """``equal_rates_for_accept_lengths`` elementwise: the need and its k, same shape.

    Every mid stays strictly inside (0, 1) (``steps`` <= 50), where
    ``equal_rate_accept_length`` is its ratio alone: that ratio is computed here, the same
    operations in the same order, without the end cases' tests. The first
    ``_TABLE_STEPS`` mids are the dyadic points j / 2^10, the same for every entry: the
    ratio is tabulated there once per distinct k and those steps compare with the table
    (the same values, so the same steps)."""
    m = k + 1.0
    lo, hi = _tabulated_steps(need, m, min(steps, _TABLE_STEPS))
    for _ in range(steps - min(steps, _TABLE_STEPS)):
        mid = 0.5 * (lo + hi)
        above = _ratio(m, 1.0 - mid) >= need
        hi = np.where(above, mid, hi)
        lo = np.where(above, lo, mid)
    out = np.where(need <= 1.0, 0.0, 0.5 * (lo + hi))
    return np.where(need > k + 1.0 + 1e-12, np.nan, out)


#: Bisection steps of the equal rates taken on a table of their (dyadic) mids.
_TABLE_STEPS = 10


def _tabulated_steps(need: np.ndarray, m: np.ndarray, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) after the first ``steps`` bisection steps of ``_equal_rates`` (``m`` = k + 1),
    taken in the index space of the mids j / 2^steps (sums and halvings of dyadic numbers
    are exact) against the ratio tabulated at them for each distinct m."""
    scale = 2**steps
    values, which = _distinct_values(m)
    grid = np.arange(1, scale) / scale
    table = _ratio(values.reshape(-1, 1), 1.0 - grid)
    # table[which, mid - 1] read from the flat table (one 1-D take a step, not a 2-D gather)
    row = which.reshape(m.shape) * (scale - 1) - 1
    flat = table.ravel()
    lo, hi = np.zeros(need.shape, dtype=np.int64), np.full(need.shape, scale, dtype=np.int64)
    for _ in range(steps):
        mid = (lo + hi) >> 1  # both >= 0: the floor of the half
        above = flat.take(row + mid) >= need
        hi = np.where(above, mid, hi)
        lo = np.where(above, lo, mid)
    return lo / scale, hi / scale


#: Largest value ``_distinct_values`` counts (draft lengths are far below it).
_MAX_COUNTED = 4096


def _distinct_values(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(m, return_inverse=True)``: the distinct values, ascending, and each
    element's index among them. ``m`` holds draft lengths (k + 1, whole numbers >= 0)
    wherever it comes from here: counted by value instead of sorted (a sort of every
    element was most of the equal-rate solve's set-up), anything else goes to np.unique."""
    if m.size == 0 or not (np.all(m >= 0.0) and np.all(m <= _MAX_COUNTED)):
        return np.unique(m, return_inverse=True)
    whole = m.astype(np.int64)
    if not np.array_equal(whole, m):
        return np.unique(m, return_inverse=True)
    present = np.flatnonzero(np.bincount(whole.ravel()))
    index = np.zeros(present[-1] + 1, dtype=np.intp)
    index[present] = np.arange(present.size)
    return present.astype(float), index[whole]


def distinct_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first, again) of the distinct rows of ``rows`` (n, w), compared bit for bit:
    ``first`` the index of one row of each, ``again`` (n,) each row's index in ``first``
    (rows[first][again] == rows). The order of the distinct rows is the order of their
    bytes, not np.unique(axis=0)'s field-by-field order, which cost ten times as much;
    the rows are solved independently, so their order changes no bit."""
    flat = np.ascontiguousarray(rows)
    whole = flat.view(np.dtype((np.void, flat.shape[1] * flat.itemsize))).reshape(-1)
    _, first, again = np.unique(whole, return_index=True, return_inverse=True)
    return first, again.reshape(-1)


def scales_of_rows(need: np.ndarray, factors: np.ndarray) -> np.ndarray:
    """``scale_for_accept_length(need, factors)`` for needs (n,) and factors (n, k), each
    distinct (need, factors) row solved once: its bisection is elementwise and each row's
    accept length sums that row alone, so a row's bits do not depend on the others (an
    uncertainty study's rows repeat: the measure rows of an input other than acceptance
    hold the draws' acceptance, 1,557 rows and 471 distinct on the seed)."""
    if need.shape[0] >= 2:
        first, again = distinct_rows(np.column_stack([need, factors]))
        return scale_for_accept_length(need[first], factors[first])[again]
    return scale_for_accept_length(need, factors)


#: Pairs' rows are summed in NumPy's order for K terms, replicated below for K <= 128.
_MAX_WIDTH = 128


def _pair_accept_length(
    x: np.ndarray, g: np.ndarray, ks: np.ndarray, width: int
) -> tuple[np.ndarray, np.ndarray]:
    """AL(x) and dAL/dx for pairs: scales x (P,), factors by position g (row i: position
    i of the pairs that reach it, the first ones) and draft-length indices ``ks`` (P,) in
    descending order; ``width`` is K, the length of
    the pairs' rows.

    A pair's terms are c_i = prod_{j <= i} min(1, x g_j) for i <= k (zero past k; the
    product is NumPy's cumprod, c_i = c_{i-1} min(1, x g_i)) and c_i times the number of
    uncapped positions up to i, and AL = 1 + the sum of its row of K terms in the order
    ``np.sum`` adds a contiguous row of K (``sim.model.shapes.numpy_sum``): 8 interleaved
    partial sums over the first K - K mod 8 terms, combined pairwise, then the rest one
    by one (all of them one by one from 0 when K < 8). So these are the bits of the row
    sums of the (P, K) layout, computed a position at a time over every pair that reaches
    it (the first ones: ``ks`` descends), so a pair costs k + 1 positions, not K.
    """
    if width > _MAX_WIDTH:
        raise ValueError(f"rows of {width} terms: NumPy's order is replicated up to 128")
    pairs = x.size
    end = width - width % 8
    reach = np.searchsorted(-ks, -np.arange(ks[0] + 1 if pairs else 0), side="right")
    lanes, lanes_slope = np.zeros((8, pairs)), np.zeros((8, pairs))
    total, slope = lanes[0], lanes_slope[0]  # replaced by the lanes' sums at ``end``
    uncapped, term = np.zeros(pairs), np.empty(pairs)
    c = x
    for i, m in enumerate(reach):
        if i == end:
            total, slope = _combine(lanes), _combine(lanes_slope)
        y = np.multiply(x[:m], g[i][:m])
        np.add(uncapped[:m], y < 1.0, out=uncapped[:m])  # counts, exact in floats
        np.minimum(y, 1.0, out=y)
        if i > 0:
            np.multiply(c[:m], y, out=y)
        c = y
        into, into_slope = (total, slope) if i >= end else (lanes[i % 8], lanes_slope[i % 8])
        into[:m] += c
        into_slope[:m] += np.multiply(c, uncapped[:m], out=term[:m])
    if len(reach) <= end:
        total, slope = _combine(lanes), _combine(lanes_slope)
    with np.errstate(divide="ignore", invalid="ignore"):
        return 1.0 + total, slope / x


def _row_accept_lengths(
    x: np.ndarray, factors: np.ndarray, at_rows: np.ndarray, at_k: np.ndarray
) -> np.ndarray:
    """AL (P,) of pairs (row ``at_rows``, draft-length index ``at_k``, any order) each at
    its row's scale x (m,), factors (m, K): the bits ``_pair_accept_length`` gives each
    pair at that scale. The pairs of a row at one scale share its terms c_i (the same
    cumprod), so they are computed once a row, and so are the lanes' running sums: lane
    j at position p is the sum of the terms i = j, j + 8, ... <= p in order from 0.0
    (np.cumsum adds in order, as the lanes do; + 0.0 turns a -0.0 into the lanes' 0.0);
    each pair takes its lanes at its own k, combined as ``_combine`` does, and past the
    last full group of 8 the rest one by one onto the combined lanes. Rows no pair reads
    may hold anything (an infinite scale: NaN terms)."""
    m, width = factors.shape
    end = width - width % 8
    with np.errstate(invalid="ignore"):
        c = np.minimum(x[:, None] * factors, 1.0)
    np.multiply.accumulate(c, axis=1, out=c)
    last = np.minimum(at_k, end - 1)  # the lanes stop growing at ``end``
    lanes, full = [], []
    for j in range(8):
        cols = 1 + len(range(j, end, 8))
        running = np.zeros((m, cols))
        np.cumsum(c[:, j:end:8], axis=1, out=running[:, 1:])
        running += 0.0
        count = np.where(last >= j, (last - j) // 8 + 1, 0)
        lanes.append(running.ravel().take(at_rows * cols + count))  # running[at_rows, count]
        full.append(running[:, -1])
    total = _combine(np.array(lanes))
    past = at_k >= end
    if past.any():  # the rest one by one onto the row's combined lanes
        start = _combine(np.array(full))[:, None]
        rest = np.cumsum(np.concatenate([start, c[:, end:]], axis=1), axis=1)
        total[past] = rest[at_rows[past], at_k[past] - end + 1]
    return 1.0 + total


def _combine(lanes: np.ndarray) -> np.ndarray:
    """NumPy's pairwise combination of its 8 partial sums (8, P): shape (P,)."""
    return ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + (
        (lanes[4] + lanes[5]) + (lanes[6] + lanes[7])
    )


def scales_for_accept_lengths(
    need: np.ndarray,
    factors: np.ndarray,
    guess: np.ndarray | None = None,
    lowest_only: bool = False,
) -> np.ndarray:
    """The scale x (n, K) with AL_k(x) = need[:, k - 1] for every draw and k, where
    AL_k(x) = 1 + sum_{i <= k} prod_{j <= i} min(1, x g_j) (increasing in x).

    0 where the need is at most 1; NaN where it exceeds k + 1 (out of reach at that k).
    Every (draw, k) pair is solved together by Newton steps from ``guess`` (default: the
    equal rate over the mean factor), a step leaving the bracket [lo, hi] bisecting
    instead; pairs drop out as they converge. Each pair's steps do not depend on the
    others' (``_pair_accept_length`` sums each pair's own row).

    ``lowest_only``: only each row's lowest scale is wanted (the k needing the lowest
    first-position rate). A pair's steps never leave its bracket, so its answer lies in
    [lo, hi] at every step; a pair whose lo exceeds the lowest hi of its row (or the
    answer of a converged pair) is above the row's lowest, stops there and comes back
    +inf. Each row's pair with the least start is solved first; its answer bounds the
    row, and a pair whose accept length at that bound falls short of its need by more
    than the tolerance stops before its first step. The row's lowest entry, where and
    what it is, has the bits of the full solve.
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
    out = np.where(need <= 1.0, 0.0, np.nan)
    hi = hi_all[rows, ks]
    if lowest_only:  # an upper bound of every entry's answer (inf: out of reach)
        bound = np.where(need <= 1.0, 0.0, np.inf)
        bound[rows, ks] = hi
        # each row's likeliest lowest pair first (the least start); its answer bounds the
        # row, and the other pairs whose accept length at that bound falls short of their
        # need by more than the tolerance end above it (+inf) without a Newton step
        first, rest = _likeliest_first(rows, x)
        _newton_part(x, first, hi, target, factors, rows, ks, bound)
        rest = _short_of(rest, bound.min(axis=1), target, factors, rows, ks, x)
        _newton_part(x, rest, hi, target, factors, rows, ks, bound)
    else:
        _newton(x, hi, target, factors, rows, ks)
    out[rows, ks] = x
    return out


def _likeliest_first(rows: np.ndarray, start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Indices of the pairs (rows (P,), in ascending order, and their starts (P,)) split
    in two: the pairs with their row's least start, then the others."""
    if rows.size == 0:
        return rows, rows
    heads = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
    sizes = np.diff(np.r_[heads, rows.size])
    first = start == np.repeat(np.minimum.reduceat(start, heads), sizes)
    return np.flatnonzero(first), np.flatnonzero(~first)


def _newton_part(
    x: np.ndarray,
    part: np.ndarray,
    hi: np.ndarray,
    target: np.ndarray,
    factors: np.ndarray,
    rows: np.ndarray,
    ks: np.ndarray,
    bound: np.ndarray,
) -> None:
    """``_newton`` on the pairs ``part`` (indices into the (P,) arrays), ``x`` in place."""
    sub = x[part]
    _newton(sub, hi[part], target[part], factors, rows[part], ks[part], bound)
    x[part] = sub


def _short_of(
    pairs: np.ndarray,
    row_bound: np.ndarray,
    target: np.ndarray,
    factors: np.ndarray,
    rows: np.ndarray,
    ks: np.ndarray,
    x: np.ndarray,
) -> np.ndarray:
    """The ``pairs`` (indices into rows, ks, target, x, all (P,)) still to solve: those
    whose accept length at their row's bound ``row_bound`` (n,) reaches their need within
    the tolerance. The others set x = +inf: every x that meets the need to ``_TOL`` has a
    larger accept length, so lies above that bound, which some entry's answer does not
    exceed (the row's lowest, its bits unchanged, is never among them)."""
    b = row_bound[rows[pairs]]
    finite = np.isfinite(b)
    test = pairs[finite]
    if test.size == 0:
        return pairs
    # every pair at its row's bound, the row's terms computed once for all its pairs
    # (``_row_accept_lengths``: the bits ``_pair_accept_length`` gives each pair; the
    # pairs' order changes no pair's bits, see ``scales_for_accept_lengths``)
    al = _row_accept_lengths(row_bound, factors, rows[test], ks[test])
    short = al < target[test] * (1.0 - _TOL)
    x[test[short]] = np.inf
    return np.concatenate([test[~short], pairs[~finite]])


def _by_position(factors: np.ndarray, rows: np.ndarray, ks: np.ndarray) -> np.ndarray:
    """The factors (n, K) of pairs in rows ``rows`` (P,), draft-length indices ``ks`` (P,)
    in descending order, gathered by position (k + 1, P): row i holds position i of every
    pair; ``_pair_accept_length`` reads the first ones of it, the pairs that reach i."""
    return np.take(factors[:, : ks[0] + 1].T.copy(), rows, axis=1)


def _newton(
    x: np.ndarray,
    hi: np.ndarray,
    target: np.ndarray,
    factors: np.ndarray,
    rows: np.ndarray,
    ks: np.ndarray,
    bound: np.ndarray | None = None,
) -> None:
    """Safeguarded Newton steps on every pair (``x``, ``target``, ``rows``, ``ks``, all
    (P,)) inside the bracket [0, ``hi``], updating ``x`` in place; ``factors`` (n, K).
    The pairs are taken deepest k first, their factors gathered once by position (row
    i: the pairs with k >= i); converged pairs drop out, keeping that order. ``bound`` (n, K), upper
    bounds of every entry's answer: pairs shown above their row's lowest drop out too,
    with x = +inf (``scales_for_accept_lengths``' ``lowest_only``)."""
    pair = np.argsort(-ks, kind="stable")
    if pair.size == 0:
        return
    width = factors.shape[1]
    xa, lo, hi, need, k, r = (
        x[pair],
        np.zeros(pair.size),
        hi[pair],
        target[pair],
        ks[pair],
        rows[pair],
    )
    g = _by_position(factors, r, k)
    for _ in range(_ITERATIONS):
        if pair.size == 0:
            break
        al, slope = _pair_accept_length(xa, g, k, width)
        err = al - need
        done = np.abs(err) <= _TOL * need
        up = err > 0
        hi = np.where(up, xa, hi)
        lo = np.where(up, lo, xa)
        with np.errstate(divide="ignore", invalid="ignore"):
            newton = xa - err / slope
        inside = np.isfinite(newton) & (newton > lo) & (newton < hi)
        step = np.where(inside, newton, 0.5 * (lo + hi))
        going = ~done
        if bound is not None:  # every later step of a pair stays in [lo, hi]
            bound[r, k] = np.where(done, xa, hi)
            above = going & (lo > bound.min(axis=1)[r])
            x[pair[above]] = np.inf
            going &= ~above
        if not going.all():
            x[pair[done]] = xa[done]  # converged: x stays where it met the need
            pair, step, lo, hi, need, k, r = (a[going] for a in (pair, step, lo, hi, need, k, r))
            g = g[:, going]
        xa = step
    x[pair] = xa  # not converged in _ITERATIONS steps: the last step


@dataclass(frozen=True, slots=True)
class Requirement:
    """What one target needs in every draw at every k = 1..K (NaN: out of reach)."""

    tok_s: float
    need: np.ndarray  # required accept length (n, K)
    first_rate: np.ndarray  # (n, K)
    mean_rate: np.ndarray  # (n, K)
    flat_alpha: np.ndarray  # (n, K)
    scale: np.ndarray  # the profile's scale x; first_rate = min(1, x) (n, K)

    def only(self, columns: np.ndarray | None) -> Requirement:
        """This requirement with the draft lengths outside ``columns`` (K,) out of reach
        (NaN; None: all of them kept)."""
        if columns is None:
            return self

        def mask(a: np.ndarray) -> np.ndarray:
            return np.where(columns[None, :], a, np.nan)

        return Requirement(
            self.tok_s,
            self.need,
            mask(self.first_rate),
            mask(self.mean_rate),
            mask(self.flat_alpha),
            mask(self.scale),
        )

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


@dataclass(frozen=True, slots=True)
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

    def cycle_ms(
        self, num_steps: int, accept_length: np.ndarray | float | None = None
    ) -> np.ndarray:
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
        cols = None if columns is None else [columns]
        return self.requirements([target_tok_s], flat, cols, mean)[0]

    def requirements(
        self,
        targets: Sequence[float],
        flat: bool = True,
        columns: Sequence[np.ndarray | None] | None = None,
        mean: bool = True,
    ) -> tuple[Requirement, ...]:
        """``requirement`` of every target (``columns``: each target's draft lengths
        solved, None all), solved together: each target's copy of the draws is a block
        of rows of one solve, and rows are independent, so each comes out with the bits
        of its own ``requirement``, for one Python-level loop instead of one a target."""
        return self._solve(targets, flat, columns, mean, lowest_only=False)

    def requirements_at_best(
        self,
        targets: Sequence[float],
        columns: Sequence[np.ndarray | None] | None = None,
        flat: bool = True,
        mean: bool = True,
    ) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], ...]:
        """Each target's ``requirement(t, flat, c, mean).only(c).at_best()`` (best k,
        first, mean and flat rates, each (n,)), with their bits, solving a (draw, k) pair
        only while it can still be its draw's best k (``scales_for_accept_lengths``'
        lowest_only) and each distinct row once."""
        cols = columns if columns is not None else [None] * len(targets)
        solved = self._solve(targets, flat, columns, mean, lowest_only=True)
        return tuple(r.only(c).at_best() for r, c in zip(solved, cols, strict=True))

    def _solve(
        self,
        targets: Sequence[float],
        flat: bool,
        columns: Sequence[np.ndarray | None] | None,
        mean: bool,
        lowest_only: bool,
    ) -> tuple[Requirement, ...]:
        """``requirements``; ``lowest_only``: only each row's best k is solved (its scale
        elsewhere +inf, its first and mean rates there meaningless), rows the same to
        the bit solved once."""
        if not targets:
            return ()
        need, factors = self._stacked_need(targets, columns)
        again = None
        if lowest_only:  # rows the same to the bit (need and factors) solve the same
            rows = np.concatenate([need, factors], axis=1).view(np.uint64)
            first, again = distinct_rows(rows)
            need, factors = need[first], factors[first]
        alpha = equal_rates_for_accept_lengths(need) if flat else np.full(need.shape, np.nan)
        x = scales_for_accept_lengths(need, factors, alpha if flat else None, lowest_only)
        first_rate = np.minimum(1.0, x)
        means = np.full(need.shape, np.nan)
        if mean:
            big_k = self.max_steps
            # mean of min(1, x g_i) over i <= k: running sums of the capped rates per k
            with np.errstate(invalid="ignore"):  # lowest_only: inf x a zero factor
                capped = np.minimum(1.0, x[:, :, None] * factors[:, None, :])
            sums = np.einsum("nkp,kp->nk", np.nan_to_num(capped), np.tri(big_k))
            means = np.where(np.isnan(x), np.nan, sums / np.arange(1, big_k + 1))
        if again is not None:
            at = again.reshape(-1)
            need, first_rate, means, alpha, x = (a[at] for a in (need, first_rate, means, alpha, x))
        return tuple(
            Requirement(t, need[r], first_rate[r], means[r], alpha[r], x[r])
            for t, r in zip(targets, self._blocks(len(targets)), strict=True)
        )

    def _blocks(self, count: int) -> list[slice]:
        n = self.size
        return [slice(j * n, (j + 1) * n) for j in range(count)]

    def _stacked_need(
        self, targets: Sequence[float], columns: Sequence[np.ndarray | None] | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The accept length each target needs (T n, K), targets' copies of the draws one
        under the other (NaN outside a target's ``columns``), and the factors (T n, K)."""
        n, blocks = self.size, len(targets)
        tok_s = np.repeat(np.asarray(targets, dtype=float), n)[:, None]  # (T n, 1)
        fixed = np.tile(self.fixed_ms, (blocks, 1))
        denominator = 1000.0 - tok_s * np.tile(self.per_token_ms, blocks)[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            need = np.where(denominator > 0, tok_s * fixed / denominator, np.inf)
        if columns is not None:  # draft lengths left out: not solved (NaN, out of reach)
            keep = np.array([np.ones(self.max_steps, bool) if c is None else c for c in columns])
            need = np.where(np.repeat(keep, n, axis=0), need, np.nan)
        return need, np.tile(self.factors, (blocks, 1))


def allowed_steps(ks: Sequence[int], max_steps: int) -> np.ndarray:
    """The draft lengths ``ks`` as a mask of 1..``max_steps`` (K,)."""
    keep = np.zeros(max_steps, dtype=bool)
    keep[[k - 1 for k in ks if 1 <= k <= max_steps]] = True
    return keep


def study_window(best_k: np.ndarray, max_steps: int, ks: Sequence[int] | None) -> np.ndarray | None:
    """The draft lengths (K,) the one-at-a-time studies solve: those of ``ks`` (None:
    all) near the draws' best k (``best_k`` (n,), 0 out of reach), or all of ``ks`` when
    no draw reaches the target (None: every one)."""
    allowed = None if ks is None else allowed_steps(ks, max_steps)
    reachable = best_k > 0
    if not reachable.any():
        return allowed
    lo_k, hi_k = int(best_k[reachable].min()), int(best_k[reachable].max())
    window = np.zeros(max_steps, dtype=bool)
    window[max(lo_k - 3, 0) : hi_k + 2] = True
    return window if allowed is None else window & allowed


@dataclass(frozen=True, slots=True)
class ChainAnswers:
    """Everything a chain's 90% intervals read from its sampled model, solved at once
    (``chain_answers``); n draws, T targets.

    ``tok_s`` / ``accept_length`` (n,): the draws' answers at the scenario's k;
    ``bests``: each target's ``Requirement.at_best`` over the nominal row then the draws
    (1 + n,); ``solved``: each target's ``Requirement`` at every k over the same rows
    (only when asked for per k, else empty); ``firsts``: each target's first-position
    rate at its best k in each study row (the rows after the draws).
    """

    tok_s: np.ndarray
    accept_length: np.ndarray
    bests: tuple[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], ...]
    solved: tuple[Requirement, ...]
    firsts: tuple[np.ndarray, ...]


def chain_answers(
    every: SampledModel,
    draws: int,
    targets: Sequence[float],
    num_steps: int,
    ks: Sequence[int] | None,
    by_num_steps: bool,
) -> ChainAnswers:
    """The answers of ``every``'s rows: the nominal row, ``draws`` draws, then the
    one-at-a-time studies' rows. The nominal row and the draws are solved at their best k
    among ``ks`` (None: every k; at every k too for ``by_num_steps``); the studies, which
    read only the first rate at the best k, only near the draws' best k
    (``study_window``)."""
    head = every.rows(slice(0, 1 + draws))
    allowed = None if ks is None else allowed_steps(ks, every.max_steps)
    solved: tuple[Requirement, ...] = ()
    if by_num_steps:
        solved = head.requirements(targets)
        bests = tuple(r.only(allowed).at_best() for r in solved)
    else:
        bests = head.requirements_at_best(targets, [allowed] * len(targets))
    windows = [study_window(b[0][1:], every.max_steps, ks) for b in bests]
    studies = every.rows(slice(1 + draws, None))
    firsts = tuple(
        b[1] for b in studies.requirements_at_best(targets, windows, flat=False, mean=False)
    )
    sampled = every.rows(slice(1, 1 + draws))
    return ChainAnswers(
        sampled.tok_s(num_steps), sampled.accept_length(num_steps), bests, solved, firsts
    )
