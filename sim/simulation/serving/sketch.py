"""Streamed statistics of a sample too large to keep: exact count, sum and weight, and a
quantile sketch with a stated relative error.

``QuantileSketch`` is a logarithmic histogram (DDSketch, Masson, Rim and Lee, VLDB 2019):
a value x > 0 falls in bucket i = ceil(log_gamma x), gamma = (1 + alpha) / (1 - alpha),
which holds (gamma^(i-1), gamma^i]; negative values are kept by their magnitude in a
mirror store and zeros counted apart. A quantile is found by the same rule as the exact
``weighted_quantiles`` (the first value whose cumulative weight reaches q of the total):
the bucket holding that value is found exactly (bucket weights are sums of the values'
weights) and its representative 2 gamma^i / (gamma + 1) is returned, which is within
``alpha`` x |x| of every x in the bucket. So every quantile the sketch returns is within
relative error ``ALPHA`` (0.1%) of the exact quantile of the same weighted sample, up to
the rounding of one logarithm (a value within 1e-12 relative of a bucket edge may fall in
the next bucket). Sketches of several runs merge exactly (bucket weights add), so pooled
quantiles across replications carry the same bound. Memory: one weight per bucket between the
smallest and the largest magnitude, log(max / min) / log(gamma) of them (about 1,150 per
factor of 10 of spread), whatever the sample size.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = ["ALPHA", "QuantileSketch", "StreamedStat"]

#: The sketch's relative accuracy.
ALPHA = 1e-3
_GAMMA = (1.0 + ALPHA) / (1.0 - ALPHA)
_LOG_GAMMA = math.log(_GAMMA)


@dataclass(slots=True, eq=False)
class _Buckets:
    """Weights of consecutive bucket keys from ``offset`` (a dense array: a sample adds
    with one ``bincount``; the range grows as keys arrive)."""

    offset: int = 0
    weights: np.ndarray = field(default_factory=lambda: np.empty(0))

    def add(self, keys: np.ndarray, weights: np.ndarray | None) -> None:
        """Add ``keys`` (n,) with ``weights`` (n,; None: each weighs 1)."""
        lo, hi = int(keys.min()), int(keys.max())
        if self.weights.size == 0:
            self.offset, self.weights = lo, np.zeros(hi - lo + 1)
        elif lo < self.offset or hi >= self.offset + self.weights.size:
            start = min(lo, self.offset)
            grown = np.zeros(max(hi, self.offset + self.weights.size - 1) - start + 1)
            at = self.offset - start
            grown[at : at + self.weights.size] = self.weights
            self.offset, self.weights = start, grown
        at = lo - self.offset
        # no weights: the counts (what a weighted bincount of ones sums, at a tenth of its cost)
        self.weights[at : at + hi - lo + 1] += np.bincount(
            keys - lo, weights=weights, minlength=hi - lo + 1
        )

    def sparse(self) -> tuple[np.ndarray, np.ndarray]:
        """(keys, weights) of the occupied buckets, keys increasing."""
        at = np.flatnonzero(self.weights)
        return at.astype(np.int64) + self.offset, self.weights[at]


@dataclass(slots=True, eq=False)
class QuantileSketch:
    """A mergeable weighted quantile sketch (see the module docstring): buckets of x > 0
    and of -x for x < 0, and the weight of zeros. NaN values are not added."""

    _positive: _Buckets = field(default_factory=_Buckets)
    _negative: _Buckets = field(default_factory=_Buckets)
    zero: float = 0.0

    @property
    def positive(self) -> tuple[np.ndarray, np.ndarray]:
        """(bucket keys, weights) of the positive values."""
        return self._positive.sparse()

    @property
    def negative(self) -> tuple[np.ndarray, np.ndarray]:
        """(bucket keys, weights) of the negative values' magnitudes."""
        return self._negative.sparse()

    def __eq__(self, other: object) -> bool:
        """The same buckets with the same weights."""
        if not isinstance(other, QuantileSketch):
            return NotImplemented
        return self.zero == other.zero and all(
            np.array_equal(a, b)
            for a, b in zip(
                (*self.positive, *self.negative), (*other.positive, *other.negative), strict=True
            )
        )

    __hash__ = None  # type: ignore[assignment]

    def add(self, values: np.ndarray, weights: np.ndarray | None = None) -> None:
        """Add ``values`` (n,) with ``weights`` (n,; ones when None); NaN skipped."""
        unit = weights is None or bool((np.asarray(weights) == 1.0).all())
        w = np.ones(values.shape) if weights is None else np.broadcast_to(weights, values.shape)
        keep = ~np.isnan(values)
        if not keep.all():
            values, w = values[keep], w[keep]
        pos = values > 0
        if pos.all():
            if values.size:  # unit weights counted as such (``_Buckets.add``)
                self._positive.add(self._keys(values), None if unit else w)
            return
        neg = values < 0
        self.zero += float(w[~pos & ~neg].sum())
        if pos.any():
            self._positive.add(self._keys(values[pos]), w[pos])
        if neg.any():
            self._negative.add(self._keys(-values[neg]), w[neg])

    @staticmethod
    def _keys(magnitudes: np.ndarray) -> np.ndarray:
        return np.ceil(np.log(magnitudes) / _LOG_GAMMA).astype(np.int64)

    def merge(self, other: QuantileSketch) -> None:
        """Add ``other``'s buckets (exact: bucket weights add)."""
        for mine, theirs in ((self._positive, other._positive), (self._negative, other._negative)):
            keys, weights = theirs.sparse()
            if keys.size:
                mine.add(keys, weights)
        self.zero += other.zero

    @property
    def weight(self) -> float:
        return float(self._positive.weights.sum() + self._negative.weights.sum() + self.zero)

    def quantiles(self, qs: Sequence[float]) -> np.ndarray:
        """Quantiles (len(qs),), each within ``ALPHA`` relative of the exact weighted
        quantile of the values added; NaN when empty."""
        neg_keys, neg_w = self.negative
        pos_keys, pos_w = self.positive
        rep = 2.0 / (_GAMMA + 1.0)
        values = np.concatenate(
            [
                -rep * np.exp(neg_keys[::-1] * _LOG_GAMMA),
                [0.0],
                rep * np.exp(pos_keys * _LOG_GAMMA),
            ]
        )
        weights = np.concatenate([neg_w[::-1], [self.zero], pos_w])
        cum = np.cumsum(weights)
        if cum[-1] <= 0:
            return np.full(len(qs), np.nan)
        idx = np.searchsorted(cum, np.asarray(qs) * cum[-1], side="left")
        return values[np.minimum(idx, values.size - 1)]

    @staticmethod
    def merged(sketches: Iterable[QuantileSketch]) -> QuantileSketch:
        out = QuantileSketch()
        for s in sketches:
            out.merge(s)
        return out


@dataclass(slots=True)
class StreamedStat:
    """Exact weight and weighted sum of the values seen (NaN skipped), and their sketch."""

    weight: float = 0.0
    total: float = 0.0
    sketch: QuantileSketch = field(default_factory=QuantileSketch)

    def add(self, values: np.ndarray, weights: np.ndarray | None = None) -> None:
        kept = ~np.isnan(values)
        if weights is None:
            self.weight += float(np.count_nonzero(kept))
            self.total += float(values[kept].sum())
        else:
            w = np.broadcast_to(weights, values.shape)[kept]
            self.weight += float(w.sum())
            self.total += float(values[kept] @ w)
        self.sketch.add(values, weights)

    @property
    def mean(self) -> float:
        """The exact weighted mean (NaN when nothing was seen)."""
        return self.total / self.weight if self.weight else float("nan")
