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
quantiles across replications carry the same bound. Memory: one entry per occupied bucket,
at most log(max / min) / log(gamma) (about 1,000 buckets per factor of 10 of spread),
whatever the sample size.
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


def _add(keys: np.ndarray, weights: np.ndarray, new_keys: np.ndarray, new_weights: np.ndarray):
    """Merge (key, weight) pairs: sorted unique keys (int64) and their summed weights."""
    if new_keys.size == 0:
        return keys, weights
    all_keys = np.concatenate([keys, new_keys])
    all_weights = np.concatenate([weights, new_weights])
    unique, inverse = np.unique(all_keys, return_inverse=True)
    return unique, np.bincount(inverse, weights=all_weights, minlength=unique.size)


@dataclass(slots=True, eq=False)
class QuantileSketch:
    """A mergeable weighted quantile sketch (see the module docstring): ``positive`` and
    ``negative`` are (sorted bucket keys, weights) of x > 0 and of -x for x < 0; ``zero``
    the weight of zeros. NaN values are not added."""

    positive: tuple[np.ndarray, np.ndarray] = field(
        default_factory=lambda: (np.empty(0, np.int64), np.empty(0))
    )
    negative: tuple[np.ndarray, np.ndarray] = field(
        default_factory=lambda: (np.empty(0, np.int64), np.empty(0))
    )
    zero: float = 0.0

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
        w = np.ones(values.shape) if weights is None else np.broadcast_to(weights, values.shape)
        keep = ~np.isnan(values)
        values, w = values[keep], w[keep]
        pos, neg = values > 0, values < 0
        self.zero += float(w[values == 0].sum())
        for mask, sign, store in ((pos, 1.0, "positive"), (neg, -1.0, "negative")):
            if mask.any():
                keys = np.ceil(np.log(sign * values[mask]) / _LOG_GAMMA).astype(np.int64)
                old = getattr(self, store)
                setattr(self, store, _add(old[0], old[1], keys, w[mask]))

    def merge(self, other: QuantileSketch) -> None:
        """Add ``other``'s buckets (exact: bucket weights add)."""
        self.positive = _add(*self.positive, *other.positive)
        self.negative = _add(*self.negative, *other.negative)
        self.zero += other.zero

    @property
    def weight(self) -> float:
        return float(self.positive[1].sum() + self.negative[1].sum() + self.zero)

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
