"""The scale x of a profile min(1, x g) that reaches a needed accept length, for many
(draw, k) pairs at once (``scales_for_accept_lengths``): AL_k(x) = 1 + sum_{i <= k}
prod_{j <= i} min(1, x g_j), increasing and piecewise polynomial in x, solved by
safeguarded Newton steps, each pair's sums in the order NumPy adds a row of K (so each
pair's bits are those of its own row's solve); ``scales_of_rows``: the batch-1 closed
form's bisection (sim/model/shapes.py) over each distinct row once.

Shapes: n draws, K draft lengths (k = 1..K), P (draw, k) pairs solved.
"""

from __future__ import annotations

import numpy as np

from sim.model.distinct_rows import distinct_rows
from sim.model.equal_rates import equal_rates_at
from sim.model.shapes import scale_for_accept_length

__all__ = ["scales_for_accept_lengths", "scales_of_rows"]

#: Newton iterations (each (draw, k) pair stops once its accept length is met to ``_TOL``).
_ITERATIONS = 40
_TOL = 1e-11


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
    start = equal_rates_at(target, ks + 1.0, steps=10) if guess is None else guess[rows, ks]
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
