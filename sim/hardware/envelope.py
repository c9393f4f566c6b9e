"""The critical path of a kernel schedule as a function of compute: its upper envelope.

``launch.critical_path_ms`` is T(x) = max_i (a_i + f_i x) over the N kernels of a pass
(N = layers x kernels per layer, about 1,100 for a 61-layer model). A serving simulation
evaluates T at a new compute time every iteration, so the N lines are reduced once per
schedule to the few that form the upper envelope on x >= 0 (the convex hull trick); T(x)
is then the maximum over the envelope segment containing x and its two neighbours, which
is the same maximum ``critical_path_ms`` takes (the maximising line is on the envelope).
"""

from __future__ import annotations

import bisect
import functools
from dataclasses import dataclass

import numpy as np

from sim.hardware.launch import KernelSchedule

__all__ = ["Envelope", "envelope_of", "upper_envelope"]


@dataclass(frozen=True)
class Envelope:
    """Lines y = intercept + slope x forming max_i (a_i + f_i x) on x >= 0.

    ``intercepts``/``slopes``: shape (h,), slopes strictly increasing (the line that is
    highest at x = 0 first); ``starts``: shape (h,), the x from which line j is the maximum
    (``starts[0] == 0``).
    """

    intercepts: np.ndarray
    slopes: np.ndarray
    starts: np.ndarray

    def at(self, x: np.ndarray | float) -> np.ndarray:
        """T(x) for compute times ``x`` (any shape, >= 0); same shape as ``x``."""
        x = np.asarray(x, dtype=float)
        h = self.slopes.shape[0]
        if h == 1:
            return self.intercepts[0] + self.slopes[0] * x
        if x.size > 1:  # every x on one segment (a block's few ms of compute): scalar lines
            first = self._segment(float(np.minimum.reduce(x, axis=None)))
            if first is not None and first == self._segment(float(np.maximum.reduce(x, axis=None))):
                # the same three lines as below, as Python floats (the same float64
                # products and sums); a neighbour that is the segment's own line (the
                # first or last segment) is not taken twice: max(y, y) is y
                ia, fa, _ = self._lines
                best = ia[first] + fa[first] * x
                if first > 0:
                    best = np.maximum(best, ia[first - 1] + fa[first - 1] * x)
                if first < h - 1:
                    best = np.maximum(best, ia[first + 1] + fa[first + 1] * x)
                return best
        j = np.searchsorted(self.starts, x, side="right") - 1
        lo, hi = np.maximum(j - 1, 0), np.minimum(j + 1, h - 1)
        a, f = self.intercepts, self.slopes
        best = a[j] + f[j] * x
        best = np.maximum(best, a[lo] + f[lo] * x)
        return np.maximum(best, a[hi] + f[hi] * x)

    @functools.cached_property
    def _lines(self) -> tuple[list[float], list[float], list[float]]:
        return self.intercepts.tolist(), self.slopes.tolist(), self.starts.tolist()

    def _segment(self, x: float) -> int | None:
        """The envelope segment ``at`` takes for ``x`` (``searchsorted`` of the starts,
        side right, minus 1); None for NaN."""
        if x != x:
            return None
        return bisect.bisect_right(self._lines[2], x) - 1

    def at_scalar(self, x: float) -> float:
        """``at`` of one compute time, in Python floats: the same operations on the same
        lines, so the same bits, without array overhead."""
        a, f, starts = self._lines
        h = len(a)
        if h == 1:
            return a[0] + f[0] * x
        j = bisect.bisect_right(starts, x) - 1
        # the larger of the segment's line and each neighbour's, as ``max(best, y)``
        # takes it (y only when greater); a neighbour beyond either end is the segment's
        # own line, which changes nothing
        best = a[j] + f[j] * x
        if j > 0:
            y = a[j - 1] + f[j - 1] * x
            if y > best:
                best = y
        if j < h - 1:
            y = a[j + 1] + f[j + 1] * x
            if y > best:
                best = y
        return best


def upper_envelope(
    intercepts: np.ndarray, slopes: np.ndarray, descending: bool | None = None
) -> Envelope:
    """The upper envelope on x >= 0 of lines a_i + f_i x; inputs of shape (n,), n >= 1.
    ``descending``: whether the slopes never increase with the index, when the caller
    knows (None: checked here)."""
    a = np.asarray(intercepts, dtype=float)
    f = np.asarray(slopes, dtype=float)
    if descending is None:
        descending = not np.greater(f[1:], f[:-1]).any()
    if a.shape[0] > 1 and descending:
        return _envelope_of_descending(a, f)
    return _envelope_by_sort(a, f)


def _envelope_by_sort(a: np.ndarray, f: np.ndarray) -> Envelope:
    """``upper_envelope`` of any lines: sorted by slope, the highest of each slope kept."""
    # For each slope keep the highest line; sort by slope.
    order = np.lexsort((a, f))
    a, f = a[order], f[order]
    last = np.append(f[1:] != f[:-1], True)
    a, f = a[last], f[last]
    # Lines that matter at x >= 0: drop those below the line highest at x = 0 with a
    # smaller slope (they never win for x >= 0).
    top = int(np.argmax(a))  # highest at 0 (largest slope among ties: last wins in sort)
    top = int(np.flatnonzero(a == a[top])[-1])
    return _hull(a[top:].tolist(), f[top:].tolist())


def _envelope_of_descending(a: np.ndarray, f: np.ndarray) -> Envelope:
    """``upper_envelope`` of lines whose slopes do not increase with their index (a
    stretch's kernels: the compute share still to run, sim/hardware/launch.py), without
    sorting: the same lines in the same order, so the same envelope bit for bit. The line
    highest at x = 0 with the largest slope is the first maximum of ``a``; the lines
    before it, last first, are the larger slopes in increasing order, each run of equal
    slopes kept as its highest line (what the sort's last of each slope keeps)."""
    top = int(np.argmax(a))  # the first maximum: the largest slope among the highest
    a, f = a[top::-1], f[top::-1]  # the top, then the lines before it, last first
    runs = np.flatnonzero(np.concatenate(([True], f[1:] != f[:-1])))  # each run's first
    return _hull(np.maximum.reduceat(a, runs).tolist(), f[runs].tolist())


def _hull(a: list[float], f: list[float]) -> Envelope:
    """The envelope of lines of increasing slopes ``f``, the first the highest at x = 0:
    each new line overtakes the last kept one at x, which drops it when x is not after
    that one's own start."""
    kept: list[tuple[float, float, float]] = []  # (intercept, slope, start)
    for ai, fi in zip(a, f, strict=True):
        start = 0.0
        while kept:
            ka, kf, kx = kept[-1]
            x = (ka - ai) / (fi - kf)  # where the new line overtakes the last kept one
            if x <= kx:
                kept.pop()
                continue
            start = x
            break
        kept.append((ai, fi, max(start, 0.0)))
    keep_a, keep_f, keep_x = zip(*kept, strict=True)
    return Envelope(np.array(keep_a), np.array(keep_f), np.array(keep_x))


def sum_envelopes(parts: list[Envelope], const: float = 0.0) -> Envelope:
    """The envelope of const + sum_k E_k(x): convex and piecewise linear, so the maximum of
    its own pieces, one per interval between the union of the parts' breakpoints."""
    if len(parts) == 1 and const == 0.0:
        return parts[0]
    starts = np.unique(np.concatenate([p.starts for p in parts]))
    a = np.full(starts.shape, float(const))
    f = np.zeros(starts.shape)
    for p in parts:
        j = np.searchsorted(p.starts, starts, side="right") - 1  # the piece active there
        a += p.intercepts[j]
        f += p.slopes[j]
    return Envelope(a, f, starts)


def envelope_of(schedule: KernelSchedule) -> Envelope:
    """The envelope of a pass's critical path T(x) (sim/hardware/launch.py): the sum over
    the schedule's stretches (split by host synchronisations) of each stretch's upper
    envelope, plus the synchronisations' own time."""
    parts = [
        upper_envelope(a, f, descending)
        for (a, f), descending in zip(
            schedule.stretch_terms(), schedule.shares_descending, strict=True
        )
    ]
    return sum_envelopes(parts, float(schedule.syncs_ms))
