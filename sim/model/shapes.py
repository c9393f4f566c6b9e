"""Conditional acceptance rate against draft position: shapes, anchors and extrapolation.

A drafter's conditional per-position rates a_1..a_k (sim/model/rates.py) are written as a
first-position rate times a shape factor, a_i = min(1, a_1 g_i) with g_1 = 1:

* ``flat``: g_i = 1 (Leviathan et al. 2023's equal rates alpha);
* ``geometric``: g_i = r^(i - 1), a rate that falls (r < 1) by the same factor per position;
* ``step``: g_i = d for every i >= 2, a one-off drop at position 2 and a plateau after it,
  the pattern of published EAGLE-3 and MTP per-position profiles (sim/binding/priors.py).

``decay`` is r or d (1 gives flat for both). Measured per-position rates a_1..a_n are
continued past position n by the shape's ratio per position (``continue_rates``): r for
``geometric``, 1 (the last rate repeats) for ``flat``, ``step`` and ``repeat``.

Every function broadcasts over leading sample dimensions, so an uncertainty study re-solves
thousands of input draws in a few array operations: ``first_rate`` and ``decay`` of shape
(...) give rates of shape (..., k).
"""

from __future__ import annotations

import math
import operator
from functools import reduce
from itertools import accumulate

import numpy as np
from numpy.typing import ArrayLike

#: Shapes of a profile given by one anchor (a rate or an accept length).
SHAPES: tuple[str, ...] = ("flat", "geometric", "step")
#: How listed per-position rates continue past the list: the shapes, plus ``repeat``.
CONTINUATIONS: tuple[str, ...] = (*SHAPES, "repeat")

#: Bisection steps of ``first_rate_for_accept_length`` (interval shrinks 2^-60).
_BISECT_STEPS = 60


def _check_shape(shape: str, allowed: tuple[str, ...] = SHAPES) -> None:
    if shape not in allowed:
        raise ValueError(f"unknown shape {shape!r}; known: {', '.join(allowed)}")


def shape_factors(shape: str, decay: ArrayLike, num_steps: int) -> np.ndarray:
    """g_1..g_k of ``shape`` with parameter ``decay`` (shape (...)): shape (..., k), g_1 = 1."""
    _check_shape(shape)
    d = np.asarray(decay, dtype=float)[..., None]
    i = np.arange(1, num_steps + 1, dtype=float)
    if shape == "flat":
        return np.broadcast_to(np.ones(num_steps), (*d.shape[:-1], num_steps)).copy()
    if shape == "geometric":
        return d ** (i - 1.0)
    return np.where(i >= 2, d, 1.0) * np.ones_like(d)


def rates_for_positions(
    shape: str, first_rate: ArrayLike, decay: ArrayLike, num_steps: int
) -> np.ndarray:
    """Conditional rates a_i = min(1, a_1 g_i), i = 1..k: shape (..., k).

    ``first_rate`` (a_1) and ``decay`` broadcast against each other (shape (...)). This is
    the one function other modules (trees, studies) take depth profiles from.
    """
    a1 = np.asarray(first_rate, dtype=float)[..., None]
    return np.clip(a1 * shape_factors(shape, decay, num_steps), 0.0, 1.0)


def continue_rates(
    listed: ArrayLike, continuation: str, decay: ArrayLike, num_steps: int
) -> np.ndarray:
    """Measured rates a_1..a_n (shape (..., n)) continued to k positions: shape (..., k).

    Positions 1..n keep the listed rates; position n + j gets a_n g_(n+j) / g_n (capped
    at 1) with g the factors of ``continuation`` (``repeat``: ratio 1). So ``geometric``
    keeps falling by ``decay`` per position, ``step`` drops by ``decay`` only after a list
    of one rate, and ``flat``/``repeat`` repeat the last rate. With k <= n the first k
    listed rates come back.
    """
    _check_shape(continuation, CONTINUATIONS)
    a = np.asarray(listed, dtype=float)
    n = a.shape[-1]
    if num_steps <= n:
        return a[..., :num_steps].copy()
    if continuation == "repeat":
        ratio = np.ones((*np.shape(decay), num_steps - n))
    else:
        g = shape_factors(continuation, decay, num_steps)
        ratio = g[..., n:] / g[..., n - 1 : n]
    tail = a[..., -1:] * ratio
    lead_shape = np.broadcast_shapes(a.shape[:-1], tail.shape[:-1])
    lead = np.broadcast_to(a, (*lead_shape, n))
    tail = np.broadcast_to(tail, (*lead_shape, num_steps - n))
    return np.clip(np.concatenate([lead, tail], axis=-1), 0.0, 1.0)


def tilt_factors(tilt: float | np.ndarray, depth: int, num_steps: int) -> np.ndarray:
    """rho^(i - depth) past position ``depth``, 1 before it (log rho = ``tilt`` of shape
    (...)): shape (..., k)."""
    past = np.maximum(np.arange(1, num_steps + 1) - depth, 0)
    return np.exp(np.asarray(tilt, dtype=float)[..., None] * past)


def tilted(rates: np.ndarray, tilt: float | np.ndarray, depth: int) -> np.ndarray:
    """Rates (..., k) tilted past position ``depth`` (``tilt_factors``), capped at 1."""
    return np.clip(rates * tilt_factors(tilt, depth, rates.shape[-1]), 0.0, 1.0)


def accept_length_of(rates: ArrayLike) -> np.ndarray:
    """AL = 1 + sum_i a_1 ... a_i over the last axis: shape (...) for rates (..., k)."""
    return 1.0 + np.cumprod(np.asarray(rates, dtype=float), axis=-1).sum(axis=-1)


def accept_lengths_by_k(rates: ArrayLike) -> np.ndarray:
    """AL at every draft length 1..k from one profile: shape (..., k); entry j is AL(j + 1)."""
    return 1.0 + np.cumsum(np.cumprod(np.asarray(rates, dtype=float), axis=-1), axis=-1)


def scale_for_accept_length(
    accept_length: ArrayLike, factors: ArrayLike, num_steps: int | None = None
) -> np.ndarray:
    """The x >= 0 with AL(min(1, x g)) = ``accept_length`` over k positions: shape (...).

    ``factors`` (..., K) give g (any positive profile; with g_1 = 1, x is the first-position
    rate); the first ``num_steps`` of them are used (default all). AL is increasing in x, so
    vectorized bisection on [0, 1 / min g] solves every entry at once. Entries needing
    AL <= 1 give 0; entries needing more than k + 1 (unreachable) give NaN. One entry (a
    scalar need, one profile) takes the same bisection in plain floats (``_scalar_scale``):
    the same bits, without an array operation's overhead at each of its 60 steps.
    """
    g = np.asarray(factors, dtype=float)
    if num_steps is not None:
        g = g[..., :num_steps]
    k = g.shape[-1]
    need = np.asarray(accept_length, dtype=float)
    positive = np.where(g > 0, g, np.inf)
    if need.ndim == 0 and g.ndim == 1:
        hi = 1.0 / positive.min(axis=-1)
        one = _scalar_scale(float(need), g.tolist(), float(hi))
        return np.where(need > k + 1 + 1e-12, np.nan, np.where(need <= 1.0, 0.0, one))
    shape = np.broadcast_shapes(need.shape, g.shape[:-1])
    need = np.broadcast_to(need, shape)
    g = np.broadcast_to(g, (*shape, k))
    positive = np.broadcast_to(positive, (*shape, k))
    hi = 1.0 / positive.min(axis=-1)  # every rate capped at 1 here: AL = k + 1
    lo = np.zeros(shape)
    for _ in range(_BISECT_STEPS):
        mid = 0.5 * (lo + hi)
        above = accept_length_of(np.minimum(1.0, mid[..., None] * g)) >= need
        hi = np.where(above, mid, hi)
        lo = np.where(above, lo, mid)
    out = 0.5 * (lo + hi)
    out = np.where(need <= 1.0, 0.0, out)
    return np.where(need > k + 1 + 1e-12, np.nan, out)


def _scalar_scale(need: float, g: list[float], hi: float) -> float:
    """``scale_for_accept_length``'s bisection for one need and one profile ``g`` (k,),
    in floats: every product, minimum and sum rounds as the array version's does (the
    running product is NumPy's cumprod; the sum is ``numpy_sum``).

    With factors >= 0 every one of those roundings is monotone, so whether AL(mid)
    reaches the need is monotone in mid: a mid at or below a point known to fall short,
    or at or above one known to reach, is answered without computing AL. Newton steps
    first find such points a few ulps either side of the root (``_around_root``), and of
    the bisection's steps only those whose mid falls between them compute AL: the same
    steps and bits for about a third of the evaluations."""
    monotone = need == need and all(gi >= 0.0 for gi in g)
    short, reach = _around_root(need, g, hi) if monotone else (-math.inf, math.inf)
    lo = 0.0
    for _ in range(_BISECT_STEPS):
        mid = 0.5 * (lo + hi)
        if mid <= short:
            reached = False
        elif mid >= reach:
            reached = True
        else:
            reached = 1.0 + numpy_sum(_capped_products(mid, g)[1]) >= need
            if monotone:
                short, reach = (short, mid) if reached else (mid, reach)
        if reached:
            hi = mid
        else:
            lo = mid
    return 0.5 * (lo + hi)


def _capped_products(x: float, g: list[float]) -> tuple[list[float], list[float]]:
    """The rates min(1, x g_i) and their running products, as ``_scalar_scale`` rounds them."""
    capped = [1.0 if (y := x * gi) > 1.0 else y for gi in g]
    return capped, list(accumulate(capped, operator.mul))


def _capped_accept_length(x: float, g: list[float]) -> tuple[float, float]:
    """AL of the rates min(1, x g_i) as ``_scalar_scale`` rounds it, and its slope in x."""
    capped, products = _capped_products(x, g)
    uncapped = accumulate(1 if y < 1.0 else 0 for y in capped)
    slope = sum(c * n for c, n in zip(products, uncapped, strict=True)) / x if x > 0 else 0.0
    return 1.0 + numpy_sum(products), slope


def _around_root(need: float, g: list[float], hi: float) -> tuple[float, float]:
    """(short, reach): the largest x tried whose AL falls short of ``need`` and the
    smallest whose AL reaches it (-inf / inf: none), from Newton steps inside [0, hi]
    and, once they are close, one probe either side of the root."""
    short, reach = -math.inf, math.inf
    x, probes = 0.5 * hi, 0
    for _ in range(16):
        al, slope = _capped_accept_length(x, g)
        short, reach = (short, min(reach, x)) if al >= need else (max(short, x), reach)
        if math.isfinite(reach - short) and reach - short <= 1e-15 * reach:
            break
        lo, top = max(short, 0.0), min(reach, hi)
        root = x - (al - need) / slope if slope > 0 else math.nan
        if not lo <= root <= top:
            root = 0.5 * (lo + top)
        if abs(root - x) <= 1e-14 * x or probes:  # close: step across the root
            probes += 1
            gap = 2e-15 * 8 ** (probes - 1) * root
            root = root - gap if al >= need else root + gap
            if not lo < root < top:
                break
        x = root
    return short, reach


def numpy_sum(values: list[float]) -> float:
    """The float64 sum of ``values`` in NumPy's order (``np.sum`` of a contiguous vector,
    numpy/_core/src/umath/loops_utils.h.src ``pairwise_sum``): from 0 one by one below 8
    terms; up to 128 terms 8 interleaved partial sums, combined pairwise, then the rest one
    by one; above 128 the two halves (the first a multiple of 8 long) summed apart. (Not
    the builtin ``sum``, whose float rounding changed in Python 3.12.)"""
    n = len(values)
    if n < 8:
        return reduce(operator.add, values, 0.0)
    if n <= 128:
        end = n - n % 8
        r = [reduce(operator.add, values[j + 8 : end : 8], values[j]) for j in range(8)]
        total = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        return reduce(operator.add, values[end:], total)
    half = n // 2
    half -= half % 8
    return numpy_sum(values[:half]) + numpy_sum(values[half:])


def first_rate_for_accept_length(
    shape: str, decay: ArrayLike, accept_length: ArrayLike, num_steps: int
) -> np.ndarray:
    """a_1 such that ``shape`` with ``decay`` has accept length ``accept_length`` at k.

    Broadcasts ``decay`` and ``accept_length`` (shape (...)); NaN where the accept length
    exceeds k + 1. With ``flat`` this is Leviathan's alpha for the accept length.
    """
    factors = shape_factors(shape, decay, num_steps)
    return scale_for_accept_length(accept_length, factors)


def mean_rate(rates: ArrayLike) -> np.ndarray:
    """The mean conditional rate over positions 1..k (the last axis): shape (...)."""
    return np.asarray(rates, dtype=float).mean(axis=-1)
